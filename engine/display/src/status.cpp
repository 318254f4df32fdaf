// `display status`: the readiness layers, probed fresh on every call.
#include "evident/display/display.h"

#include <X11/Xlib.h>
#include <X11/extensions/XTest.h>
#include <sys/stat.h>

// Xlib defines Status as a macro (int); ours is evident::Status.
#undef Status

#include "evident/display/x11.h"
#include "display_internal.h"

namespace evident {

using namespace display_detail;

Result<DisplayStatus> DisplayManager::status(int id, const std::string& generation) {
  auto got = get(id, generation);
  if (!got.ok()) return got.error();
  OwnedDisplay& d = **got;
  DisplayStatus out;
  {
    auto c = d.open_connection();
    if (c.ok()) {
      out.keyboard_layout = read_keyboard_layout(*c);
      close_x_connection(*c);
    }
  }
  if (auto keeper = d.keeper()) out.window_keeper = keeper->counters();
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
  // The same test as alive(): a status taken after alive() said false never says running.
  const bool running = d.server_running();
  StatusLayer target{"target_display", "ready", "", ""};
  {
    bool current = false;
    {
      std::lock_guard lock(mu_);
      auto it = displays_.find(id);
      current = it != displays_.end() && it->second.get() == &d && !d.destroyed_.load();
    }
    if (!current) {
      target = {"target_display", "blocked", "the display was destroyed", "create a new display"};
    } else if (!running) {
      target = {"target_display", "blocked", "the Xvfb process has exited or shut its connections",
                recreate};
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
      if (!d.extension_ || !options_.readiness) {
        cap = {"capture", "blocked", "no capturer", recreate};
      } else {
        cap = options_.readiness->probe(*d.extension_, recreate);
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
  // Only a display created with accessibility has this layer (docs/accessibility.md).
  if (auto bus = d.accessibility_bus()) {
    if (d.accessibility_alive()) {
      out.layers.push_back({"accessibility", "ready",
                            "session bus pid " + std::to_string(bus->session_pid) +
                                ", AT-SPI bus pid " + std::to_string(bus->a11y_pid) +
                                ", at-spi2-registryd pid " + std::to_string(bus->registry_pid) +
                                " running",
                            ""});
    } else {
      out.layers.push_back({"accessibility", "blocked",
                            "a process of the display's accessibility stack has exited", recreate});
    }
  }
  out.ready = std::all_of(out.layers.begin(), out.layers.end(),
                          [](const StatusLayer& l) { return l.state == "ready"; });
  return out;
}

}  // namespace evident
