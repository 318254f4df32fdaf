#include "evident/browser/browser.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <string_view>

#include "evident/browser/cdp.h"
#include "evident/core/fs.h"
#include "evident/core/random.h"
#include "evident/core/sha256.h"
#include "evident/display/display.h"

namespace evident {

namespace {

using Steady = std::chrono::steady_clock;

constexpr const char* kArgs = "browser-args";
constexpr std::size_t kMaxCmdlineBytes = 1024 * 1024;  // /proc/PID/cmdline, read once at create

std::int64_t ms_left(Steady::time_point deadline) {
  return std::max<std::int64_t>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now()).count());
}

bool has_control_or_space(std::string_view s) {
  for (unsigned char c : s) {
    if (c <= 0x20 || c == 0x7f) return true;
  }
  return false;
}

// Flags evident sets itself: an extra argument may not override them (the profile, the DevTools
// endpoint and its loopback binding, the window, the mode).
constexpr std::string_view kReservedFlags[] = {
    "--user-data-dir", "--remote-debugging", "--remote-allow-origins", "--app",
    "--headless",      "--window-size",      "--window-position",      "--kiosk",
    "--start-fullscreen", "--start-maximized", "--force-device-scale-factor",
    "--no-startup-window", "--enable-automation", "--profile-directory"};

// The page-side part of element_box and the viewport check: a fixed function; the selector is
// passed as a JSON string literal (valid JS), never spliced as code.
std::string element_box_expression(const std::string& selector) {
  return "(() => { let e; try { e = document.querySelector(" +
         Json(selector).dump(-1, ' ', /*ensure_ascii=*/true) +
         "); } catch (x) { return {error: 'selector'}; }"
         " if (!e) return {error: 'missing'};"
         " const r = e.getBoundingClientRect();"
         " return {x: r.x, y: r.y, w: r.width, h: r.height, iw: innerWidth, ih: innerHeight,"
         " ow: outerWidth, oh: outerHeight}; })()";
}

constexpr const char* kViewportExpression =
    "({iw: innerWidth, ih: innerHeight, ow: outerWidth, oh: outerHeight})";

// Resolves true once innerWidth x innerHeight is W x H, false after `ms` (a page-side bound:
// the wait is on the page's resize event, not a poll).
std::string resize_wait_expression(int w, int h, std::int64_t ms) {
  const std::string cond = "innerWidth === " + std::to_string(w) + " && innerHeight === " + std::to_string(h);
  return "new Promise(resolve => { if (" + cond + ") return resolve(true);"
         " const t = setTimeout(() => resolve(" + cond + "), " + std::to_string(ms) + ");"
         " addEventListener('resize', () => { if (" + cond + ") { clearTimeout(t); resolve(true); } }); })";
}

std::int64_t json_int(const Json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return 0;
  return static_cast<std::int64_t>(std::llround(it->get<double>()));
}

}  // namespace

std::string profile_digest_text(const std::vector<std::string>& argv, const std::string& profile_dir) {
  const std::string own = "--user-data-dir=" + profile_dir;
  std::string text;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    text += argv[i] == own ? std::string("--user-data-dir=<profile>") : argv[i];
    text += '\n';
  }
  return text;
}

Status validate_browser_url(const std::string& url) {
  if (url.empty() || url.size() > BrowserLimits::kMaxUrlBytes) {
    return make_error(kArgs, "the URL must be 1.." + std::to_string(BrowserLimits::kMaxUrlBytes) + " bytes");
  }
  if (has_control_or_space(url)) {
    return make_error(kArgs, "the URL must not contain spaces or control characters");
  }
  const auto colon = url.find(':');
  std::string scheme = colon == std::string::npos ? "" : url.substr(0, colon);
  std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (scheme != "http" && scheme != "https" && scheme != "file" && scheme != "about" && scheme != "data") {
    return make_error("browser-url-scheme", "the URL's scheme must be http, https, file, about or data");
  }
  return {};
}

