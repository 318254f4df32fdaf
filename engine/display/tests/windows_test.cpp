// The engine side of windows (evident/display/windows.h) on a real owned display with real X
// clients: xmessage (Athena) launched directly and as a shell's child; listing, owner pids from
// the X-Resource extension, process-tree matching, the event-driven wait (a window that appears
// during the wait, one that never does), focus, launch env/cwd and their bounds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

#include "evident/core/clock.h"
#include "evident/core/fs.h"
#include "evident/display/display.h"
#include "evident/display/windows.h"
#include "evident/display/x11.h"
#include "evident/testing/files.h"

namespace evident {
namespace {

class WindowsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DisplayManagerOptions o;
    o.runtime_dir = dir_ + "/rt";
    mgr_ = std::make_unique<DisplayManager>(o);
    auto d = mgr_->create(DisplayOptions::of(640, 480, 24, 96));
    ASSERT_TRUE(d.ok()) << d.error().message;
    display_ = *d;
    auto c = display_->open_connection();
    ASSERT_TRUE(c.ok());
    conn_ = *c;
  }
  void TearDown() override {
    if (conn_) close_x_connection(conn_);
  }
  int id() const { return display_->info().id; }
  const std::string& gen() const { return display_->info().generation; }
  std::vector<WindowInfo> mapped() {
    auto l = list_windows(conn_);
    EXPECT_TRUE(l.ok());
    std::vector<WindowInfo> out;
    for (auto& w : l->windows) {
      if (w.mapped && !w.override_redirect) out.push_back(w);
    }
    return out;
  }
  testing::TempDir tmp_;
  const std::string dir_ = tmp_.path();
  std::unique_ptr<DisplayManager> mgr_;
  std::shared_ptr<OwnedDisplay> display_;
  ::Display* conn_ = nullptr;
};

TEST(WindowsPure, MatchingAndProcessTrees) {
  WindowInfo w;
  w.id = 7;
  w.title = "Save As — Zoë";
  w.wm_class = "Zenity";
  w.instance = "zenity";
  w.pid = ::getpid();
  w.mapped = true;
  WindowMatch m;
  EXPECT_TRUE(window_matches(w, m));
  m.title = "As — Z";
  m.wm_class = "zenity";
  m.pid_tree = ::getpid();
  EXPECT_TRUE(window_matches(w, m));
  m.wm_class = "ZENITY";  // exact, case-sensitive
  EXPECT_FALSE(window_matches(w, m));
  m.wm_class.reset();
  m.title = "save";
  EXPECT_FALSE(window_matches(w, m));
  m.title.reset();
  w.override_redirect = true;
  EXPECT_FALSE(window_matches(w, m));
  w.override_redirect = false;
  w.mapped = false;
  EXPECT_FALSE(window_matches(w, m));
  w.mapped = true;
  w.pid.reset();  // a pid criterion never matches an unknown owner
  EXPECT_FALSE(window_matches(w, m));
  // Our parent is not in our tree; we are in our parent's; pid 1 is nobody's descendant here.
  EXPECT_TRUE(pid_in_tree(::getpid(), ::getpid()));
  EXPECT_TRUE(pid_in_tree(::getpid(), ::getppid()));
  EXPECT_FALSE(pid_in_tree(::getppid(), ::getpid()));
  EXPECT_FALSE(pid_in_tree(1, ::getpid()));
  EXPECT_FALSE(pid_in_tree(0, ::getpid()));
  // Descriptions never echo the match text.
  WindowMatch secret;
  secret.title = "hunter2";
  EXPECT_EQ(describe_match(secret).find("hunter2"), std::string::npos);
}

TEST_F(WindowsTest, ListsOwnerPidGeometryAndFocus) {
  auto app = mgr_->launch_app(id(), gen(), {"xmessage", "-geometry", "150x60+20+30", "hi"}, 10000);
  ASSERT_TRUE(app.ok()) << app.error().message;
  auto ws = mapped();
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_EQ(ws[0].pid, app->pid);
  EXPECT_EQ(ws[0].pid_source, "x-resource");
  EXPECT_EQ(ws[0].wm_class, "Xmessage");
  EXPECT_EQ(ws[0].instance, "xmessage");
  EXPECT_EQ(ws[0].width, 150);
  EXPECT_EQ(ws[0].height, 60);
  EXPECT_EQ(ws[0].x, 21);  // inside the 1-pixel border
  EXPECT_EQ(ws[0].y, 31);
  EXPECT_FALSE(ws[0].focused);
  auto f = focus_window(conn_, ws[0].id);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->kind, FocusState::Kind::kWindow);
  EXPECT_EQ(f->top_level, ws[0].id);
  EXPECT_TRUE(mapped()[0].focused);
  EXPECT_EQ(focus_window(conn_, 0x7fffff).error().code, "window-not-found");
}

