// The engine-side window manager of a display created with manage_windows (docs/windows.md,
// "Managed windows: focus on map, fit to the display"). Not a reparenting window manager: it
// never redirects requests, draws no frames and takes no part in the apps' own configure
// requests. On every map of a top-level (non-override-redirect) window it
//   - moves and shrinks the window so that it lies inside the display (never below its
//     WM_NORMAL_HINTS minimum size),
//   - raises it, and
//   - gives it the input focus (XSetInputFocus, RevertToParent; plus WM_TAKE_FOCUS when the
//     window takes part in that protocol), unless its WM_HINTS say it takes no input or its
//     _NET_WM_WINDOW_TYPE is a dock, desktop, notification or tooltip;
// and when a window goes away and the focus with it (None, PointerRoot, the root, or a window
// no longer viewable) it gives the focus to the topmost remaining window that takes it.
//
// It runs one thread with a connection of its own, plus a second connection for sync(); it never
// touches the display's shared connection or x_mutex.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "evident/core/status.h"
#include "evident/display/xauth.h"

typedef struct _XDisplay Display;  // Xlib

namespace evident {

class WindowKeeper {
 public:
  // Connects twice to `name` with `cookie` and starts the thread; width x height is the screen.
  // "display-not-ready" when a connection fails.
  static Result<std::unique_ptr<WindowKeeper>> start(const std::string& name, const Cookie& cookie,
                                                     int width, int height);
  ~WindowKeeper();
  WindowKeeper(const WindowKeeper&) = delete;
  WindowKeeper& operator=(const WindowKeeper&) = delete;

  // Stops the thread and closes both connections. Idempotent; sync() returns false afterwards.
  void stop();

  // Returns true once the keeper has acted on everything the X server did before this call
  // (a window the caller saw mapped is then fitted, raised and focused, and those requests were
  // processed by the server). False on timeout or when the keeper stopped (server gone).
  bool sync(std::int64_t timeout_ms);

  // What the keeper did since it started (for tests and `display status`).
  struct Counters {
    std::uint64_t managed = 0;    // maps handled
    std::uint64_t fitted = 0;     // of those, moved or resized to fit the display
    std::uint64_t focused = 0;    // focus given (on a map or after the focused window went)
  };
  Counters counters() const;

  static constexpr std::int64_t kSyncBoundMs = 2000;

 private:
  WindowKeeper() = default;
  void run();
  void manage(unsigned long window);
  void refocus_if_lost();
  bool give_focus(unsigned long window);
  bool takes_focus(unsigned long window);

  ::Display* events_ = nullptr;  // the thread's
  ::Display* poke_ = nullptr;    // sync()'s, under poke_mu_
  unsigned long marker_ = 0;     // an InputOnly root child, never mapped: sync's property lives there
  unsigned long sync_atom_ = 0;
  int width_ = 0, height_ = 0;
  int stop_pipe_[2] = {-1, -1};
  std::thread thread_;
  std::mutex poke_mu_;
  std::uint32_t next_sync_ = 0;  // under poke_mu_
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::uint32_t acked_ = 0;      // under mu_
  bool running_ = false;         // under mu_
  Counters counters_;            // under mu_
};

}  // namespace evident
