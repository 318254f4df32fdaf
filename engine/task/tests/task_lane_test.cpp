// The task lane on the session state machine, over the session tests' fake backend and a
// FakeClock (no X, no waiting): task.begin/turn/abort/status through the task layer's parser
// and SessionManager::handle, the limits, the final-answer rule with retry_prompt, lineage, the
// shared checks in the task family's codes, and that a refused request runs nothing (the fake
// counts executed actions). The real-display version is task_lane_x11_test.cpp.
#include <filesystem>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "../../session/tests/fake_backend.h"
#include "evident/core/error_json.h"
#include "evident/core/fs.h"
#include "evident/core/random.h"
#include "evident/receipts/task_receipt.h"
#include "evident/receipts/verify.h"
#include "evident/session/manager.h"
#include "evident/task/lane.h"
#include "evident/task/request.h"

namespace evident::task {
namespace {

namespace fs = std::filesystem;
using evident::testing::FakeBackend;
using evident::testing::FakeWorld;

const std::string kTask(64, 'a');

class TaskLaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("evident-task-lane-test-" + random_hex(6));
    SessionOptions o;
    o.evidence_root = (root_ / "state/evidence").string();
    o.scratch_root = (root_ / "run/sessions").string();
    o.clock = &clock_;
    o.task_lane = make_task_lane();
    mgr_ = std::make_unique<SessionManager>(backend_, o);
  }
  void TearDown() override {
    mgr_.reset();
    (void)remove_tree(root_.string());
  }

  // One raw task request through the task layer's parser, as the `task` op sends it.
  Json raw(const std::string& text, const Json& actor) {
    auto req = parse_task_session_request(text);
    if (!req) return error_response(req.error());
    return mgr_->handle(actor, *req);
  }
  Json call(const Json& req, const Json& actor) { return raw(req.dump(), actor); }
  Json call(const Json& req) { return call(req, actor_); }
  static std::string code(const Json& r) { return r["ok"] == true ? "ok" : r["error"]["code"].get<std::string>(); }

  Json begin_req(const std::string& mode = "stage", const std::string& adapter = "evident",
                 const std::string& attempt = "attempt-1", std::int64_t display = 1) {
    Json r{{"op", "begin"},
           {"mode", mode},
           {"display_id", display},
           {"generation", world_.generations[display]},
           {"app_id", evident::testing::fake_app_id(display)},
           {"attempt_id", attempt},
           {"task_sha256", kTask},
           {"policy", {{"adapter", adapter}, {"provider", "scripted"}, {"model", "none"}}}};
    return r;
  }
  Json begin(const std::string& mode = "stage", const std::string& adapter = "evident") {
    return call(begin_req(mode, adapter));
  }
  Json turn(const std::string& id, std::int64_t seq, const Json& response) {
    return call(Json{{"op", "turn"}, {"task_id", id}, {"sequence", seq}, {"response", response}});
  }
  Json status(const std::string& id) { return call(Json{{"op", "status"}, {"task_id", id}}); }
  static Json clicks(int n, int x0 = 10) {
    Json actions = Json::array();
    for (int i = 0; i < n; ++i) actions.push_back(Json{{"type", "click"}, {"x", x0 + i}, {"y", 20}});
    return Json{{"calls", Json::array({Json{{"id", "c1"}, {"actions", actions}}})}};
  }
  static Json result(Json r = Json{{"done", true}}) { return Json{{"result", r}}; }

  FakeWorld world_;
  FakeBackend backend_{world_};
  FakeClock clock_;
  std::unique_ptr<SessionManager> mgr_;
  fs::path root_;
  Json actor_{{"kind", "local_user"}, {"uid", 1000}};
};

