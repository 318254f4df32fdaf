// The builder: rebuilds every golden receipt byte for byte from its inputs (goldens whose digests
// were computed by npm canonicalize + sha256sum), strips secrets, refuses malformed input, and
// writes receipt.json atomically with mode 0600.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "evident/core/fs.h"
#include "evident/core/random.h"
#include "evident/receipts/jcs.h"
#include "evident/receipts/receipt.h"
#include "evident/receipts/verify.h"
#include "golden.h"

namespace evident {
namespace {

using testing::golden_dir;
using testing::golden_input;
using testing::read_text;

TEST(Receipt, RebuildsGoldensByteForByte) {
  for (const auto& name : testing::golden_names()) {
    SCOPED_TRACE(name);
    auto receipt = build_receipt(golden_input(name));
    ASSERT_TRUE(receipt.ok()) << receipt.error().message;
    auto bytes = receipt_file_bytes(*receipt);
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(*bytes, read_text(golden_dir(name) + "/receipt.json"));
  }
}

TEST(Receipt, ProjectionRemovesSecrets) {
  EXPECT_EQ(project_action(Json{{"type", "type"}, {"text", "hunter2"}}), (Json{{"type", "type"}}));
  EXPECT_EQ(project_action(Json{{"type", "key"}, {"key", "ctrl+alt+Delete"}}),
            (Json{{"type", "key"}}));
  EXPECT_EQ(project_action(Json{{"type", "paste"}, {"text", "pw"}}), (Json{{"type", "paste"}}));
  EXPECT_EQ(project_action(Json{{"type", "hold_key"}, {"key", "shift"}, {"ms", 100}}),
            (Json{{"type", "hold_key"}, {"ms", 100}}));
  Json click{{"type", "click"}, {"x", 1}, {"y", 2}, {"button", "right"}};
  EXPECT_EQ(project_action(click), click);
  Json scroll{{"type", "scroll"}, {"x", 1}, {"y", 2}, {"direction", "up"}, {"amount", 3}};
  EXPECT_EQ(project_action(scroll), scroll);
  EXPECT_EQ(project_action(Json::array()), Json::object());

  // The typed text appears nowhere in the built receipt, not even as its digest.
  ReceiptInput in = golden_input("three-actions");
  auto receipt = build_receipt(in);
  ASSERT_TRUE(receipt.ok());
  std::string bytes = *receipt_file_bytes(*receipt);
  EXPECT_EQ(bytes.find("hunter2"), std::string::npos);
  EXPECT_EQ(bytes.find("ctrl+shift+t"), std::string::npos);
  const Json& event = (*receipt)["transcript"][2];
  ASSERT_EQ(event["action"], "type");
  // printf 'evident/action-projection/v2\0{"type":"type"}' | sha256sum  (docs/receipts.md)
  EXPECT_EQ(event["projection_sha256"],
            "5eaba2c95c335969d11a69cff0732d39c2af67eed53a1fe67335aabf6675ae3f");
  EXPECT_NE(event["projection_sha256"],
            *domain_digest(kDomainActionProjection, in.actions[1].projection));
}

TEST(Receipt, ClaimsLimit) {
  ReceiptInput in = golden_input("zero-actions");
  in.claims = Json::array();
  auto r = build_receipt(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "session-claims");

  // {"a":"xxx…"} is 8 bytes + the string: exactly 16384 passes, 16385 fails.
  in.claims = Json{{"a", std::string(16384 - 8, 'x')}};
  ASSERT_EQ(canonicalize(in.claims)->size(), 16384u);
  EXPECT_TRUE(build_receipt(in).ok());
  in.claims = Json{{"a", std::string(16384 - 7, 'x')}};
  r = build_receipt(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "session-claims");

  in.claims = Json{{"f", 0.5}};
  r = build_receipt(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "receipt-noncanonical");
}

TEST(Receipt, RefusesMalformedInput) {
  auto expect_invalid = [](ReceiptInput in, const std::string& what) {
    auto r = build_receipt(in);
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.error().code, "receipt-invalid") << what;
  };
  const ReceiptInput good = golden_input("three-actions");
  ASSERT_TRUE(build_receipt(good).ok());
  ReceiptInput in = good;
  in.session_id = "ses-XYZ";
  expect_invalid(in, "session id");
  in = good;
  in.actions[0].frame_sha256 = "abc";
  expect_invalid(in, "frame digest");
  in = good;
  in.actions[0].status = "failed";
  expect_invalid(in, "failed status");
  in = good;
  in.actions[0].type = "paste";
  in.actions[0].projection = Json{{"type", "paste"}, {"text", "x"}};
  expect_invalid(in, "forbidden action");
  in = good;
  in.actions[0].type = "double_click";
  expect_invalid(in, "projection type differs");
  in = good;
  in.frozen_wall_ms = in.started_wall_ms - 1;
  expect_invalid(in, "time order");
  in = good;
  in.actor = Json{{"kind", "remote"}, {"uid", 1}};
  expect_invalid(in, "actor");
  in = good;
  in.input_event_count = 0;
  expect_invalid(in, "input events");
  in = good;
  in.binding.attempt_id = "";
  expect_invalid(in, "attempt id");
  in = good;
  in.actions.resize(65, good.actions[0]);
  expect_invalid(in, "65 actions");
}

// A bound browser workspace (docs/receipts.md §15): the member is present exactly when the input
// has one, covered by receipt_id, only in v3, and a malformed one is refused by the builder's
// self-check (the verifier's schema check).
TEST(Receipt, BindsABrowserWorkspaceInV3Only) {
  const ReceiptInput plain = golden_input("v3-three-actions");
  auto without = build_receipt(plain);
  ASSERT_TRUE(without.ok());
  EXPECT_FALSE(without->contains("browser"));
  ReceiptInput in = plain;
  in.browser = BrowserBindingRecord{"browser-" + std::string(32, 'a'), "Chrome/140.0.7339.185",
                                    "0F1E2D3C4B5A69788796A5B4C3D2E1F0", std::string(64, 'b'), 320, 240};
  auto with = build_receipt(in);
  ASSERT_TRUE(with.ok()) << with.error().message;
  EXPECT_EQ((*with)["browser"], (Json{{"workspace_id", "browser-" + std::string(32, 'a')},
                                      {"browser_version", "Chrome/140.0.7339.185"},
                                      {"target_id", "0F1E2D3C4B5A69788796A5B4C3D2E1F0"},
                                      {"profile_sha256", std::string(64, 'b')},
                                      {"viewport", {{"width", 320}, {"height", 240}}}}));
  EXPECT_NE((*with)["receipt_id"], (*without)["receipt_id"]);
  EXPECT_TRUE(verify_receipt(*with, VerifyOptions{}).ok);
  Json changed = *with;
  changed["browser"]["viewport"]["width"] = 321;
  EXPECT_EQ(verify_receipt(changed, VerifyOptions{}).failed_names(), std::vector<std::string>{"receipt_id"});

  auto expect_invalid = [](ReceiptInput bad, const std::string& what) {
    auto r = build_receipt(bad);
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.error().code, "receipt-invalid") << what;
  };
  ReceiptInput bad = in;
  bad.browser->workspace_id = "app-" + std::string(32, 'a');
  expect_invalid(bad, "workspace id");
  bad = in;
  bad.browser->browser_version = "Chrome\n";
  expect_invalid(bad, "version with a newline");
  bad = in;
  bad.browser->target_id = "../x";
  expect_invalid(bad, "target id");
  bad = in;
  bad.browser->profile_sha256 = "xyz";
  expect_invalid(bad, "profile digest");
  bad = in;
  bad.browser->width = 63;
  expect_invalid(bad, "viewport");
  bad = in;
  bad.browser->height = 8193;
  expect_invalid(bad, "viewport");
  ReceiptInput v2 = golden_input("three-actions");
  v2.browser = in.browser;
  expect_invalid(v2, "v2");
}

