// Proves on a private Xvfb with the fixture app that the action vocabulary reaches a real client
// as intended (positions, buttons, multi-click counts, scroll direction and count, drag ends, keys,
// typed text, pasted text), that a refused batch injects nothing, and that settle/observe report honestly.
#include <gtest/gtest.h>

#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>

#include "evident/actions/batch.h"
#include "evident/actions/executor.h"
#include "evident/capture/capture.h"
#include "evident/core/fs.h"
#include "evident/core/sha256.h"
#include "x11_harness.h"  // includes Xlib last
#include <X11/Xatom.h>
#define Status int  // Xlib's Status, which x11_harness.h #undef'd for evident::Status
#include <X11/extensions/Xfixes.h>
#undef Status

namespace evident {
namespace {

const std::string kFixture = std::string(EVIDENT_BINARY_DIR) + "/fixtures/app/evident-fixture-app";

std::vector<nlohmann::json> events(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::string all = test::read_file_or_empty(path);
  std::size_t start = 0;
  while (start < all.size()) {
    std::size_t nl = all.find('\n', start);
    if (nl == std::string::npos) break;
    auto j = nlohmann::json::parse(all.substr(start, nl - start), nullptr, false);
    if (j.is_object()) out.push_back(j);
    start = nl + 1;
  }
  return out;
}

std::vector<nlohmann::json> of_type(const std::vector<nlohmann::json>& ev, const std::string& type) {
  std::vector<nlohmann::json> out;
  for (const auto& e : ev) {
    if (e["type"] == type) out.push_back(e);
  }
  return out;
}

struct Rig {
  test::Xvfb xvfb{1280, 800};
  ::Display* dpy = nullptr;
  std::mutex mu;
  std::unique_ptr<Capturer> capturer;
  std::unique_ptr<ChangeWatcher> watcher;
  std::unique_ptr<ActionExecutor> exec;
  test::Child app;
  std::string log;

