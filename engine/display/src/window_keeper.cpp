// The engine-side window manager of a managed display (evident/display/window_keeper.h,
// docs/windows.md "Managed windows").
#include "evident/display/window_keeper.h"

#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

// Xlib defines Status as a macro (int); ours is evident::Status.
#undef Status

#include <algorithm>
#include <chrono>
#include <vector>

#include "evident/display/x11.h"

namespace evident {
namespace {

// _NET_WM_WINDOW_TYPE values that never get the focus on map.
bool is_unfocusable_type(::Display* dpy, Window w) {
  static const char* const kSkip[] = {"_NET_WM_WINDOW_TYPE_DOCK", "_NET_WM_WINDOW_TYPE_DESKTOP",
                                      "_NET_WM_WINDOW_TYPE_NOTIFICATION",
                                      "_NET_WM_WINDOW_TYPE_TOOLTIP"};
  const Atom prop = XInternAtom(dpy, "_NET_WM_WINDOW_TYPE", True);
  if (prop == None) return false;
  Atom type = None;
  int format = 0;
  unsigned long n = 0, after = 0;
  unsigned char* data = nullptr;
  bool skip = false;
  if (XGetWindowProperty(dpy, w, prop, 0, 16, False, XA_ATOM, &type, &format, &n, &after, &data) ==
          Success &&
      data && format == 32) {
    const auto* atoms = reinterpret_cast<const Atom*>(data);
    for (unsigned long i = 0; i < n && !skip; ++i) {
      for (const char* name : kSkip) {
        const Atom a = XInternAtom(dpy, name, True);
        if (a != None && atoms[i] == a) skip = true;
      }
    }
  }
  if (data) XFree(data);
  return skip;
}

bool has_protocol(::Display* dpy, Window w, Atom protocol) {
  Atom* list = nullptr;
  int n = 0;
  bool found = false;
  if (XGetWMProtocols(dpy, w, &list, &n)) {
    for (int i = 0; i < n; ++i) found = found || list[i] == protocol;
    if (list) XFree(list);
  }
  return found;
}

}  // namespace

Result<std::unique_ptr<WindowKeeper>> WindowKeeper::start(const std::string& name,
                                                          const Cookie& cookie, int width,
                                                          int height) {
  std::unique_ptr<WindowKeeper> k(new WindowKeeper());
  k->width_ = width;
  k->height_ = height;
  auto ev = open_x_connection(name, cookie);
  if (!ev.ok()) return make_error("display-not-ready", "the window keeper cannot connect to the display");
  k->events_ = *ev;
  auto poke = open_x_connection(name, cookie);
  if (!poke.ok()) {
    k->stop();
    return make_error("display-not-ready", "the window keeper cannot connect to the display");
  }
  k->poke_ = *poke;
  if (::pipe2(k->stop_pipe_, O_CLOEXEC) != 0) {
    k->stop();
    return make_error("display-not-ready", "the window keeper cannot create its wake-up pipe");
  }
  ::Display* dpy = k->events_;
  const Window root = DefaultRootWindow(dpy);
  XSetWindowAttributes attrs{};
  attrs.override_redirect = True;
  attrs.event_mask = PropertyChangeMask;
  k->marker_ = XCreateWindow(dpy, root, -1, -1, 1, 1, 0, 0, InputOnly, CopyFromParent,
                             CWOverrideRedirect | CWEventMask, &attrs);
  k->sync_atom_ = XInternAtom(dpy, "_EVIDENT_WINDOW_KEEPER_SYNC", False);
  XSelectInput(dpy, root, SubstructureNotifyMask);
  XSync(dpy, False);
  if (x_connection_dead(dpy) || take_x_errors(dpy).count > 0) {
    k->stop();
    return make_error("display-not-ready", "the window keeper could not watch the display");
  }
  {
    std::lock_guard lock(k->mu_);
    k->running_ = true;
  }
  WindowKeeper* self = k.get();
  k->thread_ = std::thread([self] { self->run(); });
  return k;
}

WindowKeeper::~WindowKeeper() { stop(); }

void WindowKeeper::stop() {
  if (thread_.joinable()) {
    const char b = 1;
    (void)!::write(stop_pipe_[1], &b, 1);
    thread_.join();
  }
  {
    std::lock_guard lock(mu_);
    running_ = false;
    cv_.notify_all();
  }
  {
    std::lock_guard lock(poke_mu_);
    if (poke_) close_x_connection(poke_);
    poke_ = nullptr;
  }
  if (events_) close_x_connection(events_);
  events_ = nullptr;
  for (int& fd : stop_pipe_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

WindowKeeper::Counters WindowKeeper::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

bool WindowKeeper::sync(std::int64_t timeout_ms) {
  std::uint32_t n = 0;
  {
    std::lock_guard lock(poke_mu_);
    if (!poke_ || x_connection_dead(poke_)) return false;
    n = ++next_sync_;
    const unsigned long value = n;
    XChangeProperty(poke_, static_cast<Window>(marker_), static_cast<Atom>(sync_atom_),
                    XA_CARDINAL, 32, PropModeReplace,
                    reinterpret_cast<const unsigned char*>(&value), 1);
    // Once this round trip returns, the server has queued the PropertyNotify for the keeper's
    // connection after every event of what it did before (the map the caller saw, for one).
    XSync(poke_, False);
    (void)take_x_errors(poke_);
    if (x_connection_dead(poke_)) return false;
  }
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(std::max<std::int64_t>(0, timeout_ms)),
                      [&] { return !running_ || acked_ >= n; }) &&
         running_ && acked_ >= n;
}

bool WindowKeeper::takes_focus(unsigned long window) {
  ::Display* dpy = events_;
  const Window w = static_cast<Window>(window);
  if (is_unfocusable_type(dpy, w)) return false;
  bool input = true;  // ICCCM: no WM_HINTS input flag means the client relies on the WM
  if (XWMHints* hints = XGetWMHints(dpy, w)) {
    if (hints->flags & InputHint) input = hints->input != 0;
    XFree(hints);
  }
  if (input) return true;
  // Globally active (input False + WM_TAKE_FOCUS): the client sets the focus itself when asked.
  return has_protocol(dpy, w, XInternAtom(dpy, "WM_TAKE_FOCUS", False));
}

bool WindowKeeper::give_focus(unsigned long window) {
  ::Display* dpy = events_;
  const Window w = static_cast<Window>(window);
  bool input = true;
  if (XWMHints* hints = XGetWMHints(dpy, w)) {
    if (hints->flags & InputHint) input = hints->input != 0;
    XFree(hints);
  }
  if (input) XSetInputFocus(dpy, w, RevertToParent, CurrentTime);
  const Atom take_focus = XInternAtom(dpy, "WM_TAKE_FOCUS", False);
  if (has_protocol(dpy, w, take_focus)) {
    XEvent msg{};
    msg.xclient.type = ClientMessage;
    msg.xclient.window = w;
    msg.xclient.message_type = XInternAtom(dpy, "WM_PROTOCOLS", False);
    msg.xclient.format = 32;
    msg.xclient.data.l[0] = static_cast<long>(take_focus);
    msg.xclient.data.l[1] = CurrentTime;
    XSendEvent(dpy, w, False, NoEventMask, &msg);
  }
  return true;
}

void WindowKeeper::manage(unsigned long window) {
  ::Display* dpy = events_;
  const Window w = static_cast<Window>(window);
  XWindowAttributes a{};
  if (!XGetWindowAttributes(dpy, w, &a) || a.override_redirect || a.map_state != IsViewable ||
      a.c_class != InputOutput) {
    (void)take_x_errors(dpy);
    return;
  }
  bool fitted = false;
  // Fit: the whole window (border included) inside the screen, never below its minimum size.
  {
    long supplied = 0;
    XSizeHints hints{};
    int min_w = 1, min_h = 1;
    if (XGetWMNormalHints(dpy, w, &hints, &supplied)) {
      if (hints.flags & PMinSize) {
        min_w = std::max(1, hints.min_width);
        min_h = std::max(1, hints.min_height);
      }
    }
    const int b = a.border_width;
    const int nw = std::max(min_w, std::min(a.width, width_ - 2 * b));
    const int nh = std::max(min_h, std::min(a.height, height_ - 2 * b));
    const int nx = std::clamp(a.x, 0, std::max(0, width_ - nw - 2 * b));
    const int ny = std::clamp(a.y, 0, std::max(0, height_ - nh - 2 * b));
    if (nw != a.width || nh != a.height || nx != a.x || ny != a.y) {
      XMoveResizeWindow(dpy, w, nx, ny, static_cast<unsigned>(nw), static_cast<unsigned>(nh));
      fitted = true;
    }
  }
  XRaiseWindow(dpy, w);
  bool focused = false;
  if (takes_focus(window)) focused = give_focus(window);
  XSync(dpy, False);
  const bool errors = take_x_errors(dpy).count > 0;  // the window vanished meanwhile
  std::lock_guard lock(mu_);
  ++counters_.managed;
  if (fitted && !errors) ++counters_.fitted;
  if (focused && !errors) ++counters_.focused;
}

void WindowKeeper::refocus_if_lost() {
  ::Display* dpy = events_;
  const Window root = DefaultRootWindow(dpy);
  Window focus = None;
  int revert = 0;
  XGetInputFocus(dpy, &focus, &revert);
  if (focus != None && focus != PointerRoot && focus != root) {
    XWindowAttributes fa{};
    const bool viewable = XGetWindowAttributes(dpy, focus, &fa) && fa.map_state == IsViewable;
    (void)take_x_errors(dpy);
    if (viewable) return;
  }
  Window r = 0, parent = 0, *kids = nullptr;
  unsigned n = 0;
  if (!XQueryTree(dpy, root, &r, &parent, &kids, &n)) return;
  std::vector<Window> order(kids, kids + n);
  if (kids) XFree(kids);
  // Top of the stack first.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    XWindowAttributes a{};
    if (!XGetWindowAttributes(dpy, *it, &a)) continue;
    if (a.override_redirect || a.map_state != IsViewable || a.c_class != InputOutput) continue;
    if (!takes_focus(*it)) continue;
    give_focus(*it);
    XSync(dpy, False);
    if (take_x_errors(dpy).count == 0) {
      std::lock_guard lock(mu_);
      ++counters_.focused;
      return;
    }
  }
  (void)take_x_errors(dpy);
}

void WindowKeeper::run() {
  ::Display* dpy = events_;
  const Window root = DefaultRootWindow(dpy);
  for (;;) {
    if (x_connection_dead(dpy)) break;
    std::uint32_t ack = 0;
    bool lost = false;
    XFlush(dpy);
    while (XEventsQueued(dpy, QueuedAfterFlush) > 0) {
      XEvent ev;
      XNextEvent(dpy, &ev);
      switch (ev.type) {
        case MapNotify:
          if (ev.xmap.event == root && !ev.xmap.override_redirect) manage(ev.xmap.window);
          break;
        case UnmapNotify:
          if (ev.xunmap.event == root) lost = true;
          break;
        case DestroyNotify:
          if (ev.xdestroywindow.event == root) lost = true;
          break;
        case PropertyNotify:
          if (ev.xproperty.window == static_cast<Window>(marker_) &&
              ev.xproperty.atom == static_cast<Atom>(sync_atom_)) {
            Atom type = None;
            int format = 0;
            unsigned long count = 0, after = 0;
            unsigned char* data = nullptr;
            if (XGetWindowProperty(dpy, ev.xproperty.window, ev.xproperty.atom, 0, 1, False,
                                   XA_CARDINAL, &type, &format, &count, &after, &data) == Success &&
                data && format == 32 && count == 1) {
              ack = std::max(ack, static_cast<std::uint32_t>(*reinterpret_cast<unsigned long*>(data)));
            }
            if (data) XFree(data);
          }
          break;
        default:
          break;
      }
    }
    // A loss is handled before the acknowledgement of a sync that followed it.
    if (lost) refocus_if_lost();
    if (ack != 0) {
      // Everything before the sync's PropertyNotify was handled, and our requests processed
      // (manage and refocus end with XSync).
      XSync(dpy, False);
      std::lock_guard lock(mu_);
      acked_ = std::max(acked_, ack);
      cv_.notify_all();
    }
    if (x_connection_dead(dpy)) break;
    pollfd fds[2] = {{ConnectionNumber(dpy), POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    const int r = ::poll(fds, 2, 1000);
    if (r > 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) break;
    if (r > 0 && (fds[0].revents & (POLLHUP | POLLERR))) {
      XNoOp(dpy);
      XSync(dpy, False);  // lets Xlib notice the broken connection
    }
  }
  std::lock_guard lock(mu_);
  running_ = false;
  cv_.notify_all();
}

}  // namespace evident
