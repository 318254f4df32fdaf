#include "evident/core/json.h"

#include <array>
#include <cstring>
#include <vector>

#include "evident/core/utf8.h"

namespace evident {
namespace {

struct StrictViolation {
  std::string message;
};

// Builds the DOM straight from nlohmann's SAX events (one pass, same lexer and therefore the same
// syntax errors and byte offsets as Json::parse) and enforces the strict rules as the events
// arrive: a duplicate key is found by the insertion into the object itself (no per-object key
// set), floats and out-of-range integers are refused at the number event.
class StrictDomBuilder {
 public:
  explicit StrictDomBuilder(int max_depth) : max_depth_(max_depth) {}

  Json root;

  bool null() { return put(Json(nullptr)); }
  bool boolean(bool v) { return put(Json(v)); }
  bool number_integer(Json::number_integer_t v) {
    if (v > kMaxSafeInteger || v < -kMaxSafeInteger) {
      throw StrictViolation{"integer outside ±(2^53−1)"};
    }
    return put(Json(v));
  }
  bool number_unsigned(Json::number_unsigned_t v) {
    if (v > static_cast<std::uint64_t>(kMaxSafeInteger)) {
      throw StrictViolation{"integer outside ±(2^53−1)"};
    }
    return put(Json(v));
  }
  bool number_float(Json::number_float_t /*v*/, const Json::string_t& /*text*/) {
    throw StrictViolation{"floating-point numbers are not allowed (use integers)"};
  }
  bool string(Json::string_t& v) { return put(Json(std::move(v))); }
  bool binary(Json::binary_t& v) { return put(Json(std::move(v))); }
  bool start_object(std::size_t /*elements*/) {
    check_depth();
    stack_.push_back(place(Json(Json::value_t::object)));
    return true;
  }
  bool key(Json::string_t& k) {
    auto& members = stack_.back()->get_ref<Json::object_t&>();
    // try_emplace leaves `k` intact when the key exists, for the message.
    auto [it, inserted] = members.try_emplace(std::move(k));
    // The key itself is request content and is never echoed.
    if (!inserted) throw StrictViolation{"duplicate object key"};
    member_ = &it->second;
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t /*elements*/) {
    check_depth();
    stack_.push_back(place(Json(Json::value_t::array)));
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) {
    // Same as nlohmann's DOM parser with allow_exceptions: syntax errors surface as parse_error.
    if (ex.id / 100 == 1) throw *static_cast<const Json::parse_error*>(&ex);
    return false;
  }

 private:
  // nlohmann's SAX parser is iterative; this check bounds the DOM (and so every later recursive
  // walk of it) before the container is opened.
  void check_depth() const {
    if (static_cast<int>(stack_.size()) >= max_depth_) {
      throw StrictViolation{"nesting deeper than " + std::to_string(max_depth_) + " levels"};
    }
  }

  // Stores a finished value at the current position. Pointers on the stack stay valid: a
  // container only grows while none of its children is open.
  Json* place(Json&& v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    Json* top = stack_.back();
    if (top->is_array()) {
      auto& items = top->get_ref<Json::array_t&>();
      items.push_back(std::move(v));
      return &items.back();
    }
    *member_ = std::move(v);
    return member_;
  }
  bool put(Json&& v) {
    place(std::move(v));
    return true;
  }

  int max_depth_;
  std::vector<Json*> stack_;
  Json* member_ = nullptr;
};

// A fast path for the common case, tried before the SAX builder. It accepts only a conservative
// subset of what the strict parser accepts (ASCII-escaped strings without \u, integers of at most
// 15 digits, no BOM, nesting within the caller's limit) and builds the same DOM with the same number types
// (non-negative -> unsigned, negative -> integer, as nlohmann's lexer does). Anything else, valid
// or not, makes it give up, and the SAX builder then decides: so every error, its code and message
// come from the one reference path. The input has already been checked for UTF-8 and NUL bytes.
class FastStrictParser {
 public:
  FastStrictParser(std::string_view text, int max_depth)
      : p_(text.data()), end_(text.data() + text.size()), max_depth_(max_depth) {}

  bool parse(Json* out) {
    skip_ws();
    if (!value(out, 0)) return false;
    skip_ws();
    return p_ == end_;
  }

 private:
  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() ||
        std::string_view(p_, word.size()) != word) {
      return false;
    }
    p_ += word.size();
    return true;
  }

