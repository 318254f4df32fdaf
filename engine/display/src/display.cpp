#include "evident/display/display.h"

#include <X11/XKBlib.h>
#include <X11/Xlib-xcb.h>
#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <xcb/xcb.h>
#include <X11/extensions/XShm.h>
#include <X11/extensions/XTest.h>
#include <X11/extensions/Xdamage.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

// Xlib defines Status as a macro (int); ours is evident::Status.
#undef Status

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <set>

#include "evident/core/clock.h"
#include "evident/core/fs.h"
#include "evident/core/random.h"
#include "evident/core/sha256.h"
#include "evident/display/windows.h"
#include "evident/display/x11.h"

namespace evident {
namespace {

Error not_found(int id) {
  return make_error("display-not-found", "no display " + std::to_string(id) +
                                             " is owned by this engine");
}

Error generation_mismatch(int id) {
  return make_error("display-generation-mismatch",
                    "the generation does not name the current lifetime of display " +
                        std::to_string(id) + " (stale, foreign or malformed); the display is "
                        "unchanged");
}

Error shutting_down() {
  return make_error("engine-shutting-down", "the engine is shutting down");
}

std::int64_t now_ms() { return steady_us() / 1000; }

std::string path_env() {
  const char* p = std::getenv("PATH");
  return p ? p : "/usr/local/bin:/usr/bin:/bin";
}

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

std::string last_line_of(const std::string& path) {
  auto text = read_file(path, 1 << 20);
  if (!text.ok()) return "";
  std::string s = *text;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  auto nl = s.rfind('\n');
  std::string line = nl == std::string::npos ? s : s.substr(nl + 1);
  return line.substr(0, 300);
}

// Creates `path` (which must not exist yet) 0600 and writes `bytes` to it.
Status write_private_file(const std::string& path, const std::string& bytes) {
  Fd f(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (f.fd < 0) return make_error("fs-error", "cannot create " + path + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(f.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error("fs-error", "cannot write " + path + ": " + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  if (::close(f.fd) != 0) {
    f.fd = -1;
    return make_error("fs-error", "cannot write " + path + ": " + std::strerror(errno));
  }
  f.fd = -1;
  return {};
}

}  // namespace

// ------------------------------------------------------------------------------- small values

Status validate_display_options(const DisplayOptions& o) {
  // The ranges of protocol/evident.json (display_width_min ... display_dpi_max).
  using namespace protocol;
  auto range = [](const char* what, std::int64_t lo, std::int64_t hi) {
    return make_error("display-args", std::string(what) + " must be in " + std::to_string(lo) + ".." +
                                          std::to_string(hi));
  };
  if (o.width < kDisplayWidthMin || o.width > kDisplayWidthMax) return range("width", kDisplayWidthMin, kDisplayWidthMax);
  if (o.height < kDisplayHeightMin || o.height > kDisplayHeightMax) {
    return range("height", kDisplayHeightMin, kDisplayHeightMax);
  }
  if (o.depth != 16 && o.depth != 24) return make_error("display-args", "depth must be 16 or 24");
  if (o.dpi < kDisplayDpiMin || o.dpi > kDisplayDpiMax) return range("dpi", kDisplayDpiMin, kDisplayDpiMax);
  return {};
}

Error display_dead_error() {
  return make_error("display-dead", "the display's X server is no longer running (or its "
                                    "connection broke); destroy the display and create a new one");
}

bool is_generation_token(const std::string& s) {
  return s.size() == 36 && s.compare(0, 4, "gen-") == 0 && is_lower_hex(s.substr(4), 32);
}

Json DisplayInfo::to_json() const {
  return Json{{"id", id}, {"name", name}, {"generation", generation}, {"width", width},
              {"height", height}};
}

Json StatusLayer::to_json() const {
  return Json{{"name", name}, {"state", state}, {"detail", detail}, {"fix", fix}};
}

Json AppInfo::to_json() const {
  return Json{{"app_id", app_id}, {"display_id", display_id}, {"generation", generation},
              {"pid", pid}, {"argv_sha256", argv_sha256}};
}

Json AppInfo::to_list_json() const {
  Json j = to_json();
  j["alive"] = alive;
  j["exit_status"] = exit_status ? Json(*exit_status) : Json(nullptr);
  return j;
}

std::string argv_sha256(const std::vector<std::string>& argv) {
  Json arr = Json::array();
  for (const auto& a : argv) arr.push_back(a);
  return sha256_hex(dump_json(arr));
}

// ------------------------------------------------------------------------------- OwnedDisplay

OwnedDisplay::~OwnedDisplay() { teardown(); }

bool OwnedDisplay::alive() {
  if (destroyed_.load()) return false;
  if (!xvfb_ || xvfb_->exited()) return false;
  ::Display* dpy = dpy_.load();
  return dpy != nullptr && !x_connection_dead(dpy);
}

bool OwnedDisplay::try_acquire_session(const std::string& owner) {
  std::lock_guard lock(session_mu_);
  if (session_holder_ && *session_holder_ != owner) return false;
  session_holder_ = owner;
  return true;
}

bool OwnedDisplay::release_session(const std::string& owner) {
  std::lock_guard lock(session_mu_);
  if (!session_holder_ || *session_holder_ != owner) return false;
  session_holder_.reset();
  return true;
}

std::optional<std::string> OwnedDisplay::session_holder() {
  std::lock_guard lock(session_mu_);
  return session_holder_;
}

Result<::Display*> OwnedDisplay::open_connection() const {
  return open_x_connection(info_.name, cookie_);
}

std::shared_ptr<DisplayAttachment> OwnedDisplay::attachment(
    const std::function<std::shared_ptr<DisplayAttachment>()>& make) {
  std::lock_guard lock(attachment_mu_);
  if (destroyed_) return nullptr;
  if (!attachment_) attachment_ = make();
  return attachment_;
}

std::shared_ptr<void> OwnedDisplay::begin_batch(std::function<void()> cancel) {
  std::lock_guard lock(batch_mu_);
  if (destroyed_.load()) return nullptr;
  const std::uint64_t id = next_batch_++;
  batches_.emplace(id, std::move(cancel));
  // The guard only names the batch; its deleter runs when the batch is done with the display.
  return std::shared_ptr<void>(reinterpret_cast<void*>(static_cast<std::uintptr_t>(id)),
                               [this, id](void*) {
                                 std::lock_guard l(batch_mu_);
                                 batches_.erase(id);
                                 batch_cv_.notify_all();
                               });
}

void OwnedDisplay::teardown() {
  {
    // Batches in flight are told to stop and waited for (bounded) before anything they use is
    // freed; a batch that outlives the bound keeps the objects (leaked, never freed under it).
    std::unique_lock lock(batch_mu_);
    destroyed_ = true;
    for (auto& [id, cancel] : batches_) {
      if (cancel) cancel();
    }
    if (!batch_cv_.wait_for(lock, std::chrono::milliseconds(kBatchDrainBoundMs),
                            [this] { return batches_.empty(); })) {
      (void)watcher_.release();
      (void)capturer_.release();
      dpy_.store(nullptr);
    }
  }
  destroyed_ = true;
  std::shared_ptr<DisplayAttachment> attached;
  {
    std::lock_guard lock(attachment_mu_);
    attached = std::move(attachment_);
  }
  // A server that already exited: force the connection into its error state without Xlib
  // (shut the socket, let XCB see EOF), so that nothing below makes an Xlib call on it.
  if (::Display* dead = dpy_.load(); dead && xvfb_ && xvfb_->exited() && !x_connection_dead(dead)) {
    ::shutdown(ConnectionNumber(dead), SHUT_RDWR);
    if (xcb_connection_t* c = XGetXCBConnection(dead)) {
      std::free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), nullptr));
    }
  }
  // Before the connection closes: the attachment may still need it (and x_mutex).
  if (attached) attached->detach();
  {
    std::lock_guard lock(x_mutex_);
    watcher_.reset();
    capturer_.reset();
    ::Display* dpy = dpy_.exchange(nullptr);
    if (dpy) close_x_connection(dpy);
  }
  // Xvfb removes its own lock file and socket on TERM; we never touch them.
  if (xvfb_) xvfb_->stop(DisplayManager::kXvfbStopBoundMs);
  if (!dir_.empty()) {
    (void)remove_tree(dir_);
    dir_.clear();
  }
}

// ----------------------------------------------------------------------------- DisplayManager

bool operator==(const DisplayOptions& a, const DisplayOptions& b) {
  return a.width == b.width && a.height == b.height && a.depth == b.depth && a.dpi == b.dpi;
}

DisplayManager::DisplayManager(DisplayManagerOptions options) : options_(std::move(options)) {
  ensure_xlib_initialized();
  for (const auto& o : options_.warm) {
    // An invalid entry could never be leased (create validates first): skip it.
    if (!validate_display_options(o).ok()) continue;
    if (std::any_of(warm_.begin(), warm_.end(), [&](const WarmSlot& w) { return w.options == o; })) {
      continue;
    }
    warm_.push_back(WarmSlot{o, nullptr, false});
  }
  if (!warm_.empty()) warm_thread_ = std::thread([this] { warm_loop(); });
}

DisplayManager::~DisplayManager() { destroy_all(); }

Result<std::shared_ptr<OwnedDisplay>> DisplayManager::create(const DisplayOptions& options) {
  EVIDENT_TRY(validate_display_options(options));
  const std::int64_t t0 = steady_us();
  std::shared_ptr<OwnedDisplay> leased;
  std::vector<std::shared_ptr<OwnedDisplay>> dead;
  bool at_limit = false;
  {
    std::lock_guard lock(mu_);
    if (shutting_down_) return shutting_down();
    leased = take_warm_locked(options, dead);
    if (!leased) {
      int idle = 0;
      for (const auto& w : warm_) idle += w.ready ? 1 : 0;
      at_limit =
          static_cast<int>(displays_.size()) + pending_creates_ + idle >= options_.max_displays;
      if (!at_limit) ++pending_creates_;
    }
  }
  for (auto& d : dead) d->teardown();  // died while idle in the pool: never leased
  if (at_limit) {
    return make_error("display-limit", "at most " + std::to_string(options_.max_displays) +
                                           " displays per engine; destroy one first", true);
  }
  if (leased) {
    // A fresh lifetime for the caller: the generation it had while idle was never handed out,
    // but a new one keeps "one generation per create" true without exception.
    leased->info_.generation = random_id("gen");
    leased->info_.ready_us = steady_us() - t0;
    return register_display(std::move(leased));
  }
  auto started = start_display(options);
  {
    std::lock_guard lock(mu_);
    --pending_creates_;
    idle_cv_.notify_all();
    warm_cv_.notify_all();  // the refill thread may be waiting for room under max_displays
  }
  if (!started.ok()) return started.error();
  return register_display(std::move(*started));
}

Result<std::shared_ptr<OwnedDisplay>> DisplayManager::register_display(
    std::shared_ptr<OwnedDisplay> d) {
  std::shared_ptr<OwnedDisplay> replaced;
  {
    std::lock_guard lock(mu_);
    if (shutting_down_) {
      replaced = d;  // torn down below, outside the lock
    } else {
      auto& slot = displays_[d->info().id];
      // The number can only be reused if our previous server on it died: retire that one.
      replaced = std::move(slot);
      slot = d;
    }
  }
  if (replaced) {
    if (replaced == d) {
      replaced->teardown();
      return shutting_down();
    }
    stop_apps_of(replaced->info().id, replaced->info().generation);
    replaced->teardown();
  }
  return d;
}

std::shared_ptr<OwnedDisplay> DisplayManager::take_warm_locked(
    const DisplayOptions& options, std::vector<std::shared_ptr<OwnedDisplay>>& dead) {
  for (auto& w : warm_) {
    if (!(w.options == options) || !w.ready) continue;
    std::shared_ptr<OwnedDisplay> d = std::move(w.ready);
    w.ready.reset();
    warm_cv_.notify_all();  // start a replacement
    if (d->alive()) return d;
    dead.push_back(std::move(d));
    return nullptr;
  }
  return nullptr;
}

void DisplayManager::warm_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    WarmSlot* slot = nullptr;
    warm_cv_.wait(lock, [&] {
      if (shutting_down_) return true;
      int idle = 0;
      for (const auto& w : warm_) idle += w.ready ? 1 : 0;
      if (static_cast<int>(displays_.size()) + pending_creates_ + idle >= options_.max_displays) {
        return false;
      }
      for (auto& w : warm_) {
        if (!w.ready && !w.starting) {
          slot = &w;
          return true;
        }
      }
      return false;
    });
    if (shutting_down_) return;
    slot->starting = true;
    ++pending_creates_;
    const DisplayOptions o = slot->options;
    lock.unlock();
    auto started = start_display(o);
    lock.lock();
    --pending_creates_;
    slot->starting = false;
    idle_cv_.notify_all();
    if (shutting_down_) {
      lock.unlock();
      if (started.ok()) (*started)->teardown();
      return;
    }
    if (started.ok()) {
      const std::string name = (*started)->info().name;
      slot->ready = std::move(*started);
      warm_ready_cv_.notify_all();
      if (options_.on_warm_ready) {
        lock.unlock();
        options_.on_warm_ready(name, o);
        lock.lock();
      }
    } else {
      // A failing start (e.g. Xvfb missing) must not spin: retry later; normal creates still
      // work (and report the error themselves).
      warm_cv_.wait_for(lock, std::chrono::milliseconds(kWarmRetryMs),
                        [this] { return shutting_down_; });
      if (shutting_down_) return;
    }
  }
}

