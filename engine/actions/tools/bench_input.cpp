// evident-bench-input: input micro-benchmark on $DISPLAY (prints one JSON object).
// usage: evident-bench-input [CLICK_X CLICK_Y [clicks]]: the 300 clicks land at
// (CLICK_X + i % 50, CLICK_Y), default (5, 5); the benchmark points them at the fixture app's
// button, where the peers click. With "clicks", only the clicks are measured.
// Measures: the engine click (InputDevice::click: motion + press + release + XSync, with its
// checks) against the physical floor, a bare XTest motion + press + release + XSync in C on the
// same connection, alternating click by click so a load swing hits both (median µs of each);
// 100 ASCII characters typed into a Tk Entry (time of the type call, exactness read back from the
// Entry); the Unicode string "héllo — 世界" (exactness, ms per non-keymap character).
// See docs/input.md and docs/performance.md (row `click`).
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include "evident/core/json.h"
#include <string>
#include <vector>

#include "evident/core/clock.h"
#include "evident/input/input.h"
#include "evident/input/unicode.h"
#include "evident/testing/tk.h"  // the Tk client and Child/spawn (test support, no gtest)

#include <X11/Xlib.h>  // after evident headers: Xlib #defines Status
#include <X11/extensions/XTest.h>
#undef Status

using namespace evident;

using testing::last_value;

int main(int argc, char** argv) {
  const int click_x = argc >= 3 ? std::atoi(argv[1]) : 5;
  const int click_y = argc >= 3 ? std::atoi(argv[2]) : 5;
  const bool clicks_only = argc >= 4 && std::string(argv[3]) == "clicks";
  ::Display* dpy = XOpenDisplay(nullptr);
  if (!dpy) {
    std::printf("{\"ok\":false,\"error\":\"cannot open DISPLAY\"}\n");
    return 1;
  }
  auto dev = InputDevice::create(dpy);
  if (!dev.ok()) {
    std::printf("{\"ok\":false,\"error\":\"%s\"}\n", dev.error().code.c_str());
    return 1;
  }
  InputDevice& in = **dev;
  nlohmann::json out{{"ok", true}};

  // The floor click and the engine click alternate (the order swapping every pair), each on a
  // point of the same button, so both see the same server, app and load.
  std::vector<std::int64_t> clicks, floor_clicks;
  auto floor_click = [&](int x, int y) {
    XTestFakeMotionEvent(dpy, -1, x, y, CurrentTime);
    XTestFakeButtonEvent(dpy, 1, True, CurrentTime);
    XTestFakeButtonEvent(dpy, 1, False, CurrentTime);
    XSync(dpy, False);
  };
  for (int i = 0; i < 300; ++i) {
    const int x = click_x + i % 50;
    for (int k = 0; k < 2; ++k) {
      const bool engine = (k == 0) == (i % 2 == 0);
      const std::int64_t t0 = steady_us();
      if (engine) (void)in.click(x, click_y, 1, 1);
      else floor_click(x, click_y);
      (engine ? clicks : floor_clicks).push_back(steady_us() - t0);
    }
  }
  std::sort(clicks.begin(), clicks.end());
  std::sort(floor_clicks.begin(), floor_clicks.end());
  out["click_median_us"] = clicks[clicks.size() / 2];
  out["floor_click_median_us"] = floor_clicks[floor_clicks.size() / 2];
  out["clicks"] = 300;
  out["floor_clicks"] = 300;
  if (clicks_only) {
    std::printf("%s\n", out.dump().c_str());
    dev = make_error("done", "");
    XCloseDisplay(dpy);
    return 0;
  }

  auto tk_type = [&](const std::string& text, std::int64_t* us) {
    testing::Child tk = testing::start_tk("entry", "evident-bench-tk");
    auto cps = decode_utf8(text);
    const std::int64_t t0 = steady_us();
    auto rep = in.type(*cps);
    *us = steady_us() - t0;
    tk.read_until([&](const std::string& b) { return last_value(b) == text; }, 5000);
    (void)in.release_all_checked();
    return last_value(tk.buffer) == text;
  };
  std::string ascii;
  for (int i = 0; i < 100; ++i) ascii.push_back(static_cast<char>('a' + i % 26));
  std::int64_t us = 0;
  const bool ascii_exact = tk_type(ascii, &us);
  out["ascii100_ms"] = us / 1000.0;
  out["ascii100_exact"] = ascii_exact;
  const std::string uni = "h\u00e9llo \u2014 \u4e16\u754c";
  int exact = 0;
  std::int64_t total = 0;
  const int runs = 5;
  for (int i = 0; i < runs; ++i) {
    exact += tk_type(uni, &us) ? 1 : 0;
    total += us;
  }
  out["unicode_exact"] = std::to_string(exact) + "/" + std::to_string(runs);
  out["unicode_ms_per_nonkeymap_char"] = total / runs / 4 / 1000.0;  // é — 世 界
  std::printf("%s\n", out.dump().c_str());
  dev = make_error("done", "");  // the device releases and restores before its connection closes
  XCloseDisplay(dpy);
  return 0;
}
