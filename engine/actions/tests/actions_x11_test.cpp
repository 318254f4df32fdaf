// Proves on a private Xvfb with the fixture app that the action vocabulary reaches a real client
// as intended (positions, buttons, multi-click counts, scroll direction and count, drag ends, keys,
// typed text, pasted text), that a refused batch injects nothing, and that settle/observe report honestly.
#include <algorithm>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include "evident/core/json.h"

#include "evident/actions/batch.h"
#include "evident/actions/executor.h"
#include "evident/capture/capture.h"
#include "evident/core/fs.h"
#include "evident/core/sha256.h"
#include "evident/display/x11.h"
#include "evident/testing/files.h"
#include "evident/testing/fixture_log.h"
#include "evident/testing/process.h"
#include "evident/testing/tk.h"
#include "evident/testing/xvfb.h"  // includes Xlib last
#include <X11/Xatom.h>
#include <X11/keysym.h>
#define Status int  // Xlib's Status, which xvfb.h #undef'd for evident::Status
#include <X11/Xutil.h>  // IsModifierKey
#include <X11/extensions/Xfixes.h>
#undef Status
#include "evident/testing/ping_app.h"

namespace evident {
namespace {

const std::string kFixture = testing::fixture_app_path();

std::vector<nlohmann::json> events(const std::string& path) { return testing::EventLog(path).events(); }

using testing::of_type;

struct Rig {
  testing::Xvfb xvfb{"1280x800x24"};
  ::Display* dpy = nullptr;
  std::mutex mu;
  std::unique_ptr<Capturer> capturer;
  std::unique_ptr<ChangeWatcher> watcher;
  std::unique_ptr<ActionExecutor> exec;
  testing::Child app;
  std::string log;

