// Fault and load tests against a real `evident daemon` on a real socket (issue #9, docs/reliability.md
// "Fault and load tests"): the Xvfb or the app killed in every session phase, a client that
// disconnects mid-batch, the daemon SIGKILLed mid-batch, and 8 concurrent sessions of 64 actions.
// Each fault ends with a stable error code, the session failed closed (no receipt.json, no
// envelope, a `failed` run-log entry), and nothing of the daemon's left behind or lost.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "evident/core/fs.h"
#include "evident/core/json.h"
#include "evident/protocol/protocol.h"
#include "evident/testing/daemon.h"
#include "evident/testing/files.h"
#include "evident/testing/fixture_log.h"
#include "evident/testing/process.h"

namespace evident {
namespace {

const std::string kJob(64, 'c');

struct Live {
  Json display_id, generation;
  pid_t xvfb = -1;
  std::string app_id;
  pid_t app_pid = -1;
  std::string events;
  std::string session_id;
  std::string evidence_dir;
  std::int64_t sequence = 0;
};

class DaemonFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override { start_daemon(); }

  void start_daemon() {
    // A restart: the previous daemon's log (which says "listening on") is kept aside, so start()
    // waits for the new daemon's own line.
    if (testing::path_exists(tmp_.path() + "/daemon.log")) {
      std::filesystem::rename(tmp_.path() + "/daemon.log", tmp_.path() + "/daemon-" + std::to_string(restarts_++) + ".log");
    }
    daemon_ = std::make_unique<testing::EvidentDaemon>(tmp_.path());
    ASSERT_TRUE(daemon_->start()) << testing::slurp(daemon_->log_path());
  }

  Json send(const Json& request) { return send_text(dump_json(request)); }
  Json send_text(const std::string& bytes) {
    const std::string answer = testing::raw_daemon_request(daemon_->socket(), bytes);
    auto parsed = parse_json_strict(answer, 64 << 20, "answer", kMaxResponseJsonDepth);
    EXPECT_TRUE(parsed.ok()) << "answer is not strict JSON (" << answer.size() << " bytes)";
    return parsed.ok() ? *parsed : Json::object();
  }
  Json session(const Json& request) {
    return send(Json{{"op", "session"}, {"args", {{"request", dump_json(request)}}}});
  }

  // The daemon's Xvfb children.
  std::set<pid_t> xvfbs() const {
    std::set<pid_t> out;
    for (const auto& p : testing::list_processes()) {
      if (p.ppid != daemon_->pid() || p.state == 'Z') continue;
      if (testing::slurp("/proc/" + std::to_string(p.pid) + "/comm").rfind("Xvfb", 0) == 0) out.insert(p.pid);
    }
    return out;
  }

  // A display with the fixture app (ready: its first frame painted) and a session begun on it.
  Live begin(const std::string& attempt) {
    Live l;
    const std::set<pid_t> before = xvfbs();
    Json d = send(Json{{"op", "display.create"}, {"args", {{"width", 320}, {"height", 240}}}});
    EXPECT_EQ(d.value("ok", false), true) << d.dump();
    l.display_id = d["display"]["id"];
    l.generation = d["display"]["generation"];
    for (pid_t p : xvfbs()) {
      if (!before.count(p)) l.xvfb = p;
    }
    EXPECT_GT(l.xvfb, 0);
    l.events = tmp_.path() + "/events-" + attempt + ".jsonl";
    Json a = send(Json{{"op", "app.launch"},
                       {"args", {{"display_id", l.display_id}, {"generation", l.generation},
                                 {"argv", {testing::fixture_app_path(), "--events", l.events}},
                                 {"wait_window_ms", 10000}}}});
    EXPECT_EQ(a.value("ok", false), true) << a.dump();
    l.app_id = a["app"].value("app_id", "");
    l.app_pid = a["app"].value("pid", -1);
    EXPECT_TRUE(testing::EventLog(l.events).wait_ready()) << "the fixture app did not paint";
    Json b = session(Json{{"op", "begin"}, {"display_id", l.display_id}, {"generation", l.generation},
                          {"app_id", l.app_id}, {"attempt_id", attempt}, {"job_sha256", kJob}});
    EXPECT_EQ(b.value("ok", false), true) << b.dump();
    l.session_id = b.value("session_id", "");
    l.evidence_dir = b.value("evidence_dir", "");
    return l;
  }

