// Owned displays (Xvfb servers evident started) and the apps launched on them.
// Error ids (docs/errors.md): display-not-found, display-generation-mismatch,
// display-start-failed, display-not-ready, display-limit, display-dead, display-args,
// app-not-found, app-launch-failed, app-exited, app-window-timeout, app-limit, app-args,
// engine-shutting-down; a DisplayReadiness adds its own (the service's capture: capture-*).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/protocol/protocol.h"
#include "evident/process/process.h"
#include "evident/display/window_keeper.h"
#include "evident/display/video.h"
#include "evident/display/xauth.h"

typedef struct _XDisplay Display;  // Xlib

namespace evident {

// Defaults and ranges: protocol/evident.json (display_width_* ... display_dpi_*).
struct DisplayOptions {
  int width = protocol::kDisplayWidthDefault;
  int height = protocol::kDisplayHeightDefault;
  int depth = protocol::kDisplayDepthDefault;  // 16 or 24
  int dpi = protocol::kDisplayDpiDefault;
  // An XKB layout name applied with setxkbmap right after the display is ready ("de", "fr", ...;
  // [a-z][a-z0-9_]{0,31}); empty: the server's default (us). docs/displays.md, "Keyboard layout".
  std::string keyboard_layout;
  // The engine-side window manager (evident/display/window_keeper.h; docs/windows.md, "Managed
  // windows"): every newly mapped top-level window is fitted into the display, raised and
  // focused. Off by default.
  bool manage_windows = false;
  // A private accessibility stack for this display (docs/accessibility.md): a D-Bus session bus,
  // an AT-SPI bus and at-spi2-registryd, started once the display is ready and stopped with it;
  // apps launched on it get the buses' addresses and accessibility switched on.
  bool accessibility = false;

  // A display of this size and format, everything else at its default (so that callers name
  // the four numbers without an aggregate initialiser that leaves the rest implicit).
  static DisplayOptions of(int width, int height, int depth, int dpi) {
    DisplayOptions o;
    o.width = width;
    o.height = height;
    o.depth = depth;
    o.dpi = dpi;
    return o;
  }
};

// Checks the protocol's ranges. Error: "display-args".
Status validate_display_options(const DisplayOptions& options);

struct DisplayInfo {
  int id = 0;            // the X display number N
  std::string name;      // ":N"
  std::string generation;  // "gen-<32 hex>"
  int width = 0;
  int height = 0;
  int depth = 0;
  int dpi = 0;
  pid_t xvfb_pid = 0;
  std::int64_t ready_us = 0;  // create -> ready, microseconds
  bool manage_windows = false;  // a WindowKeeper runs on it
  // The protocol's shape: {"id","name","generation","width","height"}.
  Json to_json() const;
};

// "gen-" followed by 32 lowercase hex.
bool is_generation_token(const std::string& s);

// The one error for an owned display whose Xvfb exited or whose X connection broke (not destroyed
// through evident), wherever that is detected: "display-dead". docs/displays.md, "Dead displays".
Error display_dead_error();

// The XKB layout of the display's keymap as the server records it (the third name of the root
// window's _XKB_RULES_NAMES, e.g. "us" or "de"); empty when the property is absent. Uses `dpy`
// (the caller's connection, under the caller's locking).
std::string read_keyboard_layout(::Display* dpy);

// One readiness layer of `display status`.
struct StatusLayer {
  std::string name;   // authority | x_connection | capture | input_backend | target_display | accessibility
  std::string state;  // ready | blocked | unknown
  std::string detail;
  std::string fix;
  Json to_json() const;
};

struct DisplayStatus {
  bool ready = false;  // all layers ready
  // The layout in the root window's _XKB_RULES_NAMES, read back live (empty when unreadable).
  std::string keyboard_layout;
  // The window keeper's counters on a managed display (null without one).
  std::optional<WindowKeeper::Counters> window_keeper;
  std::vector<StatusLayer> layers;
};

// One Xvfb server evident started, its private auth file, and its ONE persistent Xlib
// connection. Every user of dpy() (capture, input, settle) must hold x_mutex() while using it
// and must check dpy() != nullptr under that lock: destroy closes the connection.
// State a higher layer keeps per display (e.g. the input device with its remapped keys) that must
// be torn down while the display's connection still works. detach() is called once, from
// teardown, before x_mutex() is taken and the connection closes; it may lock x_mutex() itself.
class DisplayAttachment {
 public:
  virtual ~DisplayAttachment() = default;
  virtual void detach() = 0;
};

// State a higher layer makes on the display's persistent connection as part of its readiness
// (the service's capturer and change watcher: evident/service/display_capture.h). It lives as long
// as the display and is destroyed under x_mutex() before the connection closes.
class DisplayExtension {
 public:
  virtual ~DisplayExtension() = default;
};

// The readiness step a higher layer adds to every display the manager starts (creates and warm-pool
// starts alike): the service attaches capture this way, so this module never includes capture.
class DisplayReadiness {
 public:
  virtual ~DisplayReadiness() = default;
  // Right after Xvfb was spawned, while it boots; no X connection yet. The result goes to attach().
  virtual std::shared_ptr<void> prepare(const DisplayOptions& options) = 0;
  // Under x_mutex(), on the ready persistent connection (the display's own checks passed). An error
  // fails the start with its code.
  virtual Result<std::unique_ptr<DisplayExtension>> attach(::Display* dpy,
                                                           std::shared_ptr<void> prepared) = 0;
  // The `capture` layer of `display status`, under x_mutex() with a usable connection; `fix` is the
  // remedy to name when blocked.
  virtual StatusLayer probe(DisplayExtension& extension, const std::string& fix) = 0;
};

// The addresses of a display's private accessibility stack (DisplayOptions::accessibility).
struct AccessibilityBus {
  std::string session_address;  // the display's D-Bus session bus (DBUS_SESSION_BUS_ADDRESS)
  std::string a11y_address;     // its AT-SPI bus (AT_SPI_BUS_ADDRESS, root window AT_SPI_BUS)
  pid_t session_pid = 0;
  pid_t a11y_pid = 0;
  pid_t registry_pid = 0;
  // The environment an app launched on the display gets ("KEY=VALUE"): both addresses and the
  // switches that turn accessibility on in GTK, Qt and Chromium.
  std::vector<std::string> app_env() const;
};

class OwnedDisplay {
 public:
  ~OwnedDisplay();
  OwnedDisplay(const OwnedDisplay&) = delete;
  OwnedDisplay& operator=(const OwnedDisplay&) = delete;

