// Receipt v3 commitments and disclosures without X: the commitment digest against vectors that
// npm canonicalize + sha256sum computed (receipts/vectors/commitments.json, make_golden.py --v3),
// the v3 golden's commitments recomputed from its salts, the private record (modes, content),
// `disclose_action` and every way a disclosure or its file can be wrong.
#include <sys/stat.h>

#include <fstream>

#include <gtest/gtest.h>

#include "../../receipts/tests/golden.h"
#include "evident/core/fs.h"
#include "evident/core/sha256.h"
#include "evident/evidence/commitments.h"
#include "evident/receipts/commitment.h"
#include "evident/receipts/verify.h"

namespace evident {
namespace {

using testing::TempDir;
using V = std::vector<std::string>;

unsigned mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 0777;
}

TEST(Commitments, DigestMatchesIndependentVectors) {
  Json doc = testing::read_json(testing::source_path("receipts/vectors/commitments.json"));
  ASSERT_GE(doc["vectors"].size(), 4u);
  for (const Json& v : doc["vectors"]) {
    auto c = commitment_digest(v["value"]["salt"].get<std::string>(),
                               v["value"]["value"].get<std::string>());
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(*c, v["sha256"]) << v.dump();
  }
  // And one by hand: the bytes hashed are the domain, 0x00 and the JCS text.
  const std::string salt(64, '0');
  EXPECT_EQ(*commitment_digest(salt, "a\"b"),
            sha256_hex(std::string("evident/commitment/v1") + '\0' +
                       "{\"salt\":\"" + salt + "\",\"value\":\"a\\\"b\"}"));
  EXPECT_EQ(commitment_digest("ABCD", "x").error().code, "receipt-invalid");
  EXPECT_EQ(commitment_digest(std::string(64, 'A'), "x").error().code, "receipt-invalid");
  EXPECT_EQ(commitment_digest(salt, std::string("\xff", 1)).error().code, "receipt-noncanonical");
  // Fresh salts: 64 hex, never repeated.
  std::string s1 = new_commitment_salt(), s2 = new_commitment_salt();
  EXPECT_TRUE(is_lower_hex(s1, 64));
  EXPECT_NE(s1, s2);
}

TEST(Commitments, CommittedKindsAreTheSecretBearingOnes) {
  for (const auto& k : protocol::kActionKinds) {
    const bool want = k.name == "type" || k.name == "key" || k.name == "paste" || k.name == "hold_key";
    EXPECT_EQ(action_has_commitment(k.name), want) << k.name;
  }
  EXPECT_FALSE(action_has_commitment("nope"));
}

// The v3 golden's private record, as the engine would have written it at close.
std::vector<CommittedValue> golden_secrets(const std::string& name) {
  Json in = testing::read_json(testing::golden_dir(name) + "/input.json");
  std::vector<CommittedValue> out;
  for (std::size_t i = 0; i < in["actions"].size(); ++i) {
    const Json& a = in["actions"][i];
    if (!a.contains("salt")) continue;
    const Json& act = a["action"];
    std::string value = act.contains("text") ? act["text"].get<std::string>() : act["key"].get<std::string>();
    out.push_back(CommittedValue{static_cast<std::int64_t>(i), act["type"], a["salt"], value,
                                 *commitment_digest(a["salt"].get<std::string>(), value)});
  }
  return out;
}

struct Golden {
  TempDir dir;
  std::string state = dir / "state";
  Json receipt = testing::read_json(testing::golden_dir("v3-three-actions") + "/receipt.json");
  std::string sid = receipt["session_id"];
  std::string rid = receipt["receipt_id"];
};

TEST(Commitments, PrivateRecordIsPrivateAndDisclosesWhatVerifies) {
  Golden g;
  auto secrets = golden_secrets("v3-three-actions");
  ASSERT_EQ(secrets.size(), 2u);  // the type and the key
  ASSERT_TRUE(make_private_dir(g.state).ok());
  ASSERT_TRUE(write_session_commitments(g.state, g.sid, g.rid, secrets).ok());
  const std::string path = commitments_path(g.state, g.sid);
  EXPECT_EQ(path, g.state + "/commitments/" + g.sid + ".json");
  EXPECT_EQ(mode_of(path), 0600u);
  EXPECT_EQ(mode_of(g.state + "/commitments"), 0700u);

  for (std::int64_t i : {1, 2}) {
    auto d = disclose_action(g.state, g.receipt, i);
    ASSERT_TRUE(d.ok()) << d.error().message;
    EXPECT_EQ((*d)["schema"], "evident.disclosure/v1");
    EXPECT_EQ((*d)["receipt_id"], g.rid);
    EXPECT_EQ((*d)["action_index"], i);
    EXPECT_EQ(disclosure_shape_problem(*d), "");
    VerifyOptions o;
    o.disclosure = *d;
    VerifyReport rep = verify_receipt(g.receipt, o);
    EXPECT_TRUE(rep.ok) << ::testing::PrintToString(rep.failed_names());
    EXPECT_EQ(rep.checks.back().name, "disclosure_commitment");
  }
  EXPECT_EQ((*disclose_action(g.state, g.receipt, 1))["value"], "hunter2 secret\n");
  EXPECT_EQ((*disclose_action(g.state, g.receipt, 2))["value"], "ctrl+shift+t");
  // No committed action: the click, beyond the end, negative.
  for (std::int64_t i : {0, 3, 64, -1}) {
    EXPECT_EQ(disclose_action(g.state, g.receipt, i).error().code, "disclosure-action") << i;
  }
  // v2 receipts carry no commitments.
  Json v2 = testing::read_json(testing::golden_dir("three-actions") + "/receipt.json");
  EXPECT_EQ(disclose_action(g.state, v2, 1).error().code, "disclosure-action");
}

// A task receipt (receipts/task/stage): its actions sit after their turn events and its record
// is keyed by task_id.
TEST(Commitments, TaskReceiptActionsDisclose) {
  TempDir dir;
  const std::string state = dir / "state";
  ASSERT_TRUE(make_private_dir(state).ok());
  const std::string vec = testing::source_path("receipts/task/stage");
  Json receipt = testing::read_json(vec + "/receipt.json");
  Json input = testing::read_json(vec + "/input.json");
  std::vector<CommittedValue> values;
  for (std::size_t i = 0; i < input["actions"].size(); ++i) {
    const Json& a = input["actions"][i];
    if (!a.contains("salt")) continue;
    const Json& act = a["action"];
    CommittedValue v;
    v.action_index = static_cast<std::int64_t>(i);
    v.action = act["type"];
    v.salt = a["salt"];
    v.value = act.contains("text") ? act["text"].get<std::string>() : act["key"].get<std::string>();
    v.commitment = *commitment_digest(v.salt, v.value);
    values.push_back(v);
  }
  ASSERT_EQ(values.size(), 3u);  // the two typed texts and the key
  ASSERT_TRUE(write_session_commitments(state, receipt["task_id"], receipt["receipt_id"], values).ok());
  for (const auto& v : values) {
    auto d = disclose_action(state, receipt, v.action_index);
    ASSERT_TRUE(d.ok()) << d.error().message;
    EXPECT_EQ((*d)["value"], v.value);
    VerifyOptions o;
    o.disclosure = *d;
    VerifyReport rep = verify_receipt(receipt, o);
    EXPECT_TRUE(rep.ok) << ::testing::PrintToString(rep.failed_names());
  }
  EXPECT_EQ(disclose_action(state, receipt, 0).error().code, "disclosure-action");  // the click
  EXPECT_EQ(disclose_action(state, receipt, 6).error().code, "disclosure-action");  // beyond
}

TEST(Commitments, DiscloseRefusesMissingForeignOrDamagedRecords) {
  Golden g;
  auto secrets = golden_secrets("v3-three-actions");
  EXPECT_EQ(disclose_action(g.state, g.receipt, 1).error().code, "disclosure-unavailable");
  // A record of another receipt id.
  ASSERT_TRUE(write_session_commitments(g.state, g.sid, "ecr-" + std::string(64, 'b'), secrets).ok());
  EXPECT_EQ(disclose_action(g.state, g.receipt, 1).error().code, "disclosure-unavailable");
  // A record whose salt does not recompute the receipt's commitment.
  auto bad = secrets;
  bad[0].salt = std::string(64, 'c');
  ASSERT_TRUE(write_session_commitments(g.state, g.sid, g.rid, bad).ok());
  auto e = disclose_action(g.state, g.receipt, 1);
  EXPECT_EQ(e.error().code, "disclosure-unavailable");
  EXPECT_EQ(e.error().message.find("hunter2"), std::string::npos);
  // Not JSON.
  ASSERT_TRUE(write_file_atomic(commitments_path(g.state, g.sid), "{", 0600).ok());
  EXPECT_EQ(disclose_action(g.state, g.receipt, 1).error().code, "disclosure-unavailable");
  remove_session_commitments(g.state, g.sid);
  EXPECT_FALSE(std::ifstream(commitments_path(g.state, g.sid)).good());
}

TEST(Commitments, WrongDisclosuresFailNamedChecks) {
  Golden g;
  auto secrets = golden_secrets("v3-three-actions");
  Json good = make_disclosure(g.rid, 1, "type", secrets[0].salt, secrets[0].value);
  auto failed = [&](const Json& d) {
    VerifyOptions o;
    o.disclosure = d;
    return verify_receipt(g.receipt, o).failed_names();
  };
  EXPECT_TRUE(failed(good).empty());
  Json d = good;
  d["value"] = "hunter2 secret";  // without the newline
  EXPECT_EQ(failed(d), (V{"disclosure_commitment"}));
  d = good;
  d["salt"] = secrets[1].salt;
  EXPECT_EQ(failed(d), (V{"disclosure_commitment"}));
  d = good;
  d["receipt_id"] = "ecr-" + std::string(64, 'e');
  EXPECT_EQ(failed(d), (V{"disclosure_receipt"}));
  d = good;
  d["action_index"] = 2;
  EXPECT_EQ(failed(d), (V{"disclosure_action", "disclosure_commitment"}));
  d = good;
  d["action_index"] = 99;
  EXPECT_EQ(failed(d), (V{"disclosure_action", "disclosure_commitment"}));
  d = good;
  d["action"] = "key";
  EXPECT_EQ(failed(d), (V{"disclosure_action", "disclosure_commitment"}));
}

TEST(Commitments, DisclosureFilesAreReadStrictly) {
  TempDir dir;
  Golden g;
  auto secrets = golden_secrets("v3-three-actions");
  Json good = make_disclosure(g.rid, 1, "type", secrets[0].salt, secrets[0].value);
  auto load = [&](const std::string& text) {
    std::string p = dir / "d.json";
    EXPECT_TRUE(write_file_atomic(p, text, 0600).ok());
    auto r = load_disclosure_file(p);
    return r.ok() ? std::string("ok") : r.error().code;
  };
  EXPECT_EQ(load(good.dump()), "ok");
  EXPECT_EQ(load_disclosure_file(dir / "missing.json").error().code, "disclosure-unreadable");
  EXPECT_EQ(load_disclosure_file(dir.path()).error().code, "disclosure-unreadable");
  EXPECT_EQ(load(std::string(kMaxDisclosureFileBytes + 1, ' ')), "disclosure-unreadable");
  EXPECT_EQ(load("{"), "disclosure-invalid");
  EXPECT_EQ(load("[]"), "disclosure-invalid");
  std::string dup = good.dump();
  dup.insert(1, "\"action\":\"type\",");
  EXPECT_EQ(load(dup), "disclosure-invalid");
  for (const char* k : {"schema", "receipt_id", "action_index", "action", "salt", "value"}) {
    Json d = good;
    d.erase(k);
    EXPECT_EQ(load(d.dump()), "disclosure-invalid") << k;
  }
  Json d = good;
  d["extra"] = 1;
  EXPECT_EQ(load(d.dump()), "disclosure-invalid");
  d = good;
  d["salt"] = std::string(64, 'A');
  EXPECT_EQ(load(d.dump()), "disclosure-invalid");
  d = good;
  d["action_index"] = -1;
  EXPECT_EQ(load(d.dump()), "disclosure-invalid");
  d = good;
  d["value"] = std::string(4097, 'x');
  EXPECT_EQ(load(d.dump()), "disclosure-invalid");
  d = good;
  d["schema"] = "evident.disclosure/v2";
  EXPECT_EQ(load(d.dump()), "disclosure-invalid");
  // Errors never echo the file's content.
  d = good;
  d["action_index"] = "hunter2";
  std::string p = dir / "e.json";
  ASSERT_TRUE(write_file_atomic(p, d.dump(), 0600).ok());
  EXPECT_EQ(load_disclosure_file(p).error().message.find("hunter2"), std::string::npos);
}

}  // namespace
}  // namespace evident