Status validate_browser_options(const BrowserOptions& o) {
  EVIDENT_TRY(validate_browser_url(o.url));
  const auto in_range = [](int v) {
    return v == 0 || (v >= BrowserLimits::kMinViewport && v <= BrowserLimits::kMaxViewport);
  };
  if (!in_range(o.width) || !in_range(o.height) || ((o.width == 0) != (o.height == 0))) {
    return make_error("browser-viewport-range",
                      "the viewport must be WIDTHxHEIGHT with each side in " +
                          std::to_string(BrowserLimits::kMinViewport) + ".." +
                          std::to_string(BrowserLimits::kMaxViewport) + " and within the display");
  }
  if (o.extra_args.size() > BrowserLimits::kMaxExtraArgs) {
    return make_error(kArgs, "at most " + std::to_string(BrowserLimits::kMaxExtraArgs) + " extra arguments");
  }
  for (const auto& a : o.extra_args) {
    if (a.size() < 3 || a.size() > BrowserLimits::kMaxExtraArgBytes || a.rfind("--", 0) != 0 ||
        a.find('\0') != std::string::npos || a.find('\n') != std::string::npos) {
      return make_error(kArgs, "each extra argument must be a flag \"--name[=value]\" of at most " +
                                   std::to_string(BrowserLimits::kMaxExtraArgBytes) + " bytes");
    }
    const std::string_view name = std::string_view(a).substr(0, a.find('='));
    for (std::string_view r : kReservedFlags) {
      if (name.substr(0, r.size()) == r) {
        return make_error(kArgs, "an extra argument overrides a flag evident sets itself (docs/browsers.md)");
      }
    }
  }
  if (!o.profile_dir.empty()) {
    if (o.profile_dir[0] != '/' || o.profile_dir.size() > BrowserLimits::kMaxPathBytes ||
        o.profile_dir.find('\0') != std::string::npos) {
      return make_error(kArgs, "the profile directory must be an absolute path of at most " +
                                   std::to_string(BrowserLimits::kMaxPathBytes) + " bytes");
    }
  }
  return {};
}

Json BrowserInfo::to_json() const {
  return Json{{"browser_id", browser_id}, {"display_id", display_id}, {"generation", generation},
              {"app_id", app_id}, {"pid", static_cast<int>(pid)}, {"url", url},
              {"viewport", {{"width", width}, {"height", height}}}, {"version", version},
              {"target_id", target_id}, {"profile_dir", profile_dir}, {"profile_sha256", profile_sha256}};
}

Json BrowserStatus::to_json() const {
  return Json{{"live", live}, {"process", process}, {"display", display}, {"cdp", cdp},
              {"page_target", page_target}};
}

Json ElementBox::to_json() const {
  return Json{{"x", x}, {"y", y}, {"width", width}, {"height", height}, {"center_x", center_x},
              {"center_y", center_y}, {"in_viewport", in_viewport}};
}

// One workspace. `mu` serialises every use of the CDP connection.
class Browser {
 public:
  BrowserInfo info;
  bool owns_profile_parent = false;  // the default profile lives in <runtime>/browsers/<id>
  std::mutex mu;
  std::unique_ptr<CdpClient> cdp;
  std::string session_id;  // flattened session of the page target
  bool load_seen = false;  // set by the event sink

  Result<Json> call(const std::string& method, const Json& params, bool page,
                    std::int64_t timeout_ms = BrowserLimits::kCallTimeoutMs) {
    if (!cdp || cdp->broken()) return make_error("browser-not-live", "the browser's DevTools connection is closed");
    return cdp->call(method, params, page ? session_id : std::string(), timeout_ms);
  }

  // Runtime.evaluate by value; exceptions → browser-evaluate-exception.
  Result<Json> eval(const std::string& expression, bool await_promise = false,
                    std::int64_t timeout_ms = BrowserLimits::kCallTimeoutMs) {
    Json params{{"expression", expression}, {"returnByValue", true}, {"awaitPromise", await_promise},
                {"timeout", BrowserLimits::kEvaluateTimeoutMs}};
    auto r = call("Runtime.evaluate", params, true, timeout_ms);
    if (!r.ok()) return r.error();
    if (r->contains("exceptionDetails")) {
      return make_error("browser-evaluate-exception", "the expression threw in the page");
    }
    return (*r)["result"];
  }