TEST_F(TaskLaneTest, StageTaskRunsTurnsAndItsFinalAnswerReturnsAVerifiedReceipt) {
  Json b = begin();
  ASSERT_EQ(code(b), "ok") << b.dump();
  const std::string id = b["task_id"];
  EXPECT_TRUE(id.starts_with("tsk-"));
  EXPECT_EQ(b["phase"], "running");
  EXPECT_EQ(b["mode"], "stage");
  EXPECT_EQ(b["sequence"], 0);
  EXPECT_EQ(b["turns_left"], 12);
  EXPECT_EQ(b["actions_left"], 64);
  EXPECT_EQ(b["deadline_ms_left"], 180000);
  EXPECT_EQ(b["frame"]["sha256"], b["display_frame"]["sha256"]);  // 640x480: not scaled

  clock_.advance_ms(5);
  Json t = turn(id, 0, clicks(3));
  ASSERT_EQ(code(t), "ok") << t.dump();
  EXPECT_EQ(world_.executed.load(), 3);
  EXPECT_EQ(t["sequence"], 1);
  EXPECT_EQ(t["turn_count"], 1);
  EXPECT_EQ(t["turns_left"], 11);
  EXPECT_EQ(t["actions_left"], 61);
  EXPECT_EQ(t["deadline_ms_left"], 180000 - 5);
  ASSERT_EQ(t["tool_results"]["results"].size(), 1u);
  EXPECT_EQ(t["tool_results"]["results"][0]["status"], "ok");
  EXPECT_EQ(t["results"][0]["actions"].size(), 3u);
  EXPECT_TRUE(t["retry_prompt"].is_null());

  Json f = turn(id, 1, result(Json{{"answer", 42}}));
  ASSERT_EQ(code(f), "ok") << f.dump();
  EXPECT_EQ(f["phase"], "finished");
  EXPECT_EQ(f["sequence"], 2);
  EXPECT_EQ(f["turn_count"], 2);
  EXPECT_EQ(f["cleanup_complete"], true);
  const Json& receipt = f["receipt"];
  ASSERT_TRUE(receipt.is_object());
  EXPECT_EQ(receipt["schema"], "evident.task-receipt/v1");
  EXPECT_EQ(f["receipt_id"], receipt["receipt_id"]);
  EXPECT_TRUE(fs::exists(f["receipt_path"].get<std::string>()));
  EXPECT_EQ(world_.executed.load(), 3);  // the final answer ran nothing
  VerifyOptions vo;
  vo.frames_dir = f["evidence_dir"].get<std::string>();
  VerifyReport rep = verify_receipt(receipt, vo);
  std::string failed;
  for (const auto& c : rep.checks) failed += c.ok ? "" : c.name + ": " + c.detail + "; ";
  EXPECT_TRUE(rep.ok) << failed;
  // Ended: status answers, other ops get task-phase; the display is free again.
  EXPECT_EQ(status(id)["phase"], "finished");
  EXPECT_EQ(code(turn(id, 2, clicks(1))), "task-phase");
  EXPECT_EQ(world_.leases_open.load(), 0);
}

