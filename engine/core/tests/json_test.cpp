// Proves the strict parser refuses everything the contract forbids and keeps valid input intact.
#include <gtest/gtest.h>

#include "evident/core/json.h"

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