  Result<Json> viewport() {
    auto v = eval(kViewportExpression);
    if (!v.ok()) return v.error();
    return v->value("value", Json::object());
  }

  // Page.navigate, then the load event of that navigation (the sink sees it even when it
  // arrives before the reply).
  Result<std::string> navigate(const std::string& url, Steady::time_point deadline) {
    load_seen = false;
    auto r = call("Page.navigate", Json{{"url", url}}, true, std::max<std::int64_t>(1, ms_left(deadline)));
    if (!r.ok()) return r.error();
    if (r->contains("errorText") && (*r)["errorText"].is_string() &&
        !(*r)["errorText"].get<std::string>().empty()) {
      return make_error("browser-navigate-failed", "the browser could not load the URL");
    }
    if (r->contains("loaderId") && !load_seen) {  // no loaderId: a same-document navigation
      const std::string sid = session_id;
      auto w = cdp->wait_event(
          [&](const Json& m) { return m.value("method", "") == "Page.loadEventFired" &&
                                      m.value("sessionId", "") == sid; },
          std::max<std::int64_t>(1, ms_left(deadline)));
      if (!w.ok()) {
        if (w.error().code == "browser-cdp-timeout") {
          return make_error("browser-navigate-timeout", "the page did not finish loading in time");
        }
        return w.error();
      }
    }
    auto href = eval("location.href");
    if (!href.ok()) return href.error();
    return href->value("value", std::string());
  }

  // Resizes the window until the CSS viewport is exactly w x h (bounded rounds).
  Status fit_viewport(int w, int h, int display_w, int display_h) {
    Json previous;
    std::string reached = "unknown";
    for (int round = 0; round <= BrowserLimits::kResizeRounds; ++round) {
      auto v = viewport();
      if (!v.ok()) return v.error();
      const auto iw = json_int(*v, "iw"), ih = json_int(*v, "ih");
      reached = std::to_string(iw) + "x" + std::to_string(ih) + " (window " +
                std::to_string(json_int(*v, "ow")) + "x" + std::to_string(json_int(*v, "oh")) + ")";
      if (iw == w && ih == h) {
        info.width = w;
        info.height = h;
        return {};
      }
      // A round that changed nothing will not be followed by one that does (e.g. the window's
      // minimum size): stop at once.
      if (round == BrowserLimits::kResizeRounds || *v == previous) break;
      previous = *v;
      const auto ow = json_int(*v, "ow"), oh = json_int(*v, "oh");
      const std::int64_t want_w = w + std::max<std::int64_t>(0, ow - iw);
      const std::int64_t want_h = h + std::max<std::int64_t>(0, oh - ih);
      if (want_w > display_w || want_h > display_h) break;
      auto win = call("Browser.getWindowForTarget", Json{{"targetId", info.target_id}}, false);
      if (!win.ok()) return win.error();
      auto set = call("Browser.setWindowBounds",
                      Json{{"windowId", (*win)["windowId"]},
                           {"bounds", {{"left", 0}, {"top", 0}, {"width", want_w}, {"height", want_h}}}},
                      false);
      if (!set.ok()) return set.error();
      auto waited = eval(resize_wait_expression(w, h, BrowserLimits::kResizeWaitMs), true,
                         BrowserLimits::kResizeWaitMs + BrowserLimits::kCallTimeoutMs);
      if (!waited.ok()) return waited.error();
    }
    return make_error("browser-viewport-mismatch",
                      "Chromium did not reach the requested viewport within the bound (it reached " +
                          reached + "); pick a viewport that fits the display with the browser's frame");
  }
};

