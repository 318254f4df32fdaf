// Unit tests of the session state machine over a fake backend and a FakeClock: phases,
// sequences, actor binding, limits, deadlines and fail-closed endings, without X or waiting.
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <thread>
#include <string>

#include <gtest/gtest.h>

#include "evident/core/fs.h"
#include "evident/core/random.h"
#include "evident/receipts/jcs.h"
#include "evident/receipts/verify.h"
#include "evident/session/manager.h"
#include "fake_backend.h"

namespace evident {
namespace {

namespace fs = std::filesystem;
using testing::FakeBackend;
using testing::FakeWorld;

const std::string kJob(64, '1');

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("evident-session-test-" + random_hex(6));
    for (int d = 3; d <= 12; ++d) {
      world_.generations[d] = "gen-" + random_hex(16);
      world_.app_display[testing::fake_app_id(d)] = d;
    }
    SessionOptions o;
    o.evidence_root = (root_ / "state/evidence").string();
    o.scratch_root = (root_ / "run/sessions").string();
    o.clock = &clock_;
    mgr_ = std::make_unique<SessionManager>(backend_, o);
  }
  void TearDown() override {
    mgr_.reset();
    (void)remove_tree(root_.string());
  }

  Json call(const Json& req, const Json& actor) { return mgr_->handle(actor, req.dump()); }
  Json call(const Json& req) { return call(req, actor_); }
  std::string raw_code(const std::string& raw) {
    Json r = mgr_->handle(actor_, raw);
    return r["ok"] == false ? r["error"]["code"].get<std::string>() : "ok";
  }
  static std::string code(const Json& r) {
    return r["ok"] == true ? "ok" : r["error"]["code"].get<std::string>();
  }

  Json begin(std::int64_t display = 1, const std::string& attempt = "attempt-1") {
    return call(Json{{"op", "begin"},
                     {"display_id", display},
                     {"generation", world_.generations[display]},
                     {"app_id", testing::fake_app_id(display)},
                     {"attempt_id", attempt},
                     {"job_sha256", kJob}});
  }
  // A session whose app's exit is an event (app_exit: "record").
  Json begin_recording(std::int64_t display) {
    return call(Json{{"op", "begin"},
                     {"display_id", display},
                     {"generation", world_.generations[display]},
                     {"app_id", testing::fake_app_id(display)},
                     {"attempt_id", "attempt-exit-" + std::to_string(display)},
                     {"job_sha256", kJob},
                     {"app_exit", "record"}});
  }
  Json clicks(const std::string& sid, std::int64_t seq, int n) {
    Json actions = Json::array();
    for (int i = 0; i < n; ++i) actions.push_back(Json{{"type", "click"}, {"x", 10 + i}, {"y", 20}});
    return call(Json{{"op", "actions"}, {"session_id", sid}, {"sequence", seq}, {"actions", actions}});
  }
  Json simple(const std::string& op, const std::string& sid, std::int64_t seq) {
    return call(Json{{"op", op}, {"session_id", sid}, {"sequence", seq}});
  }
  Json observe(const std::string& sid, std::int64_t seq) {
    return call(Json{{"op", "observe"},
                     {"session_id", sid},
                     {"sequence", seq},
                     {"pre_observation_sha256", std::string(64, 'e')}});
  }
  Json finish(const std::string& sid, std::int64_t seq, const std::string& obs,
              Json claims = Json{{"background", "green"}}) {
    return call(Json{{"op", "finish"},
                     {"session_id", sid},
                     {"sequence", seq},
                     {"observation_sha256", obs},
                     {"claims", claims}});
  }
  Json status(const std::string& sid) { return call(Json{{"op", "status"}, {"session_id", sid}}); }

  // Drives a new session on `display` up to `phase`; returns its id.
  std::string to_phase(const std::string& phase, std::int64_t display = 1) {
    Json b = begin(display, "attempt-" + random_hex(4));
    EXPECT_EQ(code(b), "ok") << b.dump();
    std::string sid = b["session_id"];
    if (phase == "stage") return sid;
    EXPECT_EQ(code(simple("freeze", sid, 0)), "ok");
    if (phase == "frozen") return sid;
    Json o = observe(sid, 1);
    EXPECT_EQ(code(o), "ok");
    if (phase == "observed") return sid;
    EXPECT_EQ(code(finish(sid, 2, o["frame"]["sha256"])), "ok");
    if (phase == "finished") return sid;
    EXPECT_EQ(code(simple("close", sid, 3)), "ok");
    return sid;
  }

  fs::path root_;
  FakeWorld world_;
  FakeBackend backend_{world_};
  FakeClock clock_;
  Json actor_ = Json{{"kind", "local_user"}, {"uid", 1000}};
  std::unique_ptr<SessionManager> mgr_;
};