bool DisplayManager::wait_warm(std::int64_t timeout_ms) {
  std::unique_lock lock(mu_);
  return warm_ready_cv_.wait_for(lock, std::chrono::milliseconds(std::max<std::int64_t>(0, timeout_ms)),
                                 [this] {
                                   if (shutting_down_) return true;
                                   for (const auto& w : warm_) {
                                     if (!w.ready) return false;
                                   }
                                   return true;
                                 }) &&
         !shutting_down_;
}

int DisplayManager::warm_ready() {
  std::lock_guard lock(mu_);
  int n = 0;
  for (const auto& w : warm_) n += w.ready ? 1 : 0;
  return n;
}

Result<std::shared_ptr<OwnedDisplay>> DisplayManager::start_display(const DisplayOptions& o) {
  const std::int64_t t0 = steady_us();
  std::shared_ptr<OwnedDisplay> d(new OwnedDisplay());
  d->info_.generation = random_id("gen");
  d->info_.width = o.width;
  d->info_.height = o.height;
  d->info_.depth = o.depth;
  d->info_.dpi = o.dpi;
  auto fail = [&](const std::string& code, const std::string& message) -> Error {
    d->teardown();
    return make_error(code, message, code == "display-start-failed");
  };

  EVIDENT_TRY(make_private_dir(options_.runtime_dir));
  EVIDENT_TRY(make_private_dir(options_.runtime_dir + "/displays"));
  d->dir_ = options_.runtime_dir + "/displays/d-" + random_hex(8);
  if (auto st = make_private_dir(d->dir_); !st.ok()) {
    d->dir_.clear();
    return st.error();
  }
  // The server reads the auth file before it knows its number: a FamilyWild entry with no
  // address and no number matches any display for libXau.
  d->cookie_ = new_cookie();
  d->auth_file_ = d->dir_ + "/auth";
  // Written in place, without write_file_atomic's fsyncs (1-6 ms here): the file is scratch for
  // this boot only, in a directory we just created 0700, and Xvfb reads it only after the spawn.
  if (auto st = write_private_file(d->auth_file_,
                                   encode_xauth_entry(kFamilyWild, "", "", d->cookie_));
      !st.ok()) {
    return fail("display-start-failed", st.error().message);
  }
  auto exe = resolve_executable(options_.xvfb_path, path_env());
  if (!exe.ok()) return fail("display-start-failed", "Xvfb not found: install the xvfb package");

  const std::string log_path = d->dir_ + "/xvfb.log";
  Fd log(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  Fd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  int p[2];
  if (log.fd < 0 || devnull.fd < 0 || ::pipe2(p, O_CLOEXEC) != 0) {
    return fail("display-start-failed", std::string("cannot set up Xvfb's files: ") +
                                            std::strerror(errno));
  }
  Fd rd(p[0]), wr(p[1]);

  SpawnSpec spec;
  spec.path = *exe;
  spec.argv = {"Xvfb", "-displayfd", std::to_string(wr.fd), "-screen", "0",
               std::to_string(o.width) + "x" + std::to_string(o.height) + "x" +
                   std::to_string(o.depth),
               "-dpi", std::to_string(o.dpi), "-nolisten", "tcp", "-noreset", "-auth",
               d->auth_file_};
  spec.env = environment_with({});
  spec.stdin_fd = devnull.fd;
  spec.stdout_fd = log.fd;
  spec.stderr_fd = log.fd;
  spec.keep_fd = wr.fd;
  auto child = spawner_.spawn(spec);
  if (!child.ok()) return fail("display-start-failed", "cannot start Xvfb: " + child.error().message);
  d->xvfb_ = std::move(*child);
  d->info_.xvfb_pid = d->xvfb_->pid();
  wr.reset();  // so EOF on rd means the server closed (or died)
  // While Xvfb starts (~100 ms, on the other core), make and populate the capturer's shared
  // segment: the first frame then costs ~9 ms instead of 12-16 ms. 4 bytes per pixel covers
  // both depths. Without it (shmget refused) the capturer makes its own, as before.
  auto prepared = ShmSegment::create(static_cast<std::size_t>(o.width) * o.height * 4, true);

  // Xvfb writes "N\n" to the displayfd once it accepts connections.
  std::string number;
  const std::int64_t deadline = now_ms() + options_.start_timeout_ms;
  for (;;) {
    if (!number.empty() && number.back() == '\n') break;
    std::int64_t left = deadline - now_ms();
    if (left <= 0) return fail("display-start-failed", "Xvfb did not report a display number in time");
    pollfd fds[2] = {{rd.fd, POLLIN, 0}, {d->xvfb_->pidfd(), POLLIN, 0}};
    int r = ::poll(fds, d->xvfb_->pidfd() >= 0 ? 2 : 1, static_cast<int>(left));
    if (r < 0 && errno != EINTR) return fail("display-start-failed", "poll failed");
    if (fds[0].revents & (POLLIN | POLLHUP)) {
      char buf[32];
      ssize_t n = ::read(rd.fd, buf, sizeof buf);
      if (n > 0) {
        number.append(buf, static_cast<std::size_t>(n));
        if (number.size() > 16) return fail("display-start-failed", "bad -displayfd output");
        continue;
      }
      if (n == 0) {
        std::string why = last_line_of(log_path);
        return fail("display-start-failed",
                    "Xvfb exited before it was ready" + (why.empty() ? "" : ": " + why));
      }
    }
    if (r > 0 && (fds[1].revents & POLLIN) && !(fds[0].revents & POLLIN)) {
      std::string why = last_line_of(log_path);
      return fail("display-start-failed",
                  "Xvfb exited before it was ready" + (why.empty() ? "" : ": " + why));
    }
  }
  number.pop_back();
  char* end = nullptr;
  long n = std::strtol(number.c_str(), &end, 10);
  if (number.empty() || *end != '\0' || n < 0 || n > 65535) {
    return fail("display-start-failed", "bad -displayfd output");
  }
  d->info_.id = static_cast<int>(n);
  d->info_.name = ":" + std::to_string(n);

  auto conn = open_x_connection(d->info_.name, d->cookie_);
  if (!conn.ok()) return fail("display-start-failed", conn.error().message);
  d->dpy_ = *conn;
  if (auto st = make_ready(*d, prepared.ok() ? &*prepared : nullptr); !st.ok()) {
    return fail(st.error().code, st.error().message);
  }
  d->info_.ready_us = steady_us() - t0;
  return d;
}

Status DisplayManager::make_ready(OwnedDisplay& d, ShmSegment* prepared) {
  std::lock_guard lock(d.x_mutex_);
  ::Display* dpy = d.dpy_.load();
  int ev = 0, err = 0, major = 0, minor = 0;
  if (!XTestQueryExtension(dpy, &ev, &err, &major, &minor)) {
    return make_error("display-not-ready", "the X server lacks XTEST");
  }
  if (!XShmQueryExtension(dpy)) return make_error("display-not-ready", "the X server lacks MIT-SHM");
  if (!XDamageQueryExtension(dpy, &ev, &err)) {
    return make_error("display-not-ready", "the X server lacks DAMAGE");
  }
  // Xvfb compiles its keymap (xkbcomp) at start-up: input must not race it.
  XkbStateRec state{};
  if (XkbGetState(dpy, XkbUseCoreKbd, &state) != Success) {
    return make_error("display-not-ready", "the keyboard state (XKB) is not available");
  }
  int min_kc = 0, max_kc = 0;
  XDisplayKeycodes(dpy, &min_kc, &max_kc);
  int per = 0;
  KeySym* syms = XGetKeyboardMapping(dpy, static_cast<KeyCode>(min_kc), max_kc - min_kc + 1, &per);
  bool any = false;
  for (int i = 0; syms && i < (max_kc - min_kc + 1) * per; ++i) any = any || syms[i] != NoSymbol;
  if (syms) XFree(syms);
  if (!any) return make_error("display-not-ready", "the keymap is empty");

  const int screen = DefaultScreen(dpy);
  if (DisplayWidth(dpy, screen) != d.info_.width || DisplayHeight(dpy, screen) != d.info_.height) {
    return make_error("display-not-ready", "the screen has the wrong size");
  }
  CaptureOptions capture_options;
  capture_options.shm = prepared;
  auto capturer = Capturer::create(dpy, capture_options);
  if (!capturer.ok()) return capturer.error();
  // The first frame: the whole framebuffer read into the capturer's own buffer (its MIT-SHM
  // segment: the path every later frame takes). Converting it to RGB (grab) would prove nothing
  // more about the display and cost as much again: fresh pages fault at ~5 us each here.
  if (auto st = (*capturer)->fetch_frame(); !st.ok()) return st.error();
  auto watcher = ChangeWatcher::create(dpy);
  if (!watcher.ok()) return watcher.error();
  d.capturer_ = std::move(*capturer);
  d.watcher_ = std::move(*watcher);
  if (x_connection_dead(dpy)) return make_error("display-not-ready", "the X connection broke");
  return {};
}

Status DisplayManager::destroy(int id, const std::string& generation) {
  std::shared_ptr<OwnedDisplay> d;
  {
    std::lock_guard lock(mu_);
    auto it = displays_.find(id);
    if (it == displays_.end()) return not_found(id);
    if (!is_generation_token(generation) || it->second->info().generation != generation) {
      return generation_mismatch(id);
    }
    d = std::move(it->second);
    displays_.erase(it);
    warm_cv_.notify_all();  // room under max_displays for a refill
  }
  stop_apps_of(id, generation);
  d->teardown();
  return {};
}

std::vector<DisplayInfo> DisplayManager::list() {
  std::lock_guard lock(mu_);
  std::vector<DisplayInfo> out;
  for (const auto& [id, d] : displays_) out.push_back(d->info());
  return out;
}

Result<std::shared_ptr<OwnedDisplay>> DisplayManager::get(int id, const std::string& generation) {
  std::lock_guard lock(mu_);
  auto it = displays_.find(id);
  if (it == displays_.end()) return not_found(id);
  if (!is_generation_token(generation) || it->second->info().generation != generation) {
    return generation_mismatch(id);
  }
  return it->second;
}

Result<std::shared_ptr<OwnedDisplay>> DisplayManager::get_live(int id,
                                                              const std::string& generation) {
  auto d = get(id, generation);
  if (!d.ok()) return d.error();
  if (!(*d)->alive()) return display_dead_error();
  return d;
}

Result<DisplayStatus> DisplayManager::status(int id, const std::string& generation) {
  auto got = get(id, generation);
  if (!got.ok()) return got.error();
  OwnedDisplay& d = **got;
  DisplayStatus out;
  const std::string recreate = "destroy the display and create a new one";

  // authority: the private cookie file is intact.
  {
    StatusLayer l{"authority", "ready", "", ""};
    struct stat st{};
    if (::lstat(d.auth_file_.c_str(), &st) != 0) {
      l = {"authority", "blocked", "the auth file is missing", recreate};
    } else if (!S_ISREG(st.st_mode) || (st.st_mode & 0777) != 0600 || st.st_uid != ::geteuid()) {
      l = {"authority", "blocked", "the auth file is not a 0600 file of ours", recreate};
    } else {
      auto bytes = read_file(d.auth_file_, 4096);
      auto cookie = bytes.ok() ? decode_xauth_cookie(*bytes) : std::nullopt;
      if (!cookie || *cookie != d.cookie_) {
        l = {"authority", "blocked", "the auth file does not hold this display's cookie", recreate};
      } else {
        l.detail = "MIT-MAGIC-COOKIE-1 in a 0600 file";
      }
    }
    out.layers.push_back(l);
  }
  // x_connection: a NEW connection with the cookie opens and round-trips.
  {
    StatusLayer l{"x_connection", "ready", "", ""};
    auto c = d.open_connection();
    if (!c.ok()) {
      l = {"x_connection", "blocked", "a new connection with the cookie was refused or failed",
           recreate};
    } else {
      XSync(*c, False);
      bool dead = x_connection_dead(*c);
      close_x_connection(*c);
      if (dead) {
        l = {"x_connection", "blocked", "the server dropped the connection", recreate};
      } else {
        l.detail = "connected to " + d.info_.name + " and round-tripped";
      }
    }
    out.layers.push_back(l);
  }
  // target_display first: when our Xvfb is gone, the persistent connection must not be used.
  const bool running = d.xvfb_ && !d.xvfb_->exited();
  StatusLayer target{"target_display", "ready", "", ""};
  {
    bool current = false;
    {
      std::lock_guard lock(mu_);
      auto it = displays_.find(id);
      current = it != displays_.end() && it->second.get() == &d && !d.destroyed_.load();
    }
    if (!running) {
      target = {"target_display", "blocked", "the Xvfb process has exited", recreate};
    } else if (!current) {
      target = {"target_display", "blocked", "the display was destroyed", "create a new display"};
    } else {
      target.detail = "Xvfb pid " + std::to_string(d.info_.xvfb_pid) + " running, generation current";
    }
  }
  // capture and input_backend use the persistent connection.
  {
    std::lock_guard lock(d.x_mutex_);
    ::Display* dpy = d.dpy_.load();
    auto usable = [&] { return running && dpy != nullptr && !x_connection_dead(dpy); };
    StatusLayer cap{"capture", "unknown", "the display's connection is broken", recreate};
    StatusLayer in{"input_backend", "unknown", "the display's connection is broken", recreate};
    if (usable()) {
      if (!d.capturer_) {
        cap = {"capture", "blocked", "no capturer", recreate};
      } else {
        auto img = d.capturer_->grab();
        if (img.ok()) {
          cap = {"capture", "ready",
                 std::string(d.capturer_->using_shm() ? "MIT-SHM" : "XGetImage") + " capture of " +
                     std::to_string(img->width) + "x" + std::to_string(img->height),
                 ""};
        } else {
          cap = {"capture", "blocked", img.error().message, recreate};
        }
      }
    }
    if (usable()) {
      int ev = 0, err = 0, major = 0, minor = 0;
      if (XTestQueryExtension(dpy, &ev, &err, &major, &minor)) {
        in = {"input_backend", "ready",
              "XTEST " + std::to_string(major) + "." + std::to_string(minor), ""};
      } else {
        in = {"input_backend", "blocked", "the X server lacks XTEST", recreate};
      }
    }
    out.layers.push_back(cap);
    out.layers.push_back(in);
  }
  out.layers.push_back(target);
  out.ready = std::all_of(out.layers.begin(), out.layers.end(),
                          [](const StatusLayer& l) { return l.state == "ready"; });
  return out;
}

// ------------------------------------------------------------------------------------- apps

AppInfo DisplayManager::snapshot(App& app) {
  AppInfo info = app.info;
  info.exit_status = app.child->exit_status();
  info.alive = !info.exit_status.has_value();
  return info;
}

namespace {

Status validate_argv(const std::vector<std::string>& argv) {
  if (argv.empty() || argv.size() > 256) return make_error("app-args", "argv must have 1..256 items");
  std::size_t total = 0;
  for (const auto& a : argv) {
    if (a.size() > 4096) return make_error("app-args", "an argv item is longer than 4096 bytes");
    if (a.find('\0') != std::string::npos) {
      return make_error("app-args", "an argv item contains a NUL byte");
    }
    total += a.size();
  }
  if (argv[0].empty()) return make_error("app-args", "the command is empty");
  if (total > 64 * 1024) return make_error("app-args", "argv is larger than 64 KiB");
  return {};
}


}  // namespace

Status validate_launch_options(const LaunchOptions& o) {
  if (o.env.size() > LaunchOptions::kMaxEnvEntries) {
    return make_error("app-args", "env has more than " + std::to_string(LaunchOptions::kMaxEnvEntries) +
                                      " entries");
  }
  std::size_t total = 0;
  std::set<std::string> names;
  for (std::size_t i = 0; i < o.env.size(); ++i) {
    const std::string& e = o.env[i];
    const std::string which = "env entry " + std::to_string(i + 1);
    total += e.size();
    if (e.find('\0') != std::string::npos) return make_error("app-args", which + " contains a NUL byte");
    const auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0 || eq > 256) {
      return make_error("app-args", which + " is not KEY=VALUE with a 1..256 byte KEY");
    }
    const std::string key = e.substr(0, eq);
    const auto c0 = static_cast<unsigned char>(key[0]);
    bool valid = std::isalpha(c0) || c0 == '_';
    for (unsigned char c : key) valid = valid && (std::isalnum(c) || c == '_');
    if (!valid) return make_error("app-args", which + ": KEY must match [A-Za-z_][A-Za-z0-9_]*");
    if (key == "DISPLAY" || key == "XAUTHORITY") {
      return make_error("app-args", which + ": DISPLAY and XAUTHORITY are set by evident to the "
                                            "display's own values and cannot be overridden");
    }
    if (!names.insert(key).second) return make_error("app-args", which + " repeats an earlier KEY");
  }
  if (total > LaunchOptions::kMaxEnvBytes) {
    return make_error("app-args", "env is larger than " + std::to_string(LaunchOptions::kMaxEnvBytes) +
                                      " bytes");
  }
  if (!o.cwd.empty()) {
    if (o.cwd.size() > LaunchOptions::kMaxCwdBytes || o.cwd[0] != '/' ||
        o.cwd.find('\0') != std::string::npos) {
      return make_error("app-args", "cwd must be an absolute path of at most " +
                                        std::to_string(LaunchOptions::kMaxCwdBytes) + " bytes");
    }
    struct stat st{};
    if (::stat(o.cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return make_error("app-args", "cwd is not an existing directory");
    }
  }
  return {};
}

Result<AppInfo> DisplayManager::launch_app(int display_id, const std::string& generation,
                                           const std::vector<std::string>& argv,
                                           std::int64_t wait_window_ms) {
  LaunchOptions o;
  o.wait_window_ms = wait_window_ms;
  return launch_app(display_id, generation, argv, o);
}

Result<AppInfo> DisplayManager::launch_app(int display_id, const std::string& generation,
                                           const std::vector<std::string>& argv,
                                           const LaunchOptions& launch) {
  const std::int64_t wait_window_ms = launch.wait_window_ms;
  EVIDENT_TRY(validate_argv(argv));
  EVIDENT_TRY(validate_launch_options(launch));
  if (wait_window_ms < 0 || wait_window_ms > kMaxWaitWindowMs) {
    return make_error("app-args", "wait_window_ms must be in 0.." + std::to_string(kMaxWaitWindowMs));
  }
  auto got = get_live(display_id, generation);
  if (!got.ok()) return got.error();
  std::shared_ptr<OwnedDisplay> d = *got;
  {
    std::lock_guard lock(mu_);
    if (shutting_down_) return shutting_down();
    if (static_cast<int>(apps_.size()) >= options_.max_apps) {
      return make_error("app-limit", "at most " + std::to_string(options_.max_apps) +
                                         " apps per engine; stop one first", true);
    }
  }
  // A relative path with a '/' ("./run.sh") is relative to the app's working directory.
  const std::string command =
      (!launch.cwd.empty() && argv[0][0] != '/' && argv[0].find('/') != std::string::npos)
          ? launch.cwd + "/" + argv[0]
          : argv[0];
  auto exe = resolve_executable(command, path_env());
  if (!exe.ok()) {
    // The command is request content: never echoed (docs/errors.md).
    return make_error("app-launch-failed", "cannot launch the command (argv[0]): " +
                                               exe.error().message);
  }

  auto app = std::make_shared<App>();
  app->info.app_id = random_id("app");
  app->info.display_id = display_id;
  app->info.generation = generation;
  app->info.argv_sha256 = argv_sha256(argv);
  EVIDENT_TRY(make_private_dir(options_.runtime_dir));
  EVIDENT_TRY(make_private_dir(options_.runtime_dir + "/apps"));
  app->info.log_path = options_.runtime_dir + "/apps/" + app->info.app_id + ".log";
  Fd log(::open(app->info.log_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC,
                0600));
  Fd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (log.fd < 0 || devnull.fd < 0) {
    return make_error("app-launch-failed", std::string("cannot create the app's log: ") +
                                               std::strerror(errno));
  }

  // For --wait-window-ms: watch root's children from BEFORE the spawn, so no map is missed.
  ::Display* watch = nullptr;
  std::optional<WindowWaiter> waiter;
  if (wait_window_ms > 0) {
    auto c = d->open_connection();
    if (!c.ok()) return display_dead_error();
    watch = *c;
    auto w = WindowWaiter::start(watch);
    if (!w.ok()) {
      close_x_connection(watch);
      return w.error();
    }
    waiter.emplace(std::move(*w));
  }
  struct WatchCloser {
    ::Display*& w;
    ~WatchCloser() { close_x_connection(w); }
  } closer{watch};

  SpawnSpec spec;
  spec.path = *exe;
  spec.argv = argv;
  std::vector<std::string> overrides = launch.env;
  overrides.push_back("DISPLAY=" + d->info().name);
  overrides.push_back("XAUTHORITY=" + d->auth_file());
  spec.env = environment_with(overrides);
  spec.cwd = launch.cwd;
  spec.stdin_fd = devnull.fd;
  spec.stdout_fd = log.fd;
  spec.stderr_fd = log.fd;
  auto child = spawner_.spawn(spec);
  if (!child.ok()) {
    return make_error("app-launch-failed",
                      "cannot launch the command (argv[0]): " + child.error().message);
  }
  app->child = std::move(*child);
  app->info.pid = app->child->pid();
  {
    std::lock_guard lock(mu_);
    if (shutting_down_) {
      app->child->stop(kAppStopBoundMs);
      return shutting_down();
    }
    apps_[app->info.app_id] = app;
  }
  auto forget = [&] {
    std::lock_guard lock(mu_);
    apps_.erase(app->info.app_id);
  };
  auto exited_error = [&](int status) {
    return make_error("app-exited", "the app exited at once with status " + std::to_string(status) +
                                        " (its output is in " + app->info.log_path + ")");
  };

  if (wait_window_ms <= 0) {
    if (app->child->wait_exit(kAppEarlyExitGraceMs)) {
      forget();
      return exited_error(app->child->reap());
    }
    return snapshot(*app);
  }

  const std::int64_t deadline_us = steady_us() + wait_window_ms * 1000;
  // The app's whole process tree: `sh -c "zenity ...; echo done"` maps zenity's window, a child
  // of the launched pid (docs/windows.md, "Which windows belong to an app").
  WindowMatch match;
  match.pid_tree = app->info.pid;
  WindowWaiter::Scan scan;
  for (;;) {
    if (waiter->find(match, true, &scan)) return snapshot(*app);
    if (x_connection_dead(watch)) {
      forget();
      app->child->stop(kAppStopBoundMs);
      return display_dead_error();
    }
    if (app->child->exited()) {
      forget();
      return exited_error(app->child->reap());
    }
    const auto wake = waiter->wait(deadline_us, app->child->pidfd());
    if (wake == WindowWaiter::Wake::kTimeout) {
      if (waiter->find(match, true, &scan)) return snapshot(*app);
      forget();
      app->child->stop(kAppStopBoundMs);
      return make_error("app-window-timeout",
                        "waited " + std::to_string(wait_window_ms) + " ms for " +
                            describe_match(match) + ", created after the launch; saw " +
                            describe_scan(scan, true) + ". The app was stopped", true);
    }
  }
}

Result<int> DisplayManager::stop_app(const std::string& app_id) {
  std::shared_ptr<App> app;
  {
    std::lock_guard lock(mu_);
    auto it = apps_.find(app_id);
    if (it == apps_.end()) {
      return make_error("app-not-found", "no app with that id is owned by this engine");
    }
    app = it->second;
    apps_.erase(it);
  }
  return app->child->stop(kAppStopBoundMs);
}

std::vector<AppInfo> DisplayManager::list_apps() {
  std::vector<std::shared_ptr<App>> apps;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, a] : apps_) apps.push_back(a);
  }
  std::vector<AppInfo> out;
  for (auto& a : apps) out.push_back(snapshot(*a));
  return out;
}