namespace {

// Waits for DevToolsActivePort in `dir` (inotify on the directory plus the browser's pidfd, one
// bound), then reads "PORT\n/devtools/browser/<id>".
Result<std::pair<int, std::string>> wait_devtools_port(const std::string& dir, int inotify_fd,
                                                       int pidfd, Steady::time_point deadline) {
  const std::string file = dir + "/DevToolsActivePort";
  for (;;) {
    auto text = read_file(file, 4096);
    if (text.ok()) {
      const auto nl = text->find('\n');
      if (nl != std::string::npos) {
        const std::string port_s = text->substr(0, nl);
        std::string path = text->substr(nl + 1);
        while (!path.empty() && (path.back() == '\n' || path.back() == '\r')) path.pop_back();
        int port = 0;
        bool digits = !port_s.empty() && port_s.size() <= 5;
        for (char c : port_s) {
          digits = digits && c >= '0' && c <= '9';
          if (digits) port = port * 10 + (c - '0');
        }
        if (digits && port > 0 && port <= 65535 && path.rfind("/devtools/browser/", 0) == 0) {
          return std::make_pair(port, path);
        }
      }
    }
    const std::int64_t left = ms_left(deadline);
    if (left <= 0) {
      return make_error("browser-start-failed", "Chromium did not open its DevTools port in time (see the app log)");
    }
    pollfd fds[2] = {{inotify_fd, POLLIN, 0}, {pidfd, POLLIN, 0}};
    const int n = ::poll(fds, pidfd >= 0 ? 2 : 1, static_cast<int>(std::min<std::int64_t>(left, 60000)));
    if (n < 0 && errno != EINTR) return make_error("browser-start-failed", "waiting for the DevTools port failed");
    if (n > 0 && pidfd >= 0 && (fds[1].revents & POLLIN)) {
      return make_error("browser-start-failed", "Chromium exited before it opened its DevTools port (see the app log)");
    }
    if (n > 0 && (fds[0].revents & POLLIN)) {
      alignas(inotify_event) char buf[4096];
      while (::read(inotify_fd, buf, sizeof buf) > 0) {
      }
    }
  }
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

BrowserManager::BrowserManager(DisplayManager& displays, BrowserManagerOptions options)
    : displays_(displays), options_(std::move(options)) {}

BrowserManager::~BrowserManager() { close_all(); }

Result<BrowserInfo> BrowserManager::create(const BrowserOptions& o) {
  EVIDENT_TRY(validate_browser_options(o));
  sweep();
  auto got = displays_.get(o.display_id, o.generation);
  if (!got.ok()) return got.error();
  const DisplayInfo dinfo = (*got)->info();
  const bool accessibility = (*got)->accessibility_bus().has_value();
  // Chromium on X11 never gives a window exactly the screen's size (it shrinks it by 1 px each
  // way, fullscreen included), so that one size is refused and the default is one row less.
  const int width = o.width == 0 ? dinfo.width : o.width;
  const int height = o.height == 0 ? dinfo.height - 1 : o.height;
  if (width > dinfo.width || height > dinfo.height) {
    return make_error("browser-viewport-range", "the viewport must fit inside the display");
  }
  if (width == dinfo.width && height == dinfo.height) {
    return make_error("browser-viewport-range",
                      "the viewport cannot be exactly the display's size (Chromium never makes a "
                      "window as large as the screen); make one side smaller");
  }
  {
    std::lock_guard lock(mu_);
    if (shutting_down_) return make_error("engine-shutting-down", "the engine is shutting down");
    if (static_cast<int>(browsers_.size()) + pending_ >= options_.max_browsers) {
      return make_error("browser-limit", "at most " + std::to_string(options_.max_browsers) +
                                             " browsers per engine; close one first");
    }
    ++pending_;
  }
  struct Pending {
    BrowserManager* m;
    ~Pending() {
      std::lock_guard lock(m->mu_);
      --m->pending_;
    }
  } pending{this};

  auto b = std::make_shared<Browser>();
  b->info.browser_id = random_id("browser");
  b->info.display_id = o.display_id;
  b->info.generation = o.generation;
  b->info.url = o.url;
  // The profile: created here, exclusively, 0700; an existing path is refused untouched.
  std::string profile = o.profile_dir;
  if (profile.empty()) {
    const std::string parent = options_.runtime_dir + "/browsers";
    if (auto st = make_private_dir(parent); !st.ok()) {
      return make_error("browser-profile-failed", "cannot create the private profile directory");
    }
    profile = parent + "/" + b->info.browser_id;
  }
  if (::mkdir(profile.c_str(), 0700) != 0) {
    if (errno == EEXIST) {
      return make_error("browser-profile-exists", "the profile directory already exists; evident only uses a fresh one");
    }
    return make_error("browser-profile-failed", "cannot create the profile directory");
  }
  b->info.profile_dir = profile;
  bool ok = false;
  struct Cleanup {
    BrowserManager* m;
    std::shared_ptr<Browser> b;
    bool* ok;
    ~Cleanup() {
      if (!*ok) m->teardown(b, nullptr);
    }
  } cleanup{this, b, &ok};

  const auto deadline = Steady::now() + std::chrono::milliseconds(BrowserLimits::kStartTimeoutMs);
  Fd ino;
  ino.fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (ino.fd < 0 || ::inotify_add_watch(ino.fd, profile.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE) < 0) {
    return make_error("browser-start-failed", "cannot watch the profile directory");
  }

  std::vector<std::string> argv = {options_.chromium_path};
  // --no-sandbox only as root: Chromium's sandbox refuses to start as root (docs/browsers.md).
  if (::geteuid() == 0) argv.push_back("--no-sandbox");
  for (const char* f : {"--no-first-run", "--disable-background-networking", "--disable-component-update",
                        "--disable-sync", "--no-default-browser-check", "--password-store=basic",
                        "--test-type", "--disable-gpu", "--disable-dev-shm-usage",
                        "--disable-features=Translate", "--force-device-scale-factor=1",
                        "--remote-debugging-port=0", "--window-position=0,0"}) {
    argv.push_back(f);
  }
  argv.push_back("--user-data-dir=" + profile);
  argv.push_back("--window-size=" + std::to_string(width) + "," + std::to_string(height));
  // On a display with an accessibility stack the page's tree is exposed over AT-SPI
  // (docs/accessibility.md); the launch gives Chromium the stack's environment.
  if (accessibility) argv.push_back("--force-renderer-accessibility");
  for (const auto& a : o.extra_args) argv.push_back(a);
  // App mode: a window without tab strip or toolbar, so the viewport is the window's client
  // area. Chromium opens a normal browser window for --app=about:blank, hence an empty data: page;
  // the requested URL is then loaded by navigation, whose load event is awaited.
  argv.push_back("--app=data:text/html,");

  auto app = displays_.launch_app(o.display_id, o.generation, argv, ms_left(deadline));
  if (!app.ok()) {
    const auto& c = app.error().code;
    if (c == "app-exited" || c == "app-window-timeout" || c == "app-launch-failed") {
      return make_error("browser-start-failed", "Chromium did not start: " + app.error().message);
    }
    return app.error();
  }
  b->info.app_id = app->app_id;
  b->info.pid = app->pid;
  // The app stays unreaped until stopped, so its pid cannot be reused meanwhile.
  Fd pidfd;
  pidfd.fd = static_cast<int>(::syscall(SYS_pidfd_open, app->pid, 0));

  auto port = wait_devtools_port(profile, ino.fd, pidfd.fd, deadline);
  if (!port.ok()) return port.error();
  // The profile digest (docs/browsers.md "Profile digest"): the command line Chromium runs with,
  // as the kernel reports it. Debian's `chromium` is a script that execs the real binary with the
  // distribution's flags (/etc/chromium.d) before ours, so it is read from the process (the same
  // pid after the exec; Chromium has written DevToolsActivePort, so the exec is done).
  {
    auto cmdline = read_file("/proc/" + std::to_string(app->pid) + "/cmdline", kMaxCmdlineBytes);
    if (!cmdline.ok() || cmdline->empty()) {
      return make_error("browser-start-failed", "cannot read Chromium's command line");
    }
    std::vector<std::string> running;
    std::size_t start = 0;
    while (start < cmdline->size()) {
      std::size_t end = cmdline->find('\0', start);
      if (end == std::string::npos) end = cmdline->size();
      running.push_back(cmdline->substr(start, end - start));
      start = end + 1;
    }
    b->info.profile_sha256 = sha256_hex(profile_digest_text(running, profile));
  }
  auto cdp = CdpClient::connect(port->first, port->second, std::max<std::int64_t>(1, ms_left(deadline)));
  if (!cdp.ok()) return cdp.error();
  b->cdp = std::move(*cdp);
  Browser* raw = b.get();
  b->cdp->set_event_sink([raw](const Json& m) {
    if (m.value("method", "") == "Page.loadEventFired" && m.value("sessionId", "") == raw->session_id) {
      raw->load_seen = true;
    }
  });

  std::lock_guard block(b->mu);
  auto version = b->call("Browser.getVersion", Json::object(), false);
  if (!version.ok()) return version.error();
  b->info.version = version->value("product", std::string());
  auto targets = b->call("Target.getTargets", Json::object(), false);
  if (!targets.ok()) return targets.error();
  for (const auto& t : targets->value("targetInfos", Json::array())) {
    if (t.is_object() && t.value("type", "") == "page") {
      b->info.target_id = t.value("targetId", "");
      break;
    }
  }
  if (b->info.target_id.empty()) return make_error("browser-start-failed", "Chromium opened no page");
  auto attached = b->call("Target.attachToTarget", Json{{"targetId", b->info.target_id}, {"flatten", true}}, false);
  if (!attached.ok()) return attached.error();
  b->session_id = attached->value("sessionId", "");
  if (b->session_id.empty()) return make_error("browser-cdp-failed", "the browser gave no page session");
  if (auto r = b->call("Page.enable", Json::object(), true); !r.ok()) return r.error();
  auto nav = b->navigate(o.url, deadline);
  if (!nav.ok()) return nav.error();
  EVIDENT_TRY(b->fit_viewport(width, height, dinfo.width, dinfo.height));

  std::lock_guard lock(mu_);
  if (shutting_down_) return make_error("engine-shutting-down", "the engine is shutting down");
  browsers_[b->info.browser_id] = b;
  ok = true;
  return b->info;
}

void BrowserManager::teardown(const std::shared_ptr<Browser>& b, int* exit_status) {
  // Stop the process first: a call in flight on another thread then fails at once.
  if (!b->info.app_id.empty()) {
    auto st = displays_.stop_app(b->info.app_id);
    if (exit_status) *exit_status = st.ok() ? *st : -1;
  }
  {
    std::lock_guard lock(b->mu);
    if (b->cdp) b->cdp->close();
  }
  if (!b->info.profile_dir.empty()) (void)remove_tree(b->info.profile_dir);
}

Result<int> BrowserManager::close(const std::string& browser_id) {
  std::shared_ptr<Browser> b;
  {
    std::lock_guard lock(mu_);
    auto it = browsers_.find(browser_id);
    if (it == browsers_.end()) return make_error("browser-not-found", "no such browser (see browser list)");
    b = it->second;
    browsers_.erase(it);
  }
  int status = -1;
  teardown(b, &status);
  return status;
}

std::vector<BrowserInfo> BrowserManager::list() {
  sweep();
  std::vector<std::shared_ptr<Browser>> all;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, b] : browsers_) all.push_back(b);
  }
  std::vector<BrowserInfo> out;
  for (auto& b : all) {
    BrowserInfo i = b->info;
    i.alive = displays_.app_alive(i.app_id);
    out.push_back(std::move(i));
  }
  return out;
}