TEST_F(SessionTest, FullSessionProducesAVerifiableReceiptAndCleansUp) {
  Json b = begin();
  ASSERT_EQ(code(b), "ok") << b.dump();
  std::string sid = b["session_id"];
  EXPECT_EQ(sid.size(), 36u);
  EXPECT_EQ(sid.rfind("ses-", 0), 0u);
  EXPECT_EQ(b["sequence"], 0);
  EXPECT_EQ(b["phase"], "stage");
  EXPECT_EQ(b["actor"], actor_);
  EXPECT_EQ(b["binding"]["display_id"], 1);
  EXPECT_EQ(b["binding"]["attempt_id"], "attempt-1");
  EXPECT_TRUE(b["frozen_at"].is_null());
  EXPECT_TRUE(b["receipt"].is_null());
  EXPECT_EQ(world_.leases_open, 1);

  Json a = clicks(sid, 0, 3);
  ASSERT_EQ(code(a), "ok") << a.dump();
  EXPECT_EQ(a["sequence"], 1);
  EXPECT_EQ(a["action_count"], 3);
  EXPECT_EQ(a["input_event_count"], 6);
  ASSERT_EQ(a["results"].size(), 3u);
  EXPECT_EQ(a["results"][2]["status"], "injected");
  EXPECT_EQ(a["results"][2]["frame_sha256"], a["frame"]["sha256"]);
  EXPECT_EQ(world_.executed, 3);

  Json f = simple("freeze", sid, 1);
  ASSERT_EQ(code(f), "ok") << f.dump();
  EXPECT_EQ(f["phase"], "frozen");
  EXPECT_FALSE(f["frozen_at"].is_null());
  EXPECT_EQ(world_.releases, 1);

  Json o = observe(sid, 2);
  ASSERT_EQ(code(o), "ok");
  EXPECT_EQ(o["phase"], "observed");
  std::string obs = o["frame"]["sha256"];
  std::string frame_path = o["frame"]["path"];
  EXPECT_EQ(frame_path, b["evidence_dir"].get<std::string>() + "/" + obs + ".png");
  struct stat st {};
  ASSERT_EQ(::stat(frame_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  Json fin = finish(sid, 3, obs);
  ASSERT_EQ(code(fin), "ok") << fin.dump();
  EXPECT_EQ(fin["phase"], "finished");
  EXPECT_EQ(fin["sequence"], 4);
  const Json& receipt = fin["receipt"];
  EXPECT_EQ(receipt["claims"], (Json{{"background", "green"}}));
  EXPECT_EQ(receipt["action_count"], 3);
  EXPECT_EQ(receipt["transcript"].size(), 3u + 4u);
  VerifyOptions vo;
  vo.frames_dir = b["evidence_dir"];
  vo.expect_job_sha256 = kJob;
  VerifyReport rep = verify_receipt(receipt, vo);
  EXPECT_TRUE(rep.ok) << ::testing::PrintToString(rep.failed_names());
  // Finished is not closed: the receipt is not a file yet (only a closed session keeps one).
  const std::string receipt_file = b["evidence_dir"].get<std::string>() + "/receipt.json";
  EXPECT_FALSE(fin.contains("receipt_path"));
  EXPECT_FALSE(fs::exists(receipt_file));

  Json c = simple("close", sid, 4);
  ASSERT_EQ(code(c), "ok") << c.dump();
  EXPECT_EQ(c["closed"], true);
  EXPECT_EQ(c["cleanup_complete"], true);
  EXPECT_EQ(c["receipt_id"], receipt["receipt_id"]);
  EXPECT_EQ(c["receipt_path"], receipt_file);
  auto loaded = load_receipt_file(receipt_file);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(*loaded, receipt);
  struct stat rst {};
  ASSERT_EQ(::stat(receipt_file.c_str(), &rst), 0);
  EXPECT_EQ(rst.st_mode & 0777, 0600u);
  EXPECT_EQ(world_.leases_open, 0);
  EXPECT_FALSE(world_.locked[1]);
  EXPECT_FALSE(fs::exists(root_ / "run/sessions" / sid));
  EXPECT_TRUE(fs::exists(b["evidence_dir"].get<std::string>() + "/receipt.json"));
  EXPECT_EQ(mgr_->live_count(), 0u);

  Json s = status(sid);
  EXPECT_EQ(code(s), "ok");
  EXPECT_EQ(s["phase"], "closed");
  // The display is free again for a new session.
  EXPECT_EQ(code(begin(1, "attempt-1")), "ok");
}

// Proves: finish writes actions.json beside receipt.json (0600): one entry per action event,
// each projection hashing to its event's projection_sha256, with the monotonic time of the
// action's frame since begin (the fake clock advances 7 ms inside every action).
TEST_F(SessionTest, FinishWritesActionsFileWithProjectionsAndTimes) {
  Json b = begin();
  ASSERT_EQ(code(b), "ok") << b.dump();
  std::string sid = b["session_id"];
  world_.on_execute = [this] { clock_.advance_ms(7); };
  ASSERT_EQ(code(clicks(sid, 0, 2)), "ok");
  ASSERT_EQ(code(clicks(sid, 1, 1)), "ok");
  world_.on_execute = nullptr;
  ASSERT_EQ(code(simple("freeze", sid, 2)), "ok");
  Json o = observe(sid, 3);
  Json fin = finish(sid, 4, o["frame"]["sha256"]);
  ASSERT_EQ(code(fin), "ok") << fin.dump();
  std::string dir = b["evidence_dir"];
  std::string path = dir + "/actions.json";
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto text = read_file(path, 1 << 20);
  ASSERT_TRUE(text.ok());
  auto doc = parse_json_strict(*text, 1 << 20, "test");
  ASSERT_TRUE(doc.ok());
  const Json& receipt = fin["receipt"];
  EXPECT_EQ((*doc)["schema"], "evident.actions/v1");
  EXPECT_EQ((*doc)["receipt_id"], receipt["receipt_id"]);
  EXPECT_EQ((*doc)["session_id"], sid);
  const Json& entries = (*doc)["actions"];
  ASSERT_EQ(entries.size(), 3u);
  const std::int64_t xs[] = {10, 11, 10};
  for (std::size_t i = 0; i < 3; ++i) {
    const Json& e = entries[i];
    EXPECT_EQ(e["event_index"], i + 1);
    EXPECT_EQ(e["projection"]["type"], "click");
    EXPECT_EQ(e["projection"]["x"], xs[i]);
    EXPECT_EQ(e["projection_sha256"], receipt["transcript"][i + 1]["projection_sha256"]);
    EXPECT_EQ(*domain_digest(kDomainActionProjection, e["projection"]),
              receipt["transcript"][i + 1]["projection_sha256"]);
    EXPECT_EQ(e["elapsed_ms"], 7 * static_cast<std::int64_t>(i + 1));
  }
  EXPECT_EQ(code(simple("close", sid, 5)), "ok");
  EXPECT_TRUE(fs::exists(path));
}

// Proves: a wall clock stepped back an hour mid-session still yields a verifiable receipt whose
// timestamps follow the session's own (monotonic) order.
TEST_F(SessionTest, WallClockStepBackMidSessionStillFinishes) {
  Json b = begin();
  ASSERT_EQ(code(b), "ok") << b.dump();
  std::string sid = b["session_id"];
  ASSERT_EQ(code(clicks(sid, 0, 1)), "ok");
  clock_.advance_ms(1500);
  clock_.step_wall_ms(-3600 * 1000);
  Json f = simple("freeze", sid, 1);
  ASSERT_EQ(code(f), "ok") << f.dump();
  Json o = observe(sid, 2);
  ASSERT_EQ(code(o), "ok") << o.dump();
  clock_.advance_ms(10);
  Json fin = finish(sid, 3, o["frame"]["sha256"]);
  ASSERT_EQ(code(fin), "ok") << fin.dump();
  const Json& receipt = fin["receipt"];
  std::int64_t started = 0, completed = 0, frozen = 0;
  ASSERT_TRUE(parse_rfc3339_ms(b["started_at"], &started));
  ASSERT_TRUE(parse_rfc3339_ms(f["frozen_at"], &frozen));
  ASSERT_TRUE(parse_rfc3339_ms(receipt["completed_at"], &completed));
  EXPECT_EQ(frozen - started, 1500);
  EXPECT_EQ(completed - started, 1510);
  VerifyOptions vo;
  vo.frames_dir = b["evidence_dir"];
  vo.expect_job_sha256 = kJob;
  VerifyReport rep = verify_receipt(receipt, vo);
  EXPECT_TRUE(rep.ok) << ::testing::PrintToString(rep.failed_names());
  EXPECT_EQ(code(simple("close", sid, 4)), "ok");
}

TEST_F(SessionTest, StaleReplayedAndFutureSequencesExecuteNothing) {
  std::string sid = to_phase("stage");
  ASSERT_EQ(code(clicks(sid, 0, 1)), "ok");
  int executed = world_.executed;
  for (std::int64_t seq : {0, 2, 7}) {  // replayed, future, far future
    EXPECT_EQ(code(clicks(sid, seq, 2)), "session-sequence");
    EXPECT_EQ(code(simple("freeze", sid, seq)), "session-sequence");
    EXPECT_EQ(code(simple("abort", sid, seq)), "session-sequence");
  }
  EXPECT_EQ(world_.executed, executed);
  EXPECT_EQ(status(sid)["sequence"], 1);
  EXPECT_EQ(status(sid)["phase"], "stage");
}

TEST_F(SessionTest, EveryPhaseOpCombination) {
  // op -> the phase it is allowed in; abort: any live phase.
  const std::vector<std::string> phases = {"stage", "frozen", "observed", "finished", "closed"};
  const std::map<std::string, std::string> allowed = {
      {"actions", "stage"}, {"freeze", "stage"}, {"observe", "frozen"},
      {"finish", "observed"}, {"close", "finished"}};
  for (const auto& phase : phases) {
    for (const auto& [op, ok_phase] : allowed) {
      std::string sid = to_phase(phase, 3);
      std::int64_t seq = status(sid)["sequence"];
      int executed = world_.executed;
      Json r;
      if (op == "actions") r = clicks(sid, seq, 1);
      else if (op == "observe") r = observe(sid, seq);
      else if (op == "finish") r = finish(sid, seq, std::string(64, '0'));
      else r = simple(op, sid, seq);
      std::string want = phase == ok_phase ? "ok" : "session-phase";
      if (phase == ok_phase && op == "finish") want = "session-observation";  // wrong digest on purpose
      EXPECT_EQ(code(r), want) << op << " in " << phase << ": " << r.dump();
      if (want != "ok") {
        EXPECT_EQ(world_.executed, executed);
        EXPECT_EQ(status(sid)["sequence"], seq);
      }
      // Tidy up so the display is free for the next combination.
      Json st = status(sid);
      if (st["ended"].is_null()) {
        ASSERT_EQ(code(simple("abort", sid, st["sequence"])), "ok");
      }
    }
    // abort in every phase
    std::string sid = to_phase(phase, 3);
    Json st = status(sid);
    Json r = simple("abort", sid, st["sequence"]);
    EXPECT_EQ(code(r), phase == "closed" ? "session-phase" : "ok") << phase;
    if (phase != "closed") {
      EXPECT_EQ(r["phase"], "aborted");
      EXPECT_EQ(r["cleanup_complete"], true);
    }
  }
  EXPECT_EQ(world_.leases_open, 0);
}

TEST_F(SessionTest, AnotherActorGetsNotFoundAndChangesNothing) {
  std::string sid = to_phase("stage");
  Json other{{"kind", "local_user"}, {"uid", 1001}};
  Json inproc{{"kind", "in_process"}, {"uid", 1000}, {"pid", 77}};
  for (const Json& a : {other, inproc}) {
    Json req{{"op", "actions"}, {"session_id", sid}, {"sequence", 0},
             {"actions", Json::array({Json{{"type", "click"}, {"x", 1}, {"y", 1}}})}};
    EXPECT_EQ(code(call(req, a)), "session-not-found");
    EXPECT_EQ(code(call(Json{{"op", "status"}, {"session_id", sid}}, a)), "session-not-found");
    EXPECT_EQ(code(call(Json{{"op", "abort"}, {"session_id", sid}, {"sequence", 0}}, a)), "session-not-found");
  }
  Json unknown = status("ses-" + std::string(32, '0'));
  EXPECT_EQ(code(unknown), "session-not-found");
  EXPECT_EQ(world_.executed, 0);
  EXPECT_EQ(status(sid)["sequence"], 0);
}

TEST_F(SessionTest, BatchAndSessionActionLimits) {
  std::string sid = to_phase("stage");
  EXPECT_EQ(code(clicks(sid, 0, 17)), "session-actions");
  Json empty{{"op", "actions"}, {"session_id", sid}, {"sequence", 0}, {"actions", Json::array()}};
  EXPECT_EQ(code(call(empty)), "session-actions");
  EXPECT_EQ(world_.executed, 0);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(code(clicks(sid, i, 16)), "ok");
  ASSERT_EQ(code(clicks(sid, 3, 12)), "ok");  // 60
  EXPECT_EQ(code(clicks(sid, 4, 5)), "session-action-limit");  // would be 65: refused whole
  EXPECT_EQ(world_.executed, 60);
  EXPECT_EQ(status(sid)["sequence"], 4);
  ASSERT_EQ(code(clicks(sid, 4, 4)), "ok");  // exactly 64
  EXPECT_EQ(code(clicks(sid, 5, 1)), "session-action-limit");
  EXPECT_EQ(world_.executed, 64);
}

TEST_F(SessionTest, WholeBatchIsValidatedBeforeTheFirstActionRuns) {
  std::string sid = to_phase("stage");
  auto batch = [&](Json last) {
    Json actions = Json::array({Json{{"type", "click"}, {"x", 1}, {"y", 1}},
                                Json{{"type", "type"}, {"text", "hello"}}, last});
    return call(Json{{"op", "actions"}, {"session_id", sid}, {"sequence", 0}, {"actions", actions}});
  };
  EXPECT_EQ(code(batch(Json{{"type", "paste"}, {"text", "x"}})), "session-action-forbidden");
  EXPECT_EQ(code(batch(Json{{"type", "mouse_down"}, {"x", 1}, {"y", 1}})), "session-action-forbidden");
  EXPECT_EQ(code(batch(Json{{"type", "mouse_up"}, {"x", 1}, {"y", 1}})), "session-action-forbidden");
  EXPECT_EQ(code(batch(Json{{"type", "zoom"}, {"x", 1}, {"y", 1}, {"width", 5}, {"height", 5}})),
            "session-action-forbidden");
  EXPECT_EQ(code(batch(Json{{"type", "wait"}, {"ms", 5001}})), "session-action");
  EXPECT_EQ(code(batch(Json{{"type", "hold_key"}, {"key", "a"}, {"ms", 5001}})), "session-action");
  EXPECT_EQ(code(batch(Json{{"type", "scroll"}, {"x", 1}, {"y", 1}, {"direction", "up"}, {"amount", 0}})),
            "session-action");
  EXPECT_EQ(code(batch(Json{{"type", "type"}, {"text", std::string(4097, 'a')}})), "session-action");
  EXPECT_EQ(code(batch(Json{{"type", "key"}, {"key", ""}})), "session-action");
  EXPECT_EQ(code(batch(Json{{"type", "teleport"}})), "session-action");
  EXPECT_EQ(code(batch(Json{{"type", "click"}, {"x", 1}, {"y", 1}, {"extra", 1}})), "session-action");
  EXPECT_EQ(world_.executed, 0);
  EXPECT_EQ(status(sid)["sequence"], 0);
  EXPECT_EQ(status(sid)["action_count"], 0);
}

TEST_F(SessionTest, AtMostEightLiveSessionsAndOnePerDisplayAndAttempt) {
  std::vector<std::string> ids;
  for (int d = 1; d <= 8; ++d) {
    Json b = begin(d, "attempt-" + std::to_string(d));
    ASSERT_EQ(code(b), "ok") << b.dump();
    ids.push_back(b["session_id"]);
  }
  Json ninth = begin(9, "attempt-9");
  EXPECT_EQ(code(ninth), "session-busy");
  EXPECT_EQ(ninth["error"]["retryable"], true);
  EXPECT_FALSE(world_.locked[9]);
  ASSERT_EQ(code(simple("abort", ids[0], 0)), "ok");
  EXPECT_EQ(code(begin(9, "attempt-9")), "ok");
  // Same display (2) or same attempt (attempt-3) as a live session.
  EXPECT_EQ(code(begin(2, "attempt-x")), "session-busy");
  EXPECT_EQ(code(begin(1, "attempt-3")), "session-busy");
  // After that session ends the attempt id is free again.
  ASSERT_EQ(code(simple("abort", ids[2], 0)), "ok");
  EXPECT_EQ(code(begin(1, "attempt-3")), "ok");
}

TEST_F(SessionTest, BeginRefusesWrongBindings) {
  auto b = [&](std::int64_t d, const std::string& gen, const std::string& app) {
    return call(Json{{"op", "begin"}, {"display_id", d}, {"generation", gen}, {"app_id", app},
                     {"attempt_id", "a"}, {"job_sha256", kJob}});
  };
  EXPECT_EQ(code(b(1, "gen-" + std::string(32, 'f'), testing::fake_app_id(1))), "display-generation-mismatch");
  EXPECT_EQ(code(b(1, "not-a-generation", testing::fake_app_id(1))), "display-generation-mismatch");
  EXPECT_EQ(code(b(99, world_.generations[1], testing::fake_app_id(1))), "display-generation-mismatch");
  EXPECT_EQ(code(b(1, world_.generations[1], "app-nope")), "app-not-live");
  EXPECT_EQ(code(b(1, world_.generations[1], testing::fake_app_id(2))), "session-binding");
  world_.app_dead[testing::fake_app_id(1)] = true;
  EXPECT_EQ(code(b(1, world_.generations[1], testing::fake_app_id(1))), "app-not-live");
  world_.app_dead[testing::fake_app_id(1)] = false;
  world_.locked[1] = true;  // e.g. a `cu actions` batch holds the display
  EXPECT_EQ(code(b(1, world_.generations[1], testing::fake_app_id(1))), "session-busy");
  world_.locked[1] = false;
  EXPECT_EQ(mgr_->live_count(), 0u);
  EXPECT_EQ(code(b(1, world_.generations[1], testing::fake_app_id(1))), "ok");
}

TEST_F(SessionTest, StageDeadlineIs180SecondsFromAdmission) {
  std::string sid = to_phase("stage");
  clock_.advance_ms(179999);
  EXPECT_EQ(mgr_->expire_due(), 0u);
  EXPECT_EQ(mgr_->next_deadline_ms(), clock_.monotonic_ms() + 1);
  clock_.advance_ms(1);
  EXPECT_EQ(mgr_->expire_due(), 1u);
  EXPECT_FALSE(world_.locked[1]);
  EXPECT_EQ(world_.leases_open, 0);
  EXPECT_EQ(code(simple("freeze", sid, 0)), "session-expired");
  EXPECT_EQ(code(status(sid)), "session-expired");
  EXPECT_EQ(world_.executed, 0);
  // The record is dropped after its retention; then the session is simply not found.
  clock_.advance_ms(600000);
  EXPECT_EQ(code(status(sid)), "session-not-found");
}

// wait_ended wakes on the expiry itself (another thread expires the session while the waiter
// blocks), reports a live session as not ended when its bound passes, and an unknown id as not
// ended.
TEST_F(SessionTest, WaitEndedWakesOnExpiryAndTimesOutOtherwise) {
  std::string sid = to_phase("stage");
  EXPECT_FALSE(mgr_->wait_ended(sid, 1));
  EXPECT_FALSE(mgr_->wait_ended("sess-unknown", 1));
  std::promise<void> waiting;
  std::thread expirer([&] {
    waiting.get_future().wait();
    clock_.advance_ms(180000);
    EXPECT_EQ(mgr_->expire_due(), 1u);
  });
  waiting.set_value();
  EXPECT_TRUE(mgr_->wait_ended(sid, 10000));
  expirer.join();
  EXPECT_FALSE(world_.locked[1]);
  EXPECT_EQ(world_.leases_open, 0);
  EXPECT_TRUE(mgr_->wait_ended(sid, 0));  // already ended: no wait at all
}

// A request that arrives while another thread (the reaper) is expiring its session answers
// the expiry, not session-busy, and a begin on the same display waits for the expiry's cleanup
// instead of finding the display still held (CI saw task-busy for a turn past its deadline).
// The expirer is held inside the session's cleanup until the request has been waiting 200 ms;
// before the fix the request answered session-busy at once.
TEST_F(SessionTest, ARequestDuringAnExpiryAnswersTheExpiryNotBusy) {
  std::string sid = to_phase("stage");
  std::promise<void> in_cleanup;
  std::promise<void> go;
  std::shared_future<void> go_f = go.get_future().share();
  std::atomic<bool> first{true};
  world_.on_release = [&] {
    if (first.exchange(false)) {
      in_cleanup.set_value();
      go_f.wait();
    }
  };
  clock_.advance_ms(180000);
  std::thread expirer([&] { EXPECT_EQ(mgr_->expire_due(), 1u); });
  in_cleanup.get_future().wait();  // the expirer holds the session, inside its cleanup
  auto answer = std::async(std::launch::async, [&] { return clicks(sid, 0, 1); });
  auto rebegin = std::async(std::launch::async, [&] { return begin(1, "attempt-2"); });
  EXPECT_EQ(answer.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
      << "the request answered while the expiry was still running";
  go.set_value();
  expirer.join();
  EXPECT_EQ(code(answer.get()), "session-expired");
  Json b = rebegin.get();
  EXPECT_EQ(code(b), "ok") << b.dump();
  EXPECT_EQ(world_.executed, 0);
  world_.on_release = nullptr;  // it refers to this test's locals
}

TEST_F(SessionTest, ExpiryAppliesWithoutTheReaperOnTheNextCall) {
  std::string sid = to_phase("stage");
  clock_.advance_ms(180000);
  EXPECT_EQ(code(clicks(sid, 0, 1)), "session-expired");
  EXPECT_EQ(world_.executed, 0);
}

TEST_F(SessionTest, FreezeResetsTheDeadlineTo45Seconds) {
  std::string sid = to_phase("stage");
  clock_.advance_ms(170000);
  ASSERT_EQ(code(simple("freeze", sid, 0)), "ok");
  EXPECT_EQ(status(sid)["expires_in_ms"], 45000);
  clock_.advance_ms(44999);
  EXPECT_EQ(mgr_->expire_due(), 0u);
  Json o = observe(sid, 1);
  ASSERT_EQ(code(o), "ok");
  clock_.advance_ms(1);
  EXPECT_EQ(mgr_->expire_due(), 1u);
  EXPECT_EQ(code(finish(sid, 2, o["frame"]["sha256"])), "session-expired");
  EXPECT_EQ(world_.leases_open, 0);
}

TEST_F(SessionTest, FinishedButUnclosedSessionExpiresWithoutAReceipt) {
  std::string sid = to_phase("finished");
  std::string dir = status(sid)["evidence_dir"];
  ASSERT_TRUE(fs::exists(dir + "/actions.json"));  // finish wrote its evidence, not a receipt
  EXPECT_FALSE(fs::exists(dir + "/receipt.json"));
  clock_.advance_ms(45000);
  EXPECT_EQ(mgr_->expire_due(), 1u);
  EXPECT_FALSE(fs::exists(dir + "/receipt.json"));
  EXPECT_EQ(code(simple("close", sid, 4)), "session-expired");
}

TEST_F(SessionTest, FailedActionEndsTheSessionWithoutReceipt) {
  std::string sid = to_phase("stage");
  world_.fail_action_at = 1;
  Json r = clicks(sid, 0, 3);
  EXPECT_EQ(code(r), "session-action-failed");
  EXPECT_EQ(world_.executed, 2);  // the third never ran
  EXPECT_EQ(world_.leases_open, 0);
  EXPECT_GE(world_.releases, 1);
  Json s = status(sid);
  ASSERT_EQ(code(s), "ok");
  EXPECT_EQ(s["phase"], "failed");
  EXPECT_EQ(s["ended"]["reason"], "action-failed");
  EXPECT_EQ(s["results"].size(), 2u);
  EXPECT_EQ(s["results"][1]["status"], "failed");
  EXPECT_TRUE(s["receipt"].is_null());
  EXPECT_EQ(code(simple("freeze", sid, 0)), "session-phase");
  EXPECT_FALSE(fs::exists(s["evidence_dir"].get<std::string>() + "/receipt.json"));
}

TEST_F(SessionTest, DeadAppOrLostDisplayEndsTheSession) {
  std::string sid = to_phase("stage");
  world_.app_dead[testing::fake_app_id(1)] = true;
  EXPECT_EQ(code(clicks(sid, 0, 2)), "app-not-live");
  EXPECT_EQ(world_.executed, 0);
  EXPECT_EQ(status(sid)["ended"]["reason"], "app-not-live");
  EXPECT_EQ(world_.leases_open, 0);

  std::string sid2 = to_phase("frozen", 2);
  world_.display_dead = true;
  EXPECT_EQ(code(observe(sid2, 1)), "session-display-lost");
  EXPECT_EQ(status(sid2)["phase"], "failed");
  EXPECT_EQ(status(sid2)["ended"]["reason"], "display-lost");
  EXPECT_EQ(world_.leases_open, 0);
}

// An app found dead while its display still looks alive is blamed only once the display's
// server confirmed it is alive: an app that died of its display's death (seen first, because a
// killed Xvfb shuts its apps' sockets before the display's own) is the display's loss
// (docs/reliability.md, "Fault and load tests").
TEST_F(SessionTest, AnAppThatDiedWithItsDisplayIsTheDisplaysLoss) {
  std::string sid = to_phase("stage");
  world_.app_dead[testing::fake_app_id(1)] = true;
  world_.display_dying = true;
  EXPECT_EQ(code(clicks(sid, 0, 2)), "session-display-lost");
  EXPECT_EQ(world_.executed, 0);
  EXPECT_EQ(status(sid)["ended"]["reason"], "display-lost");
  EXPECT_EQ(world_.leases_open, 0);
}

// ---- settle in session actions (docs/sessions.md "Settle").

TEST_F(SessionTest, SettleWaitsBeforeEachFrameAndIsRecordedInTheEvent) {
  std::string sid = to_phase("stage");
  world_.settle_outcome = "still_loading";
  Json a = call(Json{{"op", "actions"}, {"session_id", sid}, {"sequence", 0}, {"settle", 1500},
                     {"actions", Json::array({Json{{"type", "click"}, {"x", 1}, {"y", 2}},
                                              Json{{"type", "type"}, {"text", "secret"}}})}});
  ASSERT_EQ(code(a), "ok") << a.dump();
  EXPECT_EQ(world_.settle_caps, (std::vector<std::int64_t>{1500, 1500}));  // once per action
  ASSERT_EQ(a["results"].size(), 2u);
  for (const auto& r : a["results"]) EXPECT_EQ(r["settle"], "still_loading") << r.dump();
  // settle: true is the default cap; a batch without settle waits for nothing and says nothing.
  world_.settle_outcome = "settled";
  Json b = call(Json{{"op", "actions"}, {"session_id", sid}, {"sequence", 1}, {"settle", true},
                     {"actions", Json::array({Json{{"type", "click"}, {"x", 3}, {"y", 4}}})}});
  ASSERT_EQ(code(b), "ok") << b.dump();
  EXPECT_EQ(world_.settle_caps.back(), 2000);
  Json c = clicks(sid, 2, 1);
  ASSERT_EQ(code(c), "ok") << c.dump();
  EXPECT_EQ(world_.settle_caps.size(), 3u);
  EXPECT_FALSE(c["results"][0].contains("settle"));
  Json d = call(Json{{"op", "actions"}, {"session_id", sid}, {"sequence", 3}, {"settle", false},
                     {"actions", Json::array({Json{{"type", "click"}, {"x", 5}, {"y", 6}}})}});
  ASSERT_EQ(code(d), "ok") << d.dump();
  EXPECT_EQ(world_.settle_caps.size(), 3u);
  ASSERT_EQ(code(simple("freeze", sid, 4)), "ok");
  Json o = observe(sid, 5);
  Json f = finish(sid, 6, o["frame"]["sha256"]);
  ASSERT_EQ(code(f), "ok") << f.dump();
  const Json& t = f["receipt"]["transcript"];
  ASSERT_EQ(t.size(), 9u);
  EXPECT_EQ(t[1]["settle"], "still_loading");
  EXPECT_EQ(t[2]["settle"], "still_loading");
  EXPECT_EQ(t[3]["settle"], "settled");
  EXPECT_FALSE(t[4].contains("settle"));
  EXPECT_FALSE(t[5].contains("settle"));
  // Each event's frame is the one captured after its settle: the result's frame_sha256.
  EXPECT_EQ(t[1]["frame_sha256"], a["results"][0]["frame_sha256"]);
  EXPECT_EQ(t[3]["frame_sha256"], b["results"][0]["frame_sha256"]);
  VerifyReport rep = verify_receipt(f["receipt"], VerifyOptions{});
  EXPECT_TRUE(rep.ok) << ::testing::PrintToString(rep.failed_names());
  // The settle outcome is bound: changing it breaks the digests.
  Json forged = f["receipt"];
  forged["transcript"][1]["settle"] = "settled";
  EXPECT_FALSE(verify_receipt(forged, VerifyOptions{}).ok);
}

TEST_F(SessionTest, BadSettleAndAppExitValuesAreCommandErrorsAndRunNothing) {
  std::string sid = to_phase("stage");
  auto with_settle = [&](const std::string& v) {
    return raw_code("{\"op\":\"actions\",\"session_id\":\"" + sid + "\",\"sequence\":0,\"settle\":" + v +
                    ",\"actions\":[{\"type\":\"click\",\"x\":1,\"y\":1}]}");
  };
  for (const char* v : {"0", "5001", "-1", "\"true\"", "null", "1.5", "[]", "{}"}) {
    EXPECT_EQ(with_settle(v), std::string(v) == "1.5" ? "session-json" : "session-command") << v;
  }
  EXPECT_EQ(with_settle("5000"), "ok");
  EXPECT_EQ(world_.executed, 1);
  auto with_exit = [&](const std::string& v) {
    return raw_code("{\"op\":\"begin\",\"display_id\":2,\"generation\":\"" + world_.generations[2] +
                    "\",\"app_id\":\"" + testing::fake_app_id(2) + "\",\"attempt_id\":\"x\",\"job_sha256\":\"" +
                    kJob + "\",\"app_exit\":" + v + "}");
  };
  for (const char* v : {"\"Record\"", "\"\"", "true", "null", "1", "\"recordx\""}) {
    EXPECT_EQ(with_exit(v), "session-command") << v;
  }
  EXPECT_EQ(mgr_->live_count(), 1u);
  EXPECT_EQ(with_exit("\"end\""), "ok");
  EXPECT_EQ(mgr_->live_count(), 2u);
}

// ---- app_exit: "record" (docs/sessions.md "App exit").

TEST_F(SessionTest, RecordedAppExitIsAnEventAndTheSessionGetsAReceipt) {
  Json b = begin_recording(1);
  ASSERT_EQ(code(b), "ok") << b.dump();
  std::string sid = b["session_id"];
  EXPECT_FALSE(b.contains("app_exit"));
  // The second click of the batch "closes the dialog": the app is gone before the third runs.
  world_.exit_status = 3;
  world_.on_execute = [&] {
    if (world_.executed == 1) world_.app_dead[testing::fake_app_id(1)] = true;
  };
  Json a = clicks(sid, 0, 3);
  ASSERT_EQ(code(a), "ok") << a.dump();
  EXPECT_EQ(world_.executed, 2);          // the batch stopped at the exit
  EXPECT_EQ(a["results"].size(), 2u);     // the action not run has no result
  EXPECT_EQ(a["action_count"], 2);
  EXPECT_EQ(a["sequence"], 1);
  ASSERT_TRUE(a.contains("app_exit")) << a.dump();
  EXPECT_EQ(a["app_exit"]["exit_status"], 3);
  EXPECT_EQ(a["app_exit"]["after_freeze"], false);
  EXPECT_EQ(a["frame"]["sha256"], a["app_exit"]["frame_sha256"]);
  // No input after the exit: refused, nothing runs, nothing advances, the session stays.
  Json more = clicks(sid, 1, 1);
  EXPECT_EQ(code(more), "app-not-live") << more.dump();
  EXPECT_EQ(world_.executed, 2);
  Json st = status(sid);
  EXPECT_EQ(st["phase"], "stage");
  EXPECT_EQ(st["sequence"], 1);
  ASSERT_EQ(code(simple("freeze", sid, 1)), "ok");
  Json o = observe(sid, 2);
  ASSERT_EQ(code(o), "ok") << o.dump();
  Json f = finish(sid, 3, o["frame"]["sha256"]);
  ASSERT_EQ(code(f), "ok") << f.dump();
  const Json& t = f["receipt"]["transcript"];
  ASSERT_EQ(t.size(), 7u) << t.dump();
  EXPECT_EQ(t[3], (Json{{"index", 3}, {"kind", "app_exit"}, {"exit_status", 3},
                        {"frame_sha256", a["app_exit"]["frame_sha256"]}}));
  EXPECT_EQ(t[4]["kind"], "freeze");
  VerifyReport rep = verify_receipt(f["receipt"], VerifyOptions{});
  EXPECT_TRUE(rep.ok) << ::testing::PrintToString(rep.failed_names());
  Json c = simple("close", sid, 4);
  EXPECT_EQ(code(c), "ok") << c.dump();
  EXPECT_TRUE(fs::exists(b["evidence_dir"].get<std::string>() + "/receipt.json"));
  EXPECT_EQ(world_.leases_open, 0);
}

TEST_F(SessionTest, RecordedAppExitBetweenBatchesAtFreezeAndAfterFreeze) {
  // Gone before a batch: the batch runs nothing, is accepted and records the exit.
  Json b1 = begin_recording(1);
  std::string s1 = b1["session_id"];
  ASSERT_EQ(code(clicks(s1, 0, 1)), "ok");
  world_.app_dead[testing::fake_app_id(1)] = true;  // exit status unknown: null
  Json a1 = clicks(s1, 1, 2);
  ASSERT_EQ(code(a1), "ok") << a1.dump();
  EXPECT_EQ(world_.executed, 1);
  EXPECT_EQ(a1["results"].size(), 0u);
  EXPECT_TRUE(a1["app_exit"]["exit_status"].is_null());
  // Gone by freeze: recorded before the freeze event.
  Json b2 = begin_recording(2);
  std::string s2 = b2["session_id"];
  world_.exit_status = 0;
  world_.app_dead[testing::fake_app_id(2)] = true;
  Json fr = simple("freeze", s2, 0);
  ASSERT_EQ(code(fr), "ok") << fr.dump();
  EXPECT_EQ(fr["app_exit"]["exit_status"], 0);
  // Gone after freeze: recorded at observe, between the freeze and the observation, outside
  // the stage transcript.
  Json b3 = begin_recording(3);
  std::string s3 = b3["session_id"];
  ASSERT_EQ(code(clicks(s3, 0, 1)), "ok");
  ASSERT_EQ(code(simple("freeze", s3, 1)), "ok");
  world_.exit_status = 137;
  world_.app_dead[testing::fake_app_id(3)] = true;
  Json o3 = observe(s3, 2);
  ASSERT_EQ(code(o3), "ok") << o3.dump();
  EXPECT_EQ(o3["app_exit"]["after_freeze"], true);
  Json f3 = finish(s3, 3, o3["frame"]["sha256"]);
  ASSERT_EQ(code(f3), "ok") << f3.dump();
  const Json& t = f3["receipt"]["transcript"];
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[2]["kind"], "freeze");
  EXPECT_EQ(t[3]["kind"], "app_exit");
  EXPECT_EQ(t[3]["exit_status"], 137);
  EXPECT_EQ(t[4]["kind"], "observation");
  EXPECT_TRUE(verify_receipt(f3["receipt"], VerifyOptions{}).ok);
  for (const std::string& sid : {s1, s2}) {
    Json st = status(sid);
    std::int64_t seq = st["sequence"];
    if (st["phase"] == "stage") {
      ASSERT_EQ(code(simple("freeze", sid, seq++)), "ok");
    }
    Json o = observe(sid, seq++);
    ASSERT_EQ(code(o), "ok") << o.dump();
    Json f = finish(sid, seq, o["frame"]["sha256"]);
    ASSERT_EQ(code(f), "ok") << f.dump();
    VerifyReport rep = verify_receipt(f["receipt"], VerifyOptions{});
    EXPECT_TRUE(rep.ok) << ::testing::PrintToString(rep.failed_names());
    std::size_t exits = 0;
    for (const auto& e : f["receipt"]["transcript"]) exits += e["kind"] == "app_exit" ? 1 : 0;
    EXPECT_EQ(exits, 1u);
  }
  // A lost display still ends a recording session.
  Json b4 = begin_recording(4);
  world_.display_dead = true;
  EXPECT_EQ(code(clicks(b4["session_id"], 0, 1)), "session-display-lost");
}

TEST_F(SessionTest, WithoutRecordTheAppExitStillEndsTheSession) {
  std::string sid = to_phase("stage");
  world_.app_dead[testing::fake_app_id(1)] = true;
  EXPECT_EQ(code(simple("freeze", sid, 0)), "app-not-live");
  EXPECT_EQ(status(sid)["phase"], "failed");
  EXPECT_FALSE(status(sid).contains("app_exit"));
}

TEST_F(SessionTest, CleanupFailureAtCloseWithdrawsTheReceipt) {
  std::string sid = to_phase("finished");
  std::string dir = status(sid)["evidence_dir"];
  world_.fail_release = true;
  Json r = simple("close", sid, 3);
  EXPECT_EQ(code(r), "session-cleanup-failed");
  EXPECT_FALSE(fs::exists(dir + "/receipt.json"));
  Json s = status(sid);
  EXPECT_EQ(s["phase"], "failed");
  EXPECT_EQ(s["ended"]["reason"], "cleanup-failed");
  EXPECT_EQ(world_.leases_open, 0);  // the display lock is still given back
}

TEST_F(SessionTest, FreezeReleaseFailureEndsTheSession) {
  std::string sid = to_phase("stage");
  world_.fail_release = true;
  EXPECT_EQ(code(simple("freeze", sid, 0)), "session-cleanup-failed");
  EXPECT_EQ(status(sid)["phase"], "failed");
  EXPECT_EQ(world_.leases_open, 0);
}

TEST_F(SessionTest, FinishChecksObservationAndClaims) {
  std::string sid = to_phase("observed");
  std::string obs = status(sid)["frame"]["sha256"];
  EXPECT_EQ(code(finish(sid, 2, std::string(64, 'f'))), "session-observation");
  EXPECT_EQ(code(finish(sid, 2, obs, Json::array())), "session-claims");
  EXPECT_EQ(code(finish(sid, 2, obs, Json{{"big", std::string(16 * 1024, 'x')}})), "session-claims");
  EXPECT_EQ(status(sid)["sequence"], 2);
  EXPECT_EQ(status(sid)["phase"], "observed");
  EXPECT_EQ(code(finish(sid, 2, obs, Json::object())), "ok");
}

TEST_F(SessionTest, RequestShapeErrors) {
  EXPECT_EQ(raw_code(std::string(96 * 1024 + 1, ' ')), "session-input-size");
  EXPECT_EQ(raw_code("{\"op\":\"status\",\"op\":\"status\"}"), "session-json");
  EXPECT_EQ(raw_code("{\"op\":\"status\",\"session_id\":\"x\"} {}"), "session-json");
  EXPECT_EQ(raw_code("{\"op\":\"finish\",\"session_id\":\"x\",\"sequence\":0,\"observation_sha256\":\"" +
                     std::string(64, 'a') + "\",\"claims\":{\"a\":{\"b\":1,\"b\":2}}}"),
            "session-json");
  EXPECT_EQ(raw_code("{\"op\":1.5}"), "session-json");
  EXPECT_EQ(raw_code("[]"), "session-command");
  EXPECT_EQ(raw_code("{}"), "session-command");
  EXPECT_EQ(raw_code("{\"op\":\"launch\"}"), "session-command");
  EXPECT_EQ(raw_code("{\"op\":\"status\",\"session_id\":\"x\",\"sequence\":0}"), "session-command");
  EXPECT_EQ(raw_code("{\"op\":\"freeze\",\"session_id\":\"x\",\"sequence\":\"0\"}"), "session-command");
  EXPECT_EQ(raw_code("{\"op\":\"freeze\",\"session_id\":\"x\",\"sequence\":-1}"), "session-command");
  EXPECT_EQ(raw_code("{\"op\":\"freeze\",\"session_id\":\"x\"}"), "session-command");
  EXPECT_EQ(raw_code("{\"op\":\"begin\",\"display_id\":1,\"generation\":\"g\",\"app_id\":\"a\",\"attempt_id\":\"\",\"job_sha256\":\"" +
                     kJob + "\"}"),
            "session-command");
  EXPECT_EQ(raw_code("{\"op\":\"begin\",\"display_id\":1,\"generation\":\"g\",\"app_id\":\"a\",\"attempt_id\":\"" +
                     std::string(257, 'a') + "\",\"job_sha256\":\"" + kJob + "\"}"),
            "session-command");
  EXPECT_EQ(raw_code("{\"op\":\"begin\",\"display_id\":1,\"generation\":\"g\",\"app_id\":\"a\",\"attempt_id\":\"a\",\"job_sha256\":\"" +
                     std::string(64, 'A') + "\"}"),
            "session-command");
  EXPECT_EQ(raw_code("{\"op\":\"observe\",\"session_id\":\"x\",\"sequence\":0,\"pre_observation_sha256\":\"ab\"}"),
            "session-command");
  EXPECT_EQ(raw_code("{\"op\":\"actions\",\"session_id\":\"x\",\"sequence\":0,\"actions\":{}}"), "session-command");
  EXPECT_EQ(mgr_->live_count(), 0u);
}

TEST_F(SessionTest, EndedRecordsAnswerStatusUntilRetentionEnds) {
  std::string sid = to_phase("closed");
  clock_.advance_ms(599999);
  EXPECT_EQ(status(sid)["phase"], "closed");
  clock_.advance_ms(1);
  EXPECT_EQ(code(status(sid)), "session-not-found");
}

TEST_F(SessionTest, AbortAllAtShutdownReleasesEveryDisplay) {
  to_phase("stage", 1);
  to_phase("frozen", 2);
  mgr_->abort_all();
  EXPECT_EQ(world_.leases_open, 0);
  EXPECT_EQ(mgr_->live_count(), 0u);
}

TEST_F(SessionTest, ARequestWhileAnotherRunsIsBusyNotQueued) {
  std::string sid = to_phase("stage");
  std::promise<void> entered, release;
  std::shared_future<void> release_f = release.get_future().share();
  bool first = true;
  world_.on_execute = [&] {
    if (!first) return;
    first = false;
    entered.set_value();
    release_f.wait();
  };
  Json slow;
  std::thread t([&] { slow = clicks(sid, 0, 2); });
  entered.get_future().wait();
  Json busy = clicks(sid, 0, 1);
  EXPECT_EQ(code(busy), "session-busy");
  EXPECT_EQ(busy["error"]["retryable"], true);
  EXPECT_EQ(code(simple("abort", sid, 0)), "session-busy");
  EXPECT_EQ(code(simple("freeze", sid, 0)), "session-busy");
  Json s = status(sid);  // status still answers while the batch runs
  EXPECT_EQ(code(s), "ok");
  EXPECT_EQ(s["sequence"], 0);
  // Expiry waits for the running request: its input is never cut off.
  clock_.advance_ms(200000);
  EXPECT_EQ(mgr_->expire_due(), 0u);
  release.set_value();
  t.join();
  EXPECT_EQ(code(slow), "ok");
  EXPECT_EQ(world_.executed, 2);
  // The deadline passed while it ran; the session expires right after.
  EXPECT_EQ(mgr_->expire_due(), 1u);
  EXPECT_EQ(world_.leases_open, 0);
}

// ---- record_video (docs/evidence.md "Video"): the state machine's side, with a fake recorder.

Json begin_video(SessionManager& mgr, const Json& actor, testing::FakeWorld& w, const std::string& v) {
  return mgr.handle(actor, "{\"op\":\"begin\",\"display_id\":1,\"generation\":\"" + w.generations[1] +
                               "\",\"app_id\":\"" + testing::fake_app_id(1) +
                               "\",\"attempt_id\":\"video\",\"job_sha256\":\"" + std::string(64, 'a') +
                               "\",\"record_video\":" + v + "}");
}

// A recorded session starts its recorder at begin (before the initial frame) and stops it at
// finish; the receipt binds the file as its one artifact, with the first frame's offset, and
// both verifiers' rules hold (the builder's self-check); the file stays in the evidence dir.
TEST_F(SessionTest, ARecordedSessionBindsItsVideoAsAnArtifact) {
  world_.video_available = true;
  Json b = begin_video(*mgr_, actor_, world_, "true");
  ASSERT_EQ(code(b), "ok") << b.dump();
  const std::string sid = b["session_id"];
  const std::string dir = b["evidence_dir"];
  ASSERT_EQ(world_.video_paths.size(), 1u);
  EXPECT_EQ(world_.video_paths[0], dir + "/video.webm");
  ASSERT_EQ(code(clicks(sid, 0, 2)), "ok");
  ASSERT_EQ(code(simple("freeze", sid, 1)), "ok");
  Json o = observe(sid, 2);
  ASSERT_EQ(code(o), "ok");
  EXPECT_EQ(world_.video_stops, 0);  // recording through the observation
  Json f = finish(sid, 3, o["frame"]["sha256"]);
  ASSERT_EQ(code(f), "ok") << f.dump();
  EXPECT_EQ(world_.video_stops, 1);
  const Json& art = f["receipt"]["artifacts"];
  ASSERT_EQ(art.size(), 1u);
  EXPECT_EQ(art[0]["kind"], "video");
  EXPECT_EQ(art[0]["name"], "video.webm");
  EXPECT_EQ(art[0]["media_type"], "video/webm");
  EXPECT_EQ(art[0]["sha256"], sha256_hex(world_.video_bytes));
  EXPECT_EQ(art[0]["byte_length"], static_cast<std::int64_t>(world_.video_bytes.size()));
  EXPECT_EQ(art[0]["fps"], 10);
  EXPECT_EQ(art[0]["start_offset_ms"], 0);  // the fake clock did not move; the age is clamped at 0
  ASSERT_EQ(code(simple("close", sid, 4)), "ok");
  auto receipt = load_receipt_file(dir + "/receipt.json");
  ASSERT_TRUE(receipt.ok());
  VerifyOptions vo;
  vo.frames_dir = dir;
  VerifyReport rep = verify_receipt(*receipt, vo);
  EXPECT_TRUE(rep.ok) << ::testing::PrintToString(rep.failed_names());
  EXPECT_EQ(rep.checks[rep.checks.size() - 1].name, "artifacts");
  // The file changed after the fact: the artifacts check names it.
  ASSERT_TRUE(write_file_atomic(dir + "/video.webm", world_.video_bytes + "x", 0600).ok());
  rep = verify_receipt(*receipt, vo);
  EXPECT_EQ(rep.failed_names(), std::vector<std::string>{"artifacts"});
}

// Without a recorder, a begin with record_video is video-unavailable and begins nothing; a
// recorder that fails at finish fails the session (no receipt); bad values are session-command.
TEST_F(SessionTest, RecordVideoFailsClosed) {
  EXPECT_EQ(code(begin_video(*mgr_, actor_, world_, "true")), "video-unavailable");
  EXPECT_EQ(mgr_->live_count(), 0u);
  EXPECT_FALSE(world_.locked[1]);
  for (const char* v : {"\"true\"", "1", "null", "{}"}) EXPECT_EQ(code(begin_video(*mgr_, actor_, world_, v)), "session-command") << v;
  Json plain = begin_video(*mgr_, actor_, world_, "false");  // false: no recorder asked for
  ASSERT_EQ(code(plain), "ok") << plain.dump();
  EXPECT_TRUE(world_.video_paths.empty());
  ASSERT_EQ(code(simple("abort", plain["session_id"], 0)), "ok");

  testing::FakeWorld& w = world_;
  w.video_available = true;
  w.video_stop_error = "video-failed";
  Json b = begin_video(*mgr_, actor_, w, "true");
  ASSERT_EQ(code(b), "ok") << b.dump();
  const std::string sid = b["session_id"];
  ASSERT_EQ(code(simple("freeze", sid, 0)), "ok");
  Json o = observe(sid, 1);
  ASSERT_EQ(code(o), "ok");
  Json f = finish(sid, 2, o["frame"]["sha256"]);
  EXPECT_EQ(code(f), "video-failed") << f.dump();
  Json s = status(sid);
  EXPECT_EQ(s["phase"], "failed");
  EXPECT_TRUE(s["receipt"].is_null());
  EXPECT_FALSE(fs::exists(b["evidence_dir"].get<std::string>() + "/receipt.json"));
}

// ---- begin's "browser" (docs/sessions.md "Browser"): the state machine's side, with fake
// workspaces (the real ones: bindings/python/tests/test_session_browser.py).

Json begin_browser(SessionManager& mgr, const Json& actor, testing::FakeWorld& w, std::int64_t display,
                   const std::string& browser_json) {
  return mgr.handle(actor, "{\"op\":\"begin\",\"display_id\":" + std::to_string(display) + ",\"generation\":\"" +
                               w.generations[display] + "\",\"app_id\":\"" + testing::fake_app_id(display) +
                               "\",\"attempt_id\":\"browser\",\"job_sha256\":\"" + std::string(64, 'a') +
                               "\",\"browser\":" + browser_json + "}");
}

const std::string kBrowser1 = "browser-" + std::string(32, '1');
const std::string kBrowser2 = "browser-" + std::string(32, '2');

// A bound workspace is re-checked before and after every batch; the receipt binds it (the
// builder's self-check runs both verifiers' rules) and the snapshot shows it.
TEST_F(SessionTest, ABoundBrowserIsCheckedAroundEveryBatchAndBoundInTheReceipt) {
  Json b = begin_browser(*mgr_, actor_, world_, 1, "\"" + kBrowser1 + "\"");
  ASSERT_EQ(code(b), "ok") << b.dump();
  const std::string sid = b["session_id"];
  EXPECT_EQ(b["browser"]["workspace_id"], kBrowser1);
  ASSERT_EQ(code(clicks(sid, 0, 2)), "ok");
  EXPECT_EQ(world_.browser_checks, 2);  // before the first action and after the last
  ASSERT_EQ(code(clicks(sid, 1, 1)), "ok");
  EXPECT_EQ(world_.browser_checks, 4);
  ASSERT_EQ(code(simple("freeze", sid, 2)), "ok");
  EXPECT_EQ(world_.browser_checks, 5);
  Json o = observe(sid, 3);
  ASSERT_EQ(code(o), "ok");
  Json f = finish(sid, 4, o["frame"]["sha256"]);
  ASSERT_EQ(code(f), "ok") << f.dump();
  const Json want{{"workspace_id", kBrowser1},
                  {"browser_version", "Chrome/140.0.0.0"},
                  {"target_id", std::string(32, 'A')},
                  {"profile_sha256", std::string(64, 'd')},
                  {"viewport", {{"width", 320}, {"height", 240}}}};
  EXPECT_EQ(f["receipt"]["browser"], want);
  ASSERT_EQ(code(simple("close", sid, 5)), "ok");
  auto receipt = load_receipt_file(b["evidence_dir"].get<std::string>() + "/receipt.json");
  ASSERT_TRUE(receipt.ok());
  VerifyOptions vo;
  vo.frames_dir = b["evidence_dir"];
  EXPECT_TRUE(verify_receipt(*receipt, vo).ok);
  // A session without a browser has no member and checks nothing.
  Json plain = begin();
  ASSERT_EQ(code(plain), "ok");
  ASSERT_EQ(code(clicks(plain["session_id"], 0, 1)), "ok");
  EXPECT_EQ(world_.browser_checks, 5);
  EXPECT_FALSE(plain.contains("browser"));
  ASSERT_EQ(code(simple("abort", plain["session_id"], 1)), "ok");
}

// Bad bindings begin nothing; a browser dead before a batch runs nothing and leaves the session
// live (abort ends it cleanly); dead after a batch's last action, the session fails closed.
TEST_F(SessionTest, ABrowserBindingFailsClosed) {
  EXPECT_EQ(code(begin_browser(*mgr_, actor_, world_, 1, "\"browser-" + std::string(32, '9') + "\"")),
            "browser-not-found");
  EXPECT_EQ(code(begin_browser(*mgr_, actor_, world_, 1, "\"" + kBrowser2 + "\"")), "browser-binding-mismatch");
  world_.browser_dead[kBrowser1] = true;
  EXPECT_EQ(code(begin_browser(*mgr_, actor_, world_, 1, "\"" + kBrowser1 + "\"")), "browser-not-live");
  for (const char* v : {"\"\"", "1", "null", "true", "{}"}) {
    EXPECT_EQ(code(begin_browser(*mgr_, actor_, world_, 1, v)), "session-command") << v;
  }
  EXPECT_EQ(mgr_->live_count(), 0u);
  EXPECT_FALSE(world_.locked[1]);
  EXPECT_EQ(world_.captures, 0);

  world_.browser_dead[kBrowser1] = false;
  Json b = begin_browser(*mgr_, actor_, world_, 1, "\"" + kBrowser1 + "\"");
  ASSERT_EQ(code(b), "ok") << b.dump();
  const std::string sid = b["session_id"];
  world_.browser_dead[kBrowser1] = true;
  Json a = clicks(sid, 0, 2);
  EXPECT_EQ(code(a), "browser-not-live") << a.dump();
  EXPECT_EQ(world_.executed, 0);
  EXPECT_EQ(status(sid)["phase"], "stage");
  EXPECT_EQ(code(simple("freeze", sid, 0)), "browser-not-live");
  EXPECT_EQ(status(sid)["phase"], "stage");
  Json ab = simple("abort", sid, 0);
  ASSERT_EQ(code(ab), "ok") << ab.dump();
  EXPECT_EQ(ab["cleanup_complete"], true);
  EXPECT_FALSE(world_.locked[1]);

  // Dies during the batch (the fake kills it at its last action): the batch fails closed.
  world_.browser_dead[kBrowser1] = false;
  Json b2 = begin_browser(*mgr_, actor_, world_, 1, "\"" + kBrowser1 + "\"");
  ASSERT_EQ(code(b2), "ok") << b2.dump();
  world_.on_execute = [&] { world_.browser_dead[kBrowser1] = true; };
  Json a2 = clicks(b2["session_id"], 0, 1);
  EXPECT_EQ(code(a2), "browser-not-live") << a2.dump();
  Json s2 = status(b2["session_id"]);
  EXPECT_EQ(s2["phase"], "failed");
  EXPECT_EQ(s2["ended"]["reason"], "browser-not-live");
  EXPECT_TRUE(s2["receipt"].is_null());
  EXPECT_FALSE(world_.locked[1]);
}

}  // namespace
}  // namespace evident