TEST_F(WindowsTest, WaitSeesALaterWindowAndTimesOutHonestly) {
  WindowMatch m;
  m.wm_class = "Xmessage";
  // Nothing there: a timeout after at least the bound, with what it saw.
  const std::int64_t t0 = steady_us();
  auto none = wait_for_window(conn_, m, 300);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->found);
  EXPECT_GE(steady_us() - t0, 300 * 1000);
  EXPECT_GE(none->elapsed_ms, 300);
  EXPECT_EQ(none->last_scan.mapped, 0);
  // A window launched while the wait blocks wakes it.
  Result<WindowWaitResult> got = make_error("x", "not run");
  std::thread waiter([&] {
    auto c = display_->open_connection();
    ASSERT_TRUE(c.ok());
    got = wait_for_window(*c, m, 15000);
    close_x_connection(*c);
  });
  auto app = mgr_->launch_app(id(), gen(), {"xmessage", "later"}, 0);
  ASSERT_TRUE(app.ok()) << app.error().message;
  waiter.join();
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_TRUE(got->found);
  EXPECT_EQ(got->window->pid, app->pid);
  EXPECT_LT(got->elapsed_ms, 15000);
}

TEST_F(WindowsTest, LaunchMatchesTheWholeProcessTree) {
  auto app = mgr_->launch_app(id(), gen(), {"sh", "-c", "xmessage child; echo done"}, 10000);
  ASSERT_TRUE(app.ok()) << app.error().message;
  auto ws = mapped();
  ASSERT_EQ(ws.size(), 1u);
  ASSERT_TRUE(ws[0].pid.has_value());
  EXPECT_NE(*ws[0].pid, app->pid);
  EXPECT_TRUE(pid_in_tree(static_cast<pid_t>(*ws[0].pid), app->pid));
  // A tree that never maps a window: the message says what was waited for, and the app stops.
  auto t = mgr_->launch_app(id(), gen(), {"sh", "-c", "exec sleep 30"}, 300);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, "app-window-timeout");
  EXPECT_NE(t.error().message.find("descendant"), std::string::npos) << t.error().message;
  EXPECT_NE(t.error().message.find("1 top-level window(s) on the display, 0 new"),
            std::string::npos)
      << t.error().message;
}

TEST_F(WindowsTest, LaunchEnvAndCwdAreBoundedAndReachTheApp) {
  const std::string out = dir_ + "/env.txt";
  LaunchOptions o;
  o.env = {"EVIDENT_X=1 2", "EVIDENT_Y="};
  o.cwd = dir_;
  auto app = mgr_->launch_app(
      id(), gen(), {"sh", "-c", "echo \"$EVIDENT_X|$EVIDENT_Y|$PWD\" > env.tmp && mv env.tmp env.txt; exec sleep 30"},
      o);
  ASSERT_TRUE(app.ok()) << app.error().message;
  ASSERT_TRUE(testing::wait_file(out, [](const std::string& s) { return !s.empty(); }, 10000));
  auto text = read_file(out, 4096);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "1 2||" + dir_ + "\n");
  auto refused = [&](LaunchOptions bad) {
    auto r = mgr_->launch_app(id(), gen(), {"true"}, bad);
    return !r.ok() && r.error().code == "app-args" &&
           r.error().message.find("SECRETVALUE") == std::string::npos;
  };
  LaunchOptions b;
  b.env = {"DISPLAY=:5"};
  EXPECT_TRUE(refused(b));
  b.env = {"XAUTHORITY=/x"};
  EXPECT_TRUE(refused(b));
  b.env = {"NOEQUALS"};
  EXPECT_TRUE(refused(b));
  b.env = {"1X=SECRETVALUE"};
  EXPECT_TRUE(refused(b));
  b.env = {"A=1", "A=2"};
  EXPECT_TRUE(refused(b));
  b.env = {std::string("A=x\0y", 5)};
  EXPECT_TRUE(refused(b));
  b.env = std::vector<std::string>(257, "A=1");
  EXPECT_TRUE(refused(b));
  b.env = {"A=" + std::string(70000, 'v')};
  EXPECT_TRUE(refused(b));
  b.env.clear();
  b.cwd = "relative/dir";
  EXPECT_TRUE(refused(b));
  b.cwd = dir_ + "/missing";
  EXPECT_TRUE(refused(b));
  EXPECT_EQ(mgr_->list_apps().size(), 1u);  // nothing else was started
}

}  // namespace
}  // namespace evident