  const DisplayInfo& info() const { return info_; }
  // The display was not destroyed and server_running(). Lock-free: may be called with or
  // without x_mutex() held.
  bool alive();
  // The display's Xvfb is running: its process has not exited (its pidfd included) and it has
  // not shut the display's connection (no I/O error, no hang-up). The one test of the server's
  // life: alive() and status() both use it, so they never disagree. Lock-free.
  bool server_running();
  // alive(), confirmed by the server: one round trip on the display's connection, bounded by
  // kConfirmBoundMs. False when the display is not alive() or the round trip ends in a broken
  // connection (the connection is then in its error state, so alive() says false from now on);
  // true when the server answered, or did not within the bound (a stopped server is not known
  // to be gone). For judging an app found dead: a killed Xvfb shuts its clients' sockets newest
  // first, so an app can die of its display's death before the display's own connection shows
  // it (docs/reliability.md, "Fault and load tests"). Takes x_mutex().
  bool confirm_alive();
  static constexpr std::int64_t kConfirmBoundMs = 2000;
  // The persistent connection; nullptr after destroy. Hold x_mutex().
  ::Display* dpy() { return dpy_.load(); }
  std::mutex& x_mutex() { return x_mutex_; }
  // What the manager's DisplayReadiness attached when the display became ready; nullptr without
  // one and after destroy. Hold x_mutex().
  DisplayExtension* extension() { return extension_.get(); }
  const std::string& auth_file() const { return auth_file_; }
  const Cookie& cookie() const { return cookie_; }
  // The display's accessibility stack; nullopt when it was created without one, and after destroy.
  std::optional<AccessibilityBus> accessibility_bus();
  // The stack's three processes are running (false without a stack).
  bool accessibility_alive();

  // The exclusive session lock: sessions and `cu actions` use it so that only one driver
  // touches the display at a time. try_acquire succeeds if free or already held by `owner`.
  bool try_acquire_session(const std::string& owner);
  // Releases if held by `owner`; returns whether it was.
  bool release_session(const std::string& owner);
  std::optional<std::string> session_holder();

  // The attachment, created by `make` on first use (one per display); null after destroy.
  std::shared_ptr<DisplayAttachment> attachment(
      const std::function<std::shared_ptr<DisplayAttachment>()>& make);