  bool string(std::string* out) {
    // *p_ == '"'
    ++p_;
    const char* run = p_;
    while (p_ < end_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        out->append(run, static_cast<std::size_t>(p_ - run));
        ++p_;
        return true;
      }
      if (c < 0x20) return false;
      if (c != '\\') {
        ++p_;
        continue;
      }
      out->append(run, static_cast<std::size_t>(p_ - run));
      if (++p_ == end_) return false;
      switch (*p_) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        default: return false;  // \u and invalid escapes: the reference path
      }
      run = ++p_;
    }
    return false;
  }

  bool number(Json* out) {
    const bool negative = *p_ == '-';
    if (negative) ++p_;
    const char* digits = p_;
    std::uint64_t v = 0;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
      v = v * 10 + static_cast<std::uint64_t>(*p_ - '0');
      ++p_;
    }
    const auto n = p_ - digits;
    if (n == 0 || n > 15 || (n > 1 && *digits == '0')) return false;
    if (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) return false;
    if (negative) {
      *out = Json(-static_cast<std::int64_t>(v));
    } else {
      *out = Json(v);
    }
    return true;
  }

  bool value(Json* out, int depth) {
    if (p_ == end_) return false;
    switch (*p_) {
      case '{': {
        if (depth >= max_depth_) return false;  // the reference path words it
        ++p_;
        *out = Json(Json::value_t::object);
        auto& members = out->get_ref<Json::object_t&>();
        skip_ws();
        if (p_ < end_ && *p_ == '}') {
          ++p_;
          return true;
        }
        while (true) {
          if (p_ == end_ || *p_ != '"') return false;
          std::string key;
          if (!string(&key)) return false;
          auto [it, inserted] = members.try_emplace(std::move(key));
          if (!inserted) return false;  // duplicate: the reference path words the error
          skip_ws();
          if (p_ == end_ || *p_ != ':') return false;
          ++p_;
          skip_ws();
          if (!value(&it->second, depth + 1)) return false;
          skip_ws();
          if (p_ == end_) return false;
          if (*p_ == '}') {
            ++p_;
            return true;
          }
          if (*p_ != ',') return false;
          ++p_;
          skip_ws();
        }
      }
      case '[': {
        if (depth >= max_depth_) return false;  // the reference path words it
        ++p_;
        *out = Json(Json::value_t::array);
        auto& items = out->get_ref<Json::array_t&>();
        skip_ws();
        if (p_ < end_ && *p_ == ']') {
          ++p_;
          return true;
        }
        while (true) {
          items.emplace_back();
          if (!value(&items.back(), depth + 1)) return false;
          skip_ws();
          if (p_ == end_) return false;
          if (*p_ == ']') {
            ++p_;
            return true;
          }
          if (*p_ != ',') return false;
          ++p_;
          skip_ws();
        }
      }
      case '"': {
        std::string s;
        if (!string(&s)) return false;
        *out = Json(std::move(s));
        return true;
      }
      case 't':
        *out = Json(true);
        return literal("true");
      case 'f':
        *out = Json(false);
        return literal("false");
      case 'n':
        *out = Json(nullptr);
        return literal("null");
      default:
        if (*p_ == '-' || (*p_ >= '0' && *p_ <= '9')) return number(out);
        return false;
    }
  }

  const char* p_;
  const char* end_;
  int max_depth_;
};

}  // namespace

Result<Json> parse_json_strict(std::string_view text, std::size_t max_bytes,
                               const std::string& error_code, int max_depth) {
  if (text.size() > max_bytes) {
    return make_error(error_code, "request is " + std::to_string(text.size()) +
                                      " bytes; the limit is " + std::to_string(max_bytes));
  }
  if (!is_valid_utf8(text)) return make_error(error_code, "request is not valid UTF-8");
  // nlohmann's lexer stops at a NUL byte as if the input ended there, which would let trailing
  // data through; a raw NUL is never valid JSON (inside strings it must be escaped).
  if (text.find('\0') != std::string_view::npos) {
    return make_error(error_code, "request contains a NUL byte");
  }
  {
    Json fast;
    if (FastStrictParser(text, max_depth).parse(&fast)) return fast;
  }
  StrictDomBuilder builder(max_depth);
  try {
    if (!Json::sax_parse(text.begin(), text.end(), &builder, Json::input_format_t::json,
                         /*strict=*/true, /*ignore_comments=*/false)) {
      return make_error(error_code, "invalid JSON");
    }
    return std::move(builder.root);
  } catch (const StrictViolation& v) {
    return make_error(error_code, "invalid JSON: " + v.message);
  } catch (const Json::parse_error& e) {
    return make_error(error_code, "invalid JSON at byte " + std::to_string(e.byte));
  } catch (const Json::exception&) {
    return make_error(error_code, "invalid JSON");
  }
}