  explicit Rig(bool animate = false) {
    xvfb.export_env();  // the fixture app and the Tk client connect through DISPLAY
    dpy = xvfb.open();
    EXPECT_NE(dpy, nullptr);
    log = xvfb.dir() + "/events.jsonl";
    std::vector<std::string> argv = {kFixture, "--events", log};
    if (animate) argv.push_back("--animate");
    app = testing::spawn(argv, false);
    EXPECT_TRUE(testing::EventLog(log).wait_ready(15000));
    auto cap = Capturer::create(dpy);
    if (cap.ok()) capturer = std::move(*cap);
    auto w = ChangeWatcher::create(dpy);
    if (w.ok()) watcher = std::move(*w);
    ExecutorContext ctx;
    ctx.dpy = dpy;
    ctx.dpy_mutex = &mu;
    ctx.capturer = capturer.get();
    ctx.watcher = watcher.get();
    ctx.width = 1280;
    ctx.height = 800;
    ctx.observation_dir = xvfb.dir();
    auto ex = ActionExecutor::create(ctx);
    EXPECT_TRUE(ex.ok());
    if (ex.ok()) exec = std::move(*ex);
  }
  ~Rig() {
    exec.reset();
    watcher.reset();
    capturer.reset();
    app.stop();
    if (dpy) XCloseDisplay(dpy);
  }
  Result<Json> run(const std::string& request) {
    auto j = parse_json_strict(request, 1 << 20, "actions-request");
    EXPECT_TRUE(j.ok());
    return run_action_batch(*exec, *j);
  }
  // Waits until the fixture logged at least `n` events of `type`.
  std::vector<nlohmann::json> wait_events(const std::string& type, std::size_t n, int timeout_ms = 5000) {
    return testing::EventLog(log).wait_events(type, n, timeout_ms);
  }
  // Waits until the fixture's text field holds `want`; returns what it last held.
  std::string wait_text(const std::string& want, int timeout_ms = 5000) {
    auto last_text = [](const std::vector<nlohmann::json>& ev) {
      auto t = of_type(ev, "text");
      return t.empty() ? std::string() : t.back()["value"].get<std::string>();
    };
    testing::EventLog(log).wait_for([&](const auto& ev) { return last_text(ev) == want; }, timeout_ms);
    return last_text(events(log));
  }
};

// Checks on the server that no key is down (XQueryKeymap) and no button or modifier is held
// (XQueryPointer's mask).
void expect_nothing_held(Rig& rig, const std::string& after) {
  std::lock_guard<std::mutex> lock(rig.mu);
  char keys[32];
  XQueryKeymap(rig.dpy, keys);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(keys[i], 0) << "key byte " << i << " still held after " << after;
  ::Window root_ret, child_ret;
  int rx, ry, wx, wy;
  unsigned int mask = 0;
  ASSERT_TRUE(XQueryPointer(rig.dpy, DefaultRootWindow(rig.dpy), &root_ret, &child_ret, &rx, &ry, &wx, &wy, &mask));
  EXPECT_EQ(mask & (Button1Mask | Button2Mask | Button3Mask | Button4Mask | Button5Mask | ShiftMask | ControlMask |
                    Mod1Mask | Mod4Mask),
            0u)
      << "mask after " << after;
}

// Decodes a PNG file with Pillow (engine/actions/tests/png_probe.py, independent of evident) and
// returns {"mode","width","height","sha256" (hashlib, of the file),"pixels":[[r,g,b],...]} for the
// given (x,y) points, or {"error":...}.
nlohmann::json png_probe(const std::string& path, const std::vector<std::pair<int, int>>& points) {
  std::vector<std::string> argv = {"/usr/bin/python3", std::string(EVIDENT_SOURCE_DIR) + "/engine/actions/tests/png_probe.py",
                                   path};
  for (const auto& [x, y] : points) {
    argv.push_back(std::to_string(x));
    argv.push_back(std::to_string(y));
  }
  testing::Child probe = testing::spawn(argv, true, true);
  probe.read_until([](const std::string& b) { return b.find('\n') != std::string::npos; }, 30000);
  auto j = nlohmann::json::parse(probe.buffer, nullptr, false);
  return j.is_object() ? j : nlohmann::json{{"error", "probe output: " + probe.buffer}};
}

nlohmann::json rgb(unsigned hex) { return nlohmann::json::array({(hex >> 16) & 0xff, (hex >> 8) & 0xff, hex & 0xff}); }

TEST(ActionsX11, ClicksMultiClicksAndButtonsArriveWhereSent) {
  Rig rig;
  ASSERT_TRUE(rig.exec);
  auto r = rig.run(R"({"actions":[{"type":"click","x":30,"y":110},{"type":"double_click","x":250,"y":110},
      {"type":"triple_click","x":300,"y":300,"button":"right"}],"observe":"none"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  for (const auto& res : (*r)["results"]) EXPECT_EQ(res["status"], "injected") << res.dump();
  auto presses = rig.wait_events("button_press", 6);
  ASSERT_EQ(presses.size(), 6u);
  EXPECT_EQ(presses[0]["x_root"], 30);
  EXPECT_EQ(presses[0]["y_root"], 110);
  EXPECT_EQ(presses[0]["button"], 1);
  EXPECT_EQ(presses[1]["x_root"], 250);
  EXPECT_EQ(presses[2]["x_root"], 250);
  // Back-to-back: the server stamps the double click's presses within the multi-click window.
  EXPECT_LE(presses[2]["time"].get<long>() - presses[1]["time"].get<long>(), 250);
  for (int i = 3; i < 6; ++i) {
    EXPECT_EQ(presses[i]["button"], 3);
    EXPECT_EQ(presses[i]["x_root"], 300);
  }
  // On failure, the whole log shows which event is missing.
  EXPECT_EQ(rig.wait_events("button_release", 6).size(), 6u) << testing::slurp(rig.log);
  EXPECT_EQ(rig.wait_events("button_clicked", 1).size(), 1u);
}

TEST(ActionsX11, ScrollDragMoveAndNormalizedCoordinates) {
  Rig rig;
  ASSERT_TRUE(rig.exec);
  auto r = rig.run(R"({"actions":[{"type":"scroll","x":100,"y":300,"direction":"down","amount":4},
      {"type":"scroll","x":100,"y":300,"direction":"left","amount":2},
      {"type":"drag","start_x":50,"start_y":250,"end_x":400,"end_y":420},
      {"type":"move_mouse","x":250,"y":250}],"observe":"none"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["results"][3]["status"], "ok");
  auto scrolls = rig.wait_events("scroll", 6);
  ASSERT_EQ(scrolls.size(), 6u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(scrolls[i]["direction"], "down");
  for (int i = 4; i < 6; ++i) EXPECT_EQ(scrolls[i]["direction"], "left");
  auto presses = rig.wait_events("button_press", 7);
  auto releases = rig.wait_events("button_release", 7);
  ASSERT_EQ(presses.size(), 7u);
  EXPECT_EQ(presses[6]["x_root"], 50);
  EXPECT_EQ(presses[6]["y_root"], 250);
  EXPECT_EQ(releases[6]["x_root"], 400);
  EXPECT_EQ(releases[6]["y_root"], 420);
  // normalized_1000: x' = x*W/1000 -> (250,250) lands on (320,200).
  auto n = rig.run(R"({"actions":[{"type":"click","x":250,"y":250}],"coordinate_space":"normalized_1000","observe":"none"})");
  ASSERT_TRUE(n.ok());
  auto more = rig.wait_events("button_press", 8);
  ASSERT_EQ(more.size(), 8u);
  EXPECT_EQ(more[7]["x_root"], 320);
  EXPECT_EQ(more[7]["y_root"], 200);
}

TEST(ActionsX11, TypeAndKeysReachTheFixtureTextField) {
  Rig rig;
  ASSERT_TRUE(rig.exec);
  auto r = rig.run(R"({"actions":[{"type":"click","x":100,"y":40},{"type":"type","text":"Hello, World! h\u00e9llo \u2014 \u4e16\u754c"},
      {"type":"key","key":"BackSpace"},{"type":"key","key":"shift+a"},{"type":"hold_key","key":"b","ms":30}],"observe":"none"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::string want = "Hello, World! h\u00e9llo \u2014 \u4e16Ab";
  EXPECT_EQ(rig.wait_text(want), want);
}

// Proves that paste delivers Unicode text byte-exact through CLIPBOARD to a real client that asks
// for UTF8_STRING, that the detail's "released" claim holds, and that no key or button stays held.
TEST(ActionsX11, PasteDeliversUnicodeThroughTheClipboard) {
  Rig rig;
  ASSERT_TRUE(rig.exec);
  const std::string want = "Gr\u00fc\u00dfe \u2014 \u4e16\u754c \U0001F600";
  auto r = rig.run(R"({"actions":[{"type":"paste","text":"Gr\u00fc\u00dfe \u2014 \u4e16\u754c \ud83d\ude00"}],"observe":"none"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& res = (*r)["results"][0];
  EXPECT_EQ(res["status"], "injected") << res.dump();
  const std::string detail = res["detail"];
  // Nobody owned the selections on this fresh server, so "released" without a restore caveat.
  EXPECT_NE(detail.find("CLIPBOARD and PRIMARY released"), std::string::npos) << detail;
  EXPECT_EQ(detail.find("not restored"), std::string::npos) << detail;
  EXPECT_EQ(detail.find(want), std::string::npos) << "secret text leaked into the detail";
  auto pastes = rig.wait_events("paste", 1);
  ASSERT_EQ(pastes.size(), 1u);
  EXPECT_EQ(pastes[0]["selection"], "CLIPBOARD");
  EXPECT_EQ(pastes[0]["ok"], true);
  EXPECT_EQ(pastes[0]["text"].get<std::string>(), want);
  EXPECT_EQ(rig.wait_text(want), want);
  {
    std::lock_guard<std::mutex> lock(rig.mu);
    // The claim in the detail, checked on the server: the selections have no owner any more.
    EXPECT_EQ(XGetSelectionOwner(rig.dpy, XInternAtom(rig.dpy, "CLIPBOARD", False)), static_cast<Window>(None));
    EXPECT_EQ(XGetSelectionOwner(rig.dpy, XA_PRIMARY), static_cast<Window>(None));
  }
  expect_nothing_held(rig, "paste");
}

// Proves that paste works when another real client (xclip) owned CLIPBOARD before: the fixture
// receives exactly our text (not the previous owner's), the detail says the previous owner was
// not restored, nothing stays held, and afterwards neither selection has an owner.
TEST(ActionsX11, PasteOverAnotherClientsClipboardSaysTheOwnerIsNotRestored) {
  Rig rig;
  ASSERT_TRUE(rig.exec);
  // An observer connection of our own, told by XFixes when CLIPBOARD changes hands.
  ::Display* obs = rig.xvfb.open();
  ASSERT_NE(obs, nullptr);
  int fixes_event = 0, fixes_error = 0;
  ASSERT_TRUE(XFixesQueryExtension(obs, &fixes_event, &fixes_error));
  const Atom clipboard = XInternAtom(obs, "CLIPBOARD", False);
  XFixesSelectSelectionInput(obs, DefaultRootWindow(obs), clipboard, XFixesSetSelectionOwnerNotifyMask);
  XSync(obs, False);
  // Waits (XFixes events, bounded) until `done(owner)` holds for CLIPBOARD's current owner.
  auto wait_owner = [&](const std::function<bool(Window)>& done) {
    const auto deadline = testing::now_ms() + 5000;
    Window owner = XGetSelectionOwner(obs, clipboard);
    while (!done(owner) && testing::now_ms() < deadline) {
      pollfd p{ConnectionNumber(obs), POLLIN, 0};
      if (!XPending(obs)) poll(&p, 1, static_cast<int>(std::max<std::int64_t>(1, deadline - testing::now_ms())));
      while (XPending(obs)) {
        XEvent ev;
        XNextEvent(obs, &ev);
      }
      owner = XGetSelectionOwner(obs, clipboard);
    }
    return owner;
  };

  const std::string previous = "previous owner's text";
  const std::string file = rig.xvfb.dir() + "/previous.txt";
  ASSERT_TRUE(write_file_atomic(file, previous).ok());
  // -quiet keeps xclip in the foreground (so the test owns and reaps it); it serves CLIPBOARD
  // until another client takes the selection.
  testing::Child xclip = testing::spawn({"xclip", "-quiet", "-selection", "clipboard", file}, false);
  ASSERT_GT(xclip.pid, 0);
  const Window xclip_owner = wait_owner([](Window w) { return w != None; });
  ASSERT_NE(xclip_owner, static_cast<Window>(None)) << "xclip never took CLIPBOARD";

  const std::string want = "Gr\u00fc\u00dfe \u4e16\u754c";
  auto r = rig.run(R"({"actions":[{"type":"paste","text":"Gr\u00fc\u00dfe \u4e16\u754c"}],"observe":"none"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& res = (*r)["results"][0];
  EXPECT_EQ(res["status"], "injected") << res.dump();
  const std::string detail = res["detail"];
  EXPECT_NE(detail.find("CLIPBOARD and PRIMARY released; previous owner not restored"), std::string::npos) << detail;
  EXPECT_EQ(detail.find(want), std::string::npos) << "secret text leaked into the detail";
  EXPECT_EQ(detail.find(previous), std::string::npos) << detail;

  auto pastes = rig.wait_events("paste", 1);
  ASSERT_EQ(pastes.size(), 1u);
  EXPECT_EQ(pastes[0]["selection"], "CLIPBOARD");
  EXPECT_EQ(pastes[0]["ok"], true);
  EXPECT_EQ(pastes[0]["text"].get<std::string>(), want);
  auto texts = rig.wait_events("text", 1);
  ASSERT_FALSE(texts.empty());
  EXPECT_EQ(texts.back()["value"].get<std::string>(), want);

  // The previous owner lost CLIPBOARD for good: xclip exits on SelectionClear, and nobody owns
  // either selection after the action (the detail's "released" claim, checked on the server).
  EXPECT_EQ(wait_owner([](Window w) { return w == None; }), static_cast<Window>(None));
  EXPECT_EQ(XGetSelectionOwner(obs, XA_PRIMARY), static_cast<Window>(None));
  // pidfd: readable once xclip has exited (bounded), then reaped.
  const bool exited = testing::wait_pid_gone(xclip.pid, 5000);
  EXPECT_TRUE(exited) << "xclip still running after losing CLIPBOARD";
  if (exited && waitpid(xclip.pid, nullptr, 0) == xclip.pid) xclip.pid = -1;
  XCloseDisplay(obs);

  expect_nothing_held(rig, "paste");
}

// Every batch in `bad` is refused with one of `codes` and injects nothing (the device's event
// count is unchanged); then a real click at (x, y) is the next press the fixture app logs.
void expect_refused_then_probe(Rig& rig, const std::vector<const char*>& bad,
                               const std::set<std::string>& codes, int x, int y) {
  const std::uint64_t count = rig.exec->input_event_count();
  for (const char* request : bad) {
    auto r = rig.run(request);
    ASSERT_FALSE(r.ok()) << request;
    EXPECT_TRUE(codes.count(r.error().code)) << r.error().code << " for " << request;
  }
  EXPECT_EQ(rig.exec->input_event_count(), count);
  auto ok = rig.run(R"({"actions":[{"type":"click","x":)" + std::to_string(x) + R"(,"y":)" +
                    std::to_string(y) + R"(}],"observe":"none"})");
  ASSERT_TRUE(ok.ok());
  auto presses = rig.wait_events("button_press", 1);
  ASSERT_EQ(presses.size(), 1u);
  EXPECT_EQ(presses[0]["x_root"], x);
}

TEST(ActionsX11, RefusedBatchInjectsNothing) {
  Rig rig;
  ASSERT_TRUE(rig.exec);
  const auto before = events(rig.log).size();
  expect_refused_then_probe(
      rig,
      {R"({"actions":[{"type":"click","x":10,"y":10},{"type":"click","x":5000,"y":1}]})",
       R"({"actions":[{"type":"click","x":10,"y":10},{"type":"fly"}]})",
       R"({"actions":[{"type":"type","text":"abc"},{"type":"wait","ms":9999}]})",
       R"({"actions":[]})",
       R"({"actions":[{"type":"click","x":10,"y":10}],"settle":6000})",
       R"({"actions":[{"type":"click","x":10,"y":10}],"extra":1})",
       R"({"actions":[{"type":"click","x":10,"y":10}],"observe":"AX"})",
       // No accessibility observer (as on a display without the stack): refused up front.
       R"({"actions":[{"type":"click","x":10,"y":10}],"observe":"ax"})"},
      {"action-invalid", "actions-request", "accessibility-off"}, 600, 300);
  auto all = events(rig.log);
  for (std::size_t i = before; i < all.size(); ++i) {
    if (all[i]["type"] == "button_press" || all[i]["type"] == "key_press") {
      EXPECT_EQ(all[i]["x_root"], 600) << all[i].dump();
    }
  }
}

TEST(ActionsX11, SettleAndObservation) {
  {
    Rig rig;
    ASSERT_TRUE(rig.exec);
    auto r = rig.run(R"({"actions":[{"type":"click","x":30,"y":110}],"settle":true})");
    ASSERT_TRUE(r.ok()) << r.error().message;
    if (rig.watcher) {
      EXPECT_EQ((*r)["settle"]["outcome"], "settled") << r->dump();
      EXPECT_GE((*r)["settle"]["elapsed_ms"].get<long>(), 300);
      EXPECT_LT((*r)["settle"]["elapsed_ms"].get<long>(), 2000);
    }
    if (rig.capturer) {
      EXPECT_EQ((*r)["observation"]["kind"], "pixels");
      const std::string path = (*r)["observation"]["png"]["path"];
      EXPECT_EQ(sha256_hex(testing::slurp(path)), (*r)["observation"]["png"]["sha256"]);
    }
    auto fixed = rig.run(R"({"actions":[{"type":"wait","ms":1}],"settle":true,"observe":"none"})");
    ASSERT_TRUE(fixed.ok());
    EXPECT_EQ((*fixed)["settle"]["outcome"], "fixed");
    EXPECT_EQ((*fixed)["observation"]["kind"], "none");
  }
  {
    Rig rig(/*animate=*/true);
    ASSERT_TRUE(rig.exec);
    auto r = rig.run(R"({"actions":[{"type":"click","x":30,"y":110}],"settle":700,"observe":"none"})");
    ASSERT_TRUE(r.ok());
    if (rig.watcher) {
      EXPECT_EQ((*r)["settle"]["outcome"], "still_loading") << r->dump();
      EXPECT_GE((*r)["settle"]["elapsed_ms"].get<long>(), 690);
    }
  }
}

// Proves that mouse_down / move_mouse / mouse_up (left, then right) reach the client as a press at
// the down position with that button, motion carrying the button's mask, and a release at the up
// position (not where the pointer went afterwards), and that nothing stays held.
TEST(ActionsX11, MouseDownMoveUpPressesDragsAndReleasesWithTheButton) {
  Rig rig;
  ASSERT_TRUE(rig.exec);
  auto r = rig.run(R"({"actions":[{"type":"mouse_down","x":300,"y":300},{"type":"move_mouse","x":350,"y":320},
      {"type":"mouse_up","x":400,"y":340},{"type":"move_mouse","x":500,"y":400},
      {"type":"mouse_down","x":100,"y":250,"button":"right"},{"type":"move_mouse","x":150,"y":260},
      {"type":"mouse_up","x":200,"y":270,"button":"right"},{"type":"move_mouse","x":600,"y":450}],"observe":"none"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& res = (*r)["results"];
  ASSERT_EQ(res.size(), 8u) << r->dump();
  for (int i : {0, 2, 4, 6}) EXPECT_EQ(res[i]["status"], "injected") << res[i].dump();
  for (int i : {1, 3, 5, 7}) EXPECT_EQ(res[i]["status"], "ok") << res[i].dump();
  auto presses = rig.wait_events("button_press", 2);
  auto releases = rig.wait_events("button_release", 2);
  ASSERT_EQ(presses.size(), 2u) << testing::slurp(rig.log);
  ASSERT_EQ(releases.size(), 2u) << testing::slurp(rig.log);
  struct Want {
    int button;
    unsigned mask;
    int down_x, down_y, mid_x, mid_y, up_x, up_y;
  };
  const Want want[2] = {{1, Button1Mask, 300, 300, 350, 320, 400, 340}, {3, Button3Mask, 100, 250, 150, 260, 200, 270}};
  for (int i = 0; i < 2; ++i) {
    const Want& w = want[i];
    EXPECT_EQ(presses[i]["button"], w.button);
    EXPECT_EQ(presses[i]["x_root"], w.down_x);
    EXPECT_EQ(presses[i]["y_root"], w.down_y);
    EXPECT_EQ(presses[i]["state"].get<unsigned>() & (Button1Mask | Button3Mask), 0u) << "nothing held before the press";
    EXPECT_EQ(releases[i]["button"], w.button);
    EXPECT_EQ(releases[i]["x_root"], w.up_x);
    EXPECT_EQ(releases[i]["y_root"], w.up_y);
    // A release's state is the state before it: the button was still held on the way.
    EXPECT_EQ(releases[i]["state"].get<unsigned>() & (Button1Mask | Button3Mask), w.mask);
  }
  // Motion with the button held: the move_mouse point and the mouse_up point carry the mask.
  // The log is read once the app logged the last action's motion (the releases come before it).
  testing::EventLog(rig.log).wait_for([](const std::vector<nlohmann::json>& ev) {
    for (const auto& e : ev) {
      if (e["type"] == "motion" && e["x_root"] == 600 && e["y_root"] == 450) return true;
    }
    return false;
  });
  auto all = events(rig.log);
  auto motion_state = [&](int x, int y) -> long {
    for (const auto& e : all) {
      if (e["type"] == "motion" && e["x_root"] == x && e["y_root"] == y) return e["state"].get<long>();
    }
    return -1;
  };
  for (const Want& w : want) {
    EXPECT_EQ(motion_state(w.mid_x, w.mid_y), static_cast<long>(w.mask)) << "motion to (" << w.mid_x << "," << w.mid_y << ")";
    EXPECT_EQ(motion_state(w.up_x, w.up_y), static_cast<long>(w.mask)) << "motion to (" << w.up_x << "," << w.up_y << ")";
  }
  // After mouse_up the button is up: the following moves carry no button mask.
  EXPECT_EQ(motion_state(500, 400), 0) << testing::slurp(rig.log);
  EXPECT_EQ(motion_state(600, 450), 0) << testing::slurp(rig.log);
  // Order in the log: press, the held motion, release, then the free motion.
  std::vector<std::string> order;
  for (const auto& e : all) {
    if (e["type"] == "button_press" || e["type"] == "button_release") order.push_back(e["type"]);
    if (e["type"] == "motion" && e["x_root"] == 500) order.push_back("free_motion");
  }
  EXPECT_EQ(order, (std::vector<std::string>{"button_press", "button_release", "free_motion", "button_press",
                                             "button_release"}));
  expect_nothing_held(rig, "mouse_down/mouse_up");
}

// Proves that scroll up and right send exactly `amount` wheel clicks of the right button (4 and 7)
// at the requested point, so the client's offsets move by amount steps in that direction.
TEST(ActionsX11, ScrollUpAndRightWithAmounts) {
  Rig rig;
  ASSERT_TRUE(rig.exec);
  auto r = rig.run(R"({"actions":[{"type":"scroll","x":100,"y":300,"direction":"up","amount":3},
      {"type":"scroll","x":320,"y":240,"direction":"right","amount":2},
      {"type":"scroll","x":50,"y":60,"direction":"up"}],"observe":"none"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  for (const auto& res : (*r)["results"]) EXPECT_EQ(res["status"], "injected") << res.dump();
  auto scrolls = rig.wait_events("scroll", 8);
  ASSERT_EQ(scrolls.size(), 8u) << testing::slurp(rig.log);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(scrolls[i]["direction"], "up");
    EXPECT_EQ(scrolls[i]["x_root"], 100);
    EXPECT_EQ(scrolls[i]["y_root"], 300);
    EXPECT_EQ(scrolls[i]["offset_y"], -10 * (i + 1));
    EXPECT_EQ(scrolls[i]["offset_x"], 0);
  }
  for (int i = 3; i < 5; ++i) {
    EXPECT_EQ(scrolls[i]["direction"], "right");
    EXPECT_EQ(scrolls[i]["x_root"], 320);
    EXPECT_EQ(scrolls[i]["y_root"], 240);
    EXPECT_EQ(scrolls[i]["offset_x"], 10 * (i - 2));
    EXPECT_EQ(scrolls[i]["offset_y"], -30);
  }
  // No amount: the default of 3.
  for (int i = 5; i < 8; ++i) {
    EXPECT_EQ(scrolls[i]["direction"], "up");
    EXPECT_EQ(scrolls[i]["x_root"], 50);
    EXPECT_EQ(scrolls[i]["offset_y"], -30 - 10 * (i - 4));
  }
  // The wheel buttons themselves, each pressed and released once per step.
  auto presses = rig.wait_events("button_press", 8);
  auto releases = rig.wait_events("button_release", 8);
  ASSERT_EQ(presses.size(), 8u);
  ASSERT_EQ(releases.size(), 8u);
  const int buttons[8] = {4, 4, 4, 7, 7, 4, 4, 4};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(presses[i]["button"], buttons[i]) << i;
    EXPECT_EQ(releases[i]["button"], buttons[i]) << i;
  }
  EXPECT_EQ(of_type(events(rig.log), "scroll").size(), 8u) << "more wheel clicks than asked for";
  expect_nothing_held(rig, "scroll");
}

// Proves that key chords and aliases arrive as the intended keysym with exactly the intended
// modifier mask (Shift 1, Control 4, Mod1 8, Mod4 64), each press has its release, and no key
// stays down.
TEST(ActionsX11, KeyChordsAndAliasesArriveWithTheirModifiers) {
  Rig rig;
  ASSERT_TRUE(rig.exec);
  auto r = rig.run(R"({"actions":[{"type":"key","key":"ctrl+shift+t"},{"type":"key","key":"alt+F4"},
      {"type":"key","key":"KP_Enter"},{"type":"key","key":"F5"},{"type":"key","key":"pgdn"},
      {"type":"key","key":"esc"},{"type":"key","key":"super+l"},{"type":"key","key":"ctrl+a"},
      {"type":"key","key":"enter"},{"type":"key","key":"shift+Tab"}],"observe":"none"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  for (const auto& res : (*r)["results"]) EXPECT_EQ(res["status"], "injected") << res.dump();
  struct Want {
    const char* name;  // keysym_name the client decoded
    unsigned long keysym;
    unsigned state;
  };
  // With Shift held, the client's lookup of the `t` key gives `T`; Shift+Tab on the us map is
  // ISO_Left_Tab (both are what a real keyboard gives).
  const std::vector<Want> want = {{"T", XK_T, ShiftMask | ControlMask}, {"F4", XK_F4, Mod1Mask},
                                  {"KP_Enter", XK_KP_Enter, 0},         {"F5", XK_F5, 0},
                                  {"Next", XK_Next, 0},                 {"Escape", XK_Escape, 0},
                                  {"l", XK_l, Mod4Mask},                {"a", XK_a, ControlMask},
                                  {"Return", XK_Return, 0},             {"ISO_Left_Tab", XK_ISO_Left_Tab, ShiftMask}};
  auto is_modifier = [](const nlohmann::json& e) {
    const auto ks = e["keysym"].get<unsigned long>();
    return IsModifierKey(ks) || ks == XK_Super_L || ks == XK_Super_R;
  };
  auto non_modifier_presses = [&](const std::vector<nlohmann::json>& ev) {
    std::vector<nlohmann::json> out;
    for (const auto& e : of_type(ev, "key_press")) {
      if (!is_modifier(e)) out.push_back(e);
    }
    return out;
  };
  testing::EventLog(rig.log).wait_for([&](const std::vector<nlohmann::json>& ev) {
    return non_modifier_presses(ev).size() >= want.size() &&
           of_type(ev, "key_release").size() >= of_type(ev, "key_press").size();
  }, 5000);
  const std::vector<nlohmann::json> all = events(rig.log);
  const std::vector<nlohmann::json> keys = non_modifier_presses(all);
  ASSERT_EQ(keys.size(), want.size()) << testing::slurp(rig.log);
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(keys[i]["keysym_name"], want[i].name) << keys[i].dump();
    EXPECT_EQ(keys[i]["keysym"].get<unsigned long>(), want[i].keysym) << keys[i].dump();
    // Only the chord's modifiers (Lock, NumLock and buttons must not leak in either).
    EXPECT_EQ(keys[i]["state"].get<unsigned>(), want[i].state) << keys[i].dump();
  }
  // Every press has its release, per keycode, in order.
  std::map<int, int> down;
  for (const auto& e : all) {
    if (e["type"] == "key_press") {
      EXPECT_EQ(++down[e["keycode"].get<int>()], 1) << "pressed twice: " << e.dump();
    } else if (e["type"] == "key_release") {
      EXPECT_EQ(--down[e["keycode"].get<int>()], 0) << "released unpressed: " << e.dump();
    }
  }
  for (const auto& [kc, n] : down) EXPECT_EQ(n, 0) << "keycode " << kc << " never released";
  // KP_Enter and enter submit in the fixture. Its editor ignores Control chords and control
  // characters (Escape, Tab), but not Mod4: super+l is the only text change, "l".
  EXPECT_EQ(of_type(all, "submit").size(), 2u);
  auto texts = of_type(all, "text");
  ASSERT_EQ(texts.size(), 1u) << testing::slurp(rig.log);
  EXPECT_EQ(texts[0]["value"], "l");
  expect_nothing_held(rig, "key chords");
}

// Proves that a real toolkit (Tk) counts double_click as a double and triple_click as a triple
// click (its multi-click detection is time- and distance-based), and a click as a single one.
TEST(ActionsX11, TkSeesDoubleAndTripleClicks) {
  Rig rig;
  ASSERT_TRUE(rig.exec);
  testing::Child tk = testing::start_tk("clicks");
  ASSERT_NE(tk.buffer.find("\"ready\""), std::string::npos) << "Tk client never ready: " << tk.buffer;
  auto ready = nlohmann::json::parse(tk.buffer.substr(0, tk.buffer.find('\n')), nullptr, false);
  ASSERT_TRUE(ready.is_object()) << tk.buffer;
  const int x = ready["x"], y = ready["y"];
  ASSERT_GE(ready["width"].get<int>(), 400);
  ASSERT_GE(ready["height"].get<int>(), 200);
  // Three spots far apart (Tk groups presses within 5 px and 500 ms), so each action starts afresh.
  const int ax = x + 50, bx = x + 200, cx = x + 350, cy = y + 100;
  auto request = "{\"actions\":[{\"type\":\"double_click\",\"x\":" + std::to_string(ax) + ",\"y\":" + std::to_string(cy) +
                 "},{\"type\":\"triple_click\",\"x\":" + std::to_string(bx) + ",\"y\":" + std::to_string(cy) +
                 "},{\"type\":\"click\",\"x\":" + std::to_string(cx) + ",\"y\":" + std::to_string(cy) +
                 "}],\"observe\":\"none\"}";
  auto r = rig.run(request);
  ASSERT_TRUE(r.ok()) << r.error().message;
  for (const auto& res : (*r)["results"]) EXPECT_EQ(res["status"], "injected") << res.dump();
  auto clicks = [](const std::string& out) {
    std::vector<std::pair<int, int>> v;  // (count, x_root)
    std::size_t start = 0;
    while (start < out.size()) {
      std::size_t nl = out.find('\n', start);
      if (nl == std::string::npos) break;
      auto j = nlohmann::json::parse(out.substr(start, nl - start), nullptr, false);
      if (j.is_object() && j.contains("click")) v.emplace_back(j["click"].get<int>(), j["x"].get<int>());
      start = nl + 1;
    }
    return v;
  };
  tk.read_until([&](const std::string& b) { return clicks(b).size() >= 6; }, 5000);
  const std::vector<std::pair<int, int>> want = {{1, ax}, {2, ax}, {1, bx}, {2, bx}, {3, bx}, {1, cx}};
  EXPECT_EQ(clicks(tk.buffer), want) << tk.buffer;
  // Nothing more arrives: a round trip through a fresh batch (a single click elsewhere) is the next line.
  auto again = rig.run("{\"actions\":[{\"type\":\"click\",\"x\":" + std::to_string(x + 50) + ",\"y\":" +
                       std::to_string(y + 20) + "}],\"observe\":\"none\"}");
  ASSERT_TRUE(again.ok());
  tk.read_until([&](const std::string& b) { return clicks(b).size() >= 7; }, 5000);
  auto got = clicks(tk.buffer);
  ASSERT_EQ(got.size(), 7u) << tk.buffer;
  EXPECT_EQ(got[6].second, x + 50);
  expect_nothing_held(rig, "multi-clicks");
}

// Proves that screenshot and zoom return native-pixel PNGs that an independent decoder reads with
// the display's (or the clamped region's) size and the fixture's known colours at known pixels,
// that the reported sha256 is the file's, and that an empty or off-screen zoom is refused before
// anything runs.
TEST(ActionsX11, ScreenshotAndZoomAreNativePixelsClampedAndHashed) {
  Rig rig;
  ASSERT_TRUE(rig.exec);
  ASSERT_TRUE(rig.capturer);
  auto r = rig.run(R"({"actions":[{"type":"screenshot"},{"type":"zoom","x":15,"y":95,"width":30,"height":20},
      {"type":"zoom","x":20,"y":100,"width":200,"height":60},{"type":"zoom","x":1200,"y":700,"width":200,"height":200},
      {"type":"zoom","x":-10,"y":-10,"width":40,"height":40}],"observe":"none"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& res = (*r)["results"];
  ASSERT_EQ(res.size(), 5u);
  for (const auto& x : res) EXPECT_EQ(x["status"], "ok") << x.dump();
  // Each result's png: the file exists, its sha256 (hashlib) and length match the result.
  auto check_file = [&](const nlohmann::json& result, int w, int h,
                        const std::vector<std::pair<std::pair<int, int>, unsigned>>& px) {
    SCOPED_TRACE(result.dump());
    ASSERT_TRUE(result.contains("png"));
    const auto& png = result["png"];
    const std::string path = png["path"];
    EXPECT_EQ(path.rfind(rig.xvfb.dir() + "/", 0), 0u) << "written under observation_dir";
    EXPECT_EQ(png["width"], w);
    EXPECT_EQ(png["height"], h);
    EXPECT_EQ(png["byte_length"].get<std::size_t>(), testing::slurp(path).size());
    std::vector<std::pair<int, int>> points;
    for (const auto& p : px) points.push_back(p.first);
    auto probe = png_probe(path, points);
    ASSERT_FALSE(probe.contains("error")) << probe.dump();
    EXPECT_EQ(probe["sha256"], png["sha256"]);
    EXPECT_EQ(path, rig.xvfb.dir() + "/" + probe["sha256"].get<std::string>() + ".png");
    EXPECT_EQ(probe["width"], w);
    EXPECT_EQ(probe["height"], h);
    for (std::size_t i = 0; i < px.size(); ++i) {
      EXPECT_EQ(probe["pixels"][i], rgb(px[i].second)) << "pixel (" << px[i].first.first << "," << px[i].first.second << ")";
    }
  };
  // The full display: fixture colours at the README's sample points.
  check_file(res[0], 1280, 800,
             {{{5, 5}, 0x404040}, {{22, 22}, 0xFFFFFF}, {{25, 105}, 0x2050C0}, {{219, 159}, 0x2050C0},
              {{220, 160}, 0x404040}, {{245, 105}, 0x808080}, {{465, 105}, 0x404040}, {{25, 200}, 0xD0D0D0},
              {{25, 220}, 0xA0A0A0}, {{25, 240}, 0x707070}, {{25, 260}, 0x303030}, {{639, 479}, 0x404040}});
  // Zoom at (15,95) 30x20: the button's corner (20,100) is pixel (5,5); no scaling, no offset.
  check_file(res[1], 30, 20, {{{0, 0}, 0x404040}, {{4, 4}, 0x404040}, {{5, 5}, 0x2050C0}, {{4, 5}, 0x404040},
                              {{5, 4}, 0x404040}, {{29, 19}, 0x2050C0}});
  // Exactly the button rectangle: every corner is button blue.
  check_file(res[2], 200, 60, {{{0, 0}, 0x2050C0}, {{199, 0}, 0x2050C0}, {{0, 59}, 0x2050C0}, {{199, 59}, 0x2050C0}});
  // Clamped at the right and bottom edges: 1280-1200 = 80 wide, 800-700 = 100 high.
  check_file(res[3], 80, 100, {});
  // Clamped at the left and top edges: (0,0) 30x30, the text field's corner (20,20) at (20,20).
  check_file(res[4], 30, 30, {{{0, 0}, 0x404040}, {{19, 19}, 0x404040}, {{20, 20}, 0xFFFFFF}, {{29, 29}, 0xFFFFFF}});
  // The two zooms of different regions are different files; the same region again is the same bytes.
  EXPECT_NE(res[1]["png"]["sha256"], res[2]["png"]["sha256"]);
  auto again = rig.run(R"({"actions":[{"type":"zoom","x":20,"y":100,"width":200,"height":60}],"observe":"none"})");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)["results"][0]["png"]["sha256"], res[2]["png"]["sha256"]);

  // Empty or fully off-screen zooms: the whole batch is refused and the click before them never runs.
  expect_refused_then_probe(
      rig,
      {R"({"actions":[{"type":"click","x":600,"y":300},{"type":"zoom","x":1280,"y":0,"width":10,"height":10}]})",
       R"({"actions":[{"type":"click","x":600,"y":300},{"type":"zoom","x":0,"y":800,"width":10,"height":10}]})",
       R"({"actions":[{"type":"click","x":600,"y":300},{"type":"zoom","x":-50,"y":10,"width":50,"height":10}]})",
       R"({"actions":[{"type":"click","x":600,"y":300},{"type":"zoom","x":10,"y":-20,"width":10,"height":20}]})",
       R"({"actions":[{"type":"click","x":600,"y":300},{"type":"zoom","x":10,"y":10,"width":0,"height":10}]})",
       R"({"actions":[{"type":"click","x":600,"y":300},{"type":"zoom","x":10,"y":10,"width":10,"height":0}]})"},
      {"action-invalid"}, 610, 310);
  // The probe is the first press the fixture ever logged.
  EXPECT_EQ(of_type(events(rig.log), "button_press").size(), 1u);
}

