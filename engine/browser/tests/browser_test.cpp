// Browser workspaces against a real Chromium on a real Xvfb: one start for the whole lifecycle
// (kept to one to stay fast: each Chromium start costs ~0.5-1 s), with every refused request
// checked before it, and the process, its group and its profile checked after close.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <set>
#include <sstream>

#include "evident/browser/browser.h"
#include "evident/display/display.h"
#include "evident/display/x11.h"
#include "evident/testing/files.h"
#include "evident/testing/process.h"

#include <X11/Xlib.h>  // after evident headers: Xlib #defines Status
#include <X11/Xutil.h>
#undef Status

namespace evident {
namespace {

using testing::TempDir;

// LISTEN sockets on `port` in /proc/net/tcp and tcp6: their local addresses (hex, as the kernel
// prints them).
std::vector<std::string> listeners_on(int port) {
  std::vector<std::string> out;
  char want[8];
  std::snprintf(want, sizeof want, "%04X", port);
  for (const char* f : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(f);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream s(line);
      std::string sl, local, remote, state;
      s >> sl >> local >> remote >> state;
      const auto colon = local.rfind(':');
      if (state == "0A" && colon != std::string::npos && local.substr(colon + 1) == want) {
        out.push_back(local.substr(0, colon));
      }
    }
  }
  return out;
}

std::vector<pid_t> group_members(pid_t pgrp) {
  std::vector<pid_t> out;
  for (const auto& p : testing::list_processes()) {
    if (p.pgrp == pgrp && !testing::is_dead_state(p.state)) out.push_back(p.pid);
  }
  return out;
}

// One pixel of the display through a fresh cookie connection (independent of the browser code).
unsigned long pixel_at(OwnedDisplay& d, int x, int y) {
  auto c = d.open_connection();
  if (!c.ok()) return ~0ul;
  XImage* img = XGetImage(*c, DefaultRootWindow(*c), x, y, 1, 1, AllPlanes, ZPixmap);
  unsigned long p = img ? XGetPixel(img, 0, 0) & 0xffffff : ~0ul;
  if (img) XDestroyImage(img);
  close_x_connection(*c);
  return p;
}

class BrowserX11 : public ::testing::Test {
 protected:
  void SetUp() override {
    DisplayManagerOptions o;
    o.runtime_dir = tmp_ / "rt";
    displays_ = std::make_unique<DisplayManager>(o);
    browsers_ = std::make_unique<BrowserManager>(*displays_, BrowserManagerOptions{o.runtime_dir});
    auto d = displays_->create(DisplayOptions::of(640, 480, 24, 96));
    ASSERT_TRUE(d.ok()) << d.error().message;
    display_ = *d;
    testing::write_text(tmp_ / "one.html",
                        "<!doctype html><title>one</title><body style=\"margin:0;background:#fff\">"
                        "<div id=\"box\" style=\"position:absolute;left:37px;top:21px;width:50px;"
                        "height:30px;background:#00ff00\"></div></body>");
    testing::write_text(tmp_ / "two.html", "<!doctype html><title>two</title><p>two</p>");
  }
  void TearDown() override {
    browsers_.reset();
    displays_.reset();
  }
  BrowserOptions options(const std::string& url) {
    BrowserOptions b;
    b.display_id = display_->info().id;
    b.generation = display_->info().generation;
    b.url = url;
    return b;
  }

