// The window keeper of a managed display (evident/display/window_keeper.h) against a real Xvfb
// and raw Xlib clients: a window larger than the display and partly off screen is fitted, one with
// a minimum size is never made smaller than it, each new window is raised and focused, one whose
// WM_HINTS say it takes no input is not, the focus comes back to the topmost remaining window when
// the focused one is destroyed; an unmanaged display leaves windows alone; a keeper whose display
// was destroyed answers sync() false at once.
#include <gtest/gtest.h>
// After GoogleTest: Xlib's macros (None, Bool, Status) clash with its identifiers.
#include <X11/Xlib.h>
#include <X11/Xutil.h>

#undef Status

#include "evident/core/clock.h"
#include "evident/display/display.h"
#include "evident/display/x11.h"
#include "evident/testing/files.h"

namespace evident {
namespace {

struct Geometry {
  int x = 0, y = 0, width = 0, height = 0;
  bool viewable = false;
};

class WindowKeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DisplayManagerOptions o;
    o.runtime_dir = dir_ + "/rt";
    mgr_ = std::make_unique<DisplayManager>(o);
  }
  void TearDown() override {
    if (conn_) close_x_connection(conn_);
  }
  void create(bool managed) {
    DisplayOptions opts;
    opts.width = 320;
    opts.height = 240;
    opts.manage_windows = managed;
    auto d = mgr_->create(opts);
    ASSERT_TRUE(d.ok()) << d.error().message;
    display_ = *d;
    auto c = display_->open_connection();
    ASSERT_TRUE(c.ok());
    conn_ = *c;
  }
  // An ordinary top-level window (a raw client, as a toolkit makes one), mapped; the caller has
  // seen it viewable before returning, as a waiter would.
  Window map_window(int x, int y, int w, int h, XSizeHints* hints = nullptr,
                    bool no_input = false) {
    XSetWindowAttributes a{};
    a.background_pixel = 0x336699;
    Window win = XCreateWindow(conn_, DefaultRootWindow(conn_), x, y, static_cast<unsigned>(w),
                               static_cast<unsigned>(h), 0, CopyFromParent, InputOutput,
                               CopyFromParent, CWBackPixel, &a);
    if (hints) XSetWMNormalHints(conn_, win, hints);
    XWMHints wm{};
    wm.flags = InputHint;
    wm.input = no_input ? False : True;
    XSetWMHints(conn_, win, &wm);
    XMapWindow(conn_, win);
    XSync(conn_, False);
    return win;
  }
  Geometry geometry(Window w) {
    XWindowAttributes a{};
    Geometry g;
    if (!XGetWindowAttributes(conn_, w, &a)) return g;
    Window child = 0;
    XTranslateCoordinates(conn_, w, DefaultRootWindow(conn_), 0, 0, &g.x, &g.y, &child);
    g.width = a.width;
    g.height = a.height;
    g.viewable = a.map_state == IsViewable;
    return g;
  }
  Window focus() {
    Window f = None;
    int revert = 0;
    XGetInputFocus(conn_, &f, &revert);
    return f;
  }
  Window top() {
    Window r = 0, p = 0, *kids = nullptr;
    unsigned n = 0;
    XQueryTree(conn_, DefaultRootWindow(conn_), &r, &p, &kids, &n);
    Window t = None;
    for (unsigned i = 0; i < n; ++i) {
      XWindowAttributes a{};
      if (XGetWindowAttributes(conn_, kids[i], &a) && a.map_state == IsViewable) t = kids[i];
    }
    if (kids) XFree(kids);
    return t;
  }
  bool sync() {
    auto k = display_->keeper();
    return k && k->sync(WindowKeeper::kSyncBoundMs);
  }
  testing::TempDir tmp_;
  const std::string dir_ = tmp_.path();
  std::unique_ptr<DisplayManager> mgr_;
  std::shared_ptr<OwnedDisplay> display_;
  ::Display* conn_ = nullptr;
};