Result<AppInfo> DisplayManager::app(const std::string& app_id) {
  std::shared_ptr<App> a;
  {
    std::lock_guard lock(mu_);
    auto it = apps_.find(app_id);
    if (it == apps_.end()) {
      return make_error("app-not-found", "no app with that id is owned by this engine");
    }
    a = it->second;
  }
  return snapshot(*a);
}

bool DisplayManager::app_alive(const std::string& app_id) {
  auto a = app(app_id);
  return a.ok() && a->alive;
}

namespace {

// TERM every group at once, then one shared bound, then KILL+reap the rest.
template <class Apps>
void stop_all(Apps& apps, std::int64_t bound_ms) {
  for (auto& a : apps) a->child->signal_group(SIGTERM);
  const std::int64_t deadline = now_ms() + bound_ms;
  for (auto& a : apps) a->child->wait_exit(std::max<std::int64_t>(0, deadline - now_ms()));
  for (auto& a : apps) a->child->reap();
}

}  // namespace

void DisplayManager::stop_apps_of(int display_id, const std::string& generation) {
  std::vector<std::shared_ptr<App>> victims;
  {
    std::lock_guard lock(mu_);
    for (auto it = apps_.begin(); it != apps_.end();) {
      if (it->second->info.display_id == display_id && it->second->info.generation == generation) {
        victims.push_back(it->second);
        it = apps_.erase(it);
      } else {
        ++it;
      }
    }
  }
  stop_all(victims, kAppStopBoundMs);
}