// task.begin `settle` reaches every frame a turn takes after input: the snapshot says which,
// the lease is asked with the task's values, and off asks nothing (results say "off").
TEST_F(TaskLaneTest, SettleChosenAtBeginAppliesToEveryTurnAndTheSnapshotSaysWhich) {
  Json b = begin();
  ASSERT_EQ(code(b), "ok") << b.dump();
  EXPECT_EQ(b["settle"], Json({{"quiet_ms", 300}, {"cap_ms", 2000}}));  // the default: today's behaviour
  ASSERT_EQ(code(turn(b["task_id"], 0, clicks(2))), "ok");
  EXPECT_EQ(world_.settles, (std::vector<std::pair<std::int64_t, std::int64_t>>{{300, 2000}, {300, 2000}}));
  ASSERT_EQ(code(call(Json{{"op", "abort"}, {"task_id", b["task_id"]}, {"sequence", 1}})), "ok");

  world_.settles.clear();
  Json custom_req = begin_req("stage", "evident", "attempt-2");
  custom_req["settle"] = Json{{"quiet_ms", 25}, {"cap_ms", 90}};
  Json c = call(custom_req);
  ASSERT_EQ(code(c), "ok") << c.dump();
  EXPECT_EQ(c["settle"], Json({{"quiet_ms", 25}, {"cap_ms", 90}}));
  ASSERT_EQ(code(turn(c["task_id"], 0, clicks(1))), "ok");
  EXPECT_EQ(world_.settles, (std::vector<std::pair<std::int64_t, std::int64_t>>{{25, 90}}));
  ASSERT_EQ(code(call(Json{{"op", "abort"}, {"task_id", c["task_id"]}, {"sequence", 1}})), "ok");

  world_.settles.clear();
  Json off_req = begin_req("stage", "evident", "attempt-3");
  off_req["settle"] = false;
  Json o = call(off_req);
  ASSERT_EQ(code(o), "ok") << o.dump();
  EXPECT_EQ(o["settle"], false);
  Json t = turn(o["task_id"], 0, clicks(2));
  ASSERT_EQ(code(t), "ok") << t.dump();
  EXPECT_TRUE(world_.settles.empty());
  EXPECT_EQ(t["results"][0]["actions"][0]["settle"], "off");
  EXPECT_EQ(t["results"][0]["actions"][1]["settle"], "off");
  EXPECT_EQ(status(o["task_id"])["settle"], false);
  Json f = turn(o["task_id"], 1, result());
  ASSERT_EQ(code(f), "ok") << f.dump();
  VerifyReport rep = verify_receipt(f["receipt"], VerifyOptions{});
  EXPECT_TRUE(rep.ok);

  // A bad settle is refused before anything exists.
  Json bad = begin_req("stage", "evident", "attempt-4");
  bad["settle"] = Json{{"quiet_ms", 400}, {"cap_ms", 300}};
  EXPECT_EQ(code(call(bad)), "task-command");
  EXPECT_EQ(world_.leases_open.load(), 0);
}

TEST_F(TaskLaneTest, InvalidFinalAnswersCountAndGetARetryPromptUntilTheTurnsRunOut) {
  Json b = begin("attest", "evident");  // attest without lineage is refused before anything
  EXPECT_EQ(code(b), "task-lineage-invalid");
  b = begin();
  const std::string id = b["task_id"];
  for (int i = 0; i < 11; ++i) {
    Json t = turn(id, i, Json{{"result", "not an object"}});
    ASSERT_EQ(code(t), "ok") << i << t.dump();
    EXPECT_EQ(t["retry_prompt"]["retry"]["code"], "task-result-invalid");
    EXPECT_EQ(t["result_error"]["code"], "task-result-invalid");
    EXPECT_EQ(t["invalid_result_count"], i + 1);
    EXPECT_EQ(t["turns_left"], 12 - i - 1);
  }
  // The twelfth invalid answer leaves no turn for a retry: the task ends failed.
  Json t = turn(id, 11, Json{{"result", Json::array()}});
  EXPECT_EQ(code(t), "task-result-invalid");
  Json s = status(id);
  EXPECT_EQ(s["phase"], "failed");
  EXPECT_EQ(s["ended"]["reason"], "result-invalid");
  EXPECT_TRUE(s["receipt"].is_null());
  EXPECT_EQ(world_.executed.load(), 0);
}

