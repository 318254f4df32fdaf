// Signing at close and `evident verify --key`: a golden receipt sealed as the engine seals it,
// then every way the envelope can be wrong, and the forged receipt of issue #12.
#include <sys/stat.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "../../receipts/tests/golden.h"
#include "evident/core/fs.h"
#include "evident/evidence/dsse.h"
#include "evident/evidence/session_evidence.h"
#include "evident/evidence/runlog.h"
#include "evident/evidence/signed_verify.h"
#include "evident/evidence/merkle.h"
#include "evident/receipts/task_receipt.h"
#include "evident/receipts/jcs.h"
#include "evident/receipts/receipt.h"
#include "evident/receipts/verify.h"

namespace evident {
namespace {

using testing::TempDir;

struct Sealed {
  TempDir dir;
  std::string state;
  std::string evidence;
  Json receipt;
  Ed25519Key key = *Ed25519Key::generate();
  Json envelope;
};

// Copies golden `name` into an evidence dir and seals it like a close does.
void seal(Sealed& s, const std::string& name) {
  s.state = s.dir / "state";
  s.evidence = s.dir / "evidence";
  ASSERT_TRUE(make_private_dir(s.evidence).ok());
  namespace fs = std::filesystem;
  fs::copy_file(testing::golden_dir(name) + "/receipt.json", s.evidence + "/receipt.json");
  for (const auto& f : fs::directory_iterator(testing::golden_dir(name) + "/frames")) {
    fs::copy_file(f.path(), s.evidence + "/" + f.path().filename().string());
  }
  s.receipt = testing::read_json(s.evidence + "/receipt.json");
  SessionEvidence ev(s.state);
  ASSERT_TRUE(ev.key().ok());
  s.key = *ev.key();
  auto sealed = ev.seal_closed(s.evidence, s.receipt, 1767225600000);
  ASSERT_TRUE(sealed.ok()) << sealed.error().message;
  s.envelope = testing::read_json(s.evidence + "/receipt.dsse.json");
}

std::vector<std::string> failed(const AuthResult& r) {
  std::vector<std::string> out;
  for (const auto& c : r.checks) if (!c.ok) out.push_back(c.name);
  return out;
}

AuthResult check(const Sealed& s, const std::vector<Ed25519Key>& keys) {
  return verify_receipt_envelope(testing::read_text(s.evidence + "/receipt.json"), s.receipt,
                                 s.evidence + "/receipt.dsse.json", keys);
}

void write_envelope(const Sealed& s, const Json& env) {
  testing::write_text(s.evidence + "/receipt.dsse.json", env.dump());
}

// Re-signs a modified statement with the real key (what only the key holder can do).
Json resign(const Sealed& s, const Json& statement, const std::string& type = std::string(kDssePayloadType)) {
  auto env = sign_envelope(s.key, type, *canonicalize(statement));
  return *env;
}

Json statement_of(const Json& env) {
  return *parse_json_strict(*base64_decode(env["payload"].get<std::string>()), 1 << 20, "t");
}

TEST(SignedVerify, EverySealedGoldenAuthenticates) {
  for (const auto& name : testing::verified_names()) {
    Sealed s;
    seal(s, name);
    auto r = check(s, {s.key});
    EXPECT_TRUE(r.authenticated) << name << " " << ::testing::PrintToString(failed(r));
    EXPECT_EQ(r.key_id, s.key.key_id());
    ASSERT_EQ(r.checks.size(), 6u);
    Json st = statement_of(s.envelope);
    EXPECT_EQ(st["predicate"]["receipt_id"], s.receipt["receipt_id"]);
    EXPECT_EQ(st["predicate"]["log"]["index"], 0);
    EXPECT_EQ(st["predicate"]["log"]["entry"]["outcome"], "closed");
    struct stat stt {};
    ASSERT_EQ(::stat((s.evidence + "/receipt.dsse.json").c_str(), &stt), 0);
    EXPECT_EQ(stt.st_mode & 0777, 0600u);
  }
}

TEST(SignedVerify, WrongKeyAndNoKey) {
  Sealed s;
  seal(s, "three-actions");
  auto other = *Ed25519Key::generate();
  auto r = check(s, {other});
  EXPECT_FALSE(r.authenticated);
  EXPECT_EQ(failed(r), (std::vector<std::string>{"signature", "log_inclusion"}));
  EXPECT_TRUE(r.key_id.is_null());
  // The right key among others is found whatever the keyid hint says.
  r = check(s, {other, s.key});
  EXPECT_TRUE(r.authenticated);
  Json env = s.envelope;
  env["signatures"][0]["keyid"] = "ed25519:" + std::string(64, '0');
  write_envelope(s, env);
  EXPECT_TRUE(check(s, {s.key}).authenticated);
}

TEST(SignedVerify, TheForgedReceiptOfTheIssueFailsWithAKey) {
  Sealed s;
  seal(s, "three-actions");
  // Claims, actor and job changed, every digest recomputed by the builder: a consistent receipt.
  ReceiptInput in = testing::golden_input("three-actions");
  in.claims = Json{{"background", "red"}, {"forged", true}};
  in.actor["uid"] = 4242;
  in.binding.job_sha256 = std::string(64, 'f');
  auto forged = build_receipt(in);
  ASSERT_TRUE(forged.ok());
  ASSERT_TRUE(write_receipt_atomic(s.evidence, *forged).ok());
  EXPECT_TRUE(verify_receipt(*forged, VerifyOptions{}).ok);  // integrity alone: "verified"
  s.receipt = *forged;
  auto r = check(s, {s.key});
  EXPECT_FALSE(r.authenticated);
  EXPECT_EQ(failed(r), (std::vector<std::string>{"statement", "subjects", "log_inclusion"}));
}

TEST(SignedVerify, BadEnvelopesAreNamedFailingChecks) {
  Sealed s;
  seal(s, "zero-actions");
  const Json good = s.envelope;
  struct Case {
    std::string what;
    std::function<void()> make;
    std::vector<std::string> want;
  };
  const std::vector<std::string> all = {"envelope", "payload_type", "signature", "statement", "subjects", "log_inclusion"};
  auto set_text = [&](const std::string& t) { testing::write_text(s.evidence + "/receipt.dsse.json", t); };
  std::vector<Case> cases = {
      {"not json", [&] { set_text("{\"payload\":"); }, all},
      {"empty file", [&] { set_text(""); }, all},
      {"an array", [&] { set_text("[]"); }, all},
      {"duplicate key", [&] { set_text("{\"payload\":\"\",\"payload\":\"\",\"payloadType\":\"x\",\"signatures\":[]}"); }, all},
      {"missing payload", [&] { Json e = good; e.erase("payload"); write_envelope(s, e); }, all},
      {"extra member", [&] { Json e = good; e["x"] = 1; write_envelope(s, e); }, all},
      {"payload not base64", [&] { Json e = good; e["payload"] = "@@@@"; write_envelope(s, e); }, all},
      {"no signatures", [&] { Json e = good; e["signatures"] = Json::array(); write_envelope(s, e); }, all},
      {"signature not an object", [&] { Json e = good; e["signatures"] = Json::array({1}); write_envelope(s, e); }, all},
      {"two signatures", [&] { Json e = good; e["signatures"].push_back(good["signatures"][0]); write_envelope(s, e); },
       {"signature", "log_inclusion"}},
      {"truncated signature", [&] {
         Json e = good;
         std::string sig = *base64_decode(e["signatures"][0]["sig"].get<std::string>());
         e["signatures"][0]["sig"] = base64_encode(sig.substr(0, 63));
         write_envelope(s, e); }, {"signature", "log_inclusion"}},
      {"signature of other bytes", [&] {
         Json e = good;
         e["signatures"][0]["sig"] = base64_encode(*s.key.sign("other"));
         write_envelope(s, e); }, {"signature", "log_inclusion"}},
      {"payload changed, old signature", [&] {
         Json st = statement_of(good);
         st["predicate"]["receipt_id"] = "ecr-" + std::string(64, '0');
         Json e = good;
         e["payload"] = base64_encode(*canonicalize(st));
         write_envelope(s, e); }, {"signature", "statement", "log_inclusion"}},
      {"wrong payload type (re-signed)", [&] { write_envelope(s, resign(s, statement_of(good), "application/json")); },
       {"payload_type"}},
      {"payloadType swapped, old signature", [&] { Json e = good; e["payloadType"] = "application/json"; write_envelope(s, e); },
       {"payload_type", "signature", "log_inclusion"}},
      {"statement of another type", [&] { Json st = statement_of(good); st["_type"] = "https://in-toto.io/Statement/v0.1"; write_envelope(s, resign(s, st)); },
       {"statement"}},
      {"another predicate type", [&] { Json st = statement_of(good); st["predicateType"] = "urn:x"; write_envelope(s, resign(s, st)); },
       {"statement"}},
      {"a frame subject missing", [&] { Json st = statement_of(good); st["subject"].erase(st["subject"].size() - 1); write_envelope(s, resign(s, st)); },
       {"subjects"}},
      {"receipt digest wrong", [&] { Json st = statement_of(good); st["subject"][0]["digest"]["sha256"] = std::string(64, '0'); write_envelope(s, resign(s, st)); },
       {"subjects"}},
      {"no log", [&] { Json st = statement_of(good); st["predicate"]["log"] = nullptr; write_envelope(s, resign(s, st)); },
       {"log_inclusion"}},
      {"proof for the wrong tree size", [&] { Json st = statement_of(good); st["predicate"]["log"]["index"] = 1; write_envelope(s, resign(s, st)); },
       {"log_inclusion"}},
      {"tampered log entry", [&] { Json st = statement_of(good); st["predicate"]["log"]["entry"]["ended_at"] = "2027-01-01T00:00:00.000Z"; write_envelope(s, resign(s, st)); },
       {"log_inclusion"}},
      {"entry of another outcome", [&] { Json st = statement_of(good); st["predicate"]["log"]["entry"]["outcome"] = "aborted"; write_envelope(s, resign(s, st)); },
       {"log_inclusion"}},
      {"tree head unsigned", [&] { Json st = statement_of(good); st["predicate"]["log"]["tree_head"]["signature"] = "AAAA"; write_envelope(s, resign(s, st)); },
       {"log_inclusion"}},
      {"proof with a bad hash", [&] { Json st = statement_of(good); st["predicate"]["log"]["inclusion_proof"] = Json::array({"zz"}); write_envelope(s, resign(s, st)); },
       {"log_inclusion"}},
  };
  for (const auto& c : cases) {
    c.make();
    auto r = check(s, {s.key});
    EXPECT_FALSE(r.authenticated) << c.what;
    EXPECT_EQ(failed(r), c.want) << c.what;
  }
  ::unlink((s.evidence + "/receipt.dsse.json").c_str());
  EXPECT_EQ(failed(check(s, {s.key})), all);
}

// Task receipts (docs/receipts.md §12): signed with predicateType urn:evident:task-receipt:v1
// and a run-log entry of kind "task" (id task_id, task_sha256), sealed here as the task lane's
// close does; a statement of the other kind, or a session entry, is refused.
struct SealedTask {
  TempDir dir;
  std::string evidence;
  Json receipt;
  Ed25519Key key = *Ed25519Key::generate();
  Json good;
};

void seal_task(SealedTask& s, const std::string& name, const std::string& entry_kind = "task") {
  s.evidence = s.dir / "evidence";
  ASSERT_TRUE(make_private_dir(s.evidence).ok());
  namespace fs = std::filesystem;
  const std::string src = testing::source_path("receipts/task/" + name);
  fs::copy_file(src + "/receipt.json", s.evidence + "/receipt.json");
  for (const auto& f : fs::directory_iterator(src + "/frames")) {
    fs::copy_file(f.path(), s.evidence + "/" + f.path().filename().string());
  }
  s.receipt = testing::read_json(s.evidence + "/receipt.json");
  RunLog log(s.dir / "state");
  Json entry{{"kind", entry_kind},
             {"id", entry_kind == "task" ? s.receipt["task_id"] : Json("ses-" + std::string(32, 'a'))},
             {"attempt_id", s.receipt["binding"]["attempt_id"]},
             {entry_kind == "task" ? "task_sha256" : "job_sha256", s.receipt["task_sha256"]},
             {"outcome", "closed"},
             // (a session entry must name an ecr- receipt: it cannot describe this one)
             {"receipt_id", entry_kind == "task" ? s.receipt["receipt_id"]
                                                 : Json("ecr-" + s.receipt["receipt_id"].get<std::string>().substr(4))},
             {"ended_at", s.receipt["completed_at"]}};
  auto appended = log.append(entry, s.key, false);
  ASSERT_TRUE(appended.ok()) << appended.error().message;
  Json proof = Json::array();
  for (const auto& h : appended->inclusion_proof) proof.push_back(hash_hex(h));
  Json l{{"index", appended->index}, {"tree_head", appended->tree_head},
         {"entry", appended->entry}, {"inclusion_proof", proof}};
  ASSERT_TRUE(write_receipt_envelope(s.evidence, testing::read_text(s.evidence + "/receipt.json"),
                                     s.receipt, l, s.key).ok());
  s.good = testing::read_json(s.evidence + "/receipt.dsse.json");
}

AuthResult check_task(const SealedTask& s) {
  return verify_receipt_envelope(testing::read_text(s.evidence + "/receipt.json"), s.receipt,
                                 s.evidence + "/receipt.dsse.json", {s.key});
}

TEST(SignedVerify, TaskReceiptsAreSignedAsTaskReceipts) {
  for (const std::string name : {"stage", "attest"}) {
    SealedTask s;
    seal_task(s, name);
    EXPECT_EQ(predicate_type_for(s.receipt), kTaskReceiptPredicateType);
    Json st = statement_of(s.good);
    EXPECT_EQ(st["predicateType"], "urn:evident:task-receipt:v1");
    auto r = check_task(s);
    EXPECT_TRUE(r.authenticated) << name << " " << ::testing::PrintToString(failed(r));
    // Every frame the transcript names (turn events' included) is a subject.
    EXPECT_EQ(st["subject"].size(), 1 + receipt_frame_digests(s.receipt).size());
    // Signed as a session receipt (re-signed by the key holder): refused.
    Json wrong = st;
    wrong["predicateType"] = std::string(kSessionPredicateType);
    auto env = sign_envelope(s.key, kDssePayloadType, *canonicalize(wrong));
    testing::write_text(s.evidence + "/receipt.dsse.json", env->dump());
    EXPECT_EQ(failed(check_task(s)), (std::vector<std::string>{"statement"})) << name;
  }
  // A session receipt signed with the task predicate: refused.
  Sealed sess;
  seal(sess, "v3-three-actions");
  Json st = statement_of(sess.envelope);
  EXPECT_EQ(st["predicateType"], std::string(kSessionPredicateType));
  st["predicateType"] = std::string(kTaskReceiptPredicateType);
  write_envelope(sess, resign(sess, st));
  EXPECT_EQ(failed(check(sess, {sess.key})), (std::vector<std::string>{"statement"}));
  // A task receipt whose log entry is a session's (kind, id, job_sha256): refused.
  SealedTask t;
  seal_task(t, "stage", "session");
  EXPECT_EQ(failed(check_task(t)), (std::vector<std::string>{"log_inclusion"}));
  // The entry's task_sha256 must be the receipt's.
  SealedTask u;
  seal_task(u, "stage");
  Json ust = statement_of(u.good);
  ust["predicate"]["log"]["entry"]["task_sha256"] = std::string(64, '0');
  auto uenv = sign_envelope(u.key, kDssePayloadType, *canonicalize(ust));
  testing::write_text(u.evidence + "/receipt.dsse.json", uenv->dump());
  EXPECT_EQ(failed(check_task(u)), (std::vector<std::string>{"log_inclusion"}));
}

// The CLI: JSON members, exit codes, the plain warning without a key.
TEST(SignedVerify, CliAuthenticatesAndWarnsWithoutAKey) {
  const std::string bin = std::string(EVIDENT_BINARY_DIR) + "/engine/cli/evident";
  if (!testing::path_exists(bin)) GTEST_SKIP() << "evident is not built";
  Sealed s;
  seal(s, "three-actions");
  const std::string pub = s.state + "/keys/signing.pub";
  const std::string rec = s.evidence + "/receipt.json";
  auto r = testing::run_command(testing::shell_quote(bin) + " verify " + rec + " --frames " + s.evidence +
                                " --key " + pub + " --json");
  EXPECT_EQ(r.exit_status, 0) << r.out;
  Json j = *parse_json_strict(r.out, 1 << 20, "t");
  EXPECT_EQ(j["authenticated"], true);
  EXPECT_EQ(j["key_id"], s.key.key_id());
  r = testing::run_command(testing::shell_quote(bin) + " verify " + rec + " --trusted-keys " + s.state + "/keys --json");
  EXPECT_EQ(r.exit_status, 0) << r.out;
  r = testing::run_command(testing::shell_quote(bin) + " verify " + rec);
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_NE(r.out.find("NOT AUTHENTICATED"), std::string::npos);
  EXPECT_NE(r.out.find("proves nothing about who made it"), std::string::npos);
  r = testing::run_command(testing::shell_quote(bin) + " verify " + rec + " --json");
  j = *parse_json_strict(r.out, 1 << 20, "t");
  EXPECT_EQ(j["authenticated"], false);
  EXPECT_TRUE(j["key_id"].is_null());
  // A key file that is not a key: a usage error, nothing verified.
  r = testing::run_command(testing::shell_quote(bin) + " verify " + rec + " --key " + rec + " --json");
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_EQ(parse_json_strict(r.out, 1 << 20, "t")->at("error")["code"], "key-invalid");
  // The forged receipt: exit 1 with a key, authenticated false.
  ReceiptInput in = testing::golden_input("three-actions");
  in.claims = Json{{"background", "red"}, {"forged", true}};
  in.actor["uid"] = 4242;
  in.binding.job_sha256 = std::string(64, 'f');
  ASSERT_TRUE(write_receipt_atomic(s.evidence, *build_receipt(in)).ok());
  r = testing::run_command(testing::shell_quote(bin) + " verify " + rec + " --key " + pub + " --json");
  EXPECT_EQ(r.exit_status, 1);
  j = *parse_json_strict(r.out, 1 << 20, "t");
  EXPECT_EQ(j["authenticated"], false);
  EXPECT_EQ(j["error"]["message"], "failed checks: statement, subjects, log_inclusion");
}

}  // namespace
}  // namespace evident
