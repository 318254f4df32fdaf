// parse_json_strict (fast path + SAX builder) decides exactly as the original callback-based strict
// parser does: same accept/reject, same error message, and the same DOM with the same number types,
// on the golden receipts, hand-picked edge cases and thousands of seeded byte mutations of a receipt.
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "evident/core/fs.h"
#include "evident/core/json.h"

namespace evident {
namespace {

// The previous implementation of parse_json_strict, kept as the oracle: verbatim except for the
// two rules added since (issue #9): the nesting limit as containers open, and a duplicate-key
// message that does not echo the key.
struct Violation {
  std::string message;
};

bool oracle_utf8(std::string_view s) {
  std::size_t i = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  while (i < s.size()) {
    unsigned char c = p[i];
    std::size_t n;
    std::uint32_t cp;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xE0) == 0xC0) { n = 1; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { n = 2; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { n = 3; cp = c & 0x07; }
    else return false;
    if (i + n >= s.size()) return false;
    for (std::size_t k = 1; k <= n; ++k) {
      unsigned char cc = p[i + k];
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000)) return false;
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

Result<Json> oracle(std::string_view text, std::size_t max_bytes, const std::string& code) {
  if (text.size() > max_bytes) {
    return make_error(code, "request is " + std::to_string(text.size()) +
                                " bytes; the limit is " + std::to_string(max_bytes));
  }
  if (!oracle_utf8(text)) return make_error(code, "request is not valid UTF-8");
  if (text.find('\0') != std::string_view::npos) {
    return make_error(code, "request contains a NUL byte");
  }
  std::vector<std::set<std::string>> keys;
  int open = 0;
  auto cb = [&keys, &open](int, Json::parse_event_t event, Json& parsed) -> bool {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        if (++open > kMaxJsonDepth) throw Violation{"nesting deeper than 64 levels"};
        if (event == Json::parse_event_t::object_start) keys.emplace_back();
        break;
      case Json::parse_event_t::array_end: --open; break;
      case Json::parse_event_t::object_end: --open; if (!keys.empty()) keys.pop_back(); break;
      case Json::parse_event_t::key: {
        const auto& k = parsed.get_ref<const std::string&>();
        if (!keys.empty() && !keys.back().insert(k).second) {
          throw Violation{"duplicate object key"};
        }
        break;
      }
      case Json::parse_event_t::value:
        if (parsed.is_number_float()) {
          throw Violation{"floating-point numbers are not allowed (use integers)"};
        }
        if (parsed.is_number_unsigned() &&
            parsed.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxSafeInteger)) {
          throw Violation{"integer outside ±(2^53−1)"};
        }
        if (parsed.is_number_integer() && !parsed.is_number_unsigned()) {
          auto v = parsed.get<std::int64_t>();
          if (v > kMaxSafeInteger || v < -kMaxSafeInteger) {
            throw Violation{"integer outside ±(2^53−1)"};
          }
        }
        break;
      default: break;
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), cb, true, false);
  } catch (const Violation& v) {
    return make_error(code, "invalid JSON: " + v.message);
  } catch (const Json::parse_error& e) {
    return make_error(code, "invalid JSON at byte " + std::to_string(e.byte));
  } catch (const Json::exception&) {
    return make_error(code, "invalid JSON");
  }
}

// Equal values with equal nlohmann types at every node (== alone treats 1u and 1 as equal).
bool same(const Json& a, const Json& b) {
  if (a.type() != b.type()) return false;
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
      if (ia.key() != ib.key() || !same(ia.value(), ib.value())) return false;
    }
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!same(a[i], b[i])) return false;
    }
    return true;
  }
  return a == b;
}

void expect_same(const std::string& text, std::size_t max_bytes = 1 << 20) {
  auto got = parse_json_strict(text, max_bytes, "t-json");
  auto want = oracle(text, max_bytes, "t-json");
  ASSERT_EQ(got.ok(), want.ok()) << text.substr(0, 200);
  if (want.ok()) {
    EXPECT_TRUE(same(*got, *want)) << text.substr(0, 200);
  } else {
    EXPECT_EQ(got.error().code, want.error().code);
    EXPECT_EQ(got.error().message, want.error().message) << text.substr(0, 200);
  }
}

