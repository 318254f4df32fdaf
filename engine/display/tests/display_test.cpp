// Integration tests for owned displays against real Xvfb servers: create/list/status/
// screenshot/destroy, generation refusal, cookie enforcement, and never touching foreign X.
#include <gtest/gtest.h>

#include <X11/Xlib.h>
#undef Status

#include <future>
#include <set>
#include <thread>

#include "evident/core/fs.h"
#include "evident/core/sha256.h"
#include "evident/display/display.h"
#include "evident/display/x11.h"
#include "evident/service/display_capture.h"
#include "evident/testing/files.h"
#include "evident/testing/process.h"
#include "evident/testing/xvfb.h"

namespace evident {
namespace {

using testing::pid_running;
using testing::run_command;
using testing::wait_until;

class DisplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DisplayManagerOptions o;
    o.runtime_dir = dir_ + "/rt";
    o.readiness = capture_readiness();  // as the Engine has it: capture is part of readiness
    mgr_ = std::make_unique<DisplayManager>(o);
  }
  testing::TempDir tmp_;  // declared first: removed after the manager is gone
  const std::string dir_ = tmp_.path();
  std::unique_ptr<DisplayManager> mgr_;
};

// Proves: a created display is ready (extensions, cookie client, frame), listed, probed fresh,
// screenshot-able, and gone (process, files) after destroy.
TEST_F(DisplayTest, CreateStatusScreenshotDestroy) {
  auto d = mgr_->create(DisplayOptions::of(640, 480, 24, 96));
  ASSERT_TRUE(d.ok()) << d.error().code << ": " << d.error().message;
  DisplayInfo info = (*d)->info();
  EXPECT_EQ(info.name, ":" + std::to_string(info.id));
  EXPECT_TRUE(is_generation_token(info.generation));
  EXPECT_TRUE(pid_running(info.xvfb_pid));
  EXPECT_TRUE((*d)->alive());
  Json j = info.to_json();
  EXPECT_EQ(j.size(), 5u);
  EXPECT_EQ(j["width"], 640);

  // The auth file is private.
  struct stat st{};
  ASSERT_EQ(::stat((*d)->auth_file().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  auto listed = mgr_->list();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].generation, info.generation);

  auto status = mgr_->status(info.id, info.generation);
  ASSERT_TRUE(status.ok());
  EXPECT_TRUE(status->ready);
  std::vector<std::string> names;
  for (const auto& l : status->layers) {
    names.push_back(l.name);
    EXPECT_EQ(l.state, "ready") << l.name << ": " << l.detail;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"authority", "x_connection", "capture",
                                             "input_backend", "target_display"}));

  // A capture, decoded by an independent decoder (Pillow) with its own SHA-256.
  Result<PngFrame> frame = make_error("x", "x");
  {
    std::lock_guard lock((*d)->x_mutex());
    frame = display_capturer(**d)->capture_png();
  }
  ASSERT_TRUE(frame.ok());
  std::string png = dir_ + "/shot.png";
  ASSERT_TRUE(write_file_atomic(png, frame->bytes).ok());
  auto py = run_command("/usr/bin/python3 -c \"import hashlib,sys; from PIL import Image; "
                "b=open('" + png + "','rb').read(); im=Image.open('" + png + "'); "
                "print(im.size[0], im.size[1], hashlib.sha256(b).hexdigest())\"");
  ASSERT_EQ(py.exit_status, 0);
  EXPECT_EQ(py.out, "640 480 " + frame->sha256 + "\n");

  // Authority probe notices a tampered auth file (probed fresh, not cached).
  ASSERT_EQ(::chmod((*d)->auth_file().c_str(), 0644), 0);
  auto blocked = mgr_->status(info.id, info.generation);
  ASSERT_TRUE(blocked.ok());
  EXPECT_FALSE(blocked->ready);
  EXPECT_EQ(blocked->layers[0].state, "blocked");
  ASSERT_EQ(::chmod((*d)->auth_file().c_str(), 0600), 0);
  EXPECT_TRUE(mgr_->status(info.id, info.generation)->ready);
  // ... and one whose bytes no longer hold this display's cookie: truncated, then another cookie.
  const std::string auth_bytes = *read_file((*d)->auth_file(), 4096);
  for (const std::string& bytes :
       {auth_bytes.substr(0, auth_bytes.size() - 3),
        encode_xauth_entry(kFamilyWild, "", "", new_cookie())}) {
    ASSERT_TRUE(write_file_atomic((*d)->auth_file(), bytes, 0600).ok());
    auto wrong = mgr_->status(info.id, info.generation);
    ASSERT_TRUE(wrong.ok());
    EXPECT_FALSE(wrong->ready);
    EXPECT_EQ(wrong->layers[0].state, "blocked");
    EXPECT_EQ(wrong->layers[0].detail, "the auth file does not hold this display's cookie");
  }
  ASSERT_TRUE(write_file_atomic((*d)->auth_file(), auth_bytes, 0600).ok());
  EXPECT_TRUE(mgr_->status(info.id, info.generation)->ready);

  std::string auth = (*d)->auth_file();
  ASSERT_TRUE(mgr_->destroy(info.id, info.generation).ok());
  EXPECT_TRUE(wait_until([&] { return !pid_running(info.xvfb_pid); }, 5000));
  EXPECT_FALSE(testing::path_exists(auth));
  EXPECT_FALSE((*d)->alive());
  EXPECT_TRUE(mgr_->list().empty());
  EXPECT_EQ(mgr_->destroy(info.id, info.generation).error().code, "display-not-found");
  EXPECT_EQ(mgr_->status(info.id, info.generation).error().code, "display-not-found");
}