  explicit Rig(bool animate = false) {
    dpy = xvfb.open();
    EXPECT_NE(dpy, nullptr);
    log = xvfb.dir() + "/events.jsonl";
    std::vector<std::string> argv = {kFixture, "--events", log};
    if (animate) argv.push_back("--animate");
    app = test::spawn(argv, false);
    const auto deadline = test::now_ms() + 15000;
    while (test::now_ms() < deadline && of_type(events(log), "ready").empty()) poll(nullptr, 0, 10);
    EXPECT_FALSE(of_type(events(log), "ready").empty());
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
    const auto deadline = test::now_ms() + timeout_ms;
    std::vector<nlohmann::json> got;
    while (test::now_ms() < deadline) {
      got = of_type(events(log), type);
      if (got.size() >= n) break;
      poll(nullptr, 0, 5);
    }
    return got;
  }
};

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
  EXPECT_EQ(rig.wait_events("button_release", 6).size(), 6u) << test::read_file_or_empty(rig.log);
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
  const auto deadline = test::now_ms() + 5000;
  std::string value;
  while (test::now_ms() < deadline) {
    auto t = of_type(events(rig.log), "text");
    if (!t.empty()) value = t.back()["value"];
    if (value == want) break;
    poll(nullptr, 0, 5);
  }
  EXPECT_EQ(value, want);
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
  const auto deadline = test::now_ms() + 5000;
  std::string value;
  while (test::now_ms() < deadline) {
    auto t = of_type(events(rig.log), "text");
    if (!t.empty()) value = t.back()["value"];
    if (value == want) break;
    poll(nullptr, 0, 5);
  }
  EXPECT_EQ(value, want);
  std::lock_guard<std::mutex> lock(rig.mu);
  // The claim in the detail, checked on the server: the selections have no owner any more.
  EXPECT_EQ(XGetSelectionOwner(rig.dpy, XInternAtom(rig.dpy, "CLIPBOARD", False)), static_cast<Window>(None));
  EXPECT_EQ(XGetSelectionOwner(rig.dpy, XA_PRIMARY), static_cast<Window>(None));
  char keys[32];
  XQueryKeymap(rig.dpy, keys);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(keys[i], 0) << "key byte " << i << " still held after paste";
  ::Window root_ret, child_ret;
  int rx, ry, wx, wy;
  unsigned int mask = 0;
  ASSERT_TRUE(XQueryPointer(rig.dpy, DefaultRootWindow(rig.dpy), &root_ret, &child_ret, &rx, &ry, &wx, &wy, &mask));
  EXPECT_EQ(mask & (Button1Mask | Button2Mask | Button3Mask | Button4Mask | Button5Mask | ControlMask), 0u);
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
    const auto deadline = test::now_ms() + 5000;
    Window owner = XGetSelectionOwner(obs, clipboard);
    while (!done(owner) && test::now_ms() < deadline) {
      pollfd p{ConnectionNumber(obs), POLLIN, 0};
      if (!XPending(obs)) poll(&p, 1, static_cast<int>(std::max<std::int64_t>(1, deadline - test::now_ms())));
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
  test::Child xclip = test::spawn({"xclip", "-quiet", "-selection", "clipboard", file}, false);
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
  {
    const auto deadline = test::now_ms() + 5000;
    int st = 0;
    pid_t got = 0;
    while ((got = waitpid(xclip.pid, &st, WNOHANG)) == 0 && test::now_ms() < deadline) {
      poll(nullptr, 0, 5);  // bounded reaping loop: xclip's exit is the condition
    }
    EXPECT_EQ(got, xclip.pid) << "xclip still running after losing CLIPBOARD";
    if (got == xclip.pid) xclip.pid = -1;
  }
  XCloseDisplay(obs);

  std::lock_guard<std::mutex> lock(rig.mu);
  char keys[32];
  XQueryKeymap(rig.dpy, keys);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(keys[i], 0) << "key byte " << i << " still held after paste";
  ::Window root_ret, child_ret;
  int rx, ry, wx, wy;
  unsigned int mask = 0;
  ASSERT_TRUE(XQueryPointer(rig.dpy, DefaultRootWindow(rig.dpy), &root_ret, &child_ret, &rx, &ry, &wx, &wy, &mask));
  EXPECT_EQ(mask & (Button1Mask | Button2Mask | Button3Mask | Button4Mask | Button5Mask | ControlMask), 0u);
}

TEST(ActionsX11, RefusedBatchInjectsNothing) {
  Rig rig;
  ASSERT_TRUE(rig.exec);
  const auto before = events(rig.log).size();
  const std::uint64_t count = rig.exec->input_event_count();
  for (const char* bad : {R"({"actions":[{"type":"click","x":10,"y":10},{"type":"click","x":5000,"y":1}]})",
                          R"({"actions":[{"type":"click","x":10,"y":10},{"type":"fly"}]})",
                          R"({"actions":[{"type":"type","text":"abc"},{"type":"wait","ms":9999}]})",
                          R"({"actions":[]})",
                          R"({"actions":[{"type":"click","x":10,"y":10}],"settle":6000})",
                          R"({"actions":[{"type":"click","x":10,"y":10}],"extra":1})"}) {
    auto r = rig.run(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(r.error().code == "action-invalid" || r.error().code == "actions-request") << r.error().code;
  }
  EXPECT_EQ(rig.exec->input_event_count(), count);
  // A round trip through the app: a real click after the refused batches is the next event logged.
  auto ok = rig.run(R"({"actions":[{"type":"click","x":600,"y":300}],"observe":"none"})");
  ASSERT_TRUE(ok.ok());
  auto presses = rig.wait_events("button_press", 1);
  ASSERT_EQ(presses.size(), 1u);
  EXPECT_EQ(presses[0]["x_root"], 600);
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
      EXPECT_EQ(sha256_hex(test::read_file_or_empty(path)), (*r)["observation"]["png"]["sha256"]);
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

}  // namespace
}  // namespace evident
