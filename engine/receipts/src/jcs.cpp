#include "evident/receipts/jcs.h"

// The low-level SHA-256 calls are deprecated in OpenSSL 3 but, unlike EVP, they do not initialise
// the provider machinery (config file, provider tables): ~65 page faults and 2-3 ms of start-up
// for a short-lived `evident verify`, for the same SHA-NI/AVX code.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "evident/core/sha256.h"

namespace evident {
namespace {

// Decodes UTF-8 into UTF-16 code units; false on invalid UTF-8 (overlong, surrogates, > U+10FFFF).
bool utf8_to_utf16(std::string_view s, std::u16string* out) {
  out->clear();
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::size_t i = 0;
  while (i < s.size()) {
    unsigned char c = p[i];
    std::uint32_t cp;
    std::size_t n;
    if (c < 0x80) { out->push_back(c); ++i; continue; }
    if ((c & 0xE0) == 0xC0) { n = 1; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { n = 2; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { n = 3; cp = c & 0x07; }
    else return false;
    if (i + n >= s.size()) return false;  // truncated sequence
    for (std::size_t k = 1; k <= n; ++k) {
      unsigned char cc = p[i + k];
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000)) return false;
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out->push_back(static_cast<char16_t>(0xD800 + (cp >> 10)));
      out->push_back(static_cast<char16_t>(0xDC00 + (cp & 0x3FF)));
    } else {
      out->push_back(static_cast<char16_t>(cp));
    }
    i += n + 1;
  }
  return true;
}

bool has_high_byte(std::string_view s) {
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t x;
    std::memcpy(&x, s.data() + i, 8);
    if (x & 0x8080808080808080ULL) return true;
  }
  s.remove_prefix(i);
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return true;
  }
  return false;
}

bool valid_utf8(std::string_view s) {
  if (!has_high_byte(s)) return true;
  std::u16string scratch;
  return utf8_to_utf16(s, &scratch);
}

Error too_deep() {
  return make_error("receipt-noncanonical",
                    "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
}

// Bytes copied as is inside a JCS string (everything but controls, '"' and '\\').
constexpr auto kPlain = [] {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 256; ++c) t[static_cast<std::size_t>(c)] = c != '"' && c != '\\';
  return t;
}();

// True when one of the 8 bytes at p is a control character, '"' or '\\' (exact, no false
// negatives; false positives only make the byte loop look at them).
inline bool needs_escape8(const char* p) {
  std::uint64_t x;
  std::memcpy(&x, p, 8);
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHigh = 0x8080808080808080ULL;
  auto has_zero = [](std::uint64_t v) { return (v - kOnes) & ~v & kHigh; };
  const std::uint64_t below_space = (x - kOnes * 0x20) & ~x & kHigh;
  return (below_space | has_zero(x ^ (kOnes * '"')) | has_zero(x ^ (kOnes * '\\'))) != 0;
}

