// Integration test through the real daemon and the `evident session` CLI as subprocesses: a
// full session whose receipt both `evident verify` and the Python verifier accept, and a typed
// marker string that reaches the app but appears in no receipt, frame name, daemon log line or
// CLI output (responses and error messages).
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "engine_harness.h"
#include "evident/receipts/receipt.h"
#include "evident/testing/daemon.h"

namespace evident {
namespace {

namespace fs = std::filesystem;
using testing::code_of;
using testing::run_command;
using testing::slurp;
using testing::shell_quote;

class SessionCli : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = (fs::temp_directory_path() / ("evident-session-cli-" + random_hex(6))).string();
    ASSERT_TRUE(make_private_dir(root_).ok());
    daemon_ = std::make_unique<testing::EvidentDaemon>(root_);
    ASSERT_TRUE(daemon_->start()) << slurp(daemon_->log_path());
    socket_ = daemon_->socket();
    log_ = daemon_->log_path();
  }
  void TearDown() override {
    daemon_.reset();
    (void)remove_tree(root_);
  }
  void stop_daemon() { (void)daemon_->stop(); }

  // Runs `evident --json --socket S ARGS`; returns the parsed answer and keeps the raw output.
  Json cli(const std::string& args) {
    auto [rc, out] = run_command(shell_quote(evident_) + " --json --socket " + shell_quote(socket_) + " " + args + " 2>&1");
    outputs_ += out;
    try {
      Json j = Json::parse(out);
      EXPECT_EQ(rc, j.value("ok", false) ? 0 : 1) << out;
      return j;
    } catch (...) {
      ADD_FAILURE() << "not JSON (rc " << rc << "): " << out;
      return Json{{"ok", false}, {"error", {{"code", "not-json"}}}};
    }
  }
  Json session(const Json& req) { return cli("session --request " + shell_quote(req.dump())); }

  std::string root_, socket_, log_;
  const std::string evident_ = testing::evident_cli_path();
  std::unique_ptr<testing::EvidentDaemon> daemon_;
  std::string outputs_;
};

