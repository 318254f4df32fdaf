// Test support: a private Xvfb started by the test itself (-displayfd, so the server picks a free
// number atomically; its own MIT-MAGIC-COOKIE-1 file; -nolisten tcp; -noreset), dying with the
// test process, plus Xlib connections to it. Also a "foreign" X server and client for the tests
// that prove evident never touches what it did not create.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "evident/core/fs.h"
#include "evident/core/random.h"
#include "evident/testing/files.h"
#include "evident/testing/process.h"

#include <X11/Xlib.h>  // after evident headers: Xlib #defines Status
#undef Status

namespace evident::testing {

struct XvfbOptions {
  std::string screen = "1280x800x24";  // -screen 0 <screen>; empty: Xvfb's default screen
  std::vector<std::string> extra_args;   // e.g. {"-extension", "MIT-SHM"}
  std::string auth_file;  // empty: a fresh random cookie file in dir()
  int start_timeout_ms = 20000;
};

// Throws std::runtime_error when the server does not come up (no test runs against a
// display it did not start).
class Xvfb {
 public:
  explicit Xvfb(const std::string& screen = "1280x800x24", std::vector<std::string> extra_args = {})
      : Xvfb(options(screen, std::move(extra_args))) {}
  explicit Xvfb(const XvfbOptions& o) {
    dir_ = make_temp_dir();
    if (dir_.empty()) throw std::runtime_error("Xvfb: private dir");
    auth_ = o.auth_file;
    if (auth_.empty()) {
      auth_ = dir_ + "/auth";
      write_cookie_file(auth_);
    }
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("Xvfb: pipe");
    std::vector<std::string> args = {"Xvfb", "-displayfd", std::to_string(fds[1]), "-nolisten", "tcp",
                                     "-noreset", "-auth", auth_};
    if (!o.screen.empty()) args.insert(args.end(), {"-screen", "0", o.screen});
    args.insert(args.end(), o.extra_args.begin(), o.extra_args.end());
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      ::fcntl(fds[1], F_SETFD, 0);  // the write end must survive exec
      const int devnull = ::open("/dev/null", O_RDWR);
      ::dup2(devnull, 0);
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execvp("Xvfb", argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    // Xvfb writes the display number once it accepts connections.
    std::string number;
    const auto deadline = now_ms() + o.start_timeout_ms;
    while (pid_ > 0 && number.find('\n') == std::string::npos) {
      pollfd p{fds[0], POLLIN, 0};
      const auto left = deadline - now_ms();
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) break;
      char buf[32];
      const ssize_t n = ::read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      number.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fds[0]);
    if (pid_ < 0 || number.find('\n') == std::string::npos) {
      stop();
      throw std::runtime_error("Xvfb did not report a display");
    }
    number_ = std::stoi(number.substr(0, number.find('\n')));
    name_ = ":" + std::to_string(number_);
  }
  Xvfb(const Xvfb&) = delete;
  Xvfb& operator=(const Xvfb&) = delete;
  ~Xvfb() { stop(); }

  // Closes the connections from connect(), stops and reaps the server, removes dir().
  void stop() {
    for (::Display* d : opened_) XCloseDisplay(d);
    opened_.clear();
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    if (!dir_.empty()) (void)remove_tree(dir_);
    dir_.clear();
  }

  // True while the server process runs.
  bool ok() const { return pid_ > 0 && pid_running(pid_); }
  pid_t pid() const { return pid_; }
  int number() const { return number_; }
  const std::string& name() const { return name_; }
  const std::string& auth_file() const { return auth_; }
  const std::string& dir() const { return dir_; }

  // Sets DISPLAY and XAUTHORITY in this process, for the real clients the test spawns.
  void export_env() const {
    ::setenv("DISPLAY", name_.c_str(), 1);
    ::setenv("XAUTHORITY", auth_.c_str(), 1);
  }

  // A new connection with this server's cookie, owned by the caller (XCloseDisplay it).
  ::Display* open() const {
    ::setenv("XAUTHORITY", auth_.c_str(), 1);
    return XOpenDisplay(name_.c_str());
  }
  // A new connection closed with the server object (for tests that never close their own).
  ::Display* connect() {
    ::Display* d = open();
    if (d != nullptr) opened_.push_back(d);
    return d;
  }