TEST_F(WindowKeeperTest, FitsRaisesAndFocusesEveryNewWindow) {
  create(true);
  EXPECT_TRUE(display_->info().manage_windows);
  ASSERT_NE(display_->keeper(), nullptr);
  EXPECT_EQ(focus(), static_cast<Window>(PointerRoot));  // nothing mapped yet

  // Larger than the display in both directions and partly off screen (as GTK's Save As is on a
  // small display): moved and shrunk to exactly the screen.
  const Window big = map_window(-50, -30, 500, 400);
  ASSERT_TRUE(sync());
  Geometry g = geometry(big);
  EXPECT_EQ(g.x, 0);
  EXPECT_EQ(g.y, 0);
  EXPECT_EQ(g.width, 320);
  EXPECT_EQ(g.height, 240);
  EXPECT_EQ(focus(), big);

  // Fits in size but hangs off the bottom-right corner: moved only.
  const Window corner = map_window(300, 200, 100, 60);
  ASSERT_TRUE(sync());
  g = geometry(corner);
  EXPECT_EQ(g.x, 220);
  EXPECT_EQ(g.y, 180);
  EXPECT_EQ(g.width, 100);
  EXPECT_EQ(g.height, 60);
  EXPECT_EQ(focus(), corner);
  EXPECT_EQ(top(), corner);

  // A minimum size wider than the display: never made smaller than it (placed at x = 0).
  XSizeHints min{};
  min.flags = PMinSize;
  min.min_width = 400;
  min.min_height = 20;
  const Window wide = map_window(10, 10, 450, 50, &min);
  ASSERT_TRUE(sync());
  g = geometry(wide);
  EXPECT_EQ(g.x, 0);
  EXPECT_EQ(g.y, 10);
  EXPECT_EQ(g.width, 400);
  EXPECT_EQ(g.height, 50);
  EXPECT_EQ(focus(), wide);

  // A window that fits is left where it is.
  const Window inside = map_window(20, 30, 100, 50);
  ASSERT_TRUE(sync());
  g = geometry(inside);
  EXPECT_EQ(g.x, 20);
  EXPECT_EQ(g.y, 30);
  EXPECT_EQ(g.width, 100);
  EXPECT_EQ(g.height, 50);
  EXPECT_EQ(focus(), inside);

  // WM_HINTS input = False (and no WM_TAKE_FOCUS): raised, never focused.
  const Window passive = map_window(40, 40, 50, 50, nullptr, /*no_input=*/true);
  ASSERT_TRUE(sync());
  EXPECT_EQ(top(), passive);
  EXPECT_EQ(focus(), inside);

  // The focused window goes: the focus moves to the topmost remaining window that takes it
  // (`passive` is on top but takes no input, so `wide`, the next one down).
  XDestroyWindow(conn_, inside);
  XSync(conn_, False);
  ASSERT_TRUE(sync());
  EXPECT_EQ(focus(), wide);

  const auto c = display_->keeper()->counters();
  EXPECT_EQ(c.managed, 5u);
  EXPECT_EQ(c.fitted, 3u);   // big, corner, wide
  EXPECT_EQ(c.focused, 5u);  // big, corner, wide, inside, then wide again

  auto st = mgr_->status(display_->info().id, display_->info().generation);
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(st->window_keeper.has_value());
  EXPECT_EQ(st->window_keeper->fitted, 3u);
}

TEST_F(WindowKeeperTest, AnUnmanagedDisplayLeavesWindowsAlone) {
  create(false);
  EXPECT_FALSE(display_->info().manage_windows);
  EXPECT_EQ(display_->keeper(), nullptr);
  const Window big = map_window(-50, -30, 500, 400);
  // No keeper to wait for: a round trip after another client's request on the same window
  // shows the server's state; nothing else would have moved it.
  XSync(conn_, False);
  const Geometry g = geometry(big);
  EXPECT_EQ(g.x, -50);
  EXPECT_EQ(g.y, -30);
  EXPECT_EQ(g.width, 500);
  EXPECT_EQ(g.height, 400);
  EXPECT_EQ(focus(), static_cast<Window>(PointerRoot));
  auto st = mgr_->status(display_->info().id, display_->info().generation);
  ASSERT_TRUE(st.ok());
  EXPECT_FALSE(st->window_keeper.has_value());
}

TEST_F(WindowKeeperTest, AKeeperOfADestroyedDisplayAnswersAtOnce) {
  create(true);
  std::shared_ptr<WindowKeeper> k = display_->keeper();
  ASSERT_NE(k, nullptr);
  close_x_connection(conn_);
  conn_ = nullptr;
  ASSERT_TRUE(mgr_->destroy(display_->info().id, display_->info().generation).ok());
  EXPECT_EQ(display_->keeper(), nullptr);
  const std::int64_t t0 = steady_us();
  EXPECT_FALSE(k->sync(WindowKeeper::kSyncBoundMs));
  EXPECT_LT(steady_us() - t0, 500 * 1000);
}

}  // namespace
}  // namespace evident
