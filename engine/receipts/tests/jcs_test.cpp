// JCS (RFC 8785) and H(domain, v): the RFC's and cyberphone's vectors, our own, the digest
// vectors (computed by npm canonicalize + sha256sum), and a byte-for-byte cross-check against
// the npm `canonicalize` package on every vector and a real receipt.
#include <gtest/gtest.h>

#include "evident/receipts/jcs.h"
#include "golden.h"

namespace evident {
namespace {

using testing::read_json;
using testing::source_path;

TEST(Jcs, OfficialAndOwnVectors) {
  Json doc = read_json(source_path("receipts/vectors/jcs.json"));
  ASSERT_GE(doc["vectors"].size(), 10u);
  for (const Json& v : doc["vectors"]) {
    SCOPED_TRACE(v["name"].get<std::string>());
    auto parsed = parse_json_strict(v["input"].get<std::string>(), 1 << 20, "vector");
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    auto out = canonicalize(*parsed);
    ASSERT_TRUE(out.ok()) << out.error().message;
    EXPECT_EQ(*out, v["expected"].get<std::string>());
    // Canonical output is a fixed point.
    auto again = canonicalize(*parse_json_strict(*out, 1 << 20, "vector"));
    EXPECT_EQ(*again, *out);
  }
}

TEST(Jcs, RefusedContent) {
  Json doc = read_json(source_path("receipts/vectors/jcs.json"));
  for (const Json& v : doc["refused"]) {
    SCOPED_TRACE(v["name"].get<std::string>());
    auto parsed = parse_json_strict(v["input"].get<std::string>(), 1 << 20, "vector");
    if (parsed.ok()) {
      EXPECT_FALSE(canonicalize(*parsed).ok());
    }
  }
  for (const Json& bad : {Json(1.5), Json(0.0), Json::array({1, 2.5}),
                          Json{{"a", Json::array({Json(1e300)})}},
                          Json(static_cast<std::uint64_t>(9007199254740992ULL)),
                          Json(static_cast<std::int64_t>(-9007199254740992LL)),
                          Json(std::string("\xff")), Json{{std::string("\xc0\x80"), 1}},
                          Json(std::string("\xed\xa0\x80")), Json::binary({1, 2})}) {
    auto out = canonicalize(bad);
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.error().code, "receipt-noncanonical");
    auto d = domain_digest(kDomainClaims, bad);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().code, "receipt-noncanonical");
  }
  EXPECT_EQ(*canonicalize(Json(static_cast<std::int64_t>(9007199254740991LL))),
            "9007199254740991");
  EXPECT_EQ(*canonicalize(Json(static_cast<std::int64_t>(-9007199254740991LL))),
            "-9007199254740991");
}

TEST(Jcs, Utf16KeyOrderDiffersFromUtf8) {
  // U+E000 sorts after U+10000 in UTF-16 (0xE000 > 0xD800) but before it in UTF-8.
  Json v = Json::object();
  v["\xee\x80\x80"] = 1;          // U+E000
  v["\xf0\x90\x80\x80"] = 2;      // U+10000
  v["\xef\xbf\xbf"] = 3;          // U+FFFF
  v["a"] = 4;
  EXPECT_EQ(*canonicalize(v),
            "{\"a\":4,\"\xf0\x90\x80\x80\":2,\"\xee\x80\x80\":1,\"\xef\xbf\xbf\":3}");
}

TEST(Jcs, DigestVectorsComputedElsewhere) {
  Json doc = read_json(source_path("receipts/vectors/digests.json"));
  ASSERT_GE(doc["vectors"].size(), 5u);
  for (const Json& v : doc["vectors"]) {
    std::string domain = v["domain"];
    SCOPED_TRACE(domain);
    EXPECT_EQ(*canonicalize(v["value"]), v["jcs"].get<std::string>());
    EXPECT_EQ(*domain_digest(domain, v["value"]), v["sha256"].get<std::string>());
  }
  // The worked example of docs/receipts.md, digest from `printf ... | sha256sum`.
  Json example = parse_json_strict("{\"b\":[1,\"\xc3\xa9\"],\"a\":true}", 100, "x").value();
  EXPECT_EQ(*domain_digest("evident/claims/v2", example),
            "cce8204f1f3c48d7f5ad60f867cf456f23db6fa1fd28d76c935dadf6cc7dcb40");
}

TEST(Jcs, AgreesWithNpmCanonicalize) {
  if (!testing::have_program("node")) GTEST_SKIP() << "node is not installed: cannot run npm canonicalize";
  Json doc = read_json(source_path("receipts/vectors/jcs.json"));
  std::vector<Json> values;
  for (const Json& v : doc["vectors"]) {
    values.push_back(parse_json_strict(v["input"].get<std::string>(), 1 << 20, "v").value());
  }
  for (const auto& name : testing::verified_names()) {
    values.push_back(read_json(testing::golden_dir(name) + "/receipt.json"));
  }
  // A receipt with every kind of string content the builder can emit.
  values.push_back(Json{{"\xef\xac\xb3", "\x01\x1f\x7f"}, {"\xf0\x9f\x98\x80", "\xe2\x80\xa8"}});
  std::string lines;
  for (const Json& v : values) lines += dump_json(v) + "\n";
  auto r = testing::run_command("node " + testing::shell_quote(source_path("receipts/tools/jcs.mjs")) +
                                 " --lines",
                             lines);
  ASSERT_EQ(r.exit_status, 0);
  std::vector<std::string> outs;
  std::size_t start = 0;
  for (std::size_t i = 0; i < r.out.size(); ++i) {
    if (r.out[i] == '\n') {
      outs.push_back(r.out.substr(start, i - start));
      start = i + 1;
    }
  }
  ASSERT_EQ(outs.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(*canonicalize(values[i]), outs[i]) << "value " << i;
  }
}

}  // namespace
}  // namespace evident

namespace evident {
namespace {

// Issue #9 item 2: the JCS writer recursed without a bound (a finish with claims ~30,000 levels
// deep overflowed the daemon's stack). It is bounded by kMaxJsonDepth with a stable error.
TEST(Jcs, NestingIsBoundedWithAStableError) {
  auto make = [](int depth) {
    Json v = Json::object();
    Json* p = &v;
    for (int i = 1; i < depth; ++i) p = &((*p)["k"] = Json::object());
    return v;
  };
  auto at = canonicalize(make(kMaxJsonDepth));
  ASSERT_TRUE(at.ok()) << at.error().message;
  auto over = canonicalize(make(kMaxJsonDepth + 1));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, "receipt-noncanonical");
  EXPECT_EQ(over.error().message, "nesting deeper than 64 levels");
  auto deep = domain_digest(kDomainClaims, make(100000));
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.error().code, "receipt-noncanonical");
  Json arrays = Json::array();
  Json* p = &arrays;
  for (int i = 0; i < 100000; ++i) {
    p->push_back(Json::array());
    p = &p->back();
  }
  EXPECT_FALSE(canonicalize(arrays).ok());
}

}  // namespace
}  // namespace evident