Result<std::shared_ptr<Browser>> BrowserManager::find(const std::string& browser_id) {
  std::lock_guard lock(mu_);
  auto it = browsers_.find(browser_id);
  if (it == browsers_.end()) return make_error("browser-not-found", "no such browser (see browser list)");
  return it->second;
}

Result<std::shared_ptr<Browser>> BrowserManager::find_live(const std::string& browser_id) {
  auto b = find(browser_id);
  if (!b.ok()) return b.error();
  if (!displays_.app_alive((*b)->info.app_id) || !displays_.get((*b)->info.display_id, (*b)->info.generation).ok()) {
    return make_error("browser-not-live", "the browser is no longer running; close it and create a new one");
  }
  return b;
}

Result<BrowserStatus> BrowserManager::status(const std::string& browser_id) {
  auto b = find(browser_id);
  if (!b.ok()) return b.error();
  BrowserStatus s;
  s.process = displays_.app_alive((*b)->info.app_id);
  s.display = displays_.get((*b)->info.display_id, (*b)->info.generation).ok();
  std::lock_guard lock((*b)->mu);
  s.cdp = (*b)->cdp && !(*b)->cdp->broken();
  if (s.process && s.cdp) {
    auto t = (*b)->call("Target.getTargets", Json::object(), false);
    if (t.ok()) {
      for (const auto& ti : t->value("targetInfos", Json::array())) {
        if (ti.is_object() && ti.value("targetId", "") == (*b)->info.target_id) s.page_target = true;
      }
    }
    s.cdp = !(*b)->cdp->broken();
  }
  s.live = s.process && s.display && s.cdp && s.page_target;
  return s;
}

