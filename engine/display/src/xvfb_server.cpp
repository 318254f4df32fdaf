// Starting an Xvfb server with -displayfd and its readiness (docs/displays.md, "Starting a display").
#include "evident/display/display.h"

#include <X11/XKBlib.h>
#include <X11/Xlib-xcb.h>
#include <X11/Xlib.h>
#include <poll.h>
#include <xcb/xcb.h>

#include <cstdlib>
#include <cstring>

// Xlib defines Status as a macro (int); ours is evident::Status.
#undef Status

#include "evident/core/random.h"
#include "evident/display/x11.h"
#include "display_internal.h"

namespace evident {

using namespace display_detail;

Result<std::shared_ptr<OwnedDisplay>> DisplayManager::start_display(const DisplayOptions& o) {
  const std::int64_t t0 = steady_us();
  std::shared_ptr<OwnedDisplay> d(new OwnedDisplay());
  d->info_.generation = random_id("gen");
  d->info_.width = o.width;
  d->info_.height = o.height;
  d->info_.depth = o.depth;
  d->info_.dpi = o.dpi;
  // `depends`: the answer for a "depends" code (make_error); the readiness step passes its own.
  auto fail = [&](const std::string& code, const std::string& message, bool depends = false) -> Error {
    d->teardown();
    return make_error(code, message, depends);
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
  // While Xvfb starts (~100 ms, on the other core): the readiness step's preparation (the
  // service's capture populates its shared segment here; docs/displays.md).
  std::shared_ptr<void> prepared = options_.readiness ? options_.readiness->prepare(o) : nullptr;

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
  if (auto st = make_ready(*d, prepared); !st.ok()) {
    return fail(st.error().code, st.error().message, st.error().retryable);
  }
  d->info_.ready_us = steady_us() - t0;
  return d;
}

Status DisplayManager::make_ready(OwnedDisplay& d, std::shared_ptr<void> prepared) {
  std::lock_guard lock(d.x_mutex_);
  ::Display* dpy = d.dpy_.load();
  // One round trip for every check: the extensions' presence and the keymap are asked together
  // on the connection's XCB side and their replies read after (each Xlib call would be a round
  // trip of its own; an extension's client library is initialised by its first real user).
  xcb_connection_t* c = XGetXCBConnection(dpy);
  if (c == nullptr || xcb_connection_has_error(c) != 0) {
    return make_error("display-not-ready", "the X connection broke");
  }
  const char* const needed[] = {"XTEST", "MIT-SHM", "DAMAGE"};
  xcb_query_extension_cookie_t ext[3];
  for (int i = 0; i < 3; ++i) {
    ext[i] = xcb_query_extension(c, static_cast<std::uint16_t>(std::strlen(needed[i])), needed[i]);
  }
  const xcb_setup_t* setup = xcb_get_setup(c);
  const xcb_get_keyboard_mapping_cookie_t keymap_cookie = xcb_get_keyboard_mapping(
      c, setup->min_keycode, static_cast<std::uint8_t>(setup->max_keycode - setup->min_keycode + 1));
  bool present[3] = {false, false, false};
  for (int i = 0; i < 3; ++i) {
    xcb_query_extension_reply_t* r = xcb_query_extension_reply(c, ext[i], nullptr);
    present[i] = r != nullptr && r->present != 0;
    std::free(r);
  }
  xcb_get_keyboard_mapping_reply_t* keymap = xcb_get_keyboard_mapping_reply(c, keymap_cookie, nullptr);
  bool any_key = false;
  if (keymap != nullptr) {
    const xcb_keysym_t* syms = xcb_get_keyboard_mapping_keysyms(keymap);
    const int n = xcb_get_keyboard_mapping_keysyms_length(keymap);
    for (int i = 0; i < n && !any_key; ++i) any_key = syms[i] != XCB_NO_SYMBOL;
    std::free(keymap);
  }
  for (int i = 0; i < 3; ++i) {
    if (!present[i]) return make_error("display-not-ready", std::string("the X server lacks ") + needed[i]);
  }
  // XKB: Xlib enabled it when the connection opened (its answer is kept; no request here).
  int xkb_opcode = 0, xkb_ev = 0, xkb_err = 0, xkb_major = XkbMajorVersion, xkb_minor = XkbMinorVersion;
  if (!XkbQueryExtension(dpy, &xkb_opcode, &xkb_ev, &xkb_err, &xkb_major, &xkb_minor)) {
    return make_error("display-not-ready", "the keyboard state (XKB) is not available");
  }
  // Xvfb compiles its keymap (xkbcomp) at start-up: input must not race it.
  if (!any_key) return make_error("display-not-ready", "the keymap is empty");

  const int screen = DefaultScreen(dpy);
  if (DisplayWidth(dpy, screen) != d.info_.width || DisplayHeight(dpy, screen) != d.info_.height) {
    return make_error("display-not-ready", "the screen has the wrong size");
  }
  // The higher layer's part (the service: a capturer, its first full frame, a change watcher).
  if (options_.readiness) {
    auto extension = options_.readiness->attach(dpy, std::move(prepared));
    if (!extension.ok()) return extension.error();
    d.extension_ = std::move(*extension);
  }
  if (x_connection_dead(dpy)) return make_error("display-not-ready", "the X connection broke");
  return {};
}

}  // namespace evident