TEST_F(SessionCli, FullSessionThroughDaemonAndCliLeaksNoTypedText) {
  const std::string marker = "zqmarker" + random_hex(8);
  Json d = cli("display create --width 800 --height 600");
  ASSERT_EQ(code_of(d), "ok") << d.dump();
  int id = d["display"]["id"];
  std::string gen = d["display"]["generation"];
  std::string events = root_ + "/app-events.jsonl";
  Json a = cli("app launch " + std::to_string(id) + " " + gen + " --wait-window-ms 10000 -- " +
               shell_quote(std::string(EVIDENT_BINARY_DIR) + "/fixtures/app/evident-fixture-app") +
               " --events " + shell_quote(events));
  ASSERT_EQ(code_of(a), "ok") << a.dump();
  std::string job(64, 'd');

  // begin through @FILE, the rest inline.
  std::string begin_file = root_ + "/begin.json";
  std::ofstream(begin_file) << Json{{"op", "begin"}, {"display_id", id}, {"generation", gen},
                                    {"app_id", a["app"]["app_id"]}, {"attempt_id", "cli-1"},
                                    {"job_sha256", job}}.dump();
  Json b = cli("session --request @" + shell_quote(begin_file));
  ASSERT_EQ(code_of(b), "ok") << b.dump();
  EXPECT_EQ(b["actor"]["kind"], "local_user");
  EXPECT_EQ(b["actor"]["uid"], static_cast<int>(::getuid()));
  std::string sid = b["session_id"];
  std::string evidence = b["evidence_dir"];

  // Refusals carrying the marker (as text and as a key name) must not echo it.
  Json bad1 = session(Json{{"op", "actions"}, {"session_id", sid}, {"sequence", 0},
                           {"actions", Json::array({Json{{"type", "type"}, {"text", marker}, {"bogus", 1}}})}});
  EXPECT_EQ(code_of(bad1), "session-action");
  Json bad2 = session(Json{{"op", "actions"}, {"session_id", sid}, {"sequence", 0},
                           {"actions", Json::array({Json{{"type", "key"}, {"key", marker}}})}});
  EXPECT_EQ(code_of(bad2), "session-action");
  Json bad3 = session(Json{{"op", "actions"}, {"session_id", sid}, {"sequence", 0},
                           {"actions", Json::array({Json{{"type", "paste"}, {"text", marker}}})}});
  EXPECT_EQ(code_of(bad3), "session-action-forbidden");

  Json act = session(Json{{"op", "actions"}, {"session_id", sid}, {"sequence", 0},
                          {"actions", Json::array({Json{{"type", "click"}, {"x", 100}, {"y", 40}},
                                                   Json{{"type", "type"}, {"text", marker + " evident"}}})}});
  ASSERT_EQ(code_of(act), "ok") << act.dump();
  testing::EventLog app_log(events);
  ASSERT_TRUE(app_log.wait_for([](const std::vector<Json>& ev) {
    for (const auto& e : ev) if (e["type"] == "trigger") return true;
    return false;
  }));
  // The marker really reached the app (so the absence checks below can fail).
  ASSERT_NE(slurp(events).find(marker), std::string::npos);

  Json f = session(Json{{"op", "freeze"}, {"session_id", sid}, {"sequence", 1}});
  ASSERT_EQ(code_of(f), "ok") << f.dump();
  Json o = session(Json{{"op", "observe"}, {"session_id", sid}, {"sequence", 2},
                        {"pre_observation_sha256", f["frame"]["sha256"]}});
  ASSERT_EQ(code_of(o), "ok") << o.dump();
  EXPECT_EQ(testing::pixel_hex(o["frame"]["path"], 5, 5), "20A040");
  Json fin = session(Json{{"op", "finish"}, {"session_id", sid}, {"sequence", 3},
                          {"observation_sha256", o["frame"]["sha256"]},
                          {"claims", {{"background", "green"}}}});
  ASSERT_EQ(code_of(fin), "ok") << fin.dump();
  Json c = session(Json{{"op", "close"}, {"session_id", sid}, {"sequence", 4}});
  ASSERT_EQ(code_of(c), "ok") << c.dump();
  EXPECT_EQ(c["cleanup_complete"], true);
  std::string receipt = evidence + "/receipt.json";

  // Both verifiers accept it.
  std::string vargs = shell_quote(receipt) + " --frames " + shell_quote(evidence) + " --png " +
                      shell_quote(o["frame"]["path"].get<std::string>()) + " --expect-job " + job +
                      " --expect-uid " + std::to_string(::getuid());
  auto [vrc, vout] = run_command(shell_quote(evident_) + " verify " + vargs + " 2>&1");
  EXPECT_EQ(vrc, 0) << vout;
  std::string py = std::string(EVIDENT_SOURCE_DIR) + "/bindings/python/evident/verify.py";
  if (fs::exists(py)) {
    auto [prc, pout] = run_command("PYTHONPATH=" + shell_quote(std::string(EVIDENT_SOURCE_DIR) + "/bindings/python") +
                                   " /usr/bin/python3 -m evident.verify " + vargs + " 2>&1");
    EXPECT_EQ(prc, 0) << pout;
  }

  stop_daemon();  // flushes and closes the daemon log
  // The marker is nowhere: receipt, evidence file names, any file under the state dir except
  // the private commitments record (receipt v3, docs/receipts.md §11: 0600, the one place that
  // keeps typed text, so that it can be disclosed), the daemon log, every CLI output.
  EXPECT_EQ(slurp(receipt).find(marker), std::string::npos);
  const std::string record = root_ + "/state/commitments/" + sid + ".json";
  for (const auto& e : fs::recursive_directory_iterator(root_ + "/state")) {
    EXPECT_EQ(e.path().string().find(marker), std::string::npos) << e.path();
    if (e.is_regular_file() && e.path().string() != record) {
      EXPECT_EQ(slurp(e.path().string()).find(marker), std::string::npos) << e.path();
    }
  }
  EXPECT_NE(slurp(record).find(marker), std::string::npos);
  EXPECT_EQ(fs::status(record).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  std::string daemon_log = slurp(log_);
  EXPECT_FALSE(daemon_log.empty());
  EXPECT_EQ(daemon_log.find(marker), std::string::npos);
  EXPECT_EQ(outputs_.find(marker), std::string::npos);
  // The evidence outlives the daemon.
  EXPECT_TRUE(fs::exists(receipt));
  EXPECT_TRUE(fs::exists(o["frame"]["path"].get<std::string>()));
}

// A caller that disconnects right after sending a batch does not cancel it: the held key and
// the click still complete and are released (the app logs the releases), the batch is accepted
// (sequence 1), and the daemon keeps serving the session.
TEST_F(SessionCli, DisconnectedCallerDoesNotCancelInputInFlight) {
  Json d = cli("display create --width 640 --height 480");
  ASSERT_EQ(code_of(d), "ok") << d.dump();
  std::string events = root_ + "/app-events.jsonl";
  Json a = cli("app launch " + std::to_string(d["display"]["id"].get<int>()) + " " +
               d["display"]["generation"].get<std::string>() + " --wait-window-ms 10000 -- " +
               shell_quote(std::string(EVIDENT_BINARY_DIR) + "/fixtures/app/evident-fixture-app") +
               " --events " + shell_quote(events));
  ASSERT_EQ(code_of(a), "ok") << a.dump();
  Json b = session(Json{{"op", "begin"}, {"display_id", d["display"]["id"]},
                        {"generation", d["display"]["generation"]}, {"app_id", a["app"]["app_id"]},
                        {"attempt_id", "disconnect"}, {"job_sha256", std::string(64, 'e')}});
  ASSERT_EQ(code_of(b), "ok") << b.dump();
  std::string sid = b["session_id"];

  Json batch{{"op", "actions"}, {"session_id", sid}, {"sequence", 0},
             {"actions", Json::array({Json{{"type", "hold_key"}, {"key", "shift"}, {"ms", 600}},
                                      Json{{"type", "click"}, {"x", 245}, {"y", 105}}})}};
  std::string envelope = Json{{"op", "session"}, {"args", {{"request", batch.dump()}}}}.dump();
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_.c_str());
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::write(fd, envelope.data(), envelope.size()), static_cast<ssize_t>(envelope.size()));
  ::shutdown(fd, SHUT_WR);
  ::close(fd);  // gone before any answer

  testing::EventLog log(events);
  ASSERT_TRUE(log.wait_for([](const std::vector<Json>& ev) {
    bool key_up = false, button_up = false;
    for (const auto& e : ev) {
      key_up = key_up || (e["type"] == "key_release" && e["keysym_name"] == "Shift_L");
      button_up = button_up || e["type"] == "button_release";
    }
    return key_up && button_up;
  }, 15000)) << "the in-flight batch was cancelled";
  // The batch finished and was accepted; the next request may briefly see session-busy
  // (documented retryable) while the last frame is written: a client retries it within a
  // deadline, and anything but session-busy ends the wait.
  Json next;
  ASSERT_TRUE(testing::wait_until([&] {
    next = session(Json{{"op", "freeze"}, {"session_id", sid}, {"sequence", 1}});
    return code_of(next) != "session-busy";
  }, 15000)) << "still session-busy after 15 s";
  ASSERT_EQ(code_of(next), "ok") << next.dump();
  EXPECT_EQ(next["action_count"], 2);
  EXPECT_EQ(next["sequence"], 2);
}

