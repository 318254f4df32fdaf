// Proves on a private Xvfb the _NET_WM_PING barrier (evident/input/app_ping.h): the ping goes to
// the app that gets the keys (focus window or, with the focus PointerRoot, the window under the
// pointer), it reaches that app after the input injected before it, the call returns only on the
// app's answer, and an app that cannot be pinged, a hung app and a focus on nothing each get
// their own outcome within the bound.
#include <gtest/gtest.h>

#include <future>

#include "evident/core/clock.h"
#include "evident/input/app_ping.h"
#include "evident/testing/xvfb.h"  // includes Xlib last
#define Status int  // Xlib's Status, which xvfb.h #undef'd for evident::Status
#include <X11/extensions/XTest.h>
#undef Status
#include "evident/testing/ping_app.h"

namespace evident {
namespace {

using testing::PingApp;
using testing::Xvfb;

std::int64_t in_ms(int ms) { return steady_us() + std::int64_t{ms} * 1000; }

void focus(::Display* d, Window w) {
  XSetInputFocus(d, w, RevertToNone, CurrentTime);
  XSync(d, False);
}

void click_at(::Display* d, int x, int y) {
  XTestFakeMotionEvent(d, 0, x, y, CurrentTime);
  XTestFakeButtonEvent(d, 1, True, CurrentTime);
  XTestFakeButtonEvent(d, 1, False, CurrentTime);
  XSync(d, False);
}

TEST(AppPingX11, TheAnswerComesAfterTheInputInjectedBeforeAndNotBeforeTheAppAnswers) {
  Xvfb xvfb("640x480x24");
  ::Display* input = xvfb.connect();
  ASSERT_NE(input, nullptr);
  PingApp app(xvfb.open(), 0, 0, 200, 200);
  AppPinger pinger(xvfb.open());
  focus(input, PointerRoot);

  // A busy app: the click sits in its queue while the ping is sent after it.
  app.busy_for_next_event(300);
  click_at(input, 50, 50);
  const std::int64_t t0 = steady_us();
  EXPECT_EQ(pinger.ping_focused_app(in_ms(10000)), AppPingOutcome::kAnswered);
  // The app handled the click before the ping, and the call waited for it.
  EXPECT_EQ(app.handled(), (std::vector<std::string>{"press", "release", "ping"}));
  EXPECT_GE(steady_us() - t0, 300 * 1000 - 5000);

  // The focus on the app's window (not PointerRoot), the pointer elsewhere: still that app.
  focus(input, app.window());
  XTestFakeMotionEvent(input, 0, 500, 400, CurrentTime);
  XSync(input, False);
  EXPECT_EQ(pinger.ping_focused_app(in_ms(10000)), AppPingOutcome::kAnswered);
  EXPECT_EQ(app.handled().size(), 4u);
}

TEST(AppPingX11, AHungAppTimesOutAtTheBound) {
  Xvfb xvfb("640x480x24");
  ::Display* input = xvfb.connect();
  ASSERT_NE(input, nullptr);
  PingApp app(xvfb.open(), 0, 0, 200, 200);
  AppPinger pinger(xvfb.open());
  focus(input, app.window());
  app.answer_pings(false);
  const std::int64_t t0 = steady_us();
  EXPECT_EQ(pinger.ping_focused_app(in_ms(400)), AppPingOutcome::kTimedOut);
  const std::int64_t took = steady_us() - t0;
  EXPECT_GE(took, 400 * 1000 - 1000);
  EXPECT_LT(took, 5 * 1000 * 1000);
  EXPECT_EQ(app.handled(), (std::vector<std::string>{"ping"}));  // it was asked, it did not answer
  // Answering again, the same pinger is answered (the late echo of the first ping is not the second's).
  app.answer_pings(true);
  EXPECT_EQ(pinger.ping_focused_app(in_ms(10000)), AppPingOutcome::kAnswered);
}

TEST(AppPingX11, AnAppThatListsNoPingAndAFocusOnNothingAreToldApart) {
  Xvfb xvfb("640x480x24");
  ::Display* input = xvfb.connect();
  ASSERT_NE(input, nullptr);
  PingApp app(xvfb.open(), 0, 0, 200, 200, /*lists_ping=*/false);
  AppPinger pinger(xvfb.open());
  focus(input, app.window());
  EXPECT_EQ(pinger.ping_focused_app(in_ms(10000)), AppPingOutcome::kUnsupported);
  EXPECT_TRUE(app.handled().empty());  // nothing was sent to it

  focus(input, None);
  EXPECT_EQ(pinger.ping_focused_app(in_ms(10000)), AppPingOutcome::kNoWindow);
  // PointerRoot with the pointer over no window: the keys go to the root, no app.
  focus(input, PointerRoot);
  XTestFakeMotionEvent(input, 0, 500, 400, CurrentTime);
  XSync(input, False);
  EXPECT_EQ(pinger.ping_focused_app(in_ms(10000)), AppPingOutcome::kNoWindow);

  AppPinger none(nullptr);
  EXPECT_EQ(none.ping_focused_app(in_ms(10000)), AppPingOutcome::kFailed);
}

}  // namespace
}  // namespace evident