TEST(Receipt, WritesAtomicallyWithMode0600) {
  std::string dir = "/tmp/evident-receipts-test-" + random_hex(8);
  ASSERT_TRUE(make_private_dir(dir).ok());
  auto receipt = build_receipt(golden_input("zero-actions"));
  ASSERT_TRUE(receipt.ok());
  ASSERT_TRUE(write_receipt_atomic(dir, *receipt).ok());
  std::string path = dir + "/receipt.json";
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(read_text(path), read_text(golden_dir("zero-actions") + "/receipt.json"));
  auto loaded = load_receipt_file(path);
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(verify_receipt(*loaded, VerifyOptions{}).ok);
  // Overwrite in place with another receipt: a reader sees one or the other, whole.
  auto other = build_receipt(golden_input("three-actions"));
  ASSERT_TRUE(write_receipt_atomic(dir, *other).ok());
  EXPECT_EQ(read_text(path), read_text(golden_dir("three-actions") + "/receipt.json"));
  EXPECT_FALSE(write_receipt_atomic(dir + "/missing/sub", *other).ok());
  ASSERT_TRUE(remove_tree(dir).ok());
}

// actions.json: the golden files were written by receipts/golden/make_actions.py from the
// Python verifier's projections, each checked against the golden receipt's digests.
TEST(ActionsFile, MatchesGoldensByteForByte) {
  for (const auto& name : testing::golden_names()) {
    SCOPED_TRACE(name);
    ReceiptInput in = golden_input(name);
    auto receipt = build_receipt(in);
    ASSERT_TRUE(receipt.ok());
    auto doc = build_actions_file(in, *receipt);
    ASSERT_TRUE(doc.ok()) << doc.error().message;
    auto bytes = canonicalize(*doc);
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(*bytes + "\n", read_text(golden_dir(name) + "/actions.json"));
    // Every projection hashes to its event's projection_sha256 and holds no secret.
    const Json& events = (*receipt)["transcript"];
    for (const Json& entry : (*doc)["actions"]) {
      const Json& event = events[entry["event_index"].get<std::size_t>()];
      EXPECT_EQ(event["kind"], "action");
      EXPECT_EQ(*domain_digest(kDomainActionProjection, entry["projection"]),
                event["projection_sha256"]);
      EXPECT_FALSE(entry["projection"].contains("text"));
      EXPECT_FALSE(entry["projection"].contains("key"));
    }
  }
}