std::string dump_json(const Json& value) {
  // The replace handler is the last line of defence: it cannot throw on bad UTF-8, so a response
  // with a broken string is still one JSON object (messages are valid by construction anyway).
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

int json_depth(const Json& value, int stop_at) {
  if (!value.is_structured()) return 0;
  int deepest = 0;
  std::vector<std::pair<const Json*, int>> stack{{&value, 1}};
  while (!stack.empty()) {
    auto [v, d] = stack.back();
    stack.pop_back();
    if (d > deepest) deepest = d;
    if (deepest > stop_at) return deepest;
    for (const auto& child : *v) {
      if (child.is_structured()) stack.emplace_back(&child, d + 1);
    }
  }
  return deepest;
}

bool is_lower_hex(std::string_view s, std::size_t length) {
  // A table and a branch-free accumulation: the receipt verifier checks ~150 digests per receipt.
  static constexpr auto kHex = [] {
    std::array<std::uint8_t, 256> t{};
    for (int c = '0'; c <= '9'; ++c) t[static_cast<std::size_t>(c)] = 1;
    for (int c = 'a'; c <= 'f'; ++c) t[static_cast<std::size_t>(c)] = 1;
    return t;
  }();
  if (s.size() != length) return false;
  unsigned ok = 1;
  for (char c : s) ok &= kHex[static_cast<unsigned char>(c)];
  return ok != 0;
}

JsonFields::JsonFields(const Json& object, std::string error_code, std::string context)
    : obj_(object), code_(std::move(error_code)), context_(std::move(context)) {}

Error JsonFields::fail(std::string message) const {
  return make_error(code_, context_ + ": " + message);
}

const Json* JsonFields::find(std::string_view key) const {
  if (!obj_.is_object()) return nullptr;
  auto it = obj_.find(std::string(key));
  return it == obj_.end() ? nullptr : &*it;
}

bool JsonFields::has(std::string_view key) const { return find(key) != nullptr; }

Status JsonFields::only(std::initializer_list<std::string_view> allowed) const {
  if (!obj_.is_object()) return fail("must be a JSON object");
  for (auto it = obj_.begin(); it != obj_.end(); ++it) {
    bool known = false;
    for (auto a : allowed) known = known || (a == it.key());
    if (known) continue;
    // The unknown name is request content: never echoed. The allowed names are ours.
    std::string names;
    for (auto a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
    return fail(allowed.size() == 0 ? "has an unknown field (no fields are allowed)"
                                    : "has an unknown field (allowed: " + names + ")");
  }
  return {};
}

Result<std::string> JsonFields::string(std::string_view key, std::size_t min_bytes,
                                       std::size_t max_bytes) const {
  const Json* v = find(key);
  if (!v) return fail("missing field \"" + std::string(key) + "\"");
  if (!v->is_string()) return fail("field \"" + std::string(key) + "\" must be a string");
  const auto& s = v->get_ref<const std::string&>();
  if (s.size() < min_bytes || s.size() > max_bytes) {
    return fail("field \"" + std::string(key) + "\" must be " + std::to_string(min_bytes) +
                ".." + std::to_string(max_bytes) + " bytes");
  }
  return s;
}

Result<std::int64_t> JsonFields::integer(std::string_view key, std::int64_t min,
                                         std::int64_t max) const {
  const Json* v = find(key);
  if (!v) return fail("missing field \"" + std::string(key) + "\"");
  if (!v->is_number_integer()) return fail("field \"" + std::string(key) + "\" must be an integer");
  std::int64_t n = v->is_number_unsigned()
                       ? static_cast<std::int64_t>(std::min<std::uint64_t>(
                             v->get<std::uint64_t>(), static_cast<std::uint64_t>(INT64_MAX)))
                       : v->get<std::int64_t>();
  if (n < min || n > max) {
    return fail("field \"" + std::string(key) + "\" must be in " + std::to_string(min) + ".." +
                std::to_string(max));
  }
  return n;
}

Result<bool> JsonFields::boolean(std::string_view key) const {
  const Json* v = find(key);
  if (!v) return fail("missing field \"" + std::string(key) + "\"");
  if (!v->is_boolean()) return fail("field \"" + std::string(key) + "\" must be a boolean");
  return v->get<bool>();
}

Result<const Json*> JsonFields::object(std::string_view key) const {
  const Json* v = find(key);
  if (!v) return fail("missing field \"" + std::string(key) + "\"");
  if (!v->is_object()) return fail("field \"" + std::string(key) + "\" must be an object");
  return v;
}

Result<const Json*> JsonFields::array(std::string_view key, std::size_t min_items,
                                      std::size_t max_items) const {
  const Json* v = find(key);
  if (!v) return fail("missing field \"" + std::string(key) + "\"");
  if (!v->is_array()) return fail("field \"" + std::string(key) + "\" must be an array");
  if (v->size() < min_items || v->size() > max_items) {
    return fail("field \"" + std::string(key) + "\" must have " + std::to_string(min_items) +
                ".." + std::to_string(max_items) + " items");
  }
  return v;
}

Result<std::string> JsonFields::sha256_hex(std::string_view key) const {
  auto s = string(key);
  if (!s) return s.error();
  if (!is_lower_hex(*s, 64)) {
    return fail("field \"" + std::string(key) + "\" must be 64 lowercase hex characters");
  }
  return s;
}

}  // namespace evident