void DisplayManager::destroy_all() {
  std::vector<std::shared_ptr<App>> apps;
  std::thread warm_thread;
  {
    std::lock_guard lock(mu_);
    shutting_down_ = true;
    for (auto& [id, a] : apps_) apps.push_back(a);
    apps_.clear();
    warm_thread = std::move(warm_thread_);
    warm_cv_.notify_all();
    warm_ready_cv_.notify_all();
  }
  // Stopping apps first also wakes launches that wait for a window.
  stop_all(apps, kAppStopBoundMs);
  // The refill thread finishes (and tears down) a start in progress, then exits.
  if (warm_thread.joinable()) warm_thread.join();
  std::map<int, std::shared_ptr<OwnedDisplay>> displays;
  std::vector<std::shared_ptr<OwnedDisplay>> idle;
  {
    std::unique_lock lock(mu_);
    idle_cv_.wait(lock, [this] { return pending_creates_ == 0; });
    displays.swap(displays_);
    for (auto& w : warm_) {
      if (w.ready) idle.push_back(std::move(w.ready));
      w.ready.reset();
    }
    for (auto& [id, a] : apps_) apps.push_back(a);
    apps_.clear();
  }
  stop_all(apps, kAppStopBoundMs);
  for (auto& d : idle) d->teardown();
  for (auto& [id, d] : displays) d->teardown();
}

}  // namespace evident
