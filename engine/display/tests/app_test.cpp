// Integration tests for apps on owned displays: real launches on real Xvfb (the fixture app),
// environment and process group, liveness, stop, bad commands, window waits, destroy cleanup.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "evident/core/fs.h"
#include "evident/core/json.h"
#include "evident/display/display.h"
#include "evident/testing/files.h"
#include "evident/testing/fixture_log.h"
#include "evident/testing/process.h"

namespace evident {
namespace {

using testing::pid_running;
using testing::run_command;
using testing::wait_until;

const std::string kFixture = testing::fixture_app_path();

std::string environ_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  for (auto& c : s) {
    if (c == '\0') c = '\n';
  }
  return "\n" + s;
}

class AppTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DisplayManagerOptions o;
    o.runtime_dir = dir_ + "/rt";
    mgr_ = std::make_unique<DisplayManager>(o);
    auto d = mgr_->create(DisplayOptions::of(640, 480, 24, 96));
    ASSERT_TRUE(d.ok()) << d.error().message;
    display_ = *d;
  }
  int id() const { return display_->info().id; }
  const std::string& gen() const { return display_->info().generation; }
  testing::TempDir tmp_;  // declared first: removed after the manager is gone
  const std::string dir_ = tmp_.path();
  std::unique_ptr<DisplayManager> mgr_;
  std::shared_ptr<OwnedDisplay> display_;
};

// Proves: the fixture app runs on exactly this display with its cookie, in its own process
// group, with a private log; it is live until stopped, then reaped with its exit status.
TEST_F(AppTest, LaunchWaitWindowLivenessAndStop) {
  ASSERT_TRUE(testing::path_exists(kFixture)) << "build evident-fixture-app first";
  const std::string events = dir_ + "/events.jsonl";
  std::vector<std::string> argv = {kFixture, "--events", events};
  auto app = mgr_->launch_app(id(), gen(), argv, 20000);
  ASSERT_TRUE(app.ok()) << app.error().code << ": " << app.error().message;
  EXPECT_EQ(app->app_id.rfind("app-", 0), 0u);
  EXPECT_EQ(app->display_id, id());
  EXPECT_EQ(app->generation, gen());
  EXPECT_TRUE(app->alive);
  EXPECT_TRUE(pid_running(app->pid));
  EXPECT_EQ(::getpgid(app->pid), app->pid);
  // The window is up: the fixture logs "ready" with its pid after its first paint.
  ASSERT_TRUE(testing::wait_file_contains(events, "\"type\":\"ready\"", 10000));
  auto first = read_file(events, 1 << 20);
  auto ready = Json::parse(first->substr(0, first->find('\n')));
  EXPECT_EQ(ready["pid"], app->pid);

  std::string env = environ_of(app->pid);
  EXPECT_NE(env.find("\nDISPLAY=" + display_->info().name + "\n"), std::string::npos);
  EXPECT_NE(env.find("\nXAUTHORITY=" + display_->auth_file() + "\n"), std::string::npos);

  // argv_sha256, recomputed independently by Python.
  std::string py_argv;
  for (const auto& a : argv) py_argv += "'" + a + "',";
  auto py = run_command("/usr/bin/python3 -c \"import hashlib,json; print(hashlib.sha256(json.dumps([" +
                py_argv + "], separators=(',',':'), ensure_ascii=False).encode()).hexdigest())\"");
  EXPECT_EQ(py.out, app->argv_sha256 + "\n");

  struct stat st{};
  ASSERT_EQ(::stat(app->log_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir_ + "/rt/apps").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  EXPECT_TRUE(mgr_->app_alive(app->app_id));
  auto listed = mgr_->list_apps();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_TRUE(listed[0].alive);
  EXPECT_TRUE(listed[0].to_list_json()["exit_status"].is_null());

  auto status = mgr_->stop_app(app->app_id);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(*status, 0);  // the fixture exits 0 on SIGTERM
  EXPECT_FALSE(pid_running(app->pid));
  auto log = read_file(events, 1 << 20);
  EXPECT_NE(log->find("\"reason\":\"sigterm\""), std::string::npos);
  EXPECT_EQ(mgr_->stop_app(app->app_id).error().code, "app-not-found");
  EXPECT_FALSE(mgr_->app_alive(app->app_id));
  EXPECT_TRUE(mgr_->list_apps().empty());
}

// Proves: a missing binary fails at once with app-launch-failed and leaves nothing behind.
TEST_F(AppTest, MissingBinaryIsAClearError) {
  auto a = mgr_->launch_app(id(), gen(), {"evident-no-such-binary-xyz"}, 0);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code, "app-launch-failed");
  auto b = mgr_->launch_app(id(), gen(), {"/nonexistent/dir/app"}, 5000);
  EXPECT_EQ(b.error().code, "app-launch-failed");
  // A file that exists but cannot be executed: the exec failure comes back through the pipe.
  std::string noexec = dir_ + "/script";
  ASSERT_TRUE(write_file_atomic(noexec, "not a program\n", 0700).ok());
  auto c = mgr_->launch_app(id(), gen(), {noexec}, 0);
  EXPECT_EQ(c.error().code, "app-launch-failed") << c.error().message;
  EXPECT_TRUE(mgr_->list_apps().empty());
}

