// libevident-bench-click.so: the raw engine click (InputDevice::click: motion + press + release
// + XSync, with its checks) for a benchmark process to call through ctypes, so the in-process
// `cu.actions` click and the raw click it wraps are measured in one process, alternating click
// by click, on the same display, app and CPU placement (bench/evident_py.py --mode click;
// docs/performance.md, row `click`). Not part of the product: built beside evident-bench-input.
//
//   void*     evident_bench_click_open(const char* display);  // its own connection; NULL on error
//   long long evident_bench_click(void* h, int x, int y);    // ns of the click; -1 on error
//   void      evident_bench_click_close(void* h);            // releases, restores, closes
//
// The connection opens with XOpenDisplay (DISPLAY/XAUTHORITY as the caller set them).
#include <chrono>
#include <memory>

#include "evident/input/input.h"

#include <X11/Xlib.h>  // after evident headers: Xlib #defines Status
#undef Status

namespace {

struct BenchClick {
  ::Display* dpy = nullptr;
  std::unique_ptr<evident::InputDevice> dev;
};

}  // namespace

extern "C" {

void* evident_bench_click_open(const char* display) {
  ::Display* dpy = XOpenDisplay(display);
  if (!dpy) return nullptr;
  auto dev = evident::InputDevice::create(dpy);
  if (!dev.ok()) {
    XCloseDisplay(dpy);
    return nullptr;
  }
  auto* h = new BenchClick;
  h->dpy = dpy;
  h->dev = std::move(*dev);
  return h;
}

long long evident_bench_click(void* handle, int x, int y) {
  auto* h = static_cast<BenchClick*>(handle);
  const auto t0 = std::chrono::steady_clock::now();
  const evident::Status s = h->dev->click(x, y, 1, 1);
  const auto t1 = std::chrono::steady_clock::now();
  if (!s.ok()) return -1;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
}

void evident_bench_click_close(void* handle) {
  auto* h = static_cast<BenchClick*>(handle);
  h->dev.reset();  // releases and restores before its connection closes
  XCloseDisplay(h->dpy);
  delete h;
}

}  // extern "C"
