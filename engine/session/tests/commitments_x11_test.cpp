// Receipt v3 of a real session (in-process engine, real Xvfb, the fixture app that logs what it
// received): engine.host_id, per-action input_events summing to input_event_count, salted
// commitments for type/key/hold_key whose salts and values sit only in the state dir's private
// record, disclosures that verify and wrong ones that fail, and a grep of every file the engine
// wrote for the typed text and the key names.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include <gtest/gtest.h>

#include "evident/evidence/commitments.h"
#include "evident/evidence/keys.h"
#include "evident/receipts/commitment.h"
#include "evident/receipts/verify.h"
#include "engine_harness.h"

namespace evident {
namespace {

namespace fs = std::filesystem;
using testing::code_of;
using testing::EngineHarness;

Json op_req(const std::string& op, const std::string& sid, std::int64_t seq) {
  return Json{{"op", op}, {"session_id", sid}, {"sequence", seq}};
}

std::string file_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

unsigned mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 0777;
}

TEST(CommitmentsX11, RealSessionCommitsSecretsDisclosesOneAndLeaksNone) {
  // Unique secrets, so a hit can only come from this session.
  const std::string typed = "Sesame-" + random_hex(6) + "-typed";
  const std::string key = "ctrl+a";
  EngineHarness h;
  ASSERT_FALSE(h.launch_app().empty());
  Json b = h.begin("attempt-commitments");
  ASSERT_EQ(code_of(b), "ok") << b.dump();
  const std::string sid = b["session_id"];
  const std::string state = h.root() + "/state";
  Json acts = Json::array({Json{{"type", "click"}, {"x", 100}, {"y", 40}},
                           Json{{"type", "type"}, {"text", typed}},
                           Json{{"type", "key"}, {"key", key}},
                           Json{{"type", "hold_key"}, {"key", "shift"}, {"ms", 30}},
                           Json{{"type", "screenshot"}}});
  Json a = h.session(Json{{"op", "actions"}, {"session_id", sid}, {"sequence", 0}, {"actions", acts}});
  ASSERT_EQ(code_of(a), "ok") << a.dump();
  // The app received the text (its own log), so the commitment is to what was really typed.
  ASSERT_TRUE(h.log().wait_for([&](const std::vector<Json>& ev) {
    for (const auto& e : ev) {
      if (e["type"] == "text" && e["value"].get<std::string>().find(typed) != std::string::npos) {
        return true;
      }
    }
    return false;
  })) << "the fixture app did not receive the typed text";
  Json f = h.session(op_req("freeze", sid, 1));
  ASSERT_EQ(code_of(f), "ok") << f.dump();
  Json o = h.session(Json{{"op", "observe"}, {"session_id", sid}, {"sequence", 2},
                          {"pre_observation_sha256", f["frame"]["sha256"]}});
  ASSERT_EQ(code_of(o), "ok") << o.dump();
  Json fin = h.session(Json{{"op", "finish"}, {"session_id", sid}, {"sequence", 3},
                            {"observation_sha256", o["frame"]["sha256"]}, {"claims", Json::object()}});
  ASSERT_EQ(code_of(fin), "ok") << fin.dump();
  const std::string commitments_file = commitments_path(state, sid);
  // Only close keeps secrets on disk.
  EXPECT_FALSE(fs::exists(commitments_file));
  Json c = h.session(op_req("close", sid, 4));
  ASSERT_EQ(code_of(c), "ok") << c.dump();

  auto receipt = load_receipt_file(c["receipt_path"]);
  ASSERT_TRUE(receipt.ok());
  const Json& r = *receipt;
  EXPECT_EQ(r["schema"], "evident.session-receipt/v3");
  auto host = host_id(state);
  ASSERT_TRUE(host.ok());
  EXPECT_EQ(r["engine"]["host_id"], *host);
  VerifyOptions vo;
  vo.frames_dir = b["evidence_dir"];
  VerifyReport rep = verify_receipt(r, vo);
  EXPECT_TRUE(rep.ok) << ::testing::PrintToString(rep.failed_names());
  std::vector<std::string> names;
  for (const auto& ch : rep.checks) names.push_back(ch.name);
  EXPECT_NE(std::find(names.begin(), names.end(), "input_flags"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "projections"), names.end());

  // Counters: each event's input_events is what the executor counted; the sum is the snapshot's.
  std::int64_t sum = 0;
  const Json& t = r["transcript"];
  for (std::size_t i = 1; i <= 5; ++i) sum += t[i]["input_events"].get<std::int64_t>();
  EXPECT_EQ(sum, r["input_event_count"]);
  EXPECT_EQ(sum, a["input_event_count"]);
  EXPECT_GE(t[2]["input_events"].get<std::int64_t>(), 2 * static_cast<std::int64_t>(typed.size()));
  EXPECT_EQ(t[5]["input_events"], 0);  // screenshot
  EXPECT_EQ(t[5]["input"], false);
  // Commitments exactly on type, key, hold_key; all distinct (fresh salts).
  EXPECT_FALSE(t[1].contains("commitment"));
  EXPECT_FALSE(t[5].contains("commitment"));
  std::set<std::string> commits;
  for (std::size_t i = 2; i <= 4; ++i) {
    ASSERT_TRUE(t[i].contains("commitment")) << t[i].dump();
    commits.insert(t[i]["commitment"].get<std::string>());
  }
  EXPECT_EQ(commits.size(), 3u);

  // The private record: 0600 in a 0700 directory of the state dir, outside the evidence dir.
  ASSERT_TRUE(fs::exists(commitments_file));
  EXPECT_EQ(mode_of(commitments_file), 0600u);
  EXPECT_EQ(mode_of(state + "/commitments"), 0700u);
  EXPECT_EQ(commitments_file.rfind(b["evidence_dir"].get<std::string>(), 0), std::string::npos);

  // Disclose the typed text (action 1) and the key (action 2): both verify.
  auto d1 = disclose_action(state, r, 1);
  ASSERT_TRUE(d1.ok()) << d1.error().message;
  EXPECT_EQ((*d1)["value"], typed);
  EXPECT_EQ((*d1)["action"], "type");
  auto d2 = disclose_action(state, r, 2);
  ASSERT_TRUE(d2.ok());
  EXPECT_EQ((*d2)["value"], key);
  auto run = [&](const Json& d) {
    VerifyOptions opts;
    opts.disclosure = d;
    std::vector<std::string> failed = verify_receipt(r, opts).failed_names();
    return failed;
  };
  EXPECT_TRUE(run(*d1).empty()) << ::testing::PrintToString(run(*d1));
  EXPECT_TRUE(run(*d2).empty());
  using V = std::vector<std::string>;
  Json wrong = *d1;
  wrong["value"] = typed + "x";
  EXPECT_EQ(run(wrong), (V{"disclosure_commitment"}));
  wrong = *d1;
  wrong["salt"] = new_commitment_salt();
  EXPECT_EQ(run(wrong), (V{"disclosure_commitment"}));
  wrong = *d1;
  wrong["action_index"] = 2;  // the key's commitment, the text's salt and value
  EXPECT_EQ(run(wrong), (V{"disclosure_action", "disclosure_commitment"}));  // kinds differ
  wrong["action"] = "key";
  EXPECT_EQ(run(wrong), (V{"disclosure_commitment"}));
  wrong = *d1;
  wrong["action_index"] = 0;  // the click: no commitment
  EXPECT_EQ(run(wrong), (V{"disclosure_action", "disclosure_commitment"}));
  EXPECT_EQ(disclose_action(state, r, 0).error().code, "disclosure-action");
  EXPECT_EQ(disclose_action(state, r, 5).error().code, "disclosure-action");
  EXPECT_EQ(disclose_action(h.root() + "/elsewhere", r, 1).error().code, "disclosure-unavailable");

  // Neither the typed text nor the key name is in any file the engine wrote, except the
  // private record: evidence dir (receipt, envelope, actions.json, frames), run log, keys,
  // runtime dir (app output, scratch). The harness's event log of the fixture app is not the
  // engine's and is skipped.
  std::size_t scanned = 0;
  for (const std::string& dir : {state, h.root() + "/run"}) {
    if (!fs::exists(dir)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      const std::string p = entry.path().string();
      EXPECT_EQ(p.find(typed), std::string::npos) << "a file name holds the typed text";
      if (p == commitments_file) continue;
      const std::string text = file_text(p);
      ++scanned;
      EXPECT_EQ(text.find(typed), std::string::npos) << p << " holds the typed text";
      EXPECT_EQ(text.find("\"" + key + "\""), std::string::npos) << p << " holds the key name";
    }
  }
  EXPECT_GE(scanned, 6u);  // receipt, envelope, actions, frames, log files, keys at least
  EXPECT_NE(file_text(commitments_file).find(typed), std::string::npos);
}

// A session that is aborted after finish keeps neither a receipt nor a private record.
TEST(CommitmentsX11, AbortAfterFinishKeepsNoPrivateRecord) {
  EngineHarness h;
  ASSERT_FALSE(h.launch_app().empty());
  Json b = h.begin("attempt-abort");
  ASSERT_EQ(code_of(b), "ok") << b.dump();
  const std::string sid = b["session_id"];
  Json a = h.session(Json{{"op", "actions"}, {"session_id", sid}, {"sequence", 0},
                          {"actions", Json::array({Json{{"type", "type"}, {"text", "abc"}}})}});
  ASSERT_EQ(code_of(a), "ok") << a.dump();
  Json f = h.session(op_req("freeze", sid, 1));
  Json o = h.session(Json{{"op", "observe"}, {"session_id", sid}, {"sequence", 2},
                          {"pre_observation_sha256", f["frame"]["sha256"]}});
  Json fin = h.session(Json{{"op", "finish"}, {"session_id", sid}, {"sequence", 3},
                            {"observation_sha256", o["frame"]["sha256"]}, {"claims", Json::object()}});
  ASSERT_EQ(code_of(fin), "ok") << fin.dump();
  Json ab = h.session(op_req("abort", sid, 4));
  ASSERT_EQ(code_of(ab), "ok") << ab.dump();
  EXPECT_FALSE(fs::exists(commitments_path(h.root() + "/state", sid)));
  EXPECT_FALSE(fs::exists(b["evidence_dir"].get<std::string>() + "/receipt.json"));
}

}  // namespace
}  // namespace evident