// Proves: an app that exits at once is reported as app-exited with its status, without hanging.
TEST_F(AppTest, ExitsAtOnceIsReportedWithStatus) {
  auto a = mgr_->launch_app(id(), gen(), {"sh", "-c", "exit 3"}, 0);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code, "app-exited");
  EXPECT_NE(a.error().message.find("status 3"), std::string::npos) << a.error().message;
  auto b = mgr_->launch_app(id(), gen(), {"false"}, 20000);  // with a window wait, too
  EXPECT_EQ(b.error().code, "app-exited");
  EXPECT_TRUE(mgr_->list_apps().empty());
}

// Proves: a window wait that times out says so, and the app is stopped (pid gone).
TEST_F(AppTest, WindowTimeoutStopsTheApp) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  auto a = mgr_->launch_app(id(), gen(), {"sh", "-c", "echo $$ > " + dir_ + "/pid; exec sleep 100"},
                            400);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code, "app-window-timeout");
  auto pid_text = read_file(dir_ + "/pid", 64);
  ASSERT_TRUE(pid_text.ok());
  pid_t pid = std::stoi(*pid_text);
  EXPECT_FALSE(pid_running(pid));
  EXPECT_TRUE(mgr_->list_apps().empty());
  ::close(p[0]);
  ::close(p[1]);
}

// Proves: an app that dies on its own shows alive=false with its exit status in the list.
TEST_F(AppTest, DeathIsSeenInTheList) {
  auto a = mgr_->launch_app(id(), gen(), {"sh", "-c", "read x; exit 5"}, 0);
  // stdin is /dev/null: `read` hits EOF at once, but after the 100 ms grace the app may still
  // be alive or not; both are valid outcomes of this launch, so wait for the exit either way.
  if (!a.ok()) {
    EXPECT_EQ(a.error().code, "app-exited");
    return;
  }
  ASSERT_TRUE(wait_until([&] { return !mgr_->app_alive(a->app_id); }, 5000));
  auto info = mgr_->app(a->app_id);
  ASSERT_TRUE(info.ok());
  EXPECT_FALSE(info->alive);
  EXPECT_EQ(info->exit_status, 5);
  EXPECT_EQ(*mgr_->stop_app(a->app_id), 5);
}

// Proves: destroying a display stops every app on it (whole process groups), and only those.
TEST_F(AppTest, DestroyStopsTheDisplaysApps) {
  auto other = mgr_->create(DisplayOptions::of(320, 240, 24, 96));
  ASSERT_TRUE(other.ok());
  auto a = mgr_->launch_app(id(), gen(), {kFixture, "--events", dir_ + "/e1"}, 20000);
  ASSERT_TRUE(a.ok()) << a.error().message;
  // A shell that ignores TERM with a grandchild in its group: KILL after the bound.
  auto b = mgr_->launch_app(
      id(), gen(), {"sh", "-c", "trap '' TERM; sleep 1000 & echo $! > " + dir_ + "/gc; wait"}, 0);
  ASSERT_TRUE(b.ok()) << b.error().message;
  auto c = mgr_->launch_app((*other)->info().id, (*other)->info().generation, {"sleep", "1000"}, 0);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(testing::wait_file(dir_ + "/gc", [](const std::string& t) { return t.find('\n') != std::string::npos; }, 5000));
  pid_t grandchild = std::stoi(*read_file(dir_ + "/gc", 64));
  ASSERT_TRUE(pid_running(grandchild));

  ASSERT_TRUE(mgr_->destroy(id(), gen()).ok());
  EXPECT_FALSE(pid_running(a->pid));
  EXPECT_FALSE(pid_running(b->pid));
  EXPECT_TRUE(wait_until([&] { return !pid_running(grandchild); }, 5000));
  EXPECT_TRUE(pid_running(c->pid));
  auto left = mgr_->list_apps();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].app_id, c->app_id);
  mgr_->destroy_all();
  EXPECT_FALSE(pid_running(c->pid));
}