TEST(StrictJsonDiff, EdgeCases) {
  const std::vector<std::string> cases = {
      "", " ", "0", "-0", "01", "-01", "-", "1.0", "1e2", "1E2", "-1e-2", "1.", ".5",
      "123456789012345", "-123456789012345", "1234567890123456", "9007199254740991",
      "9007199254740992", "-9007199254740991", "-9007199254740992", "18446744073709551615",
      "18446744073709551616", "99999999999999999999999", "true", "false", "null", "tru", "nul",
      "truex", "nullnull", " true ", "\t\r\n[ ]\n", "[]", "{}", "[1,]", "[,1]", "[1 2]",
      "{\"a\":1,}", "{\"a\" 1}", "{\"a\":}", "{a:1}", "{\"a\":1,\"a\":2}",
      "{\"a\":{\"b\":1,\"b\":1}}", "[{\"x\":1},{\"x\":1}]", "{\"a\":1}{", "{\"a\":1} x",
      "\"\\u00e9\"", "\"\\ud83d\\ude00\"", "\"\\ud83d\"", "\"\\/\\b\\f\\n\\r\\t\\\\\\\"\"",
      "\"\\x\"", "\"a\tb\"", "\"\x01\"", "\"unterminated", "\"caf\xc3\xa9\"", "\xEF\xBB\xBF{}",
      "\xEF\xBB\xBF", "{\"\":0}", "{\"k\":[1,-2,{\"z\":null,\"a\":true}],\"b\":\"\"}",
      "[-0,0,-1,1]", "[1,1.5]", "{\"n\":-9007199254740992}", "[\"a\\u0000b\"]", "\xff",
      std::string("[1]\0", 4), "// c\n1", "/* c */ 1", "[1]  \n", "+1", "0x10", "NaN",
      "[[[[[[[[[[]]]]]]]]]]", "{\"a\":[{\"b\":[{\"c\":{}}]}]}"};
  for (const auto& c : cases) expect_same(c);
  expect_same(std::string(600, '[') + std::string(600, ']'));
  expect_same(std::string(513, '[') + std::string(513, ']'));
  expect_same(std::string(600, '[') + std::string(599, ']'));
  expect_same(std::string(64, '[') + std::string(64, ']'));
  expect_same(std::string(65, '[') + std::string(65, ']'));
  expect_same(std::string(64, '[') + "\"\\u0041\"" + std::string(64, ']'));
  expect_same("{\"a\":1}", 3);  // size limit
}

std::vector<std::string> golden_receipts() {
  std::vector<std::string> out;
  for (const auto& d : std::filesystem::directory_iterator(EVIDENT_SOURCE_DIR "/receipts/golden")) {
    auto p = d.path() / "receipt.json";
    if (std::filesystem::exists(p)) out.push_back(p.string());
  }
  return out;
}

TEST(StrictJsonDiff, GoldenReceiptsAndMutations) {
  auto paths = golden_receipts();
  ASSERT_FALSE(paths.empty());
  std::mt19937 rng(20261130);  // fixed: the same mutations every run
  const std::string alphabet = "{}[],:\"\\ \t\n0123456789-+.eEtrufalsn/ub\x01\xc3\xa9";
  std::size_t accepted = 0;
  std::size_t rejected = 0;
  for (const auto& path : paths) {
    auto text = read_file(path, 1 << 20);
    ASSERT_TRUE(text.ok()) << path;
    expect_same(*text);
    for (int i = 0; i < 1500; ++i) {
      std::string m = *text;
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits && !m.empty(); ++e) {
        const std::size_t pos = rng() % m.size();
        const char c = alphabet[rng() % alphabet.size()];
        switch (rng() % 3) {
          case 0: m.erase(pos, 1); break;
          case 1: m.insert(pos, 1, c); break;
          default: m[pos] = c; break;
        }
      }
      auto want = oracle(m, 1 << 20, "t-json");
      (want.ok() ? accepted : rejected)++;
      expect_same(m);
      if (HasFatalFailure()) return;
    }
  }
  // The mutations exercise both sides of the decision.
  EXPECT_GT(accepted, 100u);
  EXPECT_GT(rejected, 100u);
}

}  // namespace
}  // namespace evident
