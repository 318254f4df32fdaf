// What the session state machine needs from displays, apps, capture and input — and nothing
// more. The service implements it over DisplayManager/ActionExecutor; unit tests use a fake.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "evident/actions/action.h"
#include "evident/core/json.h"
#include "evident/core/status.h"

namespace evident {

// The display and app a session is bound to, resolved at begin.
struct SessionTarget {
  std::int64_t display_id = 0;
  std::string display_name;  // ":N"
  std::string generation;
  int width = 0;
  int height = 0;
  std::string app_id;
  std::int64_t app_pid = 0;
  std::string app_argv_sha256;
};

// One full-display PNG frame.
struct SessionFrame {
  std::string bytes;   // exact PNG bytes
  std::string sha256;  // lowercase hex of bytes
  int width = 0;
  int height = 0;
};

// A session's finished video file (begin's record_video; docs/evidence.md "Video").
struct SessionVideo {
  std::string sha256;  // of the file's bytes
  std::int64_t byte_length = 0;
  int fps = 0;
};

// A browser workspace bound by a session (begin's "browser"; docs/sessions.md "Browser"), as
// checked live at begin: the receipt's "browser" member.
struct SessionBrowser {
  std::string workspace_id;     // "browser-<32 hex>"
  std::string browser_version;  // CDP Browser.getVersion "product", e.g. "Chrome/140.0.7339.185"
  std::string target_id;        // the page target (CDP targetId)
  std::string profile_sha256;   // docs/browsers.md "Profile digest"
  int width = 0;                // the CSS viewport
  int height = 0;
};

// The outcome of one executed action (docs/protocol.md §4 result, as data).
struct SessionActionOutcome {
  std::string status;  // "ok" | "injected" | "failed"
  std::string detail;  // never contains typed text or key names
  std::int64_t input_event_count = 0;
};

// A display held exclusively by one session. Destroying the lease releases the display's
// session lock; the session calls release_all_checked() first, so the lock is never released
// while a key or button is held.
class SessionLease {
 public:
  virtual ~SessionLease() = default;
  virtual const SessionTarget& target() const = 0;
  // A fresh full-display frame. Errors: "capture-failed", "capture-unavailable", or
  // "session-display-lost" when the display is gone.
  virtual Result<SessionFrame> capture() = 0;
  // Runs one validated action (the caller holds no other lock); never throws.
  virtual SessionActionOutcome execute(const Action& action, int index) = 0;
  // Waits, after the last input, until the display shows no change for `quiet_ms`, at most
  // `cap_ms` after that input (docs/protocol.md §4 settle, anchored at the last input).
  // Returns the outcome's name: "settled" | "still_loading" | "fixed" (no input to settle) |
  // "off" (no change watcher on this display).
  virtual std::string settle(std::int64_t quiet_ms, std::int64_t cap_ms) = 0;
  // Releases every held key and button and checks the release. "input-release-failed".
  virtual Status release_all_checked() = 0;
  // Whether the display's X server still answers / the app is still alive.
  virtual bool display_alive() = 0;
  virtual bool app_alive() = 0;
  // display_alive(), confirmed by a round trip with the server (bounded). Asked before an app
  // found dead is blamed: an app can die of its display's death before the display itself is
  // seen dead (docs/reliability.md, "Fault and load tests").
  virtual bool display_confirmed_alive() { return display_alive(); }
  // What is gone, the display judged first; with check_app false only the display is judged.
  // kApp only once the display's server has confirmed it is alive, so an app that died with its
  // display is the display's loss (session-display-lost), never the app's (app-not-live).
  enum class Gone { kNothing, kDisplay, kApp };
  Gone gone(bool check_app = true) {
    if (!display_alive()) return Gone::kDisplay;
    if (!check_app || app_alive()) return Gone::kNothing;
    return display_confirmed_alive() ? Gone::kApp : Gone::kDisplay;
  }
  // Once the app has exited: its exit code, or 128+signal; nullopt while it runs or when
  // unknown.
  virtual std::optional<int> app_exit_status() { return std::nullopt; }
  // Starts recording the display into `path` (a file that must not exist) and returns once the
  // recorder grabbed its first frame: how many ms before now that frame was grabbed (>= 0).
  // Errors: "video-unavailable", "video-failed".
  virtual Result<std::int64_t> start_video(const std::string& path) {
    (void)path;
    return make_error("video-unavailable", "this engine records no video");
  }
  // Ends the recording started by start_video and hashes its file; a second call answers the
  // first one's result. Destroying the lease kills a recording never stopped.
  // Errors: "video-failed".
  virtual Result<SessionVideo> stop_video() { return make_error("video-failed", "the session's video was never started"); }
  // Binds the browser workspace `browser_id` (begin's "browser"): it must exist, belong to this
  // lease's display generation and be live (process, display, DevTools, page target listed).
  // Errors: "browser-not-found", "browser-binding-mismatch", "browser-not-live".
  virtual Result<SessionBrowser> bind_browser(const std::string& browser_id) {
    (void)browser_id;
    return make_error("browser-not-found", "this engine has no browser workspaces");
  }
  // The cheap re-check of a bound workspace around each action batch: its process runs and its
  // page target is still the bound one. "browser-not-live".
  virtual Status check_browser() { return make_error("browser-not-live", "no browser is bound"); }
};

class SessionBackend {
 public:
  virtual ~SessionBackend() = default;
  // Resolves the exact live display generation and a live app bound to it, then takes the
  // display's exclusive session lock. Errors: "display-generation-mismatch" (unknown display,
  // stale/foreign/malformed generation), "app-not-live" (unknown or exited app),
  // "session-binding" (the app is live but bound to another display generation),
  // "session-busy" (the display is locked, e.g. by a `cu actions` batch; retryable).
  virtual Result<std::unique_ptr<SessionLease>> acquire(std::int64_t display_id,
                                                        const std::string& generation,
                                                        const std::string& app_id) = 0;
};

}  // namespace evident