TEST_F(AppTest, BadArgvIsRefused) {
  EXPECT_EQ(mgr_->launch_app(id(), gen(), {}, 0).error().code, "app-args");
  EXPECT_EQ(mgr_->launch_app(id(), gen(), {""}, 0).error().code, "app-args");
  EXPECT_EQ(mgr_->launch_app(id(), gen(), {std::string("a\0b", 3)}, 0).error().code, "app-args");
  EXPECT_EQ(mgr_->launch_app(id(), gen(), {"true"}, -1).error().code, "app-args");
  EXPECT_EQ(mgr_->launch_app(id() + 1000, gen(), {"true"}, 0).error().code, "display-not-found");
  EXPECT_TRUE(mgr_->list_apps().empty());
}

// Issue #9 item 8: an app's output is bounded (docs/displays.md "App output"). The app writes
// 3,000,010 bytes; the log is rotated at exactly app_log_max_bytes, so the current file holds the
// last 3,000,010 - 2 x 1 MiB bytes (ending with what was written last) and .log.1 the MiB before.
TEST_F(AppTest, OutputLogIsRotatedAtItsBound) {
  ASSERT_EQ(DisplayManager::kAppLogMaxBytes, 1048576u);  // the arithmetic below
  auto app = mgr_->launch_app(
      id(), gen(), {"/bin/sh", "-c", "head -c 3000000 /dev/zero | tr '\\000' x; echo; echo END-MARK; exec sleep 100"},
      0);
  ASSERT_TRUE(app.ok()) << app.error().message;
  ASSERT_TRUE(testing::wait_file_contains(app->log_path, "END-MARK\n", 20000));
  struct stat cur{}, old{};
  ASSERT_EQ(::stat(app->log_path.c_str(), &cur), 0);
  ASSERT_EQ(::stat((app->log_path + ".1").c_str(), &old), 0);
  EXPECT_EQ(cur.st_size, 3000010 - 2 * 1048576);
  EXPECT_EQ(old.st_size, 1048576);
  EXPECT_EQ(cur.st_mode & 0777, 0600u);
  EXPECT_EQ(old.st_mode & 0777, 0600u);
  const std::string tail = testing::slurp(app->log_path);
  EXPECT_EQ(tail.substr(tail.size() - 10), "\nEND-MARK\n");
  EXPECT_TRUE(mgr_->stop_app(app->app_id).ok());
}

// Logs of ended apps are kept up to app_logs_kept (the newest); older ones are removed.
// Before, every app's log stayed in the runtime dir until the engine stopped.
TEST_F(AppTest, EndedAppLogsAreBoundedInNumber) {
  const std::size_t n = DisplayManager::kAppLogsKept + 4;
  std::vector<std::string> logs;
  for (std::size_t i = 0; i < n; ++i) {
    auto app = mgr_->launch_app(id(), gen(), {"/bin/sh", "-c", "echo out-" + std::to_string(i) + "; exec sleep 100"}, 0);
    ASSERT_TRUE(app.ok()) << app.error().message;
    ASSERT_TRUE(testing::wait_file_contains(app->log_path, "out-" + std::to_string(i) + "\n", 10000));
    ASSERT_TRUE(mgr_->stop_app(app->app_id).ok());
    logs.push_back(app->log_path);
  }
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_ + "/rt/apps")) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, DisplayManager::kAppLogsKept);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(testing::path_exists(logs[i]), i >= n - DisplayManager::kAppLogsKept) << i;
  }
  EXPECT_EQ(testing::slurp(logs.back()), "out-" + std::to_string(n - 1) + "\n");
  // An app that exits at once: its error names its log, which holds what it printed.
  auto exited = mgr_->launch_app(id(), gen(), {"/bin/sh", "-c", "echo early-exit-output; exit 3"}, 5000);
  ASSERT_FALSE(exited.ok());
  EXPECT_EQ(exited.error().code, "app-exited");
  const std::string m = exited.error().message;
  const auto at = m.find(dir_ + "/rt/apps/");
  ASSERT_NE(at, std::string::npos) << m;
  const std::string path = m.substr(at, m.find(')', at) - at);
  EXPECT_EQ(testing::slurp(path), "early-exit-output\n");
}

}  // namespace
}  // namespace evident
