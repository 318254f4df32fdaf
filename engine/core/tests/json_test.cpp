// Proves the strict parser refuses everything the protocol forbids (docs/protocol.md §8) and keeps valid input intact.
#include <gtest/gtest.h>

#include "evident/core/json.h"

using evident::Json;
using evident::JsonPreconditionError;
using evident::parse_json_strict;

namespace {
constexpr std::size_t kMax = 1024;

void expect_refused(const std::string& text) {
  auto r = parse_json_strict(text, kMax, "test-json");
  ASSERT_FALSE(r.ok()) << text;
  EXPECT_EQ(r.error().code, "test-json");
}
}  // namespace

TEST(StrictJson, AcceptsPlainObject) {
  auto r = parse_json_strict(R"({"a":1,"b":[true,null,"x"],"c":{"d":-9007199254740991}})", kMax, "e");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["c"]["d"].get<std::int64_t>(), -9007199254740991);
}

TEST(StrictJson, RefusesDuplicateKeysAtAnyDepth) {
  expect_refused(R"({"a":1,"a":2})");
  expect_refused(R"({"a":{"b":1,"b":1}})");
  expect_refused(R"({"a":[{"x":1},{"y":1,"y":2}]})");
}

TEST(StrictJson, SameKeyInSiblingObjectsIsFine) {
  EXPECT_TRUE(parse_json_strict(R"([{"a":1},{"a":2}])", kMax, "e").ok());
}

TEST(StrictJson, RefusesFloatsAndUnsafeIntegers) {
  expect_refused(R"({"a":1.5})");
  expect_refused(R"({"a":1e3})");
  expect_refused(R"({"a":9007199254740992})");
  expect_refused(R"({"a":-9007199254740992})");
  expect_refused(R"({"a":18446744073709551616})");
}

TEST(StrictJson, RefusesTrailingDataSyntaxAndBadUtf8) {
  expect_refused(R"({"a":1} x)");
  expect_refused(R"({"a":1}{"b":2})");
  expect_refused(R"({"a":)");
  expect_refused("{\"a\":\"\xC3\x28\"}");
  expect_refused("{\"a\":\"\xED\xA0\x80\"}");  // UTF-16 surrogate encoded in UTF-8
  expect_refused(std::string("{\"a\":1}\0{\"b\":2}", 15));  // data hidden after a NUL byte
  expect_refused("");
}

TEST(StrictJson, RefusesOversizeBeforeParsing) {
  std::string big = "\"" + std::string(kMax, 'a') + "\"";
  auto r = parse_json_strict(big, kMax, "too-big");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("limit"), std::string::npos);
}

TEST(JsonFields, ChecksKeysTypesAndRanges) {
  auto j = *parse_json_strict(R"({"n":5,"s":"abc","h":"00ff"})", kMax, "e");
  evident::JsonFields f(j, "bad");
  EXPECT_TRUE(f.only({"n", "s", "h"}).ok());
  EXPECT_FALSE(f.only({"n", "s"}).ok());
  EXPECT_EQ(*f.integer("n", 1, 10), 5);
  EXPECT_FALSE(f.integer("n", 6, 10).ok());
  EXPECT_FALSE(f.integer("s", 0, 10).ok());
  EXPECT_FALSE(f.string("missing").ok());
  EXPECT_FALSE(f.string("s", 4).ok());
  EXPECT_FALSE(f.sha256_hex("h").ok());
  EXPECT_EQ(f.integer("x", 0, 1).error().code, "bad");
}

namespace {
// `depth` nested containers around 0: "[[[0]]]" for depth 3; with `slow`, a "\u0041" string at
// the bottom makes the fast path give up so the SAX builder decides.
std::string nested(int depth, bool objects, bool slow) {
  std::string open, close;
  for (int i = 0; i < depth; ++i) {
    open += objects ? "{\"k\":" : "[";
    close += objects ? "}" : "]";
  }
  return open + (slow ? "\"\\u0041\"" : "0") + close;
}
}  // namespace

// docs/protocol.md §8: a nesting limit of 64 levels, enforced by the parser before it recurses, on both
// the fast path and the SAX path, with one stable message.
TEST(StrictJson, NestingLimitOnBothPaths) {
  EXPECT_EQ(evident::kMaxJsonDepth, 64);
  for (bool objects : {false, true}) {
    for (bool slow : {false, true}) {
      SCOPED_TRACE(std::string(objects ? "objects" : "arrays") + (slow ? " sax" : " fast"));
      auto at = parse_json_strict(nested(64, objects, slow), 1 << 20, "e");
      ASSERT_TRUE(at.ok()) << at.error().message;
      EXPECT_EQ(evident::json_depth(*at), 64);
      auto over = parse_json_strict(nested(65, objects, slow), 1 << 20, "e");
      ASSERT_FALSE(over.ok());
      EXPECT_EQ(over.error().code, "e");
      EXPECT_EQ(over.error().message, "invalid JSON: nesting deeper than 64 levels");
      // The issue's stack overflow: ~30,000 levels in well under the session request limit.
      auto deep = parse_json_strict(nested(30000, objects, slow), 1 << 20, "e");
      ASSERT_FALSE(deep.ok());
      EXPECT_EQ(deep.error().message, "invalid JSON: nesting deeper than 64 levels");
    }
  }
  // A caller-given limit (responses wrap a receipt one level deeper).
  EXPECT_TRUE(parse_json_strict(nested(100, true, false), 1 << 20, "e", 128).ok());
  EXPECT_FALSE(parse_json_strict(nested(129, true, true), 1 << 20, "e", 128).ok());
}

