// Browser workspaces: Debian's Chromium as a normal window on an owned display, launched as an
// app of that display generation (so it dies with the display, and with the engine), with a fresh
// private profile, DevTools on loopback only on a port Chromium picks, the exact CSS viewport,
// and page access over CDP (evident/browser/cdp.h). docs/browsers.md.
// Error ids (docs/errors.md): browser-args, browser-url-scheme, browser-viewport-range,
// browser-profile-exists, browser-profile-failed, browser-limit, browser-start-failed,
// browser-viewport-mismatch, browser-not-found, browser-not-live, browser-cdp-failed,
// browser-cdp-timeout, browser-cdp-error, browser-navigate-failed, browser-navigate-timeout,
// browser-evaluate-exception, browser-evaluate-result, browser-result-too-large,
// browser-selector-invalid, browser-element-not-found; plus the display/app ids of
// DisplayManager::get and launch_app.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/protocol/protocol.h"

namespace evident {

class DisplayManager;

struct BrowserOptions {
  int display_id = 0;
  std::string generation;
  std::string url;                      // http, https, file, about or data (checked)
  int width = 0;                        // CSS viewport; 0x0: the display width x (height - 1)
  int height = 0;
  std::vector<std::string> extra_args;  // appended Chromium flags ("--x[=y]"), bounded, checked
  std::string profile_dir;              // empty: a fresh dir in the engine's runtime dir;
                                        // else an absolute path that must not exist yet
};

// The bounds every surface checks (one place for each).
struct BrowserLimits {
  static constexpr std::size_t kMaxUrlBytes = 8192;
  static constexpr std::size_t kMaxExtraArgs = 32;
  static constexpr std::size_t kMaxExtraArgBytes = 1024;
  static constexpr std::size_t kMaxPathBytes = 4096;
  static constexpr std::size_t kMaxExpressionBytes = 64 * 1024;
  static constexpr std::size_t kMaxSelectorBytes = 1024;
  static constexpr std::size_t kMaxResultBytes = 1024 * 1024;  // evaluate's value_json
  static constexpr int kMinViewport = static_cast<int>(protocol::kBrowserViewportMin);
  static constexpr int kMaxViewport = static_cast<int>(protocol::kBrowserViewportMax);
  static constexpr std::int64_t kStartTimeoutMs = 30000;     // launch -> DevTools port -> page
  static constexpr std::int64_t kCallTimeoutMs = 10000;      // one CDP call
  static constexpr std::int64_t kNavigateTimeoutMs = 30000;  // navigation -> load event
  static constexpr std::int64_t kEvaluateTimeoutMs = 10000;  // script run time (Runtime.evaluate)
  static constexpr std::int64_t kCheckTimeoutMs = 2000;      // a session's re-check (one CDP call)
  static constexpr std::int64_t kResizeWaitMs = 2000;        // per resize round
  static constexpr int kResizeRounds = 3;
};

// The text profile_sha256 hashes: Chromium's arguments after argv[0], each followed by "\n",
// with the argument "--user-data-dir=<path>" written as "--user-data-dir=<profile>".
std::string profile_digest_text(const std::vector<std::string>& argv, const std::string& profile_dir);

// Request checks, before any work: browser-args, browser-url-scheme, browser-viewport-range.
Status validate_browser_url(const std::string& url);
Status validate_browser_options(const BrowserOptions& options);

struct BrowserInfo {
  std::string browser_id;  // "browser-<32 hex>"
  int display_id = 0;
  std::string generation;
  std::string app_id;
  pid_t pid = 0;
  std::string url;  // as requested at create
  int width = 0;    // the CSS viewport, as Chromium reported it
  int height = 0;
  std::string version;    // Browser.getVersion "product", e.g. "Chrome/156.0.8078.114"
  std::string target_id;  // the page target
  std::string profile_dir;
  // SHA-256 of the command line Chromium runs with (/proc/PID/cmdline after argv[0]), the
  // profile path written as "<profile>" (docs/browsers.md "Profile digest"; profile_digest_text).
  std::string profile_sha256;
  bool alive = false;  // process running (list only)
  // {"browser_id","display_id","generation","app_id","pid","url","viewport":{"width","height"},
  //  "version","target_id","profile_dir","profile_sha256"}; list adds "alive".
  Json to_json() const;
};

struct BrowserStatus {
  bool live = false;         // all of the below
  bool process = false;      // the Chromium app is running
  bool display = false;      // its display generation is current
  bool cdp = false;          // the DevTools connection is open
  bool page_target = false;  // the page target is still listed by the browser
  Json to_json() const;
};

// An element's border box on the display, in screen pixels: the smallest integer box holding
// the element's CSS box (CSS px == screen px: device scale factor 1).
struct ElementBox {
  int x = 0, y = 0, width = 0, height = 0;
  int center_x = 0, center_y = 0;
  bool in_viewport = false;  // the centre lies inside the viewport
  Json to_json() const;
};

struct BrowserManagerOptions {
  std::string runtime_dir;             // profiles go to <runtime_dir>/browsers/<browser_id>
  std::string chromium_path = "chromium";  // resolved on PATH by the app launcher
  int max_browsers = 8;
};

class Browser;

class BrowserManager {
 public:
  BrowserManager(DisplayManager& displays, BrowserManagerOptions options);
  ~BrowserManager();  // close_all()
  BrowserManager(const BrowserManager&) = delete;
  BrowserManager& operator=(const BrowserManager&) = delete;

  Result<BrowserInfo> create(const BrowserOptions& options);
  // Stops Chromium (TERM, KILL after a bound, reaped) and removes its profile. Returns the exit
  // status. browser-not-found.
  Result<int> close(const std::string& browser_id);
  std::vector<BrowserInfo> list();
  Result<BrowserStatus> status(const std::string& browser_id);
  // Runtime.evaluate by value: the result as JSON text ("null" for undefined).
  Result<std::string> evaluate(const std::string& browser_id, const std::string& expression);
  // Navigates the page and waits for its load event; returns location.href.
  Result<std::string> navigate(const std::string& browser_id, const std::string& url);
  Result<ElementBox> element_box(const std::string& browser_id, const std::string& selector);

  // A session binding the workspace at begin (docs/sessions.md "Browser"): it exists
  // (browser-not-found), belongs to display `display_id` generation `generation`
  // (browser-binding-mismatch), and is live: process, display, DevTools and the page target
  // still listed (browser-not-live). Returns its info.
  Result<BrowserInfo> bind_check(const std::string& browser_id, int display_id, const std::string& generation);
  // The cheap re-check around a bound session's action batches: the workspace still exists,
  // its process runs, its display generation is current, and its page target is still
  // `target_id` (one Target.getTargetInfo, kCheckTimeoutMs). Else browser-not-live.
  Status check_live(const std::string& browser_id, const std::string& target_id);

  // Closes the browsers of that exact display generation (before the display is destroyed).
  void close_display(int display_id, const std::string& generation);
  void close_all();  // also refuses new creates (engine-shutting-down)

 private:
  Result<std::shared_ptr<Browser>> find(const std::string& browser_id);
  Result<std::shared_ptr<Browser>> find_live(const std::string& browser_id);
  void teardown(const std::shared_ptr<Browser>& b, int* exit_status);
  void sweep();  // closes browsers whose display generation is gone

  DisplayManager& displays_;
  BrowserManagerOptions options_;
  std::mutex mu_;
  bool shutting_down_ = false;
  int pending_ = 0;
  std::map<std::string, std::shared_ptr<Browser>> browsers_;
};

}  // namespace evident