// Proves: stale, foreign and malformed generations are refused and the display keeps running.
TEST_F(DisplayTest, GenerationRefusalKeepsTheDisplayRunning) {
  auto a = mgr_->create(DisplayOptions::of(320, 240, 24, 96));
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto b = mgr_->create(DisplayOptions::of(320, 240, 24, 96));
  ASSERT_TRUE(b.ok()) << b.error().message;
  const DisplayInfo ai = (*a)->info();
  const DisplayInfo bi = (*b)->info();
  const std::vector<std::string> bad = {
      bi.generation,                             // foreign: another display's generation
      "gen-00000000000000000000000000000000",    // never issued
      "gen-XYZ", "", "gen-" + std::string(32, 'A'), ai.generation + "0",  // malformed
  };
  for (const auto& g : bad) {
    EXPECT_EQ(mgr_->destroy(ai.id, g).error().code, "display-generation-mismatch") << g;
    EXPECT_EQ(mgr_->status(ai.id, g).error().code, "display-generation-mismatch") << g;
    EXPECT_EQ(mgr_->get(ai.id, g).error().code, "display-generation-mismatch") << g;
    EXPECT_EQ(mgr_->launch_app(ai.id, g, {"true"}, 0).error().code,
              "display-generation-mismatch");
  }
  EXPECT_TRUE((*a)->alive());
  EXPECT_TRUE(mgr_->status(ai.id, ai.generation)->ready);
  EXPECT_EQ(mgr_->list().size(), 2u);
  // Stale: after destroy + a new display, the old generation names nothing current.
  ASSERT_TRUE(mgr_->destroy(ai.id, ai.generation).ok());
  EXPECT_EQ(mgr_->destroy(bi.id, ai.generation).error().code, "display-generation-mismatch");
  EXPECT_TRUE((*b)->alive());
}