// Issue #9 item 5: a finished session whose daemon is SIGKILLed before close keeps no receipt.
// receipt.json is written only at close, so nothing is left that `evident verify` could accept
// as the record of a completed session, and a restarted daemon has nothing to withdraw.
TEST_F(SessionCli, DaemonKilledBetweenFinishAndCloseLeavesNoReceipt) {
  Json d = cli("display create --width 640 --height 480");
  ASSERT_EQ(code_of(d), "ok") << d.dump();
  Json a = cli("app launch " + std::to_string(d["display"]["id"].get<int>()) + " " +
               d["display"]["generation"].get<std::string>() + " --wait-window-ms 10000 -- " +
               shell_quote(std::string(EVIDENT_BINARY_DIR) + "/fixtures/app/evident-fixture-app") +
               " --events " + shell_quote(root_ + "/app-events.jsonl"));
  ASSERT_EQ(code_of(a), "ok") << a.dump();
  Json b = session(Json{{"op", "begin"}, {"display_id", d["display"]["id"]},
                        {"generation", d["display"]["generation"]}, {"app_id", a["app"]["app_id"]},
                        {"attempt_id", "killed"}, {"job_sha256", std::string(64, 'f')}});
  ASSERT_EQ(code_of(b), "ok") << b.dump();
  std::string sid = b["session_id"];
  const std::string evidence = b["evidence_dir"];
  ASSERT_EQ(code_of(session(Json{{"op", "actions"}, {"session_id", sid}, {"sequence", 0},
                                 {"actions", Json::array({Json{{"type", "click"}, {"x", 245}, {"y", 105}}})}})),
            "ok");
  Json f = session(Json{{"op", "freeze"}, {"session_id", sid}, {"sequence", 1}});
  ASSERT_EQ(code_of(f), "ok") << f.dump();
  Json o = session(Json{{"op", "observe"}, {"session_id", sid}, {"sequence", 2},
                        {"pre_observation_sha256", f["frame"]["sha256"]}});
  ASSERT_EQ(code_of(o), "ok") << o.dump();
  Json fin = session(Json{{"op", "finish"}, {"session_id", sid}, {"sequence", 3},
                          {"observation_sha256", o["frame"]["sha256"]}, {"claims", {{"k", "v"}}}});
  ASSERT_EQ(code_of(fin), "ok") << fin.dump();
  ASSERT_TRUE(fin["receipt"].is_object());
  EXPECT_TRUE(fs::exists(evidence + "/actions.json"));  // finish's evidence is on disk

  EXPECT_EQ(daemon_->kill_hard(), 128 + SIGKILL);
  EXPECT_FALSE(fs::exists(evidence + "/receipt.json"));
  EXPECT_FALSE(fs::exists(evidence + "/receipt.dsse.json"));
  // Even the receipt the caller got from finish, written out by hand, is unsigned: with the
  // engine's key, verification refuses it (no envelope, no log entry).
  const std::string copy = root_ + "/finish-reply-receipt.json";
  ASSERT_TRUE(write_receipt_atomic(root_, fin["receipt"]).ok());
  fs::rename(root_ + "/receipt.json", copy);
  auto [vrc, vout] = run_command(shell_quote(evident_) + " --json verify " + shell_quote(copy) +
                                 " --frames " + shell_quote(evidence) + " --key " +
                                 shell_quote(root_ + "/state/keys/signing.pub") + " 2>&1");
  EXPECT_NE(vrc, 0) << vout;
  EXPECT_NE(vout.find("\"authenticated\":false"), std::string::npos) << vout;

  // A restarted daemon on the same state dir starts clean and leaves no receipt either.
  daemon_ = std::make_unique<testing::EvidentDaemon>(root_);
  ASSERT_TRUE(daemon_->start()) << slurp(daemon_->log_path());
  EXPECT_FALSE(fs::exists(evidence + "/receipt.json"));
}

}  // namespace
}  // namespace evident