// Proves that `wait` really separates the actions around it on the server's clock (press times
// 200 ms or more apart) and reports `ok`, while a batch without it keeps them back to back.
TEST(ActionsX11, WaitSeparatesActionsOnTheServerClock) {
  Rig rig;
  ASSERT_TRUE(rig.exec);
  auto r = rig.run(R"({"actions":[{"type":"click","x":600,"y":300},{"type":"wait","ms":200},
      {"type":"click","x":600,"y":300}],"observe":"none"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& res = (*r)["results"];
  ASSERT_EQ(res.size(), 3u);
  EXPECT_EQ(res[0]["status"], "injected");
  EXPECT_EQ(res[1]["status"], "ok");
  EXPECT_EQ(res[1]["type"], "wait");
  EXPECT_EQ(res[1]["detail"], "waited 200 ms");
  EXPECT_EQ(res[2]["status"], "injected");
  auto presses = rig.wait_events("button_press", 2);
  ASSERT_EQ(presses.size(), 2u);
  const long gap = presses[1]["time"].get<long>() - presses[0]["time"].get<long>();
  EXPECT_GE(gap, 200) << testing::slurp(rig.log);
  EXPECT_LT(gap, 3000) << "the wait is bounded";
  // Contrast without the wait: a double click's two presses, stamped within the multi-click window.
  auto d = rig.run(R"({"actions":[{"type":"double_click","x":600,"y":300}],"observe":"none"})");
  ASSERT_TRUE(d.ok());
  auto more = rig.wait_events("button_press", 4);
  ASSERT_EQ(more.size(), 4u);
  EXPECT_LT(more[3]["time"].get<long>() - more[2]["time"].get<long>(), 200);
}