  Json actions(Live& l, const Json& list) {
    return session(Json{{"op", "actions"}, {"session_id", l.session_id}, {"sequence", l.sequence++},
                        {"actions", list}});
  }

  // Drives `l` from ready through the phase named (ready, acting, frozen, observed, finished);
  // returns the request that would come next.
  Json advance_to(Live& l, const std::string& phase) {
    Json next = Json{{"op", "actions"}, {"session_id", l.session_id}, {"sequence", 0},
                     {"actions", {{{"type", "click"}, {"x", 10}, {"y", 10}}}}};
    if (phase == "ready") return next;
    Json r = actions(l, {{{"type", "click"}, {"x", 12}, {"y", 12}}});
    EXPECT_EQ(r.value("ok", false), true) << r.dump();
    next = Json{{"op", "freeze"}, {"session_id", l.session_id}, {"sequence", l.sequence}};
    if (phase == "acting") return next;
    Json f = session(next);
    EXPECT_EQ(f.value("ok", false), true) << f.dump();
    ++l.sequence;
    next = Json{{"op", "observe"}, {"session_id", l.session_id}, {"sequence", l.sequence},
                {"pre_observation_sha256", f["frame"]["sha256"]}};
    if (phase == "frozen") return next;
    Json o = session(next);
    EXPECT_EQ(o.value("ok", false), true) << o.dump();
    ++l.sequence;
    next = Json{{"op", "finish"}, {"session_id", l.session_id}, {"sequence", l.sequence},
                {"observation_sha256", o["frame"]["sha256"]}, {"claims", {{"k", "v"}}}};
    if (phase == "observed") return next;
    Json fin = session(next);
    EXPECT_EQ(fin.value("ok", false), true) << fin.dump();
    ++l.sequence;
    return Json{{"op", "close"}, {"session_id", l.session_id}, {"sequence", l.sequence}};
  }

  // freeze, observe, finish and close after the actions; the close answer (or the first failure).
  Json advance_to_close(Live& l) {
    Json f = session(Json{{"op", "freeze"}, {"session_id", l.session_id}, {"sequence", l.sequence++}});
    if (!f.value("ok", false)) return f;
    Json o = session(Json{{"op", "observe"}, {"session_id", l.session_id}, {"sequence", l.sequence++},
                          {"pre_observation_sha256", f["frame"]["sha256"]}});
    if (!o.value("ok", false)) return o;
    Json fin = session(Json{{"op", "finish"}, {"session_id", l.session_id}, {"sequence", l.sequence++},
                            {"observation_sha256", o["frame"]["sha256"]}, {"claims", {{"k", "v"}}}});
    if (!fin.value("ok", false)) return fin;
    return session(Json{{"op", "close"}, {"session_id", l.session_id}, {"sequence", l.sequence++}});
  }

  // The run-log entries (state/log/entries.jsonl) of `id`.
  std::vector<Json> log_entries(const std::string& id) const {
    std::vector<Json> out;
    for (const auto& e : testing::json_lines(testing::slurp(tmp_.path() + "/state/log/entries.jsonl"))) {
      if (e.value("id", "") == id) out.push_back(e);
    }
    return out;
  }

  // The session failed closed: the answer is a declared, stable code among `codes`; the session
  // is failed; no receipt or envelope exists; the run log holds exactly one entry, `failed`; the
  // daemon serves.
  void expect_failed_closed(const Live& l, const Json& answer, const std::set<std::string>& codes) {
    ASSERT_EQ(answer.value("ok", true), false) << answer.dump();
    const std::string code = answer["error"].value("code", "");
    EXPECT_NE(protocol::find_error_code(code), nullptr) << code;
    EXPECT_TRUE(codes.count(code)) << "unexpected code " << code << ": " << answer.dump();
    Json st = session(Json{{"op", "status"}, {"session_id", l.session_id}});
    EXPECT_EQ(st.value("phase", ""), "failed") << st.dump();
    EXPECT_FALSE(testing::path_exists(l.evidence_dir + "/receipt.json"));
    EXPECT_FALSE(testing::path_exists(l.evidence_dir + "/receipt.dsse.json"));
    const auto entries = log_entries(l.session_id);
    ASSERT_EQ(entries.size(), 1u) << "run-log entries of the session";
    EXPECT_EQ(entries[0].value("outcome", ""), "failed");
    EXPECT_TRUE(entries[0]["receipt_id"].is_null());
    Json pong = send(Json{{"op", "ping"}});
    EXPECT_EQ(pong.value("ok", false), true);
  }

