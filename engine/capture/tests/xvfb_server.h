// Test helper: a private Xvfb (-displayfd, -nolisten tcp, -noreset, its own cookie file) that
// dies with the test process, plus an Xlib connection to it.
#pragma once

#include <X11/Xlib.h>
#include <X11/Xatom.h>
#include <X11/Xutil.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#undef Status

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace evident::testing {

class XvfbServer {
 public:
  // `screen` like "640x480x24"; `extra` e.g. {"-extension", "MIT-SHM"}.
  explicit XvfbServer(const std::string& screen, std::vector<std::string> extra = {}) {
    char tmpl[] = "/tmp/evident-capture-xvfb-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return;
    dir_ = tmpl;
    auth_ = dir_ + "/auth";
    write_cookie_file();
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    std::vector<std::string> args = {"Xvfb",   "-displayfd", std::to_string(fds[1]), "-nolisten",
                                     "tcp",    "-noreset",   "-auth",                auth_,
                                     "-screen", "0",         screen};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_t parent = getpid();
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      fcntl(fds[1], F_SETFD, 0);  // the write end must survive exec
      int devnull = ::open("/dev/null", O_WRONLY);
      dup2(devnull, 1);
      dup2(devnull, 2);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execvp("Xvfb", argv.data());
      _exit(127);
    }
    close(fds[1]);
    // Xvfb writes the display number once it accepts connections.
    std::string number;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fds[0], POLLIN, 0};
      int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      deadline - std::chrono::steady_clock::now())
                                      .count());
      if (poll(&p, 1, left > 0 ? left : 0) <= 0) break;
      char c;
      ssize_t n = read(fds[0], &c, 1);
      if (n <= 0) break;
      if (c == '\n') break;
      number.push_back(c);
    }
    close(fds[0]);
    if (!number.empty()) name_ = ":" + number;
  }

  ~XvfbServer() {
    for (Display* d : opened_) XCloseDisplay(d);
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    if (!auth_.empty()) std::remove(auth_.c_str());
    if (!dir_.empty()) rmdir(dir_.c_str());
  }

  bool ok() const { return !name_.empty(); }
  const std::string& name() const { return name_; }
  const std::string& auth_file() const { return auth_; }

  // A new connection (closed with the server object).
  Display* open() {
    setenv("XAUTHORITY", auth_.c_str(), 1);
    Display* d = XOpenDisplay(name_.c_str());
    if (d != nullptr) opened_.push_back(d);
    return d;
  }

 private:
  // One FamilyWild entry with an empty display number: matches whatever number Xvfb picks.
  void write_cookie_file() {
    std::random_device rd;
    std::string cookie(16, '\0');
    for (auto& c : cookie) c = static_cast<char>(rd());
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
    field(cookie);
    int fd = ::open(auth_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return;
    ssize_t w = write(fd, rec.data(), rec.size());
    (void)w;
    close(fd);
  }

  std::string dir_, auth_, name_;
  pid_t pid_ = -1;
  std::vector<Display*> opened_;
};

}  // namespace evident::testing