  // Opens a NEW connection with this display's cookie (caller closes it with
  // close_x_connection). "x-connect-failed".
  Result<::Display*> open_connection() const;

  // The display's window keeper (created with manage_windows), or null: without one, or after
  // destroy. Callers that saw a window mapped call sync() on it before relying on its focus or
  // geometry.
  std::shared_ptr<WindowKeeper> keeper();

  // A batch in flight on this display (docs/reliability.md, "Display lifetime"): while the
  // returned guard lives, teardown does not free the connection, capturer, change watcher or
  // input state the batch uses. A teardown that races the batch calls `cancel` (which must make
  // the batch end promptly: waits and holds interrupted, held input released), then waits for
  // every guard to be dropped, at most kBatchDrainBoundMs. Null when the display is already
  // destroyed (the batch must not start).
  std::shared_ptr<void> begin_batch(std::function<void()> cancel);
  // True once teardown started (a batch that ran across it reports the display as destroyed).
  bool destroyed() const { return destroyed_.load(); }
  // How many begin_batch guards are alive now.
  std::size_t batches_in_flight();
  static constexpr std::int64_t kBatchDrainBoundMs = 30000;

 private:
  friend class DisplayManager;
  OwnedDisplay() = default;
  // Closes the connection and stops Xvfb (TERM, bounded wait, KILL, reap); removes private files.
  void teardown();

  DisplayInfo info_;
  std::string dir_;        // private 0700 dir: auth file, Xvfb log
  std::string auth_file_;
  Cookie cookie_{};
  std::unique_ptr<Child> xvfb_;
  // The accessibility stack (null without one): registryd, the AT-SPI bus, the session bus.
  std::mutex a11y_mu_;
  std::optional<AccessibilityBus> a11y_;
  std::vector<std::unique_ptr<Child>> a11y_children_;
  std::mutex x_mutex_;
  std::atomic<::Display*> dpy_{nullptr};
  std::unique_ptr<DisplayExtension> extension_;
  std::atomic<bool> destroyed_{false};
  std::mutex session_mu_;
  std::optional<std::string> session_holder_;
  std::mutex attachment_mu_;
  std::shared_ptr<DisplayAttachment> attachment_;
  std::shared_ptr<WindowKeeper> keeper_;  // under attachment_mu_
  std::mutex batch_mu_;
  std::condition_variable batch_cv_;
  std::uint64_t next_batch_ = 1;
  std::map<std::uint64_t, std::function<void()>> batches_;  // in flight: their cancel hooks
};

struct AppInfo {
  std::string app_id;  // "app-<32 hex>"
  int display_id = 0;
  std::string generation;
  pid_t pid = 0;
  std::string argv_sha256;  // sha256_hex(JCS(argv as a JSON array of strings))
  bool alive = false;
  std::optional<int> exit_status;  // exit code, or 128+signal
  std::string log_path;            // private 0600 file with the app's stdout+stderr
  // The protocol's shape for launch (docs/protocol.md §3): {"app_id","display_id","generation","pid","argv_sha256"}.
  Json to_json() const;
  // For `app list`: the launch shape plus "alive" and "exit_status" (int or null).
  Json to_list_json() const;
};

// sha256_hex of the compact JSON array of argv strings (equal to RFC 8785 JCS for an array
// of strings).
std::string argv_sha256(const std::vector<std::string>& argv);

// Optional launch settings (docs/displays.md, "Apps": environment and working directory).
struct LaunchOptions {
  std::int64_t wait_window_ms = 0;  // 0..kMaxWaitWindowMs
  // Extra environment, "KEY=VALUE" each (KEY: [A-Za-z_][A-Za-z0-9_]*, <= 256 bytes; at most
  // kMaxEnvEntries entries, kMaxEnvBytes in all). DISPLAY and XAUTHORITY are refused: evident
  // sets them to the display's own values.
  std::vector<std::string> env;
  std::string cwd;  // absolute path of an existing directory; empty: the engine's own
  static constexpr auto kMaxEnvEntries = static_cast<std::size_t>(protocol::kAppEnvEntriesMax);
  static constexpr auto kMaxEnvBytes = static_cast<std::size_t>(protocol::kAppEnvTotalMaxBytes);
  static constexpr auto kMaxCwdBytes = static_cast<std::size_t>(protocol::kAppCwdMaxBytes);
};

// Checks LaunchOptions::env and cwd (sizes, names, no NUL, no DISPLAY/XAUTHORITY, cwd an
// existing absolute directory). Error: "app-args" (never echoing names or values).
Status validate_launch_options(const LaunchOptions& options);

struct DisplayManagerOptions {
  std::string runtime_dir;          // private scratch (0700): auth cookies, logs
  std::string xvfb_path = "Xvfb";   // resolved on PATH
  int max_displays = static_cast<int>(protocol::kDisplaysMax);
  int max_apps = static_cast<int>(protocol::kAppsMax);
  std::int64_t start_timeout_ms = 15000;
  // Warm pool: for each entry, one display of exactly these options is kept pre-started and
  // ready by a background thread, so create() with equal options only leases it (fresh
  // generation, registered like a normal create). Default empty: no thread, no change.
  // An idle pooled display is not listed, not addressable, and counts against max_displays
  // like a create in progress. Duplicate entries are kept once.
  std::vector<DisplayOptions> warm;
  // Called (from the pool's thread, no lock held) each time a pooled display became ready,
  // with its name (":N") and options. For logs; must not call back into the manager.
  std::function<void(const std::string& name, const DisplayOptions& options)> on_warm_ready;
  // Part of every display's readiness, supplied by a higher layer (the Engine: capture). Null:
  // nothing is attached and the `capture` layer of status is blocked ("no capturer").
  std::shared_ptr<DisplayReadiness> readiness;
};

// Equal width, height, depth and dpi.
bool operator==(const DisplayOptions& a, const DisplayOptions& b);

class AppLogs;  // the apps' output logs (src/app_logs.h)

class DisplayManager {
 public:
  explicit DisplayManager(DisplayManagerOptions options);
  ~DisplayManager();  // destroy_all()
  DisplayManager(const DisplayManager&) = delete;
  DisplayManager& operator=(const DisplayManager&) = delete;