  testing::TempDir tmp_;
  std::unique_ptr<testing::EvidentDaemon> daemon_;
  int restarts_ = 0;
};

const char* const kPhases[] = {"ready", "acting", "frozen", "observed", "finished"};

// The display's Xvfb SIGKILLed in each phase: the next request fails the session
// (session-display-lost), the app is stopped with the display, nothing is kept.
TEST_F(DaemonFaultsTest, XvfbKilledInEachPhaseFailsClosed) {
  for (const char* phase : kPhases) {
    SCOPED_TRACE(phase);
    Live l = begin(std::string("xvfb-") + phase);
    const Json next = advance_to(l, phase);
    ASSERT_EQ(::kill(l.xvfb, SIGKILL), 0);
    ASSERT_TRUE(testing::wait_pid_gone(l.xvfb, 10000));
    expect_failed_closed(l, session(next), {"session-display-lost"});
    EXPECT_TRUE(testing::wait_pid_gone(l.app_pid, 10000)) << "the app outlived its display";
  }
  // Mid-batch: killed while a [wait, click] batch runs.
  Live l = begin("xvfb-mid-batch");
  auto batch = std::async(std::launch::async, [&] {
    return actions(l, {{{"type", "wait"}, {"ms", 1000}}, {{"type", "click"}, {"x", 5}, {"y", 5}}});
  });
  ASSERT_EQ(::kill(l.xvfb, SIGKILL), 0);
  expect_failed_closed(l, batch.get(), {"session-display-lost"});
}

// The app SIGKILLed in each phase: the next request fails the session (app-not-live); the
// display stays usable.
TEST_F(DaemonFaultsTest, AppKilledInEachPhaseFailsClosed) {
  for (const char* phase : kPhases) {
    SCOPED_TRACE(phase);
    Live l = begin(std::string("app-") + phase);
    const Json next = advance_to(l, phase);
    ASSERT_EQ(::kill(l.app_pid, SIGKILL), 0);
    ASSERT_TRUE(testing::wait_pid_gone(l.app_pid, 10000));
    expect_failed_closed(l, session(next), {"app-not-live"});
    Json st = send(Json{{"op", "display.status"}, {"args", {{"display_id", l.display_id}, {"generation", l.generation}}}});
    EXPECT_EQ(st.value("ok", false), true) << st.dump();
  }
  Live l = begin("app-mid-batch");
  auto batch = std::async(std::launch::async, [&] {
    return actions(l, {{{"type", "wait"}, {"ms", 1000}}, {{"type", "click"}, {"x", 5}, {"y", 5}}});
  });
  ASSERT_EQ(::kill(l.app_pid, SIGKILL), 0);
  expect_failed_closed(l, batch.get(), {"app-not-live", "session-display-lost"});
}

// A client that disconnects while its batch runs: the batch completes (input already sent is
// never cut short, held input is released), the session stays usable at the next sequence, and
// the daemon serves everyone else meanwhile.
TEST_F(DaemonFaultsTest, ClientDisconnectMidBatchLosesNothing) {
  Live l = begin("disconnect");
  const std::string request = dump_json(Json{
      {"op", "session"},
      {"args", {{"request", dump_json(Json{{"op", "actions"}, {"session_id", l.session_id}, {"sequence", 0},
                                           {"actions", {{{"type", "hold_key"}, {"key", "shift"}, {"ms", 600}},
                                                        {{"type", "click"}, {"x", 30}, {"y", 30}}}}})}}}});
  const int fd = testing::send_daemon_request(daemon_->socket(), request);
  ASSERT_GE(fd, 0);
  ::close(fd);  // gone before the answer
  // Others are served while the batch runs.
  const std::int64_t t0 = testing::now_ms();
  Json pong = send(Json{{"op", "ping"}});
  EXPECT_EQ(pong.value("ok", false), true);
  EXPECT_LT(testing::now_ms() - t0, 500) << "a ping waited for the abandoned batch";
  // The batch ran to its end: the click arrived, shift was pressed and released.
  testing::EventLog log(l.events);
  EXPECT_EQ(log.wait_events("button_release", 1, 10000).size(), 1u);
  EXPECT_TRUE(log.wait_for([](const std::vector<Json>& ev) {
    for (const auto& e : testing::of_type(ev, "key_release")) {
      if (e.value("keysym_name", "").rfind("Shift", 0) == 0) return true;
    }
    return false;
  }, 10000)) << "shift was never released";
  // The session advanced and continues at the next sequence.
  ASSERT_TRUE(testing::wait_until([&] {
    Json st = session(Json{{"op", "status"}, {"session_id", l.session_id}});
    return st.value("sequence", -1) == 1;
  }, 10000)) << session(Json{{"op", "status"}, {"session_id", l.session_id}}).dump();
  l.sequence = 1;
  Json next = actions(l, {{{"type", "click"}, {"x", 31}, {"y", 31}}});
  EXPECT_EQ(next.value("ok", false), true) << next.dump();
}

// SIGKILL of the daemon while a batch runs: no receipt, and nothing the daemon started survives
// it (its Xvfb and app die with it); a new daemon on the same socket and state dir starts, removes
// the dead one's scratch directory and works.
TEST_F(DaemonFaultsTest, SigkillMidBatchLeavesNoReceiptAndNothingRunning) {
  Live l = begin("sigkill");
  const pid_t old_pid = daemon_->pid();
  auto batch = std::async(std::launch::async, [&] {
    return testing::raw_daemon_request(
        daemon_->socket(),
        dump_json(Json{{"op", "session"},
                       {"args", {{"request", dump_json(Json{{"op", "actions"}, {"session_id", l.session_id},
                                                            {"sequence", 0},
                                                            {"actions", {{{"type", "click"}, {"x", 20}, {"y", 20}},
                                                                         {{"type", "wait"}, {"ms", 3000}}}}})}}}}));
  });
  // The batch is running (in its wait) once its click has arrived.
  ASSERT_EQ(testing::EventLog(l.events).wait_events("button_release", 1, 10000).size(), 1u);
  EXPECT_EQ(daemon_->kill_hard(), 128 + SIGKILL);
  EXPECT_EQ(batch.get(), "") << "an answer from a killed daemon";
  EXPECT_TRUE(testing::wait_pid_gone(l.xvfb, 10000)) << "the Xvfb outlived its daemon";
  EXPECT_TRUE(testing::wait_pid_gone(l.app_pid, 10000)) << "the app outlived its daemon";
  EXPECT_FALSE(testing::path_exists(l.evidence_dir + "/receipt.json"));
  EXPECT_FALSE(testing::path_exists(l.evidence_dir + "/receipt.dsse.json"));
  // The dead daemon's scratch (engine-<pid>-<hex> in the runtime dir) is still there; the next
  // daemon removes it and reclaims the stale socket.
  start_daemon();
  Json pong = send(Json{{"op", "ping"}});
  EXPECT_EQ(pong.value("ok", false), true);
  const std::string prefix = "engine-" + std::to_string(old_pid) + "-";
  for (const auto& p : testing::list_processes()) EXPECT_NE(p.ppid, old_pid) << "a child of the killed daemon";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(default_runtime_dir(), ec)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) ADD_FAILURE() << "left behind: " << e.path();
  }
  // A new session on a new display works.
  Live again = begin("after-sigkill");
  EXPECT_EQ(actions(again, {{{"type", "click"}, {"x", 10}, {"y", 10}}}).value("ok", false), true);
}

