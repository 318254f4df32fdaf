#include "evident/display/windows.h"

#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/extensions/XRes.h>
#include <poll.h>
#include <unistd.h>

// Xlib defines Status as a macro (int); ours is evident::Status.
#undef Status

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "evident/core/clock.h"
#include "evident/display/display.h"
#include "evident/display/x11.h"

namespace evident {
namespace {

Error dead() { return display_dead_error(); }

// Appends the UTF-8 encoding of `cp`.
void put_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Valid UTF-8 of at most `max` bytes: invalid sequences become U+FFFD, the cut never splits a
// character. Control characters (< 0x20, 0x7F) become spaces (titles are shown in tables).
std::string sanitize_utf8(const std::string& in, std::size_t max) {
  std::string out;
  std::size_t i = 0;
  while (i < in.size()) {
    const auto c = static_cast<unsigned char>(in[i]);
    std::uint32_t cp = 0;
    std::size_t len = 0;
    if (c < 0x80) {
      cp = c, len = 1;
    } else if ((c & 0xE0) == 0xC0) {
      cp = c & 0x1F, len = 2;
    } else if ((c & 0xF0) == 0xE0) {
      cp = c & 0x0F, len = 3;
    } else if ((c & 0xF8) == 0xF0) {
      cp = c & 0x07, len = 4;
    }
    bool ok = len > 0 && i + len <= in.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(in[i + k]);
      if ((cc & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (ok) {
      // Overlong forms, surrogates and out-of-range values are invalid.
      static const std::uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
      if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) ok = false;
    }
    if (!ok) {
      cp = 0xFFFD;
      len = 1;
    }
    if (cp < 0x20 || cp == 0x7F) cp = ' ';
    std::string enc;
    put_utf8(enc, cp);
    if (out.size() + enc.size() > max) break;
    out += enc;
    i += len;
  }
  return out;
}

struct Atoms {
  Atom net_wm_name, utf8_string, net_wm_pid, wm_state;
  explicit Atoms(::Display* dpy) {
    net_wm_name = XInternAtom(dpy, "_NET_WM_NAME", False);
    utf8_string = XInternAtom(dpy, "UTF8_STRING", False);
    net_wm_pid = XInternAtom(dpy, "_NET_WM_PID", False);
    wm_state = XInternAtom(dpy, "WM_STATE", False);
  }
};

// Reads a property's raw bytes (format 8) up to kMaxTitleBytes*4; type returned in *type.
bool read_bytes_property(::Display* dpy, Window w, Atom prop, Atom* type, std::string* out) {
  Atom actual = None;
  int format = 0;
  unsigned long n = 0, after = 0;
  unsigned char* data = nullptr;
  if (XGetWindowProperty(dpy, w, prop, 0, static_cast<long>(kMaxTitleBytes), False,
                         AnyPropertyType, &actual, &format, &n, &after, &data) != Success) {
    return false;
  }
  bool ok = data != nullptr && actual != None && format == 8;
  if (ok) out->assign(reinterpret_cast<char*>(data), n);
  if (data) XFree(data);
  if (type) *type = actual;
  return ok;
}

bool has_property(::Display* dpy, Window w, Atom prop) {
  Atom actual = None;
  int format = 0;
  unsigned long n = 0, after = 0;
  unsigned char* data = nullptr;
  const bool ok = XGetWindowProperty(dpy, w, prop, 0, 0, False, AnyPropertyType, &actual, &format,
                                     &n, &after, &data) == Success &&
                  actual != None;
  if (data) XFree(data);
  return ok;
}

std::string latin1_to_utf8(const std::string& s) {
  std::string out;
  for (unsigned char c : s) put_utf8(out, c);
  return out;
}

std::string read_title(::Display* dpy, Window w, const Atoms& a) {
  std::string bytes;
  Atom type = None;
  if (read_bytes_property(dpy, w, a.net_wm_name, &type, &bytes) && type == a.utf8_string) {
    return sanitize_utf8(bytes, kMaxTitleBytes);
  }
  bytes.clear();
  if (!read_bytes_property(dpy, w, XA_WM_NAME, &type, &bytes)) return "";
  if (type == XA_STRING) return sanitize_utf8(latin1_to_utf8(bytes), kMaxTitleBytes);
  if (type == a.utf8_string) return sanitize_utf8(bytes, kMaxTitleBytes);
  // COMPOUND_TEXT and others: let Xlib convert.
  XTextProperty tp{};
  if (!XGetWMName(dpy, w, &tp)) return "";
  std::string out;
  char** list = nullptr;
  int count = 0;
  if (Xutf8TextPropertyToTextList(dpy, &tp, &list, &count) >= Success && list && count > 0) {
    out = list[0] ? list[0] : "";
  }
  if (list) XFreeStringList(list);
  if (tp.value) XFree(tp.value);
  return sanitize_utf8(out, kMaxTitleBytes);
}

void read_class(::Display* dpy, Window w, std::string* instance, std::string* klass) {
  std::string bytes;
  Atom type = None;
  if (!read_bytes_property(dpy, w, XA_WM_CLASS, &type, &bytes)) return;
  const auto nul = bytes.find('\0');
  std::string inst = bytes.substr(0, nul);
  std::string cls = nul == std::string::npos ? "" : bytes.substr(nul + 1);
  if (!cls.empty() && cls.back() == '\0') cls.pop_back();
  if (auto n2 = cls.find('\0'); n2 != std::string::npos) cls.resize(n2);
  *instance = sanitize_utf8(latin1_to_utf8(inst), 256);
  *klass = sanitize_utf8(latin1_to_utf8(cls), 256);
}

long net_wm_pid(::Display* dpy, Window w, const Atoms& a) {
  Atom type = None;
  int format = 0;
  unsigned long n = 0, after = 0;
  unsigned char* data = nullptr;
  long pid = 0;
  if (XGetWindowProperty(dpy, w, a.net_wm_pid, 0, 1, False, XA_CARDINAL, &type, &format, &n,
                         &after, &data) == Success &&
      data && format == 32 && n == 1) {
    pid = static_cast<long>(*reinterpret_cast<unsigned long*>(data));
  }
  if (data) XFree(data);
  return pid;
}

bool have_xres(::Display* dpy) {
  int ev = 0, err = 0, major = 0, minor = 0;
  if (!XResQueryExtension(dpy, &ev, &err)) return false;
  if (!XResQueryVersion(dpy, &major, &minor)) return false;
  return major > 1 || (major == 1 && minor >= 2);
}

// The pid of the client that created `w`, from the X-Resource extension (the server knows the
// peer credentials of local connections). 0 when unknown.
long xres_pid(::Display* dpy, Window w) {
  XResClientIdSpec spec{};
  spec.client = w;
  spec.mask = XRES_CLIENT_ID_PID_MASK;
  long count = 0;
  XResClientIdValue* values = nullptr;
  long pid = 0;
  if (XResQueryClientIds(dpy, 1, &spec, &count, &values) == Success && values) {
    for (long i = 0; i < count; ++i) {
      if (values[i].spec.mask == XRES_CLIENT_ID_PID_MASK) {
        pid_t p = XResGetClientPid(&values[i]);
        if (p > 0) pid = p;
      }
    }
    XResClientIdsDestroy(count, values);
  }
  return pid;
}

// The descendant of `frame` (itself included) that carries WM_STATE, breadth-first, bounded.
Window client_of(::Display* dpy, Window frame, const Atoms& a) {
  if (has_property(dpy, frame, a.wm_state)) return frame;
  std::vector<Window> level{frame};
  for (int depth = 0; depth < 3 && !level.empty(); ++depth) {
    std::vector<Window> next;
    for (Window p : level) {
      Window r = 0, parent = 0, *kids = nullptr;
      unsigned n = 0;
      if (!XQueryTree(dpy, p, &r, &parent, &kids, &n)) continue;
      for (unsigned i = 0; i < n && next.size() < 256; ++i) next.push_back(kids[i]);
      if (kids) XFree(kids);
    }
    for (Window c : next) {
      if (has_property(dpy, c, a.wm_state)) return c;
    }
    level = std::move(next);
  }
  return frame;  // no window manager: the root child is the client
}

FocusState read_focus(::Display* dpy) {
  FocusState f;
  Window focus = None;
  int revert = 0;
  XGetInputFocus(dpy, &focus, &revert);
  if (focus == None) return f;
  if (focus == PointerRoot) {
    f.kind = FocusState::Kind::kPointerRoot;
    return f;
  }
  f.kind = FocusState::Kind::kWindow;
  f.window = focus;
  return f;
}

// The root child that contains `w` (w itself if it is one), or 0.
Window root_child_of(::Display* dpy, Window w) {
  const Window root = DefaultRootWindow(dpy);
  for (int i = 0; i < 64 && w != None; ++i) {
    if (w == root) return 0;
    Window r = 0, parent = 0, *kids = nullptr;
    unsigned n = 0;
    if (!XQueryTree(dpy, w, &r, &parent, &kids, &n)) return 0;
    if (kids) XFree(kids);
    if (parent == root) return w;
    w = parent;
  }
  return 0;
}

std::vector<Window> root_children(::Display* dpy) {
  std::vector<Window> out;
  Window r = 0, parent = 0, *kids = nullptr;
  unsigned n = 0;
  if (XQueryTree(dpy, DefaultRootWindow(dpy), &r, &parent, &kids, &n)) {
    for (unsigned i = 0; i < n && out.size() < kMaxWindows; ++i) out.push_back(kids[i]);
    if (kids) XFree(kids);
  }
  return out;
}

// Describes one root child; false when it vanished meanwhile or is not an InputOutput window.
bool describe(::Display* dpy, Window frame, const Atoms& a, bool xres, WindowInfo* out) {
  XWindowAttributes fa{};
  if (!XGetWindowAttributes(dpy, frame, &fa)) return false;
  if (fa.c_class != InputOutput) return false;
  const Window client = client_of(dpy, frame, a);
  XWindowAttributes ca = fa;
  if (client != frame && !XGetWindowAttributes(dpy, client, &ca)) return false;
  WindowInfo w;
  w.id = client;
  w.frame = frame;
  w.title = read_title(dpy, client, a);
  read_class(dpy, client, &w.instance, &w.wm_class);
  long pid = xres ? xres_pid(dpy, client) : 0;
  if (pid > 0) {
    w.pid = pid;
    w.pid_source = "x-resource";
  } else if ((pid = net_wm_pid(dpy, client, a)) > 0) {
    w.pid = pid;
    w.pid_source = "net_wm_pid";
  }
  Window child = 0;
  int rx = 0, ry = 0;
  XTranslateCoordinates(dpy, client, DefaultRootWindow(dpy), 0, 0, &rx, &ry, &child);
  w.x = rx;
  w.y = ry;
  w.width = ca.width;
  w.height = ca.height;
  w.mapped = ca.map_state == IsViewable;
  w.override_redirect = fa.override_redirect != 0;
  *out = std::move(w);
  return true;
}

bool read_proc_stat(pid_t pid, pid_t* ppid, pid_t* pgrp) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  if (!f) return false;
  std::string line;
  std::getline(f, line);
  const auto close = line.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(line.substr(close + 1));
  char state = 0;
  long pp = 0, pg = 0;
  if (!(rest >> state >> pp >> pg)) return false;
  *ppid = static_cast<pid_t>(pp);
  *pgrp = static_cast<pid_t>(pg);
  return true;
}

}  // namespace

Json WindowInfo::to_json() const {
  return Json{{"id", id},
              {"title", title},
              {"class", wm_class},
              {"instance", instance},
              {"pid", pid ? Json(*pid) : Json(nullptr)},
              {"pid_source", pid_source.empty() ? Json(nullptr) : Json(pid_source)},
              {"x", x},
              {"y", y},
              {"width", width},
              {"height", height},
              {"mapped", mapped},
              {"focused", focused},
              {"override_redirect", override_redirect}};
}

Json FocusState::to_json() const {
  switch (kind) {
    case Kind::kWindow: return Json{{"kind", "window"}, {"window", window}};
    case Kind::kPointerRoot: return Json{{"kind", "pointer_root"}, {"window", nullptr}};
    case Kind::kNone: break;
  }
  return Json{{"kind", "none"}, {"window", nullptr}};
}

Result<WindowList> list_windows(::Display* dpy) {
  if (dpy == nullptr || x_connection_dead(dpy)) return dead();
  const Atoms atoms(dpy);
  const bool xres = have_xres(dpy);
  WindowList out;
  out.focus = read_focus(dpy);
  Window focus_top = 0;
  if (out.focus.kind == FocusState::Kind::kWindow) {
    focus_top = root_child_of(dpy, static_cast<Window>(out.focus.window));
  }
  for (Window frame : root_children(dpy)) {
    WindowInfo w;
    if (!describe(dpy, frame, atoms, xres, &w)) continue;
    w.focused = focus_top != 0 && frame == focus_top;
    if (w.focused) out.focus.top_level = w.id;
    out.windows.push_back(std::move(w));
  }
  (void)take_x_errors(dpy);  // windows that vanished mid-listing (BadWindow) are just skipped
  if (x_connection_dead(dpy)) return dead();
  return out;
}

bool window_matches(const WindowInfo& w, const WindowMatch& m) {
  if (!w.mapped || w.override_redirect) return false;
  if (m.id && *m.id != w.id) return false;
  if (m.title && w.title.find(*m.title) == std::string::npos) return false;
  if (m.wm_class && *m.wm_class != w.wm_class && *m.wm_class != w.instance) return false;
  if (m.pid_tree) {
    if (!w.pid) return false;
    if (!pid_in_tree(static_cast<pid_t>(*w.pid), *m.pid_tree)) return false;
  }
  return true;
}

bool pid_in_tree(pid_t pid, pid_t root) {
  if (pid <= 0 || root <= 0) return false;
  if (pid == root) return true;
  pid_t cur = pid;
  for (int i = 0; i < 64 && cur > 1; ++i) {
    pid_t ppid = 0, pgrp = 0;
    if (!read_proc_stat(cur, &ppid, &pgrp)) return false;
    if (i == 0 && pgrp == root) return true;  // in the group the app leads
    if (ppid == root) return true;
    cur = ppid;
  }
  return false;
}

Result<WindowWaiter> WindowWaiter::start(::Display* dpy) {
  if (dpy == nullptr || x_connection_dead(dpy)) return dead();
  WindowWaiter w(dpy);
  XSelectInput(dpy, DefaultRootWindow(dpy), SubstructureNotifyMask);
  for (Window c : root_children(dpy)) {
    XSelectInput(dpy, c, PropertyChangeMask | StructureNotifyMask | SubstructureNotifyMask);
    w.baseline_.push_back(c);
  }
  XSync(dpy, False);
  (void)take_x_errors(dpy);
  if (x_connection_dead(dpy)) return dead();
  std::sort(w.baseline_.begin(), w.baseline_.end());
  return w;
}

std::optional<WindowInfo> WindowWaiter::find(const WindowMatch& m, bool only_new, Scan* scan) {
  Scan s;
  auto listed = list_windows(dpy_);
  std::optional<WindowInfo> found;
  if (listed.ok()) {
    s.top_levels = static_cast<int>(listed->windows.size());
    // Top of the stack first: the most recently raised window wins.
    for (auto it = listed->windows.rbegin(); it != listed->windows.rend(); ++it) {
      const WindowInfo& w = *it;
      // Property changes on the client (title set after a WM reparented it) must wake us too.
      if (w.id != w.frame) XSelectInput(dpy_, static_cast<Window>(w.id), PropertyChangeMask);
      const bool fresh = !std::binary_search(baseline_.begin(), baseline_.end(), w.frame);
      if (fresh) ++s.fresh;
      if (only_new && !fresh) continue;
      if (w.mapped && !w.override_redirect) {
        ++s.mapped;
        if (!w.pid) {
          ++s.pid_unknown;
        } else if (m.pid_tree && !pid_in_tree(static_cast<pid_t>(*w.pid), *m.pid_tree)) {
          ++s.other_pid;
        }
      }
      if (!found && window_matches(w, m)) found = w;
    }
    XFlush(dpy_);
  }
  if (scan) *scan = s;
  return found;
}

WindowWaiter::Wake WindowWaiter::wait(std::int64_t deadline_us, int extra_fd) {
  for (;;) {
    if (x_connection_dead(dpy_)) return Wake::kDead;
    bool any = false;
    // XFlush may read events into the queue: check the queue after it (docs/testing.md).
    XFlush(dpy_);
    while (XEventsQueued(dpy_, QueuedAfterFlush) > 0) {
      XEvent ev;
      XNextEvent(dpy_, &ev);
      any = true;
      if (ev.type == CreateNotify && ev.xcreatewindow.parent == DefaultRootWindow(dpy_)) {
        XSelectInput(dpy_, ev.xcreatewindow.window,
                     PropertyChangeMask | StructureNotifyMask | SubstructureNotifyMask);
      }
    }
    if (any) {
      (void)take_x_errors(dpy_);
      return Wake::kEvents;
    }
    const std::int64_t left_us = deadline_us - steady_us();
    if (left_us <= 0) return Wake::kTimeout;
    pollfd fds[2] = {{ConnectionNumber(dpy_), POLLIN, 0}, {extra_fd, POLLIN, 0}};
    const int n = ::poll(fds, extra_fd >= 0 ? 2 : 1,
                         static_cast<int>(std::min<std::int64_t>((left_us + 999) / 1000, 1000)));
    if (n > 0 && extra_fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      return Wake::kExtraFd;
    }
    if (n > 0 && (fds[0].revents & (POLLHUP | POLLERR))) {
      XNoOp(dpy_);
      XSync(dpy_, False);  // lets Xlib notice the broken connection
      if (x_connection_dead(dpy_)) return Wake::kDead;
    }
  }
}

Result<WindowWaitResult> wait_for_window(::Display* dpy, const WindowMatch& m,
                                         std::int64_t timeout_ms) {
  const std::int64_t t0 = steady_us();
  const std::int64_t deadline = t0 + timeout_ms * 1000;
  auto waiter = WindowWaiter::start(dpy);
  if (!waiter.ok()) return waiter.error();
  WindowWaitResult r;
  for (;;) {
    auto w = waiter->find(m, false, &r.last_scan);
    if (w) {
      r.found = true;
      r.window = std::move(w);
      break;
    }
    const auto wake = waiter->wait(deadline, -1);
    if (wake == WindowWaiter::Wake::kDead) return dead();
    if (wake == WindowWaiter::Wake::kTimeout) {
      // One last look: an event may have arrived right at the deadline.
      auto last = waiter->find(m, false, &r.last_scan);
      if (last) {
        r.found = true;
        r.window = std::move(last);
      }
      break;
    }
  }
  r.elapsed_ms = (steady_us() - t0) / 1000;
  return r;
}

Result<FocusState> focus_window(::Display* dpy, std::uint64_t id) {
  auto listed = list_windows(dpy);
  if (!listed.ok()) return listed.error();
  const WindowInfo* target = nullptr;
  for (const auto& w : listed->windows) {
    if (w.id == id || w.frame == id) target = &w;
  }
  if (!target) {
    return make_error("window-not-found", "no top-level window with that id on this display");
  }
  if (!target->mapped) {
    return make_error("window-not-viewable",
                      "the window is not mapped (hidden or not shown yet): it cannot take focus");
  }
  XRaiseWindow(dpy, static_cast<Window>(target->frame));
  XSetInputFocus(dpy, static_cast<Window>(target->id), RevertToParent, CurrentTime);
  XSync(dpy, False);
  const XErrorRecord errors = take_x_errors(dpy);
  if (x_connection_dead(dpy)) return dead();
  if (errors.count > 0) {
    return make_error("window-not-viewable",
                      "the X server refused the focus change (the window vanished or was unmapped)");
  }
  FocusState f = read_focus(dpy);
  if (f.kind == FocusState::Kind::kWindow) {
    const Window top = root_child_of(dpy, static_cast<Window>(f.window));
    if (top == static_cast<Window>(target->frame)) f.top_level = target->id;
  }
  return f;
}

std::string describe_match(const WindowMatch& m) {
  std::string s = "a mapped, non-override-redirect top-level window";
  std::vector<std::string> parts;
  if (m.id) parts.push_back("with id " + std::to_string(*m.id));
  if (m.title) parts.push_back("whose title contains the given text");
  if (m.wm_class) parts.push_back("whose WM_CLASS class or instance equals the given name");
  if (m.pid_tree) {
    parts.push_back("owned by pid " + std::to_string(*m.pid_tree) +
                    ", a descendant of it or a process in its group");
  }
  for (std::size_t i = 0; i < parts.size(); ++i) s += (i == 0 ? " " : ", ") + parts[i];
  return s;
}

std::string describe_scan(const WindowWaiter::Scan& s, bool only_new) {
  std::string out = std::to_string(s.top_levels) + " top-level window(s) on the display";
  if (only_new) out += ", " + std::to_string(s.fresh) + " new since the wait began";
  out += "; " + std::to_string(s.mapped) + " of those considered mapped";
  if (s.other_pid) out += ", " + std::to_string(s.other_pid) + " owned by other processes";
  if (s.pid_unknown) out += ", " + std::to_string(s.pid_unknown) + " with no known owner pid";
  return out;
}

}  // namespace evident