TEST_F(TaskLaneTest, ProtocolRefusalsChangeNothingAndTurnRefusalsEndTheTaskWithNothingRun) {
  const std::string id = begin()["task_id"];
  ASSERT_FALSE(id.empty());
  // Protocol-level: nothing runs, the task goes on.
  EXPECT_EQ(code(turn(id, 1, clicks(1))), "task-sequence");                 // future
  EXPECT_EQ(code(call(Json{{"op", "turn"}, {"task_id", id}, {"sequence", 0}, {"response", clicks(1)}},
                      Json{{"kind", "local_user"}, {"uid", 1001}})), "task-not-found");  // another actor
  EXPECT_EQ(code(turn("tsk-" + std::string(32, '0'), 0, clicks(1))), "task-not-found");
  EXPECT_EQ(code(raw(R"({"op":"turn","task_id":")" + id + R"(","sequence":0,"response":{"calls":[]},"x":1})", actor_)),
            "task-command");
  EXPECT_EQ(code(raw(R"({"op":"turn","task_id":")" + id + R"(","sequence":0,"response":{"a":1.5}})", actor_)),
            "task-json");
  // A session op never finds a task, nor a task op a session.
  Json sr = mgr_->handle(actor_, Json{{"op", "status"}, {"session_id", id}}.dump());
  EXPECT_EQ(sr["error"]["code"], "session-not-found");
  EXPECT_EQ(world_.executed.load(), 0);
  Json s = status(id);
  EXPECT_EQ(s["sequence"], 0);
  EXPECT_EQ(s["phase"], "running");
  EXPECT_EQ(s["turn_count"], 0);
  // A turn refusal (here the adapter's) ends the task: nothing of it ran.
  Json bad = Json{{"calls", Json::array({Json{{"id", "c"}, {"actions", Json::array({Json{{"type", "paste"}, {"text", "x"}}})}}})}};
  EXPECT_EQ(code(turn(id, 0, bad)), "task-action-forbidden");
  s = status(id);
  EXPECT_EQ(s["phase"], "failed");
  EXPECT_EQ(s["sequence"], 0);
  EXPECT_EQ(s["turn_count"], 0);
  EXPECT_EQ(s["refused_call_count"], 1);
  EXPECT_EQ(s["ended"]["error"]["code"], "task-action-forbidden");
  EXPECT_EQ(world_.executed.load(), 0);
  EXPECT_EQ(world_.leases_open.load(), 0);
}

TEST_F(TaskLaneTest, LimitsActionsTurnsAndTheDeadlineByTheBudgetsClock) {
  std::string id = begin()["task_id"];
  for (int i = 0; i < 4; ++i) ASSERT_EQ(code(turn(id, i, clicks(16))), "ok") << i;
  EXPECT_EQ(status(id)["actions_left"], 0);
  EXPECT_EQ(code(turn(id, 4, clicks(1))), "task-action-limit");
  EXPECT_EQ(world_.executed.load(), 64);
  EXPECT_EQ(status(id)["phase"], "failed");

  // The deadline: the FakeClock passes 180 s; the next turn gets task-deadline, runs nothing,
  // and status reports the task expired.
  id = call(begin_req("stage", "evident", "attempt-2"))["task_id"];
  ASSERT_FALSE(id.empty());
  clock_.advance_ms(180000);
  EXPECT_EQ(code(turn(id, 0, clicks(1))), "task-deadline");
  Json s = status(id);
  EXPECT_EQ(s["phase"], "expired");
  EXPECT_TRUE(s["deadline_ms_left"].is_null());
  EXPECT_EQ(world_.executed.load(), 64);
  EXPECT_EQ(world_.leases_open.load(), 0);
}