 private:
  static XvfbOptions options(const std::string& screen, std::vector<std::string> extra_args) {
    XvfbOptions o;
    o.screen = screen;
    o.extra_args = std::move(extra_args);
    return o;
  }
  // One FamilyWild entry with an empty display number: matches whatever number Xvfb picks.
  static void write_cookie_file(const std::string& path) {
    const std::string cookie_hex = random_hex(16);
    std::string rec;
    auto u16 = [&](std::size_t v) {
      rec.push_back(static_cast<char>((v >> 8) & 0xff));
      rec.push_back(static_cast<char>(v & 0xff));
    };
    auto field = [&](const std::string& s) {
      u16(s.size());
      rec += s;
    };
    u16(0xffff);
    field("");
    field("");
    field("MIT-MAGIC-COOKIE-1");
    std::string cookie;
    for (std::size_t i = 0; i < cookie_hex.size(); i += 2) {
      cookie.push_back(static_cast<char>(std::stoi(cookie_hex.substr(i, 2), nullptr, 16)));
    }
    field(cookie);
    if (!write_file_atomic(path, rec, 0600).ok()) throw std::runtime_error("Xvfb: auth file");
  }

  std::string dir_, auth_, name_;
  int number_ = -1;
  pid_t pid_ = -1;
  std::vector<::Display*> opened_;
};

// Finds a top-level (or deeper) viewable window whose WM_NAME equals `title`; waits with a
// deadline on structure changes of the root (X events and roundtrips only).
inline Window wait_window(::Display* d, const std::string& title, int timeout_ms) {
  const auto deadline = now_ms() + timeout_ms;
  std::function<Window(Window)> search = [&](Window w) -> Window {
    char* name = nullptr;
    if (XFetchName(d, w, &name) && name) {
      const bool match = title == name;
      XFree(name);
      if (match) {
        XWindowAttributes a;
        if (XGetWindowAttributes(d, w, &a) && a.map_state == IsViewable) return w;
      }
    }
    Window root = 0, parent = 0, *kids = nullptr;
    unsigned n = 0;
    if (!XQueryTree(d, w, &root, &parent, &kids, &n)) return 0;
    Window found = 0;
    for (unsigned i = 0; i < n && !found; ++i) found = search(kids[i]);
    if (kids) XFree(kids);
    return found;
  };
  XSelectInput(d, DefaultRootWindow(d), SubstructureNotifyMask);
  while (now_ms() < deadline) {
    if (Window w = search(DefaultRootWindow(d))) return w;
    // Wait for any structure change on the root (map/create), bounded by the deadline.
    pollfd p{ConnectionNumber(d), POLLIN, 0};
    XFlush(d);
    if (!XPending(d)) ::poll(&p, 1, 50);
    while (XPending(d)) {
      XEvent ev;
      XNextEvent(d, &ev);
    }
  }
  return 0;
}

// A foreign X server and client, started by the test itself (never by evident): Xvfb with its
// cookie written by xauth(1), plus `xprop -root -spy` connected to it.
struct ForeignX {
  std::unique_ptr<Xvfb> server;
  Child client;
  TempDir dir;
  int number = -1;
  // Which of the two files the foreign server made (Xvfb -displayfd may create no lock file);
  // recorded once it is up, and required to stay.
  bool had_lock = false;
  bool had_socket = false;

  bool start() {
    const std::string auth = dir / "auth";
    const std::string cookie = " . 0123456789abcdef0123456789abcdef >/dev/null 2>&1";
    // A plain (non-evident) cookie file written by xauth(1).
    if (run_command("xauth -f " + auth + " add :0" + cookie).exit_status != 0) return false;
    XvfbOptions o;
    o.screen.clear();
    o.auth_file = auth;
    try {
      server = std::make_unique<Xvfb>(o);
    } catch (const std::exception&) {
      return false;
    }
    number = server->number();
    // The server loaded every cookie in its file; the client needs an entry for :N.
    const std::string client_auth = dir / "client-auth";
    if (run_command("xauth -f " + client_auth + " add " + server->name() + cookie).exit_status != 0) {
      return false;
    }
    had_lock = path_exists(lock_file());
    had_socket = path_exists(socket_file());
    client = spawn({"/bin/sh", "-c",
                    "export XAUTHORITY=" + shell_quote(client_auth) + "; exec xprop -display " + server->name() +
                        " -root -spy </dev/null >/dev/null"},
                   false);
    return client.pid > 0;
  }
  std::string lock_file() const { return "/tmp/.X" + std::to_string(number) + "-lock"; }
  std::string socket_file() const { return "/tmp/.X11-unix/X" + std::to_string(number); }
  // Both processes running and the files the server made still there.
  bool untouched() const {
    return server && server->ok() && pid_running(client.pid) &&
           (!had_lock || path_exists(lock_file())) && (!had_socket || path_exists(socket_file()));
  }
  void stop() {
    client.stop();
    server.reset();
  }
  ~ForeignX() { stop(); }
};

}  // namespace evident::testing