Result<BrowserInfo> BrowserManager::bind_check(const std::string& browser_id, int display_id,
                                               const std::string& generation) {
  auto b = find(browser_id);
  if (!b.ok()) return b.error();
  if ((*b)->info.display_id != display_id || (*b)->info.generation != generation) {
    return make_error("browser-binding-mismatch",
                      "the browser workspace belongs to another display or display generation than the session");
  }
  auto st = status(browser_id);
  if (!st.ok()) return st.error();
  if (!st->live) {
    return make_error("browser-not-live",
                      std::string("the browser workspace is not live (") +
                          (!st->process ? "its process has exited" : !st->display ? "its display generation is gone"
                                       : !st->cdp ? "its DevTools connection is closed"
                                                  : "its page target is gone") + ")");
  }
  return (*b)->info;
}

Status BrowserManager::check_live(const std::string& browser_id, const std::string& target_id) {
  const Error dead = make_error("browser-not-live", "the session's browser workspace is no longer live");
  auto b = find(browser_id);
  if (!b.ok()) return make_error("browser-not-live", "the session's browser workspace was closed");
  if (!displays_.app_alive((*b)->info.app_id)) {
    return make_error("browser-not-live", "the session's browser process has exited");
  }
  if (!displays_.get((*b)->info.display_id, (*b)->info.generation).ok()) return dead;
  std::lock_guard lock((*b)->mu);
  auto r = (*b)->call("Target.getTargetInfo", Json{{"targetId", target_id}}, false, BrowserLimits::kCheckTimeoutMs);
  if (!r.ok()) {
    if (!displays_.app_alive((*b)->info.app_id)) {
      return make_error("browser-not-live", "the session's browser process has exited");
    }
    return make_error("browser-not-live", "the session's browser page target is gone or does not answer");
  }
  const Json info = r->value("targetInfo", Json::object());
  if (!info.is_object() || info.value("targetId", "") != target_id || info.value("type", "") != "page") {
    return make_error("browser-not-live", "the session's browser page target is gone");
  }
  return {};
}