// [click at (100,100), type "a"] on a 640x480 display: the two actions of a verified type.
Result<std::vector<Action>> click_then_type_a() {
  return parse_actions(Json::array({Json{{"type", "click"}, {"x", 100}, {"y", 100}},
                                    Json{{"type", "type"}, {"text", "a"}}}),
                       BatchMode::kCuActions, CoordinateSpace::kPixel, 640, 480);
}

// A read-back `type` reads the app's state only after the app handled the input sent before
// it (the _NET_WM_PING barrier, docs/accessibility.md "Verified type"): an app busy for 300 ms
// when a click reaches it has handled that click when the read-back hook runs, and the pinged app
// is the one under the pointer. The hook is the test's own (no accessibility stack here).
TEST(ActionsX11, ReadBackTypeWaitsUntilTheAppHandledTheInputBeforeIt) {
  testing::Xvfb xvfb("640x480x24");
  ::Display* dpy = xvfb.connect();
  ASSERT_NE(dpy, nullptr);
  testing::PingApp app(xvfb.open(), 0, 0, 300, 300);
  std::mutex mu;
  std::vector<std::vector<std::string>> seen_by_hook;
  ExecutorContext ctx;
  ctx.dpy = dpy;
  ctx.dpy_mutex = &mu;
  ctx.width = 640;
  ctx.height = 480;
  ctx.open_aux = [&xvfb] { return xvfb.open(); };
  ctx.type_readback = [&](const std::string&) {
    seen_by_hook.push_back(app.handled());
    return TypeReadbackStart{nullptr, "not verified: the test's hook"};
  };
  ctx.type_readback_declines = [](const std::string& text) {
    return text.find('\n') == std::string::npos ? std::string()
                                                 : std::string("not verified: the test declines it");
  };
  auto ex = ActionExecutor::create(ctx);
  ASSERT_TRUE(ex.ok()) << ex.error().message;
  auto parsed = click_then_type_a();
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const Action& click = (*parsed)[0];
  const Action& type = (*parsed)[1];
  auto declined_batch = parse_actions(Json::array({Json{{"type", "type"}, {"text", "a\n"}}}),
                                      BatchMode::kCuActions, CoordinateSpace::kPixel, 640, 480);
  ASSERT_TRUE(declined_batch.ok()) << declined_batch.error().message;
  const Action& declined = (*declined_batch)[0];

  app.busy_for_next_event(300);
  EXPECT_EQ((*ex)->execute(click, 0).status, ActionStatus::kInjected);
  const ActionResult typed = (*ex)->execute(type, 1);
  EXPECT_EQ(typed.status, ActionStatus::kInjected);
  EXPECT_NE(typed.detail.find("not verified: the test's hook"), std::string::npos) << typed.detail;
  ASSERT_EQ(seen_by_hook.size(), 1u);
  EXPECT_EQ(seen_by_hook[0], (std::vector<std::string>{"press", "release", "ping"}));

  // A hung app: no read-back (the hook is not called), `injected` with the reason, at the bound.
  app.answer_pings(false);
  const ActionResult hung = (*ex)->execute(type, 2);
  EXPECT_EQ(hung.status, ActionStatus::kInjected);
  EXPECT_NE(hung.detail.find("not verified: the app did not answer _NET_WM_PING within 2000 ms"),
            std::string::npos)
      << hung.detail;
  EXPECT_EQ(seen_by_hook.size(), 1u);

  // A text the hook declines is declined before the barrier: with the app still hung, the reason
  // is the text's, not the ping's, the hook is not called and no ping is sent (the next answered
  // ping comes after every event sent before it, so a ping of the declined call would be seen).
  const ActionResult not_read = (*ex)->execute(declined, 3);
  EXPECT_EQ(not_read.status, ActionStatus::kInjected);
  EXPECT_NE(not_read.detail.find("not verified: the test declines it"), std::string::npos)
      << not_read.detail;
  EXPECT_EQ(not_read.detail.find("_NET_WM_PING"), std::string::npos) << not_read.detail;
  EXPECT_EQ(seen_by_hook.size(), 1u);
  app.answer_pings(true);
  EXPECT_EQ((*ex)->execute(type, 4).status, ActionStatus::kInjected);
  ASSERT_EQ(seen_by_hook.size(), 2u);
  EXPECT_EQ(std::count(seen_by_hook[1].begin(), seen_by_hook[1].end(), "ping"), 3)
      << "pings: the first type's, the hung type's and this one's";
}