TEST(StrictJson, JsonDepthIsIterativeAndBounded) {
  EXPECT_EQ(evident::json_depth(evident::Json(1)), 0);
  EXPECT_EQ(evident::json_depth(evident::Json::object()), 1);
  EXPECT_EQ(evident::json_depth(*parse_json_strict(R"({"a":[1,{"b":[]}],"c":{}})", kMax, "e")), 4);
  // Built in process, 200,000 levels: counted without recursion, stopped past the limit, and
  // destroyed without recursion (nlohmann 3.11's iterative destructor).
  evident::Json deep = evident::Json::array();
  evident::Json* p = &deep;
  for (int i = 0; i < 200000; ++i) {
    p->push_back(evident::Json::array());
    p = &p->back();
  }
  EXPECT_EQ(evident::json_depth(deep), evident::kMaxJsonDepth + 1);
}

// Issue #9 item 1: error messages never echo request content (field names included) and are
// valid UTF-8 even when the request's names are cut inside a multi-byte character.
TEST(StrictJson, MessagesNeverEchoKeys) {
  const std::string key = std::string(63, 'a') + "\xC3\xA9";  // 65 bytes, cut at 64 inside é
  auto dup = parse_json_strict("{\"" + key + "\":1,\"" + key + "\":2}", kMax, "e");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().message, "invalid JSON: duplicate object key");
  auto dup_sax = parse_json_strict("{\"" + key + "\":\"\\u0041\",\"" + key + "\":2}", kMax, "e");
  ASSERT_FALSE(dup_sax.ok());
  EXPECT_EQ(dup_sax.error().message, "invalid JSON: duplicate object key");

  auto j = *parse_json_strict("{\"op\":\"ping\",\"" + key + "\":1}", kMax, "e");
  evident::JsonFields f(j, "bad", "request");
  auto st = f.only({"op", "args"});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "request: has an unknown field (allowed: op, args)");
  EXPECT_EQ(st.error().message.find("aaa"), std::string::npos);
  auto none = evident::JsonFields(j, "bad", "args").only({});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, "args: has an unknown field (no fields are allowed)");
}

TEST(Utf8, SanitizedIsValidAndKeepsValidText) {
  EXPECT_EQ(evident::utf8_sanitized("plain é ✓ 😀"), "plain é ✓ 😀");
  EXPECT_EQ(evident::utf8_sanitized(std::string(63, 'a') + "\xC3"), std::string(63, 'a') + "\xEF\xBF\xBD");
  EXPECT_EQ(evident::utf8_sanitized("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(evident::utf8_sanitized("\xE2\x9C"), "\xEF\xBF\xBD");       // one cut character
  EXPECT_EQ(evident::utf8_sanitized("\xED\xA0\x80"), "\xEF\xBF\xBD");   // a surrogate
  EXPECT_TRUE(evident::is_valid_utf8(evident::utf8_sanitized("\xC0\xAF\xF8\x80\x80")));
  // make_error applies it: every Error message is valid UTF-8 by construction.
  EXPECT_TRUE(evident::is_valid_utf8(evident::make_error("x", "cut \xC3").message));
}

// Proves: nlohmann's preconditions are checked in every build (json.h defines JSON_ASSERT): a
// const operator[] of a missing key throws JsonPreconditionError where a release build read the
// object's end (undefined behaviour; the class of two fuzzing findings, docs/reliability.md). The
// message names the condition, never the key.
TEST(JsonPreconditions, MissingKeyThroughConstIndexThrows) {
  const Json o = Json{{"a", 1}};
  EXPECT_EQ(o["a"], 1);
  EXPECT_THROW(static_cast<void>(o["b"]), JsonPreconditionError);
  try {
    static_cast<void>(o["secret-field-name"]);
    ADD_FAILURE() << "no exception";
  } catch (const JsonPreconditionError& e) {
    EXPECT_EQ(std::string(e.what()).find("secret"), std::string::npos) << e.what();
  }
  // Non-objects already threw a type_error; that is unchanged.
  const Json arr = Json::array();
  EXPECT_THROW(static_cast<void>(arr["a"]), nlohmann::json::type_error);
}

TEST(StrictJson, DumpNeverThrows) {
  evident::Json bad = {{"message", std::string("cut \xC3")}};
  std::string out;
  EXPECT_NO_THROW(out = evident::dump_json(bad));
  EXPECT_TRUE(evident::is_valid_utf8(out));
  EXPECT_TRUE(parse_json_strict(out, kMax, "e").ok());
}