TEST_F(TaskLaneTest, AttestFollowsAStageReceiptWithLineageSealedInputAndChronology) {
  // Stage, finished.
  Json b = begin();
  std::string id = b["task_id"];
  ASSERT_EQ(code(turn(id, 0, clicks(1))), "ok");
  Json f = turn(id, 1, result());
  ASSERT_EQ(code(f), "ok") << f.dump();
  const std::string stage_receipt = f["receipt_id"];
  ASSERT_TRUE(stage_receipt.starts_with("etr-"));

  Json a = begin_req("attest");
  a["prior_receipt_id"] = "etr-" + std::string(64, '0');
  EXPECT_EQ(code(call(a)), "task-prior-receipt-unknown");
  a["prior_receipt_id"] = stage_receipt;
  a["attempt_id"] = "another-attempt";
  EXPECT_EQ(code(call(a)), "task-lineage-invalid");
  a["attempt_id"] = "attempt-1";
  clock_.step_wall_ms(-3600 * 1000);  // the wall clock went back: before completed_at
  EXPECT_EQ(code(call(a)), "task-chronology");
  clock_.step_wall_ms(3600 * 1000);
  Json stage_in_attest = begin_req("stage");
  stage_in_attest["prior_receipt_id"] = stage_receipt;
  EXPECT_EQ(code(call(stage_in_attest)), "task-lineage-invalid");

  // Attest: input is sealed (a click is refused, nothing runs); a screenshot call is allowed.
  Json at = call(a);
  ASSERT_EQ(code(at), "ok") << at.dump();
  EXPECT_EQ(at["turns_left"], 2);
  EXPECT_EQ(at["deadline_ms_left"], 45000);
  EXPECT_EQ(at["prior_receipt_id"], stage_receipt);
  const int ran = world_.executed.load();
  EXPECT_EQ(code(turn(at["task_id"], 0, clicks(1))), "task-attest-input-refused");
  EXPECT_EQ(world_.executed.load(), ran);

  a["attempt_id"] = "attempt-1";
  at = call(a);  // the same lineage may be attested again
  ASSERT_EQ(code(at), "ok") << at.dump();
  id = at["task_id"];
  // (The fake backend reports input events for every action, screenshots too, which an attest
  // receipt refuses; the real-display test runs a screenshot turn in attest.)
  Json af = turn(id, 0, result(Json{{"seen", "green"}}));
  ASSERT_EQ(code(af), "ok") << af.dump();
  EXPECT_EQ(af["receipt"]["mode"], "attest");
  EXPECT_EQ(af["receipt"]["prior_receipt_id"], stage_receipt);
  // An attest receipt is no lineage for another attest.
  Json a2 = begin_req("attest", "evident", "attempt-1");
  a2["prior_receipt_id"] = af["receipt_id"];
  EXPECT_EQ(code(call(a2)), "task-prior-receipt-unknown");
}

TEST_F(TaskLaneTest, AbortEndsARunningTaskAndBeginsAreExclusivePerDisplay) {
  const std::string id = begin()["task_id"];
  EXPECT_EQ(code(call(begin_req("stage", "evident", "attempt-9"))), "task-busy");  // same display
  EXPECT_EQ(code(call(Json{{"op", "abort"}, {"task_id", id}, {"sequence", 3}})), "task-sequence");
  Json ab = call(Json{{"op", "abort"}, {"task_id", id}, {"sequence", 0}});
  ASSERT_EQ(code(ab), "ok") << ab.dump();
  EXPECT_EQ(ab["phase"], "aborted");
  EXPECT_EQ(ab["aborted"], true);
  EXPECT_EQ(code(call(Json{{"op", "abort"}, {"task_id", id}, {"sequence", 0}})), "task-phase");
  EXPECT_EQ(code(call(begin_req("stage", "nope"))), "task-adapter-unknown");
  EXPECT_EQ(world_.leases_open.load(), 0);
}

}  // namespace
}  // namespace evident::task