// Proves: a client without the display's cookie is refused; with it, accepted.
TEST_F(DisplayTest, ClientWithoutCookieIsRefused) {
  auto d = mgr_->create(DisplayOptions::of(320, 240, 24, 96));
  ASSERT_TRUE(d.ok()) << d.error().message;
  const std::string name = (*d)->info().name;
  auto without = run_command("XAUTHORITY=/dev/null xdpyinfo -display " + name + " >/dev/null 2>&1");
  EXPECT_NE(without.exit_status, 0);
  std::string wrong = dir_ + "/wrong";
  ASSERT_EQ(run_command("xauth -f " + wrong + " add " + name +
                " . 00112233445566778899aabbccddeeff >/dev/null 2>&1").exit_status, 0);
  auto wrong_cookie = run_command("XAUTHORITY=" + wrong + " xdpyinfo -display " + name +
                          " >/dev/null 2>&1");
  EXPECT_NE(wrong_cookie.exit_status, 0);
  auto with = run_command("XAUTHORITY=" + (*d)->auth_file() + " xdpyinfo -display " + name +
                  " >/dev/null 2>&1");
  EXPECT_EQ(with.exit_status, 0);
  // And in-process: a fresh cookie that is not the display's is refused.
  auto bad = open_x_connection(name, new_cookie());
  EXPECT_FALSE(bad.ok());
  auto good = (*d)->open_connection();
  ASSERT_TRUE(good.ok());
  close_x_connection(*good);
}

