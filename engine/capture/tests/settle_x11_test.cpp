// Proves settle detection on a real Xvfb: a static screen settles right after the quiet window,
// a client that keeps drawing yields still_loading at the cap, a change after reset() is seen
// (even when another reader of the shared connection swallowed the event), other events on the
// shared connection survive, and the fingerprint fallback works where DAMAGE is missing.
#include <gtest/gtest.h>  // before Xlib: its None/Status macros break gtest
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "evident/capture/capture.h"
#include "evident/core/clock.h"
#include "evident/testing/xvfb.h"
#define Status int  // Xlib's Status, which xvfb.h #undef'd for evident::Status
#include <X11/Xatom.h>
#include <X11/Xutil.h>
#undef Status

namespace evident {
namespace {

using testing::Xvfb;

constexpr std::int64_t kQuietMs = 300;

void fill_root(Display* dpy, unsigned long pixel, int x, int y, int w, int h) {
  Window root = DefaultRootWindow(dpy);
  GC gc = XCreateGC(dpy, root, 0, nullptr);
  XSetForeground(dpy, gc, pixel);
  XFillRectangle(dpy, root, gc, x, y, w, h);
  XFreeGC(dpy, gc);
  XSync(dpy, False);  // the server has drawn it when this returns
}

// Draws on its own connection every ~16 ms (a frame period, paced by poll on a stop pipe)
// until stopped: a loading animation. Each frame has a colour of its own (never two colours
// alternating): the fingerprint fallback compares frames sampled every 25 ms, and two alternating
// colours drawn at half the sampling rate, as a loaded machine can make it, look the same in
// every sample (SettleX11.FingerprintFallbackWithoutDamage said settled once under ASan + load).
class Animator {
 public:
  explicit Animator(Xvfb& server) : dpy_(server.connect()) {
    if (pipe(stop_) != 0) stop_[0] = stop_[1] = -1;
    thread_ = std::thread([this] { run(); });
  }
  ~Animator() { stop(); }
  void stop() {
    if (!thread_.joinable()) return;
    char c = 1;
    ssize_t w = write(stop_[1], &c, 1);
    (void)w;
    thread_.join();
    close(stop_[0]);
    close(stop_[1]);
  }
  int frames() const { return frames_.load(); }