namespace evident::task {
namespace {

// An unexpected failure (an exception escaping the work of an op: a bug, or memory) answers
// `internal` and must never leave a task owned: the task ends failed (reason "internal"), the
// display is released, later ops get task-phase (not task-busy forever), a new task can begin on
// the display, and the engine's shutdown does not wait for it. A begin that throws begins
// nothing. The same holds for a session (the shared dispatch).
TEST_F(TaskLaneTest, AnInternalErrorEndsTheTaskReleasesTheDisplayAndNeverLeavesItBusy) {
  auto thrower = [] { throw std::runtime_error("injected failure"); };
  // 1. During a turn's action.
  Json b = begin();
  ASSERT_EQ(code(b), "ok") << b.dump();
  const std::string id = b["task_id"];
  world_.on_execute = thrower;
  Json t = turn(id, 0, clicks(2));
  world_.on_execute = nullptr;
  ASSERT_EQ(code(t), "internal") << t.dump();
  EXPECT_NE(t["error"]["message"].get<std::string>().find("ended without a receipt"), std::string::npos);
  EXPECT_EQ(t["error"]["message"].get<std::string>().find("injected"), std::string::npos);
  Json s = status(id);
  ASSERT_EQ(code(s), "ok") << s.dump();
  EXPECT_EQ(s["phase"], "failed");
  EXPECT_EQ(s["ended"]["reason"], "internal");
  EXPECT_EQ(s["ended"]["error"]["code"], "internal");
  EXPECT_TRUE(s["receipt"].is_null());
  EXPECT_EQ(code(turn(id, 0, clicks(1))), "task-phase");
  EXPECT_EQ(code(call(Json{{"op", "abort"}, {"task_id", id}, {"sequence", 0}})), "task-phase");
  EXPECT_EQ(world_.leases_open.load(), 0);
  EXPECT_FALSE(world_.locked[1]);

  // 2. During begin, after the record exists (the initial capture): nothing was begun.
  world_.on_capture = thrower;
  Json bb = call(begin_req("stage", "evident", "attempt-2"));
  world_.on_capture = nullptr;
  ASSERT_EQ(code(bb), "internal") << bb.dump();
  EXPECT_NE(bb["error"]["message"].get<std::string>().find("nothing was begun"), std::string::npos);
  EXPECT_EQ(world_.leases_open.load(), 0);
  EXPECT_EQ(mgr_->live_count(), 0u);

  // 3. During the engine's freeze after a valid final answer: failed, no receipt.
  Json c = call(begin_req("stage", "evident", "attempt-3"));
  ASSERT_EQ(code(c), "ok") << c.dump();
  world_.on_capture = thrower;
  Json f = turn(c["task_id"], 0, result());
  world_.on_capture = nullptr;
  ASSERT_EQ(code(f), "internal") << f.dump();
  Json fs_ = status(c["task_id"]);
  EXPECT_EQ(fs_["phase"], "failed");
  EXPECT_EQ(fs_["ended"]["reason"], "internal");
  EXPECT_TRUE(fs_["receipt"].is_null());
  EXPECT_FALSE(fs::exists(fs::path(fs_["evidence_dir"].get<std::string>()) / "receipt.json"));
  EXPECT_EQ(world_.leases_open.load(), 0);

  // 4. A session whose actions throw: the same containment.
  const std::string ses_begin = Json{{"op", "begin"},
                                     {"display_id", 1},
                                     {"generation", world_.generations[1]},
                                     {"app_id", evident::testing::fake_app_id(1)},
                                     {"attempt_id", "attempt-4"},
                                     {"job_sha256", kTask}}
                                    .dump();
  Json sb = mgr_->handle(actor_, ses_begin);
  ASSERT_EQ(code(sb), "ok") << sb.dump();
  world_.on_execute = thrower;
  Json sa = mgr_->handle(actor_, Json{{"op", "actions"}, {"session_id", sb["session_id"]}, {"sequence", 0},
                                      {"actions", Json::array({Json{{"type", "click"}, {"x", 1}, {"y", 1}}})}}
                                     .dump());
  world_.on_execute = nullptr;
  ASSERT_EQ(code(sa), "internal") << sa.dump();
  Json ss = mgr_->handle(actor_, Json{{"op", "status"}, {"session_id", sb["session_id"]}}.dump());
  EXPECT_EQ(ss["phase"], "failed");
  EXPECT_EQ(ss["ended"]["reason"], "internal");
  EXPECT_EQ(world_.leases_open.load(), 0);

  // The display is usable again: a new task begins, runs a turn and finishes with a receipt.
  Json d = call(begin_req("stage", "evident", "attempt-5"));
  ASSERT_EQ(code(d), "ok") << d.dump();
  ASSERT_EQ(code(turn(d["task_id"], 0, clicks(1))), "ok");
  Json df = turn(d["task_id"], 1, result());
  ASSERT_EQ(code(df), "ok") << df.dump();
  EXPECT_EQ(df["phase"], "finished");
  // And the engine shuts down without waiting for anything (abort_all waits for busy records).
  mgr_.reset();
  EXPECT_EQ(world_.leases_open.load(), 0);
}

}  // namespace
}  // namespace evident::task