// Load: 8 sessions on 8 displays, concurrently, 64 clicks each (4 batches of 16) through to close.
// Every click arrives at its own session's app, none at another's, and every receipt is kept.
TEST_F(DaemonFaultsTest, EightConcurrentSessionsOf64Actions) {
  constexpr int kSessions = 8;
  std::vector<Live> live;
  for (int s = 0; s < kSessions; ++s) live.push_back(begin("load-" + std::to_string(s)));
  std::vector<std::future<Json>> runs;
  const std::int64_t t0 = testing::now_ms();
  for (int s = 0; s < kSessions; ++s) {
    runs.push_back(std::async(std::launch::async, [&, s] {
      Live& l = live[s];
      for (int b = 0; b < 4; ++b) {
        Json list = Json::array();
        for (int k = 0; k < 16; ++k) list.push_back({{"type", "click"}, {"x", 10 + s * 8}, {"y", 10 + b * 16 + k}});
        Json r = actions(l, list);
        if (!r.value("ok", false)) return r;
      }
      return advance_to_close(l);
    }));
  }
  for (int s = 0; s < kSessions; ++s) {
    Json closed = runs[s].get();
    EXPECT_EQ(closed.value("ok", false), true) << s << ": " << closed.dump();
    EXPECT_TRUE(testing::path_exists(live[s].evidence_dir + "/receipt.json"));
  }
  std::printf("8 sessions x 64 clicks, concurrently, through close: %lld ms\n",
              static_cast<long long>(testing::now_ms() - t0));
  for (int s = 0; s < kSessions; ++s) {
    SCOPED_TRACE(s);
    testing::EventLog log(live[s].events);
    const auto presses = log.wait_events("button_press", 64, 10000);
    EXPECT_EQ(presses.size(), 64u);
    EXPECT_EQ(log.events_of("button_release").size(), 64u);
    for (const auto& p : presses) EXPECT_EQ(p.value("x_root", -1), 10 + s * 8) << "a click at the wrong app";
    const auto entries = log_entries(live[s].session_id);
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0].value("outcome", ""), "closed");
  }
}