  TempDir tmp_;
  std::unique_ptr<DisplayManager> displays_;
  std::unique_ptr<BrowserManager> browsers_;
  std::shared_ptr<OwnedDisplay> display_;
};

TEST_F(BrowserX11, RefusedCreatesStartNothingAndTouchNothing) {
  const std::string url = "file://" + (tmp_ / "one.html");
  auto stale = options(url);
  stale.generation = "gen-00000000000000000000000000000000";
  EXPECT_EQ(browsers_->create(stale).error().code, "display-generation-mismatch");
  auto scheme = options("javascript:alert(1)");
  EXPECT_EQ(browsers_->create(scheme).error().code, "browser-url-scheme");
  auto big = options(url);
  big.width = 800;  // wider than the 640 px display
  big.height = 300;
  EXPECT_EQ(browsers_->create(big).error().code, "browser-viewport-range");
  auto reserved = options(url);
  reserved.extra_args = {"--remote-debugging-address=0.0.0.0"};
  EXPECT_EQ(browsers_->create(reserved).error().code, "browser-args");
  // A profile directory that exists is refused and left exactly as it was.
  const std::string existing = tmp_ / "existing-profile";
  ASSERT_EQ(::mkdir(existing.c_str(), 0755), 0);
  testing::write_text(existing + "/keep", "mine");
  auto exists = options(url);
  exists.profile_dir = existing;
  EXPECT_EQ(browsers_->create(exists).error().code, "browser-profile-exists");
  EXPECT_EQ(testing::read_text(existing + "/keep"), "mine");
  struct stat st{};
  ASSERT_EQ(::stat(existing.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);

  EXPECT_TRUE(displays_->list_apps().empty());
  EXPECT_TRUE(browsers_->list().empty());
  EXPECT_FALSE(testing::path_exists(tmp_ / "rt/browsers") &&
               !std::filesystem::is_empty(tmp_ / "rt/browsers"));
}

TEST_F(BrowserX11, LifecycleOfOneWorkspace) {
  auto o = options("file://" + (tmp_ / "one.html"));
  o.width = 400;
  o.height = 300;
  auto created = browsers_->create(o);
  ASSERT_TRUE(created.ok()) << created.error().code << ": " << created.error().message;
  const BrowserInfo info = *created;
  EXPECT_EQ(info.width, 400);
  EXPECT_EQ(info.height, 300);
  EXPECT_EQ(info.version.rfind("Chrome/", 0), 0u) << info.version;
  EXPECT_FALSE(info.target_id.empty());
  EXPECT_EQ(info.display_id, display_->info().id);
  EXPECT_EQ(info.generation, display_->info().generation);

  // A fresh private profile in the engine's runtime dir; DevTools on loopback only.
  EXPECT_EQ(info.profile_dir, tmp_ / ("rt/browsers/" + info.browser_id));
  struct stat st{};
  ASSERT_EQ(::stat(info.profile_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  const std::string port_line = testing::read_text(info.profile_dir + "/DevToolsActivePort");
  const int port = std::stoi(port_line.substr(0, port_line.find('\n')));
  const auto listeners = listeners_on(port);
  ASSERT_FALSE(listeners.empty());
  for (const auto& addr : listeners) EXPECT_EQ(addr, "0100007F") << "DevTools listens beyond loopback";

  // The page's own view of the viewport: exactly what was asked for.
  auto vp = browsers_->evaluate(info.browser_id, "innerWidth + 'x' + innerHeight");
  ASSERT_TRUE(vp.ok()) << vp.error().message;
  EXPECT_EQ(*vp, "\"400x300\"");

  // Screen coordinates without markers: the box the CSS puts at (37,21) 50x30 CSS px, on a window
  // at the display's origin; the display's own pixels agree (green inside, white just outside).
  auto box = browsers_->element_box(info.browser_id, "#box");
  ASSERT_TRUE(box.ok()) << box.error().message;
  EXPECT_EQ(box->x, 37);
  EXPECT_EQ(box->y, 21);
  EXPECT_EQ(box->width, 50);
  EXPECT_EQ(box->height, 30);
  EXPECT_EQ(box->center_x, 62);
  EXPECT_EQ(box->center_y, 36);
  EXPECT_TRUE(box->in_viewport);
  EXPECT_TRUE(testing::wait_until([&] {
    return pixel_at(*display_, 37, 21) == 0x00ff00 && pixel_at(*display_, 86, 50) == 0x00ff00 &&
           pixel_at(*display_, 36, 21) == 0xffffff && pixel_at(*display_, 37, 20) == 0xffffff &&
           pixel_at(*display_, 87, 50) == 0xffffff && pixel_at(*display_, 86, 51) == 0xffffff;
  }, 10000)) << "the page's box is not where element_box says";

  EXPECT_EQ(browsers_->element_box(info.browser_id, "#nope").error().code, "browser-element-not-found");
  EXPECT_EQ(browsers_->element_box(info.browser_id, "[[[").error().code, "browser-selector-invalid");
  EXPECT_EQ(browsers_->element_box(info.browser_id, "").error().code, "browser-args");

  EXPECT_EQ(*browsers_->evaluate(info.browser_id, "undefined"), "null");
  EXPECT_EQ(*browsers_->evaluate(info.browser_id, "({a: [1, 2.5, 'z\u00eb']})"), "{\"a\":[1,2.5,\"z\u00eb\"]}");
  EXPECT_EQ(browsers_->evaluate(info.browser_id, "throw new Error('no')").error().code, "browser-evaluate-exception");
  EXPECT_EQ(browsers_->evaluate(info.browser_id, "NaN").error().code, "browser-evaluate-result");
  EXPECT_EQ(browsers_->evaluate(info.browser_id, "'x'.repeat(2 * 1024 * 1024)").error().code,
            "browser-result-too-large");

  EXPECT_EQ(browsers_->navigate(info.browser_id, "javascript:alert(1)").error().code, "browser-url-scheme");
  const std::string two = "file://" + (tmp_ / "two.html");
  auto nav = browsers_->navigate(info.browser_id, two);
  ASSERT_TRUE(nav.ok()) << nav.error().message;
  EXPECT_EQ(*nav, two);
  EXPECT_EQ(*browsers_->evaluate(info.browser_id, "document.title"), "\"two\"");
  EXPECT_EQ(browsers_->navigate(info.browser_id, "http://127.0.0.1:1/").error().code, "browser-navigate-failed");

  auto st1 = browsers_->status(info.browser_id);
  ASSERT_TRUE(st1.ok());
  EXPECT_TRUE(st1->live && st1->process && st1->display && st1->cdp && st1->page_target);
  auto listed = browsers_->list();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_TRUE(listed[0].alive);

  // A browser that died is reported as such, by every op.
  const auto members = group_members(info.pid);
  EXPECT_GE(members.size(), 2u) << "Chromium runs helpers in its process group";
  ASSERT_EQ(::kill(info.pid, SIGKILL), 0);
  ASSERT_TRUE(testing::wait_pid_gone(info.pid, 10000));
  EXPECT_EQ(browsers_->evaluate(info.browser_id, "1").error().code, "browser-not-live");
  EXPECT_EQ(browsers_->element_box(info.browser_id, "#box").error().code, "browser-not-live");
  EXPECT_EQ(browsers_->navigate(info.browser_id, two).error().code, "browser-not-live");
  auto st2 = browsers_->status(info.browser_id);
  ASSERT_TRUE(st2.ok());
  EXPECT_FALSE(st2->live);
  EXPECT_FALSE(st2->process);

  // Close: reaped, the whole group gone, the profile removed; the id is then unknown.
  auto closed = browsers_->close(info.browser_id);
  ASSERT_TRUE(closed.ok());
  EXPECT_EQ(*closed, 128 + SIGKILL);
  for (pid_t p : members) EXPECT_TRUE(testing::wait_pid_gone(p, 10000)) << p;
  EXPECT_TRUE(group_members(info.pid).empty());
  EXPECT_FALSE(testing::path_exists(info.profile_dir));
  EXPECT_EQ(browsers_->close(info.browser_id).error().code, "browser-not-found");
  EXPECT_EQ(browsers_->evaluate(info.browser_id, "1").error().code, "browser-not-found");
  EXPECT_TRUE(displays_->list_apps().empty());
}

// Engine shutdown (BrowserManager::close_all, also its destructor) closes every browser: no
// process of its group left, no profile; later creates are refused.
TEST_F(BrowserX11, ShutdownClosesEveryBrowser) {
  auto created = browsers_->create(options("about:blank"));
  ASSERT_TRUE(created.ok()) << created.error().code << ": " << created.error().message;
  EXPECT_EQ(created->width, 640);  // the default: the display's width x (height - 1)
  EXPECT_EQ(created->height, 479);
  const auto members = group_members(created->pid);
  ASSERT_FALSE(members.empty());
  browsers_->close_all();
  for (pid_t p : members) EXPECT_TRUE(testing::wait_pid_gone(p, 10000)) << p;
  EXPECT_FALSE(testing::path_exists(created->profile_dir));
  EXPECT_TRUE(browsers_->list().empty());
  EXPECT_EQ(browsers_->create(options("about:blank")).error().code, "engine-shutting-down");
  EXPECT_TRUE(displays_->list_apps().empty());
}

}  // namespace
}  // namespace evident