void append_string(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  std::size_t run = 0;  // start of the pending run of bytes copied as is
  for (std::size_t i = 0; i < s.size(); ++i) {
    // Skip 8 plain bytes at a time (SWAR: no byte < 0x20, == '"' or == '\\'); digests and most
    // text are long plain runs.
    while (i + 8 <= s.size() && !needs_escape8(s.data() + i)) i += 8;
    if (i == s.size()) break;
    auto c = static_cast<unsigned char>(s[i]);
    if (kPlain[c]) continue;
    out->append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        out->append("\\u00");
        out->push_back(kHex[c >> 4]);
        out->push_back(kHex[c & 0xF]);
    }
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

// Recursion is bounded by kMaxJsonDepth (every value evident canonicalizes came through the
// strict parser, which enforces the same limit; a value built in process is checked here).
Status append(const Json& v, std::string* out, int depth) {
  switch (v.type()) {
    case Json::value_t::null: out->append("null"); return {};
    case Json::value_t::boolean: out->append(v.get<bool>() ? "true" : "false"); return {};
    case Json::value_t::number_unsigned: {
      auto u = v.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(kMaxSafeInteger)) {
        return make_error("receipt-noncanonical", "integer outside ±(2^53−1)");
      }
      out->append(std::to_string(u));
      return {};
    }
    case Json::value_t::number_integer: {
      auto i = v.get<std::int64_t>();
      if (i > kMaxSafeInteger || i < -kMaxSafeInteger) {
        return make_error("receipt-noncanonical", "integer outside ±(2^53−1)");
      }
      out->append(std::to_string(i));
      return {};
    }
    case Json::value_t::number_float:
      return make_error("receipt-noncanonical", "floating-point numbers are not canonical here");
    case Json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      if (!valid_utf8(s)) return make_error("receipt-noncanonical", "string is not valid UTF-8");
      append_string(s, out);
      return {};
    }
    case Json::value_t::array: {
      if (depth >= kMaxJsonDepth) return too_deep();
      out->push_back('[');
      bool first = true;
      for (const auto& e : v) {
        if (!first) out->push_back(',');
        first = false;
        EVIDENT_TRY(append(e, out, depth + 1));
      }
      out->push_back(']');
      return {};
    }
    case Json::value_t::object: {
      if (depth >= kMaxJsonDepth) return too_deep();
      // RFC 8785 §3.2.3: sort by UTF-16 code units. nlohmann's std::map orders by UTF-8 bytes
      // (= code points), which differs only when a key holds a byte >= 0xEE (U+E000..U+FFFF
      // or a non-BMP character); only then are the keys converted and re-sorted.
      bool needs_utf16 = false;
      for (auto it = v.begin(); it != v.end(); ++it) {
        const std::string& k = it.key();
        if (!has_high_byte(k)) continue;
        if (!valid_utf8(k)) {
          return make_error("receipt-noncanonical", "object key is not valid UTF-8");
        }
        for (unsigned char c : k) needs_utf16 = needs_utf16 || c >= 0xEE;
      }
      out->push_back('{');
      bool first = true;
      auto member = [&](const std::string& k, const Json& value) -> Status {
        if (!first) out->push_back(',');
        first = false;
        append_string(k, out);
        out->push_back(':');
        return append(value, out, depth + 1);
      };
      if (!needs_utf16) {
        for (auto it = v.begin(); it != v.end(); ++it) EVIDENT_TRY(member(it.key(), it.value()));
      } else {
        struct Key {
          std::u16string k16;
          const std::string* k;
          const Json* v;
        };
        std::vector<Key> keys;
        keys.reserve(v.size());
        for (auto it = v.begin(); it != v.end(); ++it) {
          Key key{{}, &it.key(), &it.value()};
          utf8_to_utf16(it.key(), &key.k16);
          keys.push_back(std::move(key));
        }
        std::sort(keys.begin(), keys.end(),
                  [](const Key& a, const Key& b) { return a.k16 < b.k16; });
        for (const Key& key : keys) EVIDENT_TRY(member(*key.k, *key.v));
      }
      out->push_back('}');
      return {};
    }
    default:
      return make_error("receipt-noncanonical", "value type is not allowed in canonical JSON");
  }
}

}  // namespace

Result<std::string> canonicalize(const Json& value) {
  std::string out;
  out.reserve(256);
  EVIDENT_TRY(append(value, &out, 0));
  return out;
}

std::string domain_digest_of_jcs(std::string_view domain, std::string_view jcs_bytes) {
  SHA256_CTX ctx;
  std::array<std::uint8_t, 32> digest{};
  const char zero = 0;
  if (SHA256_Init(&ctx) != 1 || SHA256_Update(&ctx, domain.data(), domain.size()) != 1 ||
      SHA256_Update(&ctx, &zero, 1) != 1 ||
      SHA256_Update(&ctx, jcs_bytes.data(), jcs_bytes.size()) != 1 ||
      SHA256_Final(digest.data(), &ctx) != 1) {
    std::abort();  // cannot fail for in-memory input; same policy as core's Sha256
  }
  return to_hex(digest);
}

Result<std::string> domain_digest(std::string_view domain, const Json& value) {
  auto bytes = canonicalize(value);
  if (!bytes.ok()) return bytes.error();
  return domain_digest_of_jcs(domain, *bytes);
}

}  // namespace evident