namespace {
// A CDP failure on a browser whose process has gone is that, not a protocol problem.
Error live_or(const Error& e, DisplayManager& dm, const BrowserInfo& info) {
  if (!dm.app_alive(info.app_id)) {
    return make_error("browser-not-live", "the browser is no longer running; close it and create a new one");
  }
  return e;
}
}  // namespace

Result<std::string> BrowserManager::evaluate(const std::string& browser_id, const std::string& expression) {
  if (expression.empty() || expression.size() > BrowserLimits::kMaxExpressionBytes) {
    return make_error(kArgs, "the expression must be 1.." + std::to_string(BrowserLimits::kMaxExpressionBytes) + " bytes");
  }
  auto b = find_live(browser_id);
  if (!b.ok()) return b.error();
  std::lock_guard lock((*b)->mu);
  auto r = (*b)->eval(expression);
  if (!r.ok()) return live_or(r.error(), displays_, (*b)->info);
  if (r->contains("unserializableValue")) {
    return make_error("browser-evaluate-result", "the value has no JSON form (NaN, Infinity, -0 or a BigInt)");
  }
  const std::string text = r->contains("value") ? (*r)["value"].dump(-1, ' ', false, Json::error_handler_t::replace)
                                                : std::string("null");
  if (text.size() > BrowserLimits::kMaxResultBytes) {
    return make_error("browser-result-too-large", "the value's JSON is larger than " +
                                                      std::to_string(BrowserLimits::kMaxResultBytes) + " bytes");
  }
  return text;
}

