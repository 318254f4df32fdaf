// An input barrier with the app that receives the keys: the EWMH _NET_WM_PING round trip
// (docs/accessibility.md, "Verified type", "Before the keys"). An app answers a ping from its
// X event queue, so the answer says it has handled every event queued before the ping: a click
// that moves its focus, keys that move its caret. GTK, Qt and Chromium answer pings (window
// managers use them to find hung apps); an app whose top-level window does not list
// _NET_WM_PING in WM_PROTOCOLS cannot be asked.
#pragma once

#include <cstdint>

typedef struct _XDisplay Display;

namespace evident {

enum class AppPingOutcome {
  kAnswered,     // the app echoed the ping: every event queued for it before was handled
  kUnsupported,  // the top-level window does not list _NET_WM_PING
  kNoWindow,     // no top-level window receives the keys (focus None, or nothing under the pointer)
  kTimedOut,     // no answer before the deadline (a busy or hung app)
  kFailed,       // the connection broke or the window vanished
};

// Pings the top-level window that receives key events (the input focus's top-level window, or
// the one under the pointer when the focus is PointerRoot) and waits for its echo. The pinger
// owns an X connection of its own, used by nothing else: the echo comes back through the root
// window's SubstructureNotify, which it selects there while a ping is out (other events read
// there are dropped).
class AppPinger {
 public:
  // Takes `own` (null: every ping is kFailed); closes it with the pinger.
  explicit AppPinger(::Display* own);
  ~AppPinger();
  AppPinger(const AppPinger&) = delete;
  AppPinger& operator=(const AppPinger&) = delete;

  // Waits for the echo until `deadline_us` (steady_us()).
  AppPingOutcome ping_focused_app(std::int64_t deadline_us);

  // The display is gone: the connection is closed without a request (abandon_x_connection);
  // every later ping is kFailed.
  void abandon();

 private:
  ::Display* dpy_ = nullptr;
};

}  // namespace evident
