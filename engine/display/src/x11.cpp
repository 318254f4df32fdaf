#include "evident/display/x11.h"

#include <unistd.h>

#include <X11/Xlib-xcb.h>
#include <X11/Xlib.h>
#include <xcb/xcb.h>

#include <map>
#include <mutex>
#include <vector>

namespace evident {
namespace {

struct ConnState {
  bool dead = false;
  XErrorRecord errors;
};

std::mutex& state_mu() {
  static std::mutex mu;
  return mu;
}
std::map<::Display*, ConnState>& states() {
  static std::map<::Display*, ConnState> m;
  return m;
}

int on_x_error(::Display* dpy, XErrorEvent* ev) {
  std::lock_guard lock(state_mu());
  auto& s = states()[dpy];
  s.errors.count++;
  s.errors.last_error_code = ev->error_code;
  s.errors.last_request_code = ev->request_code;
  return 0;
}

int on_io_error(::Display* dpy) {
  std::lock_guard lock(state_mu());
  states()[dpy].dead = true;
  return 0;  // XSetIOErrorExitHandler below keeps Xlib from exiting
}

void on_io_error_exit(::Display* dpy, void*) {
  std::lock_guard lock(state_mu());
  states()[dpy].dead = true;
  // Returning (instead of exiting) is allowed since libX11 1.7: the connection stays marked
  // broken and later calls on it fail; the process lives on.
}

std::mutex& open_mu() {
  static std::mutex mu;
  return mu;
}

}  // namespace

void ensure_xlib_initialized() {
  static std::once_flag once;
  std::call_once(once, [] {
    XInitThreads();
    XSetErrorHandler(on_x_error);
    XSetIOErrorHandler(on_io_error);
  });
}

Result<::Display*> open_x_connection(const std::string& name, const Cookie& cookie) {
  ensure_xlib_initialized();
  ::Display* dpy = nullptr;
  {
    // XSetAuthorization is process-global: one open at a time, and reset afterwards so that
    // nothing else in the process inherits this display's cookie.
    std::lock_guard lock(open_mu());
    static char kName[] = "MIT-MAGIC-COOKIE-1";
    XSetAuthorization(kName, sizeof(kName) - 1,
                      reinterpret_cast<char*>(const_cast<std::uint8_t*>(cookie.data())),
                      static_cast<int>(cookie.size()));
    dpy = XOpenDisplay(name.c_str());
    XSetAuthorization(nullptr, 0, nullptr, 0);
    if (!dpy) return make_error("x-connect-failed", "cannot open X display " + name);
    XSetIOErrorExitHandler(dpy, on_io_error_exit, nullptr);
    std::lock_guard slock(state_mu());
    states()[dpy] = ConnState{};
  }
  return dpy;
}

namespace {

// The Display structures of connections closed without XCloseDisplay: kept (a few KB each) and
// reachable, so that their memory is accounted for, never reused under a late caller, and not
// reported as lost by LeakSanitizer. The list itself is never destroyed: LeakSanitizer checks
// after the static destructors have run, and a destroyed list would reach nothing.
std::vector<::Display*>& kept_structures() {
  static auto* v = new std::vector<::Display*>();
  return *v;
}

// Under open_mu(), so a new connection cannot reuse this address in between.
void close_locked(::Display* dpy, bool abandon) {
  if (abandon || x_connection_dead(dpy)) {
    // XCloseDisplay on a broken connection can block forever inside libX11 (it flushes and
    // takes the display lock an I/O error may have left taken). The socket is closed and the
    // Display structure is kept instead: bounded teardown over a few KB (docs/reliability.md).
    ::close(ConnectionNumber(dpy));
    kept_structures().push_back(dpy);
  } else {
    XCloseDisplay(dpy);
  }
  std::lock_guard slock(state_mu());
  states().erase(dpy);
}

}  // namespace

void close_x_connection(::Display* dpy) {
  if (!dpy) return;
  std::lock_guard lock(open_mu());
  close_locked(dpy, false);
}

void abandon_x_connection(::Display* dpy) {
  if (!dpy) return;
  std::lock_guard lock(open_mu());
  close_locked(dpy, true);
}

bool x_connection_dead(::Display* dpy) {
  {
    std::lock_guard lock(state_mu());
    auto it = states().find(dpy);
    if (it != states().end() && it->second.dead) return true;
  }
  // Users that talk XCB on the same connection (capture) may see the break first.
  xcb_connection_t* c = XGetXCBConnection(dpy);
  return c == nullptr || xcb_connection_has_error(c) != 0;
}

XErrorRecord take_x_errors(::Display* dpy) {
  std::lock_guard lock(state_mu());
  auto it = states().find(dpy);
  if (it == states().end()) return {};
  XErrorRecord r = it->second.errors;
  it->second.errors = {};
  return r;
}

}  // namespace evident
