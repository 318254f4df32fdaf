// An app played by the test, for the _NET_WM_PING barrier (evident/input/app_ping.h): a
// top-level window on its own connection and thread that records, in order, the button events
// and pings it handles, and answers each ping from its event queue as GTK does (the event sent
// back to the root window with SubstructureNotify|SubstructureRedirect). Include after
// evident/testing/xvfb.h (Xlib).
#pragma once

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace evident::testing {

class PingApp {
 public:
  // Takes `dpy` (closed with the app). `lists_ping` false: WM_PROTOCOLS names only
  // WM_DELETE_WINDOW, as an app that cannot be pinged.
  PingApp(::Display* dpy, int x, int y, int width, int height, bool lists_ping = true) : dpy_(dpy) {
    const Window root = DefaultRootWindow(dpy_);
    XSetWindowAttributes attrs{};
    attrs.event_mask = ButtonPressMask | ButtonReleaseMask | StructureNotifyMask;
    win_ = XCreateWindow(dpy_, root, x, y, static_cast<unsigned>(width), static_cast<unsigned>(height), 0,
                         CopyFromParent, InputOutput, CopyFromParent, CWEventMask, &attrs);
    Atom protocols[2] = {XInternAtom(dpy_, "WM_DELETE_WINDOW", False), XInternAtom(dpy_, "_NET_WM_PING", False)};
    ping_ = protocols[1];
    wm_protocols_ = XInternAtom(dpy_, "WM_PROTOCOLS", False);
    XSetWMProtocols(dpy_, win_, protocols, lists_ping ? 2 : 1);
    XMapWindow(dpy_, win_);
    XEvent ev;
    do XWindowEvent(dpy_, win_, StructureNotifyMask, &ev);
    while (ev.type != MapNotify);
    if (::pipe(wake_) != 0) wake_[0] = wake_[1] = -1;
    thread_ = std::thread([this] { loop(); });
  }
  ~PingApp() {
    stop_ = true;
    if (wake_[1] >= 0) (void)!::write(wake_[1], "x", 1);
    thread_.join();
    XCloseDisplay(dpy_);
    for (int fd : wake_) if (fd >= 0) ::close(fd);
  }
  PingApp(const PingApp&) = delete;
  PingApp& operator=(const PingApp&) = delete;

  Window window() const { return win_; }
  // "press", "release", "ping" in the order the app handled them.
  std::vector<std::string> handled() {
    std::lock_guard<std::mutex> lock(mu_);
    return handled_;
  }
  // The next event the app handles comes after `ms` of (simulated) work, as in a busy app.
  void busy_for_next_event(int ms) { busy_ms_ = ms; }
  // false: pings are read and never answered (a hung app).
  void answer_pings(bool on) { answer_ = on; }

 private:
  void loop() {
    const int xfd = ConnectionNumber(dpy_);
    while (!stop_) {
      if (XPending(dpy_) == 0) {
        pollfd p[2] = {{xfd, POLLIN, 0}, {wake_[0], POLLIN, 0}};
        (void)::poll(p, 2, -1);
        continue;
      }
      if (const int ms = busy_ms_.exchange(0); ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      XEvent ev;
      XNextEvent(dpy_, &ev);
      std::string what;
      if (ev.type == ButtonPress) what = "press";
      if (ev.type == ButtonRelease) what = "release";
      const bool is_ping = ev.type == ClientMessage && ev.xclient.message_type == wm_protocols_ &&
                           static_cast<Atom>(ev.xclient.data.l[0]) == ping_;
      if (is_ping) what = "ping";
      if (!what.empty()) {
        std::lock_guard<std::mutex> lock(mu_);
        handled_.push_back(what);
      }
      if (is_ping && answer_) {
        XClientMessageEvent echo = ev.xclient;
        echo.window = DefaultRootWindow(dpy_);
        XSendEvent(dpy_, echo.window, False, SubstructureNotifyMask | SubstructureRedirectMask,
                   reinterpret_cast<XEvent*>(&echo));
        XFlush(dpy_);
      }
    }
  }

  ::Display* dpy_;
  Window win_ = None;
  Atom ping_ = None, wm_protocols_ = None;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::atomic<int> busy_ms_{0};
  std::atomic<bool> answer_{true};
  std::mutex mu_;
  std::vector<std::string> handled_;
  std::thread thread_;
};

}  // namespace evident::testing