Result<std::string> BrowserManager::navigate(const std::string& browser_id, const std::string& url) {
  EVIDENT_TRY(validate_browser_url(url));
  auto b = find_live(browser_id);
  if (!b.ok()) return b.error();
  std::lock_guard lock((*b)->mu);
  auto r = (*b)->navigate(url, Steady::now() + std::chrono::milliseconds(BrowserLimits::kNavigateTimeoutMs));
  if (!r.ok()) return live_or(r.error(), displays_, (*b)->info);
  return r;
}

Result<ElementBox> BrowserManager::element_box(const std::string& browser_id, const std::string& selector) {
  if (selector.empty() || selector.size() > BrowserLimits::kMaxSelectorBytes) {
    return make_error(kArgs, "the selector must be 1.." + std::to_string(BrowserLimits::kMaxSelectorBytes) + " bytes");
  }
  auto b = find_live(browser_id);
  if (!b.ok()) return b.error();
  std::lock_guard lock((*b)->mu);
  auto r = (*b)->eval(element_box_expression(selector));
  if (!r.ok()) return live_or(r.error(), displays_, (*b)->info);
  const Json v = r->value("value", Json::object());
  if (!v.is_object()) return make_error("browser-cdp-failed", "the page answered in an unexpected shape");
  const std::string err = v.value("error", "");
  if (err == "selector") return make_error("browser-selector-invalid", "the CSS selector is not valid");
  if (err == "missing") return make_error("browser-element-not-found", "no element matches the selector");
  auto win = (*b)->call("Browser.getWindowForTarget", Json{{"targetId", (*b)->info.target_id}}, false);
  if (!win.ok()) return live_or(win.error(), displays_, (*b)->info);
  const Json bounds = win->value("bounds", Json::object());
  const auto num = [&](const char* k) {
    const auto it = v.find(k);
    return it != v.end() && it->is_number() ? it->get<double>() : 0.0;
  };
  // The viewport's origin on screen: the window's origin (Browser.getWindowForTarget) plus the
  // frame around the viewport (outer - inner; side borders equal, the rest on top).
  const double side = std::max(0.0, (num("ow") - num("iw")) / 2.0);
  const double top = std::max(0.0, num("oh") - num("ih") - side);
  const double ox = static_cast<double>(json_int(bounds, "left")) + side;
  const double oy = static_cast<double>(json_int(bounds, "top")) + top;
  const double x0 = ox + num("x"), y0 = oy + num("y");
  const double x1 = x0 + num("w"), y1 = y0 + num("h");
  ElementBox box;
  box.x = static_cast<int>(std::floor(x0));
  box.y = static_cast<int>(std::floor(y0));
  box.width = static_cast<int>(std::ceil(x1)) - box.x;
  box.height = static_cast<int>(std::ceil(y1)) - box.y;
  box.center_x = static_cast<int>(std::floor((x0 + x1) / 2.0));
  box.center_y = static_cast<int>(std::floor((y0 + y1) / 2.0));
  const double cx = num("x") + num("w") / 2.0, cy = num("y") + num("h") / 2.0;
  box.in_viewport = cx >= 0 && cy >= 0 && cx < num("iw") && cy < num("ih");
  return box;
}

void BrowserManager::sweep() {
  std::vector<std::shared_ptr<Browser>> gone;
  {
    std::lock_guard lock(mu_);
    for (auto it = browsers_.begin(); it != browsers_.end();) {
      if (!displays_.get(it->second->info.display_id, it->second->info.generation).ok()) {
        gone.push_back(it->second);
        it = browsers_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& b : gone) teardown(b, nullptr);
}

void BrowserManager::close_display(int display_id, const std::string& generation) {
  std::vector<std::shared_ptr<Browser>> gone;
  {
    std::lock_guard lock(mu_);
    for (auto it = browsers_.begin(); it != browsers_.end();) {
      if (it->second->info.display_id == display_id && it->second->info.generation == generation) {
        gone.push_back(it->second);
        it = browsers_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& b : gone) teardown(b, nullptr);
}

void BrowserManager::close_all() {
  std::map<std::string, std::shared_ptr<Browser>> all;
  {
    std::lock_guard lock(mu_);
    shutting_down_ = true;
    all.swap(browsers_);
  }
  for (auto& [id, b] : all) teardown(b, nullptr);
}

}  // namespace evident
