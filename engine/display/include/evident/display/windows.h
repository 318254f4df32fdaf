// Top-level windows of an owned display: listing, matching, event-driven waiting and focus
// (docs/windows.md). Every function takes a connection the caller owns (never the display's
// shared one), so nothing here contends for the display's x_mutex.
// Error ids (docs/errors.md): window-not-found, window-not-viewable, display-dead.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "evident/core/json.h"
#include "evident/core/status.h"

typedef struct _XDisplay Display;  // Xlib

namespace evident {

// One top-level window: a child of the root (or, under a window manager that reparents, the
// client window inside such a child: the descendant that carries WM_STATE).
struct WindowInfo {
  std::uint64_t id = 0;       // the client window's XID
  std::uint64_t frame = 0;    // the root child that holds it (== id without a reparenting WM)
  std::string title;          // _NET_WM_NAME (UTF-8), else WM_NAME; valid UTF-8, <= kMaxTitleBytes
  std::string wm_class;       // WM_CLASS class part, e.g. "Xmessage"
  std::string instance;       // WM_CLASS instance part, e.g. "xmessage"
  std::optional<long> pid;    // the owning client's pid (see pid_source)
  std::string pid_source;     // "x-resource" (XResQueryClientIds), "net_wm_pid", or "" (unknown)
  int x = 0, y = 0;           // root coordinates of the window's top-left corner
  int width = 0, height = 0;
  bool mapped = false;        // viewable (map state IsViewable)
  bool focused = false;       // the input focus is this window or inside it
  bool override_redirect = false;  // menus, tooltips, popups: not managed windows
  // {"id","title","class","instance","pid","pid_source","x","y","width","height","mapped",
  //  "focused","override_redirect"}; pid and pid_source are null when unknown.
  Json to_json() const;
};

inline constexpr std::size_t kMaxTitleBytes = 1024;
inline constexpr std::size_t kMaxWindows = 4096;   // a listing stops there (never unbounded)
inline constexpr std::size_t kMaxMatchTextBytes = 1024;

// Where the input focus is: a window, nothing (None) or PointerRoot.
struct FocusState {
  enum class Kind { kWindow, kNone, kPointerRoot };
  Kind kind = Kind::kNone;
  std::uint64_t window = 0;       // kWindow: the focus window (maybe a child of a top-level)
  std::uint64_t top_level = 0;    // kWindow: the listed top-level that contains it (0 if none)
  Json to_json() const;           // {"kind":"window|none|pointer_root","window":id|null}
};

// What a wait looks for. Empty fields match anything. A window must be mapped and not
// override-redirect to match.
struct WindowMatch {
  std::optional<std::string> title;     // substring of the title (byte-exact, case-sensitive)
  std::optional<std::string> wm_class;  // equals the WM_CLASS class or the instance
  std::optional<pid_t> pid_tree;        // the window's pid is this pid or one of its descendants
                                        // (or in its process group)
  std::optional<std::uint64_t> id;      // exactly this window
};

// A listing of the display's top-level windows (stacking order, bottom first) and the focus.
struct WindowList {
  std::vector<WindowInfo> windows;
  FocusState focus;
};

// Lists top-level windows through `dpy`. display-dead when the connection is broken.
Result<WindowList> list_windows(::Display* dpy);

// Pure: does `w` satisfy `m` (mapped, not override-redirect, and every given field)?
bool window_matches(const WindowInfo& w, const WindowMatch& m);

// True when `pid` is `root`, a descendant of `root` (parent chain in /proc, at most 64 steps),
// or in the process group `root` leads. False for unknown or gone processes.
bool pid_in_tree(pid_t pid, pid_t root);

// Waits, driven by X events (SubstructureNotify on the root, PropertyChange and StructureNotify
// on every top-level), for a window that matches. The caller creates it BEFORE whatever should
// make the window appear, so no map is missed; windows that already existed then can be excluded
// (only_new).
class WindowWaiter {
 public:
  // Selects the events and records the current top-levels as the baseline. `dpy` is the caller's
  // own connection and must outlive the waiter. display-dead.
  static Result<WindowWaiter> start(::Display* dpy);

  // What one evaluation saw, for honest timeout messages.
  struct Scan {
    int top_levels = 0;          // listed now
    int fresh = 0;               // not in the baseline
    int mapped = 0;              // mapped and not override-redirect (of those considered)
    int pid_unknown = 0;         // considered, mapped, but with no known pid
    int other_pid = 0;           // considered, mapped, with a pid outside the tree
  };
  // The first window (top of the stack first) that matches now. With only_new, baseline windows
  // are skipped.
  std::optional<WindowInfo> find(const WindowMatch& m, bool only_new, Scan* scan);

  enum class Wake { kEvents, kExtraFd, kTimeout, kDead };
  // Blocks until an X event arrives (drained and acted on: new windows get PropertyChange
  // selected), `extra_fd` (if >= 0) is readable, or `deadline_us` (steady_us clock) passes.
  Wake wait(std::int64_t deadline_us, int extra_fd);

 private:
  explicit WindowWaiter(::Display* dpy) : dpy_(dpy) {}
  ::Display* dpy_;
  std::vector<std::uint64_t> baseline_;  // sorted
};

// The result of wait_for_window.
struct WindowWaitResult {
  bool found = false;
  std::optional<WindowInfo> window;
  std::int64_t elapsed_ms = 0;
  WindowWaiter::Scan last_scan;
};

// Starts a waiter and waits up to `timeout_ms` for a window matching `m` (existing ones count).
// display-dead.
Result<WindowWaitResult> wait_for_window(::Display* dpy, const WindowMatch& m,
                                         std::int64_t timeout_ms);

// Raises the window's top-level and gives it the input focus (XSetInputFocus, RevertToParent),
// then reads the focus back. window-not-found (not a top-level of this display),
// window-not-viewable (not mapped), display-dead.
Result<FocusState> focus_window(::Display* dpy, std::uint64_t id);

// Describes `m` for messages without echoing its text: e.g. "a mapped top-level window whose
// title contains the given text, of pid 123 or its descendants".
std::string describe_match(const WindowMatch& m);
// "N top-level windows (M new), K mapped: ..." for timeout messages.
std::string describe_scan(const WindowWaiter::Scan& s, bool only_new);

}  // namespace evident