  // Starts Xvfb with -displayfd and returns once ready (cookie client connected; XTEST,
  // MIT-SHM, DAMAGE present; keymap loaded; first frame captured).
  // Errors: display-args, display-limit, display-start-failed, display-not-ready,
  // engine-shutting-down.
  Result<std::shared_ptr<OwnedDisplay>> create(const DisplayOptions& options);
  // Stops the display's apps, then the display. display-not-found,
  // display-generation-mismatch (the display keeps running).
  Status destroy(int id, const std::string& generation);
  // The live owned displays (never foreign ones), sorted by id.
  std::vector<DisplayInfo> list();
  // Readiness layers, probed fresh. display-not-found, display-generation-mismatch.
  Result<DisplayStatus> status(int id, const std::string& generation);
  // The display with exactly that id and generation. display-not-found,
  // display-generation-mismatch.
  Result<std::shared_ptr<OwnedDisplay>> get(int id, const std::string& generation);
  // get(), and the display must be alive(). display-not-found, display-generation-mismatch,
  // display-dead.
  Result<std::shared_ptr<OwnedDisplay>> get_live(int id, const std::string& generation);

  // Launches `argv` on the display (DISPLAY and XAUTHORITY of that display, own process group,
  // stdin /dev/null, output to a private log). With wait_window_ms > 0, waits for a new mapped
  // top-level window (matching _NET_WM_PID when set); on timeout the app is stopped.
  // Errors: display-not-found, display-generation-mismatch, display-dead, app-args,
  // app-limit, app-launch-failed, app-exited, app-window-timeout, engine-shutting-down.
  Result<AppInfo> launch_app(int display_id, const std::string& generation,
                             const std::vector<std::string>& argv, std::int64_t wait_window_ms);
  // The same with an extra environment and a working directory (validate_launch_options).
  // wait_window_ms waits for a window of the app's whole process tree (windows.h).
  Result<AppInfo> launch_app(int display_id, const std::string& generation,
                             const std::vector<std::string>& argv, const LaunchOptions& options);
  // Starts recording the live display into options.path (video.h: ffmpeg x11grab, WebM) and
  // returns once the first frame was grabbed. The recording is the caller's: destroying it kills
  // the recorder. Errors: display-not-found, display-generation-mismatch, display-dead,
  // engine-shutting-down, video-unavailable (no ffmpeg), video-failed.
  Result<std::unique_ptr<VideoRecording>> record_video(int id, const std::string& generation,
                                                       const VideoOptions& options);
  // TERM the app's group, KILL after `kAppStopBoundMs`, reap; returns the exit status.
  // The app is forgotten afterwards. app-not-found.
  Result<int> stop_app(const std::string& app_id);
  std::vector<AppInfo> list_apps();
  // The app's current state. app-not-found.
  Result<AppInfo> app(const std::string& app_id);
  bool app_alive(const std::string& app_id);