// Disk full on the evidence directory (a 2 MiB tmpfs mounted on <state>/evidence; needs root,
// as CI has): finish is refused with a retryable fs-error and the session stays observed, the
// retry after space is freed succeeds; a close that cannot write its receipt fails the session
// closed with fs-error (no receipt.json, no partial file, a `failed` run-log entry), and the next
// session closes once there is space again.
class DiskFullTest : public DaemonFaultsTest {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root (CI runs as root)";
    DaemonFaultsTest::SetUp();
    evidence_ = tmp_.path() + "/state/evidence";
    std::filesystem::create_directories(evidence_);
    auto m = testing::run_command("mount -t tmpfs -o size=2m,mode=0700 evident-test-full " +
                                  testing::shell_quote(evidence_) + " 2>&1");
    ASSERT_EQ(m.exit_status, 0) << m.out;
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) {
      daemon_.reset();  // nothing of the daemon's holds the mount
      (void)testing::run_command("umount -l " + testing::shell_quote(evidence_) + " 2>&1");
    }
  }
  // Fills the tmpfs (a filler file written until ENOSPC).
  void fill() {
    const std::string filler = evidence_ + "/filler";
    int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    std::string block(4096, 'x');
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    int single = 0;
    while (::write(fd, "x", 1) == 1) ++single;
    EXPECT_EQ(errno, ENOSPC);
    ::close(fd);
  }
  void free_space() { ASSERT_EQ(::unlink((evidence_ + "/filler").c_str()), 0); }
  // Files in the session's evidence dir other than the frames and actions.json.
  static std::vector<std::string> stray_files(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      const std::string n = e.path().filename().string();
      if (n == "frames" || n == "actions.json") continue;
      if (n.size() == 68 && n.compare(64, 4, ".png") == 0) continue;
      out.push_back(n);
    }
    return out;
  }

  std::string evidence_;
  bool mounted_ = false;
};

TEST_F(DiskFullTest, FinishIsRetryableAndCloseFailsClosed) {
  Live l = begin("disk-full");
  Json finish = advance_to(l, "observed");
  fill();
  Json refused = session(finish);
  ASSERT_EQ(refused.value("ok", true), false) << refused.dump();
  EXPECT_EQ(refused["error"].value("code", ""), "fs-error");
  EXPECT_EQ(refused["error"].value("retryable", false), true);
  EXPECT_EQ(session(Json{{"op", "status"}, {"session_id", l.session_id}}).value("phase", ""), "observed");
  EXPECT_EQ(stray_files(l.evidence_dir), std::vector<std::string>{}) << "a partial file was left";
  free_space();
  Json finished = session(finish);
  ASSERT_EQ(finished.value("ok", false), true) << finished.dump();

  ++l.sequence;
  fill();
  Json close = session(Json{{"op", "close"}, {"session_id", l.session_id}, {"sequence", l.sequence}});
  expect_failed_closed(l, close, {"fs-error"});
  EXPECT_EQ(stray_files(l.evidence_dir), std::vector<std::string>{}) << "a partial file was left";
  free_space();

  Live next = begin("disk-free-again");
  advance_to(next, "acting");
  Json closed = advance_to_close(next);
  EXPECT_EQ(closed.value("ok", false), true) << closed.dump();
  EXPECT_TRUE(testing::path_exists(next.evidence_dir + "/receipt.json"));
  EXPECT_TRUE(testing::path_exists(next.evidence_dir + "/receipt.dsse.json"));
}

}  // namespace
}  // namespace evident
