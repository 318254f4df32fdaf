// Test-only helpers: a private Xvfb (-displayfd, private auth file, -nolisten tcp, -noreset) and
// child processes whose output is read with deadlines (never sleeps as synchronisation).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "evident/core/clock.h"
#include "evident/core/fs.h"
#include "evident/core/random.h"

#include <X11/Xlib.h>  // after evident headers: Xlib #defines Status
#undef Status

extern char** environ;

namespace evident::test {

inline std::int64_t now_ms() { return steady_us() / 1000; }

struct Child {
  pid_t pid = -1;
  int out_fd = -1;  // child's stdout (and stderr if merged), or -1
  std::string buffer;

  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  Child(Child&& o) noexcept { *this = std::move(o); }
  Child& operator=(Child&& o) noexcept {
    std::swap(pid, o.pid);
    std::swap(out_fd, o.out_fd);
    std::swap(buffer, o.buffer);
    return *this;
  }
  ~Child() { stop(); }

  void stop() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      const auto deadline = now_ms() + 3000;
      int st = 0;
      while (waitpid(pid, &st, WNOHANG) == 0) {
        if (now_ms() > deadline) {
          kill(pid, SIGKILL);
          waitpid(pid, &st, 0);
          break;
        }
        poll(nullptr, 0, 5);  // bounded reaping loop, not synchronisation of the test subject
      }
      pid = -1;
    }
    if (out_fd >= 0) {
      close(out_fd);
      out_fd = -1;
    }
  }

  // Reads available output until `done(buffer)` is true or the deadline passes.
  bool read_until(const std::function<bool(const std::string&)>& done, int timeout_ms) {
    const auto deadline = now_ms() + timeout_ms;
    while (!done(buffer)) {
      const auto left = deadline - now_ms();
      if (left <= 0 || out_fd < 0) return false;
      pollfd p{out_fd, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char tmp[4096];
      const ssize_t n = read(out_fd, tmp, sizeof tmp);
      if (n <= 0) return done(buffer);
      buffer.append(tmp, static_cast<std::size_t>(n));
    }
    return true;
  }
};

inline Child spawn(const std::vector<std::string>& argv, bool capture_stdout, bool merge_stderr = false) {
  Child c;
  int pipefd[2] = {-1, -1};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (capture_stdout) {
    if (pipe2(pipefd, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    if (merge_stderr) posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  if (posix_spawnp(&c.pid, args[0], &fa, &attr, args.data(), environ) != 0) c.pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (capture_stdout) {
    close(pipefd[1]);
    c.out_fd = pipefd[0];
  }
  return c;
}

// A private Xvfb; sets DISPLAY and XAUTHORITY in this process for the clients the test starts.
class Xvfb {
 public:
  explicit Xvfb(int width = 1280, int height = 800) {
    dir_ = make_private_dir_or_throw();
    auth_ = dir_ + "/auth";
    write_auth_file();
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe");
    const std::string geometry = std::to_string(width) + "x" + std::to_string(height) + "x24";
    std::vector<std::string> argv = {"Xvfb", "-displayfd", std::to_string(fds[1]), "-nolisten", "tcp",
                                     "-noreset", "-auth", auth_, "-screen", "0", geometry};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    posix_spawn_file_actions_adddup2(&fa, devnull, 2);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    if (posix_spawnp(&pid_, "Xvfb", &fa, nullptr, args.data(), environ) != 0) throw std::runtime_error("spawn Xvfb");
    posix_spawn_file_actions_destroy(&fa);
    close(devnull);
    close(fds[1]);
    std::string num;
    const auto deadline = now_ms() + 10000;
    while (num.find('\n') == std::string::npos) {
      pollfd p{fds[0], POLLIN, 0};
      const auto left = deadline - now_ms();
      if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0) break;
      char buf[32];
      const ssize_t n = read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      num.append(buf, static_cast<std::size_t>(n));
    }
    close(fds[0]);
    if (num.find('\n') == std::string::npos) throw std::runtime_error("Xvfb did not report a display");
    name_ = ":" + num.substr(0, num.find('\n'));
    setenv("DISPLAY", name_.c_str(), 1);
    setenv("XAUTHORITY", auth_.c_str(), 1);
  }
  ~Xvfb() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int st = 0;
      waitpid(pid_, &st, 0);
    }
    (void)remove_tree(dir_);
  }
  const std::string& name() const { return name_; }
  const std::string& auth() const { return auth_; }
  const std::string& dir() const { return dir_; }
  ::Display* open() const { return XOpenDisplay(name_.c_str()); }

 private:
  static std::string make_private_dir_or_throw() {
    const char* tmp = getenv("TMPDIR");
    std::string dir = std::string(tmp ? tmp : "/tmp") + "/evident-input-test-" + random_hex(8);
    if (!make_private_dir(dir).ok()) throw std::runtime_error("private dir");
    return dir;
  }
  void write_auth_file() {
    // Xauthority entry: FamilyWild (any address/display), MIT-MAGIC-COOKIE-1, 16 random bytes.
    std::string cookie_hex = random_hex(16);
    std::string rec;
    auto put16 = [&](std::size_t v) { rec.push_back(static_cast<char>(v >> 8)); rec.push_back(static_cast<char>(v & 0xff)); };
    auto put = [&](const std::string& s) { put16(s.size()); rec += s; };
    put16(0xffff);
    put("");
    put("");
    put("MIT-MAGIC-COOKIE-1");
    std::string cookie;
    for (std::size_t i = 0; i < cookie_hex.size(); i += 2) cookie.push_back(static_cast<char>(std::stoi(cookie_hex.substr(i, 2), nullptr, 16)));
    put(cookie);
    if (!write_file_atomic(auth_, rec).ok()) throw std::runtime_error("auth file");
  }
  std::string dir_, auth_, name_;
  pid_t pid_ = -1;
};

// Finds a top-level (or deeper) window whose WM_NAME equals `title`; waits with a deadline using
// X roundtrips only.
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
    if (!XPending(d)) poll(&p, 1, 50);
    while (XPending(d)) { XEvent ev; XNextEvent(d, &ev); }
  }
  return 0;
}

#ifdef EVIDENT_SOURCE_DIR
// Starts engine/input/tests/tk_client.py (title "evident-tk", `mode`: entry|text|clicks) in a
// UTF-8 locale (XIM decodes non-Latin-1 text) with its stdout captured, and waits up to 15 s for
// its {"ready":...} line (the widget is mapped, exposed and focused).
inline Child start_tk(const std::string& mode = "entry") {
  setenv("LC_ALL", "C.UTF-8", 1);
  Child tk = spawn({"/usr/bin/python3", std::string(EVIDENT_SOURCE_DIR) + "/engine/input/tests/tk_client.py",
                    "evident-tk", mode},
                   true);
  tk.read_until([](const std::string& b) { return b.find("\"ready\"") != std::string::npos; }, 15000);
  return tk;
}
#endif

inline std::string read_file_or_empty(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace evident::test