 private:
  void run() {
    for (int i = 0;; ++i) {
      fill_root(dpy_, (static_cast<unsigned>(i) * 2654435761u) & 0xffffffu, 10, 10, 40, 40);
      ++frames_;
      pollfd p{stop_[0], POLLIN, 0};
      if (poll(&p, 1, 16) > 0) return;
    }
  }
  Display* dpy_;
  int stop_[2] = {-1, -1};
  std::atomic<int> frames_{0};
  std::thread thread_;
};

std::int64_t elapsed_ms(std::int64_t since_us) { return (steady_us() - since_us) / 1000; }

TEST(SettleX11, StaticScreenSettlesJustAfterTheQuietWindow) {
  Xvfb server("320x240x24");
  ASSERT_TRUE(server.ok());
  Display* dpy = server.connect();
  ASSERT_NE(dpy, nullptr);
  auto watcher = ChangeWatcher::create(dpy);
  ASSERT_TRUE(watcher.ok());
  EXPECT_TRUE((*watcher)->using_damage());
  (*watcher)->reset();
  std::int64_t anchor = steady_us();
  SettleOutcome out = (*watcher)->wait_settled(anchor, kQuietMs, 2000);
  std::int64_t ms = elapsed_ms(anchor);
  EXPECT_EQ(out, SettleOutcome::kSettled);
  EXPECT_GE(ms, kQuietMs);
  EXPECT_LT(ms, kQuietMs + 250) << "settle overshoot " << ms - kQuietMs << " ms";
  std::printf("static settle: %lld ms (quiet %lld)\n", static_cast<long long>(ms),
              static_cast<long long>(kQuietMs));
}

TEST(SettleX11, AnimatingClientIsStillLoadingAtTheCap) {
  Xvfb server("320x240x24");
  ASSERT_TRUE(server.ok());
  Display* dpy = server.connect();
  ASSERT_NE(dpy, nullptr);
  auto watcher = ChangeWatcher::create(dpy);
  ASSERT_TRUE(watcher.ok());
  Animator animator(server);
  (*watcher)->reset();
  std::int64_t anchor = steady_us();
  SettleOutcome out = (*watcher)->wait_settled(anchor, kQuietMs, 1000);
  std::int64_t ms = elapsed_ms(anchor);
  EXPECT_EQ(out, SettleOutcome::kStillLoading);
  EXPECT_GE(ms, 1000);
  EXPECT_LT(ms, 1250);
  EXPECT_GT(animator.frames(), 5);
  // Once the animation stops, the same watcher settles.
  animator.stop();
  std::int64_t anchor2 = steady_us();
  EXPECT_EQ((*watcher)->wait_settled(anchor2, kQuietMs, 2000), SettleOutcome::kSettled);
  EXPECT_LT(elapsed_ms(anchor2), kQuietMs + 250);
}

TEST(SettleX11, ChangeAfterResetIsSeenAndOtherEventsSurvive) {
  Xvfb server("320x240x24");
  ASSERT_TRUE(server.ok());
  Display* dpy = server.connect();
  Display* other = server.connect();
  ASSERT_NE(dpy, nullptr);
  ASSERT_NE(other, nullptr);
  auto watcher = ChangeWatcher::create(dpy);
  ASSERT_TRUE(watcher.ok());
  // Another user of the shared connection listens for property changes on the root.
  XSelectInput(dpy, DefaultRootWindow(dpy), PropertyChangeMask);
  XSync(dpy, False);

  // An anchor 1 s in the past: with no change seen, the quiet window is already over.
  (*watcher)->reset();
  std::int64_t past = steady_us() - 1000 * 1000;
  std::int64_t t0 = steady_us();
  EXPECT_EQ((*watcher)->wait_settled(past, kQuietMs, 5000), SettleOutcome::kSettled);
  EXPECT_LT(elapsed_ms(t0), 100) << "nothing changed, so nothing to wait for";

  // A change after reset (drawn by another client) restarts the quiet window.
  (*watcher)->reset();
  fill_root(other, 0xffffff, 0, 0, 100, 100);
  Atom prop = XInternAtom(other, "EVIDENT_TEST", False);
  long v = 1;
  XChangeProperty(other, DefaultRootWindow(other), prop, XA_INTEGER, 32, PropModeReplace,
                  reinterpret_cast<unsigned char*>(&v), 1);
  XSync(other, False);
  past = steady_us() - 1000 * 1000;
  t0 = steady_us();
  EXPECT_EQ((*watcher)->wait_settled(past, kQuietMs, 5000), SettleOutcome::kSettled);
  EXPECT_GE(elapsed_ms(t0), kQuietMs - 5);
  XEvent ev;
  EXPECT_TRUE(XCheckTypedEvent(dpy, PropertyNotify, &ev)) << "a foreign event was consumed";
}

TEST(SettleX11, ChangeIsSeenEvenIfAnotherReaderAteTheDamageEvent) {
  Xvfb server("320x240x24");
  ASSERT_TRUE(server.ok());
  Display* dpy = server.connect();
  Display* other = server.connect();
  ASSERT_NE(dpy, nullptr);
  ASSERT_NE(other, nullptr);
  auto watcher = ChangeWatcher::create(dpy);
  ASSERT_TRUE(watcher.ok());
  (*watcher)->reset();
  fill_root(other, 0xffffff, 0, 0, 100, 100);
  XSync(dpy, False);
  int swallowed = 0;
  while (XPending(dpy) > 0) {  // a careless co-user of the connection
    XEvent ev;
    XNextEvent(dpy, &ev);
    ++swallowed;
  }
  EXPECT_GT(swallowed, 0);
  std::int64_t past = steady_us() - 1000 * 1000;
  std::int64_t t0 = steady_us();
  EXPECT_EQ((*watcher)->wait_settled(past, kQuietMs, 5000), SettleOutcome::kSettled);
  EXPECT_GE(elapsed_ms(t0), kQuietMs - 5);
}

TEST(SettleX11, FingerprintFallbackWithoutDamage) {
  Xvfb server("320x240x24", {"-extension", "DAMAGE"});
  ASSERT_TRUE(server.ok());
  Display* dpy = server.connect();
  ASSERT_NE(dpy, nullptr);
  auto watcher = ChangeWatcher::create(dpy);
  ASSERT_TRUE(watcher.ok()) << watcher.error().message;
  EXPECT_FALSE((*watcher)->using_damage());
  (*watcher)->reset();
  std::int64_t anchor = steady_us();
  EXPECT_EQ((*watcher)->wait_settled(anchor, kQuietMs, 2000), SettleOutcome::kSettled);
  EXPECT_LT(elapsed_ms(anchor), kQuietMs + 250);
  {
    Animator animator(server);
    (*watcher)->reset();
    anchor = steady_us();
    EXPECT_EQ((*watcher)->wait_settled(anchor, kQuietMs, 800), SettleOutcome::kStillLoading);
  }
  // Forcing the fallback on a server that has DAMAGE.
  Xvfb with_damage("160x120x24");
  ASSERT_TRUE(with_damage.ok());
  WatchOptions o;
  o.allow_damage = false;
  auto forced = ChangeWatcher::create(with_damage.connect(), o);
  ASSERT_TRUE(forced.ok());
  EXPECT_FALSE((*forced)->using_damage());
}

TEST(SettleX11, OutcomeNames) {
  EXPECT_STREQ(to_string(SettleOutcome::kSettled), "settled");
  EXPECT_STREQ(to_string(SettleOutcome::kStillLoading), "still_loading");
  EXPECT_STREQ(to_string(SettleOutcome::kFixed), "fixed");
  EXPECT_STREQ(to_string(SettleOutcome::kOff), "off");
  EXPECT_EQ(ChangeWatcher::create(nullptr).error().code, "capture-unavailable");
}

}  // namespace
}  // namespace evident