TEST(ActionsFile, CarriesElapsedAndRefusesAMismatchedReceipt) {
  ReceiptInput in = golden_input("three-actions");
  in.actions[1].elapsed_ms = 42;
  auto receipt = build_receipt(in);
  ASSERT_TRUE(receipt.ok());
  auto doc = build_actions_file(in, *receipt);
  ASSERT_TRUE(doc.ok());
  EXPECT_TRUE((*doc)["actions"][0]["elapsed_ms"].is_null());
  EXPECT_EQ((*doc)["actions"][1]["elapsed_ms"], 42);
  // Input and receipt must describe the same actions.
  ReceiptInput other = in;
  other.actions.pop_back();
  auto bad = build_actions_file(other, *receipt);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, "receipt-invalid");
  other = in;
  other.actions[0].projection = Json{{"type", "click"}, {"x", 1}, {"y", 1}};
  bad = build_actions_file(other, *receipt);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, "receipt-invalid");
}

TEST(ActionsFile, WrittenBesideTheReceiptWithMode0600) {
  std::string dir = "/tmp/evident-receipts-test-" + random_hex(8);
  ASSERT_TRUE(make_private_dir(dir).ok());
  ReceiptInput in = golden_input("three-actions");
  auto receipt = build_receipt(in);
  ASSERT_TRUE(receipt.ok());
  ASSERT_TRUE(write_evidence_files(dir, in, *receipt).ok());
  for (const char* file : {"/actions.json", "/receipt.json"}) {
    struct stat st {};
    ASSERT_EQ(::stat((dir + file).c_str(), &st), 0) << file;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << file;
  }
  EXPECT_EQ(read_text(dir + "/actions.json"), read_text(golden_dir("three-actions") + "/actions.json"));
  EXPECT_EQ(read_text(dir + "/receipt.json"), read_text(golden_dir("three-actions") + "/receipt.json"));
  ASSERT_TRUE(remove_tree(dir).ok());
}

}  // namespace
}  // namespace evident