// The open socket fds of this process.
std::set<int> open_sockets() {
  std::set<int> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(e.path(), ec);
    if (!ec && target.string().rfind("socket:", 0) == 0) out.insert(std::stoi(e.path().filename().string()));
  }
  return out;
}

// A connection whose I/O error (its server killed) is survived: marked dead, no exit.
::Display* survivable(::Display* d) {
  if (d) XSetIOErrorExitHandler(d, [](::Display*, void*) {}, nullptr);
  return d;
}

// A session whose display went away under it (docs/reliability.md, "Display lifetime and
// batches in flight"): the executor is abandoned, then freed. Its destructor sends nothing (the main
// connection's server is dead; a request on it would end this process through Xlib's default
// I/O exit), and the ping barrier's own connection is closed, not leaked with the executor.
TEST(ActionsX11, AnAbandonedExecutorClosesItsOwnConnectionAndSendsNothing) {
  testing::Xvfb xvfb("640x480x24");
  ensure_xlib_initialized();
  // Never closed (its server is killed below): kept reachable for LeakSanitizer.
  static ::Display* dpy = nullptr;
  dpy = xvfb.open();  // Xlib's default I/O exit: a request after the kill ends this process
  ASSERT_NE(dpy, nullptr);
  std::mutex mu;
  ExecutorContext ctx;
  ctx.dpy = dpy;
  ctx.dpy_mutex = &mu;
  ctx.width = 640;
  ctx.height = 480;
  ctx.open_aux = [&xvfb] { return survivable(xvfb.open()); };
  ctx.type_readback = [](const std::string&) {
    return TypeReadbackStart{nullptr, "not verified: the test's hook"};
  };
  auto ex = ActionExecutor::create(ctx);
  ASSERT_TRUE(ex.ok()) << ex.error().message;
  auto parsed = click_then_type_a();
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  std::set<int> opened;
  {
    testing::PingApp app(xvfb.open(), 0, 0, 300, 300);
    EXPECT_EQ((*ex)->execute((*parsed)[0], 0).status, ActionStatus::kInjected);
    const std::set<int> before = open_sockets();
    // The barrier pings through the executor's own connection, opened now.
    EXPECT_EQ((*ex)->execute((*parsed)[1], 1).status, ActionStatus::kInjected);
    for (int fd : open_sockets()) {
      if (!before.count(fd)) opened.insert(fd);
    }
  }
  ASSERT_FALSE(opened.empty()) << "the ping barrier opened no connection";
  // The server dies with a key or button possibly held: nothing of the executor may talk to it.
  ASSERT_EQ(::kill(xvfb.pid(), SIGKILL), 0);
  ASSERT_TRUE(testing::wait_pid_gone(xvfb.pid(), 10000));
  (*ex)->abandon();
  EXPECT_EQ((*ex)->execute((*parsed)[0], 2).status, ActionStatus::kFailed) << "an abandoned executor sent input";
  ex->reset();
  const std::set<int> after = open_sockets();
  for (int fd : opened) EXPECT_FALSE(after.count(fd)) << "fd " << fd << " of the executor is still open";
}

}  // namespace
}  // namespace evident
