// A display's private accessibility stack (docs/accessibility.md, "The stack"): a D-Bus session
// bus, an AT-SPI bus and at-spi2-registryd, each a child of the engine (own process group,
// PR_SET_PDEATHSIG), started once the display is ready and stopped with it.
#include "evident/display/display.h"

#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <dbus/dbus.h>
#include <poll.h>

// Xlib defines Status as a macro (int); ours is evident::Status.
#undef Status

#include "evident/core/markup.h"
#include "evident/display/x11.h"
#include "display_internal.h"

namespace evident {

using namespace display_detail;

std::vector<std::string> AccessibilityBus::app_env() const {
  return {
      "DBUS_SESSION_BUS_ADDRESS=" + session_address,
      "AT_SPI_BUS_ADDRESS=" + a11y_address,
      // GTK 3 loads its AT-SPI bridge unless NO_AT_BRIDGE is non-zero; GTK 2's gail wants
      // GNOME_ACCESSIBILITY; Qt 5 needs QT_ACCESSIBILITY (and, with no desktop telling it a screen
      // reader runs, QT_LINUX_ACCESSIBILITY_ALWAYS_ON); Chromium reads ACCESSIBILITY_ENABLED.
      "NO_AT_BRIDGE=0",
      "GNOME_ACCESSIBILITY=1",
      "QT_ACCESSIBILITY=1",
      "QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1",
      "ACCESSIBILITY_ENABLED=1",
  };
}

std::optional<AccessibilityBus> OwnedDisplay::accessibility_bus() {
  std::lock_guard lock(a11y_mu_);
  return a11y_;
}

bool OwnedDisplay::accessibility_alive() {
  std::lock_guard lock(a11y_mu_);
  if (!a11y_ || a11y_children_.empty()) return false;
  for (auto& c : a11y_children_) {
    if (!c || c->exited()) return false;
  }
  return true;
}

namespace {

// D-Bus address values: bytes outside [-0-9A-Za-z_/.\*] are %-escaped (D-Bus spec, "Addresses").
std::string dbus_escape(const std::string& s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '/' || c == '.' || c == '\\' || c == '*') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

// A bus of our own: listens on one socket in the display's private directory, only our uid
// may connect (EXTERNAL auth, the default user policy), no service directories (nothing is ever
// activated behind our back), everything allowed between its clients.
std::string bus_config(const std::string& type, const std::string& socket_path) {
  return "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
         " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
         "<busconfig>\n"
         "  <type>" + type + "</type>\n"
         "  <listen>unix:path=" + xml_escape(dbus_escape(socket_path)) + "</listen>\n"
         "  <auth>EXTERNAL</auth>\n"
         "  <policy context=\"default\">\n"
         "    <allow send_destination=\"*\" eavesdrop=\"true\"/>\n"
         "    <allow eavesdrop=\"true\"/>\n"
         "    <allow own=\"*\"/>\n"
         "  </policy>\n"
         // A tree read sends every call of a level at once (docs/accessibility.md): the
         // default 128 pending replies per connection would refuse most of them.
         "  <limit name=\"max_replies_per_connection\">50000</limit>\n"
         "  <limit name=\"max_match_rules_per_connection\">50000</limit>\n"
         "  <limit name=\"max_message_size\">134217728</limit>\n"
         "</busconfig>\n";
}

Error start_failed(const std::string& what) {
  return make_error("accessibility-start-failed",
                    "the display's accessibility stack did not start: " + what);
}

// Starts one dbus-daemon with `config` and returns its address (from --print-address), within
// the deadline; an exit before it is reported at once.
Result<std::string> start_bus(Spawner& spawner, const std::string& exe, const std::string& config,
                              const std::string& log_path, std::int64_t deadline_ms,
                              std::vector<std::unique_ptr<Child>>& children) {
  Fd log(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  Fd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  int p[2];
  if (log.fd < 0 || devnull.fd < 0 || ::pipe2(p, O_CLOEXEC) != 0) {
    return start_failed(std::string("cannot set up its files: ") + std::strerror(errno));
  }
  Fd rd(p[0]), wr(p[1]);
  SpawnSpec spec;
  spec.path = exe;
  spec.argv = {"dbus-daemon", "--config-file=" + config, "--nofork", "--nopidfile",
               "--nosyslog", "--print-address=" + std::to_string(wr.fd)};
  spec.env = environment_with({});
  spec.stdin_fd = devnull.fd;
  spec.stdout_fd = log.fd;
  spec.stderr_fd = log.fd;
  spec.keep_fd = wr.fd;
  auto child = spawner.spawn(spec);
  if (!child.ok()) return start_failed("cannot start dbus-daemon: " + child.error().message);
  Child& c = **child;
  children.push_back(std::move(*child));
  wr.reset();
  std::string line;
  for (;;) {
    if (!line.empty() && line.back() == '\n') break;
    const std::int64_t left = deadline_ms - now_ms();
    if (left <= 0) return start_failed("dbus-daemon did not report its address in time");
    pollfd fds[2] = {{rd.fd, POLLIN, 0}, {c.pidfd(), POLLIN, 0}};
    const int r = ::poll(fds, c.pidfd() >= 0 ? 2 : 1, static_cast<int>(left));
    if (r < 0 && errno != EINTR) return start_failed("poll failed");
    if (fds[0].revents & (POLLIN | POLLHUP)) {
      char buf[512];
      const ssize_t n = ::read(rd.fd, buf, sizeof buf);
      if (n > 0) {
        line.append(buf, static_cast<std::size_t>(n));
        if (line.size() > 4096) return start_failed("dbus-daemon printed an overlong address");
        continue;
      }
      if (n == 0) {
        const std::string why = last_line_of(log_path);
        return start_failed("dbus-daemon exited before it was ready" + (why.empty() ? "" : ": " + why));
      }
    }
    if (r > 0 && (fds[1].revents & POLLIN) && !(fds[0].revents & POLLIN)) {
      const std::string why = last_line_of(log_path);
      return start_failed("dbus-daemon exited before it was ready" + (why.empty() ? "" : ": " + why));
    }
  }
  line.pop_back();
  if (line.rfind("unix:", 0) != 0) return start_failed("dbus-daemon printed an unexpected address");
  return line;
}

struct DBusConn {
  DBusConnection* c = nullptr;
  ~DBusConn() {
    if (c) {
      dbus_connection_close(c);
      dbus_connection_unref(c);
    }
  }
};

// Waits until `name` has an owner on the bus at `address` (NameOwnerChanged, no polling), or the
// child exits, or the deadline passes.
Status wait_for_name(const std::string& address, const char* name, Child& child,
                     std::int64_t deadline_ms) {
  DBusError err;
  dbus_error_init(&err);
  DBusConn conn;
  conn.c = dbus_connection_open_private(address.c_str(), &err);
  if (!conn.c) {
    dbus_error_free(&err);
    return start_failed("cannot connect to the AT-SPI bus");
  }
  dbus_connection_set_exit_on_disconnect(conn.c, FALSE);
  // Both calls below go to our own, just-started bus (libdbus's default reply bound).
  if (!dbus_bus_register(conn.c, &err)) {
    dbus_error_free(&err);
    return start_failed("cannot register on the AT-SPI bus");
  }
  const std::string rule = std::string("type='signal',sender='org.freedesktop.DBus',"
                                       "interface='org.freedesktop.DBus',member='NameOwnerChanged',"
                                       "arg0='") + name + "'";
  dbus_bus_add_match(conn.c, rule.c_str(), &err);
  if (dbus_error_is_set(&err)) {
    dbus_error_free(&err);
    return start_failed("cannot watch the AT-SPI bus");
  }
  if (dbus_bus_name_has_owner(conn.c, name, &err)) return {};
  dbus_error_free(&err);
  int fd = -1;
  if (!dbus_connection_get_unix_fd(conn.c, &fd)) return start_failed("no AT-SPI bus socket");
  for (;;) {
    while (DBusMessage* m = dbus_connection_pop_message(conn.c)) {
      bool owned = false;
      if (dbus_message_is_signal(m, "org.freedesktop.DBus", "NameOwnerChanged")) {
        const char *n = nullptr, *old_owner = nullptr, *new_owner = nullptr;
        DBusError e;
        dbus_error_init(&e);
        if (dbus_message_get_args(m, &e, DBUS_TYPE_STRING, &n, DBUS_TYPE_STRING, &old_owner,
                                  DBUS_TYPE_STRING, &new_owner, DBUS_TYPE_INVALID)) {
          owned = std::strcmp(n, name) == 0 && new_owner[0] != '\0';
        }
        dbus_error_free(&e);
      }
      dbus_message_unref(m);
      if (owned) return {};
    }
    if (!dbus_connection_get_is_connected(conn.c)) return start_failed("the AT-SPI bus went away");
    const std::int64_t left = deadline_ms - now_ms();
    if (left <= 0) return start_failed("at-spi2-registryd did not take its bus name in time");
    pollfd fds[2] = {{fd, POLLIN, 0}, {child.pidfd(), POLLIN, 0}};
    const int r = ::poll(fds, child.pidfd() >= 0 ? 2 : 1, static_cast<int>(left));
    if (r < 0 && errno != EINTR) return start_failed("poll failed");
    if (r > 0 && (fds[1].revents & POLLIN)) return start_failed("at-spi2-registryd exited at once");
    dbus_connection_read_write(conn.c, 0);
  }
}

Result<std::string> find_registryd() {
  for (const char* p : {"/usr/libexec/at-spi2-registryd", "/usr/lib/at-spi2-core/at-spi2-registryd",
                        "/usr/lib/at-spi2/at-spi2-registryd"}) {
    if (::access(p, X_OK) == 0) return std::string(p);
  }
  return start_failed("at-spi2-registryd not found: install the at-spi2-core package");
}

}  // namespace

Status DisplayManager::start_accessibility(OwnedDisplay& d) {
  const std::int64_t deadline = now_ms() + kAccessibilityStartBoundMs;
  auto dbus = resolve_executable("dbus-daemon", path_env());
  if (!dbus.ok()) return start_failed("dbus-daemon not found: install the dbus-daemon package");
  auto registryd = find_registryd();
  if (!registryd.ok()) return registryd.error();
  const std::string session_socket = d.dir_ + "/session-bus";
  const std::string a11y_socket = d.dir_ + "/a11y-bus";
  if (a11y_socket.size() >= 100) {
    return start_failed("the runtime directory's path is too long for a socket");
  }
  const std::string log_path = d.dir_ + "/accessibility.log";
  for (const auto& [type, socket] : {std::pair<std::string, std::string>{"session", session_socket},
                                     {"accessibility", a11y_socket}}) {
    if (auto st = write_private_file(d.dir_ + "/" + type + "-bus.conf", bus_config(type, socket));
        !st.ok()) {
      return start_failed(st.error().message);
    }
  }
  std::vector<std::unique_ptr<Child>> children;
  auto stop_children = [&] {
    for (auto& c : children) c->signal_group(SIGTERM);
    const std::int64_t until = now_ms() + kAccessibilityStopBoundMs;
    for (auto& c : children) c->wait_exit(std::max<std::int64_t>(0, until - now_ms()));
    for (auto& c : children) c->reap();
  };
  AccessibilityBus bus;
  auto session = start_bus(spawner_, *dbus, d.dir_ + "/session-bus.conf", log_path, deadline, children);
  if (!session.ok()) {
    stop_children();
    return session.error();
  }
  bus.session_address = *session;
  bus.session_pid = children.back()->pid();
  auto a11y = start_bus(spawner_, *dbus, d.dir_ + "/accessibility-bus.conf", log_path, deadline,
                        children);
  if (!a11y.ok()) {
    stop_children();
    return a11y.error();
  }
  bus.a11y_address = *a11y;
  bus.a11y_pid = children.back()->pid();

  Fd log(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  Fd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (log.fd < 0 || devnull.fd < 0) {
    stop_children();
    return start_failed(std::string("cannot open its log: ") + std::strerror(errno));
  }
  SpawnSpec spec;
  spec.path = *registryd;
  spec.argv = {"at-spi2-registryd"};
  spec.env = environment_with({"DISPLAY=" + d.info().name, "XAUTHORITY=" + d.auth_file(),
                               "AT_SPI_BUS_ADDRESS=" + bus.a11y_address,
                               "DBUS_SESSION_BUS_ADDRESS=" + bus.session_address});
  spec.stdin_fd = devnull.fd;
  spec.stdout_fd = log.fd;
  spec.stderr_fd = log.fd;
  auto reg = spawner_.spawn(spec);
  if (!reg.ok()) {
    stop_children();
    return start_failed("cannot start at-spi2-registryd: " + reg.error().message);
  }
  children.push_back(std::move(*reg));
  bus.registry_pid = children.back()->pid();
  if (auto st = wait_for_name(bus.a11y_address, "org.a11y.atspi.Registry", *children.back(), deadline);
      !st.ok()) {
    stop_children();
    return st.error();
  }

  // Toolkits that do not read AT_SPI_BUS_ADDRESS (Qt 5) find the bus on the root window, as
  // at-spi-bus-launcher would publish it.
  {
    std::lock_guard lock(d.x_mutex_);
    ::Display* dpy = d.dpy_.load();
    if (!dpy || x_connection_dead(dpy)) {
      stop_children();
      return display_dead_error();
    }
    const Atom prop = XInternAtom(dpy, "AT_SPI_BUS", False);
    XChangeProperty(dpy, DefaultRootWindow(dpy), prop, XA_STRING, 8, PropModeReplace,
                    reinterpret_cast<const unsigned char*>(bus.a11y_address.data()),
                    static_cast<int>(bus.a11y_address.size()));
    XSync(dpy, False);
  }
  std::lock_guard lock(d.a11y_mu_);
  d.a11y_ = std::move(bus);
  d.a11y_children_ = std::move(children);
  return {};
}

}  // namespace evident
