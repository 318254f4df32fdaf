#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#undef Status

#include "evident/input/app_ping.h"

#include <poll.h>

#include <cerrno>

#include <algorithm>

#include "evident/core/clock.h"
#include "evident/display/x11.h"

namespace evident {

namespace {

// The child of the root window that contains `w` (its top-level window); None if `w` is gone.
Window top_level_of(::Display* dpy, Window w) {
  const Window root = DefaultRootWindow(dpy);
  for (int depth = 0; depth < 64 && w != None; ++depth) {
    Window r = None, parent = None, *children = nullptr;
    unsigned n = 0;
    if (!XQueryTree(dpy, w, &r, &parent, &children, &n)) return None;
    if (children) XFree(children);
    if (parent == root) return w;
    w = parent;
  }
  return None;
}

bool lists_ping(::Display* dpy, Window w, Atom ping) {
  Atom* protocols = nullptr;
  int n = 0;
  if (!XGetWMProtocols(dpy, w, &protocols, &n)) return false;
  const bool found = std::find(protocols, protocols + n, ping) != protocols + n;
  XFree(protocols);
  return found;
}

AppPingOutcome await_echo(::Display* dpy, Atom wm_protocols, Atom ping, long token, std::int64_t deadline_us) {
  for (;;) {
    while (XPending(dpy) > 0) {
      XEvent in;
      XNextEvent(dpy, &in);
      if (in.type == ClientMessage && in.xclient.message_type == wm_protocols && in.xclient.format == 32 &&
          static_cast<Atom>(in.xclient.data.l[0]) == ping && in.xclient.data.l[1] == token) {
        return AppPingOutcome::kAnswered;
      }
    }
    if (x_connection_dead(dpy)) return AppPingOutcome::kFailed;
    const std::int64_t left_ms = (deadline_us - steady_us() + 999) / 1000;
    if (left_ms <= 0) return AppPingOutcome::kTimedOut;
    pollfd p{ConnectionNumber(dpy), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left_ms, 1 << 30))) < 0 && errno != EINTR) {
      return AppPingOutcome::kFailed;
    }
  }
}

}  // namespace

// X errors (the window vanishing between the reads) go to the display layer's process-wide
// handler, which records them per connection instead of exiting.
AppPinger::AppPinger(::Display* own) : dpy_(own) { ensure_xlib_initialized(); }

AppPinger::~AppPinger() {
  if (dpy_) close_x_connection(dpy_);
}

void AppPinger::abandon() {
  abandon_x_connection(dpy_);
  dpy_ = nullptr;
}

AppPingOutcome AppPinger::ping_focused_app(std::int64_t deadline_us) {
  ::Display* dpy = dpy_;
  if (!dpy || x_connection_dead(dpy)) return AppPingOutcome::kFailed;
  (void)take_x_errors(dpy);
  const Window root = DefaultRootWindow(dpy);
  const Atom wm_protocols = XInternAtom(dpy, "WM_PROTOCOLS", False);
  const Atom ping = XInternAtom(dpy, "_NET_WM_PING", False);

  // The window whose app gets the keys: the focus window's top level, or with the focus
  // PointerRoot (no window manager), the top-level window under the pointer.
  Window focus = None, top = None;
  int revert = 0;
  XGetInputFocus(dpy, &focus, &revert);
  if (focus == None) return AppPingOutcome::kNoWindow;
  if (focus == PointerRoot || focus == root) {
    Window r = None, child = None;
    int rx = 0, ry = 0, wx = 0, wy = 0;
    unsigned mask = 0;
    if (!XQueryPointer(dpy, root, &r, &child, &rx, &ry, &wx, &wy, &mask)) return AppPingOutcome::kFailed;
    top = child;
  } else {
    top = top_level_of(dpy, focus);
  }
  if (top == None) return AppPingOutcome::kNoWindow;
  if (!lists_ping(dpy, top, ping)) {
    XSync(dpy, False);
    return take_x_errors(dpy).count ? AppPingOutcome::kFailed : AppPingOutcome::kUnsupported;
  }

  // The app echoes the event to the root window with SubstructureNotify|SubstructureRedirect;
  // this connection listens there. The token is an XID of this connection's own range (unique
  // among the display's clients, so another listener's ping is never taken for ours).
  XSelectInput(dpy, root, SubstructureNotifyMask);
  const long token = static_cast<long>(XAllocID(dpy));
  XEvent ev{};
  ev.xclient.type = ClientMessage;
  ev.xclient.window = top;
  ev.xclient.message_type = wm_protocols;
  ev.xclient.format = 32;
  ev.xclient.data.l[0] = static_cast<long>(ping);
  ev.xclient.data.l[1] = token;  // the timestamp slot: apps echo it unchanged
  ev.xclient.data.l[2] = static_cast<long>(top);
  XSendEvent(dpy, top, False, NoEventMask, &ev);
  XSync(dpy, False);
  if (take_x_errors(dpy).count || x_connection_dead(dpy)) {
    if (!x_connection_dead(dpy)) XSelectInput(dpy, root, NoEventMask);
    return AppPingOutcome::kFailed;
  }

  const AppPingOutcome outcome = await_echo(dpy, wm_protocols, ping, token, deadline_us);
  // The root's events are selected only while a ping is out: the connection reads nothing
  // between pings, so nothing piles up there (a late echo is then not delivered at all).
  if (!x_connection_dead(dpy)) {
    XSelectInput(dpy, root, NoEventMask);
    XSync(dpy, True);  // and what was queued is dropped
  }
  return outcome;
}

}  // namespace evident
