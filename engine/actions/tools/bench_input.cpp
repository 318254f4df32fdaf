// evident-bench-input: input micro-benchmark on $DISPLAY (prints one JSON object).
// usage: evident-bench-input [CLICK_X CLICK_Y]: the 300 clicks land at (CLICK_X + i % 50, CLICK_Y),
// default (5, 5); the benchmark points them at the fixture app's button, where the peers click.
// Measures: engine click (motion + press + release + XSync) median µs; 100 ASCII characters typed
// into a Tk Entry (time of the type call, exactness read back from the Entry); the Unicode
// string "héllo — 世界" (exactness, ms per non-keymap character). See docs/input.md.
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "evident/core/clock.h"
#include "evident/input/input.h"
#include "evident/input/unicode.h"
#include "evident/testing/tk.h"  // the Tk client and Child/spawn (test support, no gtest)

#include <X11/Xlib.h>  // after evident headers: Xlib #defines Status
#undef Status

using namespace evident;

using testing::last_value;

int main(int argc, char** argv) {
  const int click_x = argc >= 3 ? std::atoi(argv[1]) : 5;
  const int click_y = argc >= 3 ? std::atoi(argv[2]) : 5;
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

  std::vector<std::int64_t> clicks;
  for (int i = 0; i < 300; ++i) {
    const std::int64_t t0 = steady_us();
    (void)in.click(click_x + i % 50, click_y, 1, 1);
    clicks.push_back(steady_us() - t0);
  }
  std::sort(clicks.begin(), clicks.end());
  out["click_median_us"] = clicks[clicks.size() / 2];

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