  // Refuses new work ("engine-shutting-down") and destroys every display and app. Idempotent.
  // Also stops the warm-pool thread and tears down idle pooled displays.
  void destroy_all();

  // Waits until every warm entry holds a ready display (true), or timeout_ms passed, or the
  // manager shuts down (false). True at once when `warm` is empty. A warm entry whose start
  // fails is retried after kWarmRetryMs; it stays not ready meanwhile.
  bool wait_warm(std::int64_t timeout_ms);
  // How many warm entries hold a ready display now.
  int warm_ready();

  static constexpr std::int64_t kAppStopBoundMs = 3000;
  static constexpr std::int64_t kXvfbStopBoundMs = 3000;
  // Without --wait-window-ms, a launch still waits this long for an immediate exit.
  static constexpr std::int64_t kAppEarlyExitGraceMs = 100;
  static constexpr std::int64_t kMaxWaitWindowMs = protocol::kAppWaitWindowMsMax;
  static constexpr std::int64_t kWarmRetryMs = 1000;
  static constexpr std::int64_t kKeyboardLayoutBoundMs = 10000;
  // An app's output log is rotated at this size (the current file and one previous, <id>.log.1),
  // and the logs of this many ended apps are kept (docs/displays.md "App output").
  static constexpr std::uint64_t kAppLogMaxBytes = 1024 * 1024;
  static constexpr std::size_t kAppLogsKept = 16;
  static constexpr std::int64_t kAccessibilityStartBoundMs = 10000;
  static constexpr std::int64_t kAccessibilityStopBoundMs = 2000;

 private:
  struct App {
    AppInfo info;
    std::unique_ptr<Child> child;
  };
  Result<std::shared_ptr<OwnedDisplay>> start_display(const DisplayOptions& options);
  // `prepared`: what options_.readiness->prepare made while Xvfb started (may be null).
  Status make_ready(OwnedDisplay& d, std::shared_ptr<void> prepared);
  // setxkbmap -layout `layout` on the ready display (bounded by kKeyboardLayoutBoundMs), then
  // reads the layout back from _XKB_RULES_NAMES. "display-keyboard-layout".
  Status apply_keyboard_layout(OwnedDisplay& d, const std::string& layout);
  // The per-create settings applied after start or lease (keyboard layout, window keeper).
  Status apply_create_options(OwnedDisplay& d, const DisplayOptions& options);
  // The display's private accessibility stack (accessibility_bus.cpp), bounded by
  // kAccessibilityStartBoundMs; sets the root window's AT_SPI_BUS. "accessibility-start-failed".
  Status start_accessibility(OwnedDisplay& d);
  void stop_apps_of(int display_id, const std::string& generation);
  AppInfo snapshot(App& app);
  // Registers a started display under its number (retiring a dead predecessor); fails with
  // engine-shutting-down (tearing it down) when the manager is shutting down.
  Result<std::shared_ptr<OwnedDisplay>> register_display(std::shared_ptr<OwnedDisplay> d);
  // A live pooled display for `options`, or null; wakes the refill thread. Holds mu_.
  std::shared_ptr<OwnedDisplay> take_warm_locked(const DisplayOptions& options,
                                                 std::vector<std::shared_ptr<OwnedDisplay>>& dead);
  void warm_loop();

  struct WarmSlot {
    DisplayOptions options;
    std::shared_ptr<OwnedDisplay> ready;  // idle, pre-started; null while (re)starting
    bool starting = false;
  };

  DisplayManagerOptions options_;
  Spawner spawner_;
  std::mutex mu_;
  bool shutting_down_ = false;
  int pending_creates_ = 0;
  std::condition_variable idle_cv_;
  std::map<int, std::shared_ptr<OwnedDisplay>> displays_;
  std::map<std::string, std::shared_ptr<App>> apps_;
  std::vector<WarmSlot> warm_;  // guarded by mu_
  std::condition_variable warm_cv_;  // refill wanted / shutting down
  std::condition_variable warm_ready_cv_;  // a slot became ready / shutting down
  std::thread warm_thread_;
  std::unique_ptr<AppLogs> logs_;  // bounded: docs/displays.md "App output"
};

}  // namespace evident