// Proves: a foreign Xvfb and a foreign X client beside evident are untouched (pids alive, lock
// and socket present) after many creates and destroys, including 8 concurrent creates.
TEST_F(DisplayTest, ForeignServersAreNeverTouched) {
  testing::ForeignX foreign;
  ASSERT_TRUE(foreign.start());
  ASSERT_TRUE(wait_until([&] { return foreign.untouched(); }, 5000));
  ASSERT_TRUE(foreign.had_socket);
  std::set<int> seen_ids;
  for (int round = 0; round < 3; ++round) {
    auto d = mgr_->create(DisplayOptions::of(320, 240, 24, 96));
    ASSERT_TRUE(d.ok()) << d.error().message;
    EXPECT_NE((*d)->info().id, foreign.number);
    ASSERT_TRUE(mgr_->destroy((*d)->info().id, (*d)->info().generation).ok());
    EXPECT_TRUE(foreign.untouched());
  }
  std::vector<std::future<Result<std::shared_ptr<OwnedDisplay>>>> futures;
  for (int i = 0; i < 8; ++i) {
    futures.push_back(std::async(std::launch::async, [&] {
      return mgr_->create(DisplayOptions::of(320, 240, 24, 96));
    }));
  }
  std::vector<std::shared_ptr<OwnedDisplay>> made;
  for (auto& f : futures) {
    auto r = f.get();
    ASSERT_TRUE(r.ok()) << r.error().code << ": " << r.error().message;
    made.push_back(*r);
    EXPECT_NE((*r)->info().id, foreign.number);
    seen_ids.insert((*r)->info().id);
  }
  EXPECT_EQ(seen_ids.size(), 8u);  // distinct numbers, picked atomically by -displayfd
  EXPECT_EQ(mgr_->list().size(), 8u);
  EXPECT_TRUE(foreign.untouched());
  // Destroy them concurrently too.
  std::vector<std::thread> threads;
  for (auto& d : made) {
    threads.emplace_back([&, d] { EXPECT_TRUE(mgr_->destroy(d->info().id, d->info().generation).ok()); });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(mgr_->list().empty());
  EXPECT_TRUE(foreign.untouched());
  // destroy_all with live displays also leaves the foreign ones alone.
  ASSERT_TRUE(mgr_->create(DisplayOptions::of(320, 240, 24, 96)).ok());
  mgr_->destroy_all();
  EXPECT_TRUE(foreign.untouched());
  EXPECT_EQ(mgr_->create(DisplayOptions::of(320, 240, 24, 96)).error().code, "engine-shutting-down");
}

// Proves: a display whose Xvfb died is reported dead and blocked, never "ready".
TEST_F(DisplayTest, DeadServerIsReportedNotReady) {
  auto d = mgr_->create(DisplayOptions::of(320, 240, 24, 96));
  ASSERT_TRUE(d.ok());
  const DisplayInfo info = (*d)->info();
  ASSERT_EQ(::kill(info.xvfb_pid, SIGKILL), 0);
  EXPECT_TRUE(wait_until([&] { return !(*d)->alive(); }, 5000));
  auto st = mgr_->status(info.id, info.generation);
  ASSERT_TRUE(st.ok());
  EXPECT_FALSE(st->ready);
  EXPECT_EQ(st->layers.back().state, "blocked");
  EXPECT_EQ(mgr_->launch_app(info.id, info.generation, {"true"}, 0).error().code, "display-dead");
  EXPECT_EQ(mgr_->launch_app(info.id, info.generation, {"true"}, 1000).error().code, "display-dead");
  // get() finds the current lifetime, dead or not; get_live() says it is dead; a generation
  // that is not the current one is still a mismatch.
  EXPECT_TRUE(mgr_->get(info.id, info.generation).ok());
  EXPECT_EQ(mgr_->get_live(info.id, info.generation).error().code, "display-dead");
  EXPECT_EQ(mgr_->get_live(info.id, "gen-" + std::string(32, '0')).error().code,
            "display-generation-mismatch");
  EXPECT_TRUE(mgr_->destroy(info.id, info.generation).ok());
  EXPECT_EQ(mgr_->get_live(info.id, info.generation).error().code, "display-not-found");
}

// alive() and status() take the server's life from one test (OwnedDisplay::server_running).
// An exiting Xvfb shuts its clients' connections before its exit is waitable, so alive() can
// say dead while the process still runs; status() then said the target display was "ready"
// (a campaign run of DeadServerIsReportedNotReady saw it). Here the server shuts the display's
// connection and stays up (XKillClient from a second client), which holds that window open:
// every view of the display must call it dead, and destroy must end it without an Xlib call on
// the shut connection.
TEST_F(DisplayTest, ServerThatShutTheDisplaysConnectionIsDeadInEveryView) {
  auto d = mgr_->create(DisplayOptions::of(320, 240, 24, 96));
  ASSERT_TRUE(d.ok());
  const DisplayInfo info = (*d)->info();
  ::Pixmap marker = 0;  // a resource of the display's own connection, to name it to the server
  {
    std::lock_guard lock((*d)->x_mutex());
    ::Display* dpy = (*d)->dpy();
    marker = XCreatePixmap(dpy, DefaultRootWindow(dpy), 1, 1, 24);
    XSync(dpy, False);
  }
  auto other = (*d)->open_connection();
  ASSERT_TRUE(other.ok());
  XKillClient(*other, marker);
  XSync(*other, False);
  close_x_connection(*other);
  EXPECT_TRUE(wait_until([&] { return !(*d)->alive(); }, 5000));
  EXPECT_EQ(::kill(info.xvfb_pid, 0), 0) << "Xvfb itself still runs";
  auto st = mgr_->status(info.id, info.generation);
  ASSERT_TRUE(st.ok());
  EXPECT_FALSE(st->ready);
  EXPECT_EQ(st->layers.back().name, "target_display");
  EXPECT_EQ(st->layers.back().state, "blocked");
  EXPECT_EQ(st->layers.back().detail, "the Xvfb process has exited or shut its connections");
  EXPECT_EQ(mgr_->get_live(info.id, info.generation).error().code, "display-dead");
  EXPECT_EQ(mgr_->launch_app(info.id, info.generation, {"true"}, 0).error().code, "display-dead");
  EXPECT_TRUE(mgr_->destroy(info.id, info.generation).ok());
  EXPECT_TRUE(wait_until([&] { return ::kill(info.xvfb_pid, 0) != 0; }, 5000));
}

TEST_F(DisplayTest, BadOptionsAreRefusedBeforeAnythingStarts) {
  EXPECT_EQ(mgr_->create(DisplayOptions::of(1, 240, 24, 96)).error().code, "display-args");
  EXPECT_TRUE(mgr_->list().empty());
}

}  // namespace
}  // namespace evident
