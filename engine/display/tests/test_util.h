// Helpers shared by the display/daemon integration tests: process probes with deadlines and
// subprocess runs. No sleeps as synchronisation: every wait polls a condition with a deadline.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "evident/core/clock.h"

namespace evident::testing {

// True if `pid` exists and is not a zombie (a killed child whose reaper is slow counts as gone).
inline bool pid_running(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return false;
  auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return false;
  char state = line[close + 2];
  return state != 'Z' && state != 'X';
}

// Polls `cond` until true or `timeout_ms` passes. Each poll blocks briefly in poll(2) on
// nothing, which is a bounded wait for a condition, not a fixed delay.
inline bool wait_until(const std::function<bool()>& cond, std::int64_t timeout_ms) {
  const std::int64_t deadline = steady_us() / 1000 + timeout_ms;
  for (;;) {
    if (cond()) return true;
    if (steady_us() / 1000 >= deadline) return false;
    ::poll(nullptr, 0, 5);
  }
}

inline bool path_exists(const std::string& p) {
  struct stat st{};
  return ::lstat(p.c_str(), &st) == 0;
}

struct RunResult {
  int exit_code = -1;
  std::string out;
};

// Runs a shell command, capturing stdout (stderr goes to the test log).
inline RunResult run(const std::string& cmd) {
  RunResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = ::pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

inline std::string make_temp_dir() {
  char tmpl[] = "/tmp/evident-test-XXXXXX";
  char* d = ::mkdtemp(tmpl);
  return d ? d : "";
}

// A foreign X server and client, started by the test itself (never by evident): Xvfb with
// -displayfd and its own auth file, plus `xprop -root -spy` connected to it.
struct ForeignX {
  pid_t xvfb = -1;
  pid_t client = -1;
  int number = -1;
  std::string dir;

  bool start() {
    dir = make_temp_dir();
    std::string auth = dir + "/auth";
    // A plain (non-evident) cookie file written by xauth(1).
    if (run("xauth -f " + auth + " add :0 . 0123456789abcdef0123456789abcdef >/dev/null 2>&1")
            .exit_code != 0) {
      return false;
    }
    int p[2];
    if (::pipe(p) != 0) return false;
    xvfb = ::fork();
    if (xvfb == 0) {
      ::close(p[0]);
      int devnull = ::open("/dev/null", O_RDWR);
      ::dup2(devnull, 0);
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
      std::string fd = std::to_string(p[1]);
      ::execlp("Xvfb", "Xvfb", "-displayfd", fd.c_str(), "-nolisten", "tcp", "-noreset",
               "-auth", auth.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(p[1]);
    std::string num;
    char c;
    while (::read(p[0], &c, 1) == 1 && c != '\n') num += c;
    ::close(p[0]);
    if (num.empty()) return false;
    number = std::stoi(num);
    // The server loaded every cookie in its file; the client needs an entry for :N.
    std::string client_auth = dir + "/client-auth";
    if (run("xauth -f " + client_auth + " add :" + std::to_string(number) +
            " . 0123456789abcdef0123456789abcdef >/dev/null 2>&1").exit_code != 0) {
      return false;
    }
    record_files();
    client = ::fork();
    if (client == 0) {
      int devnull = ::open("/dev/null", O_RDWR);
      ::dup2(devnull, 0);
      ::dup2(devnull, 1);
      ::setenv("XAUTHORITY", client_auth.c_str(), 1);
      std::string disp = ":" + std::to_string(number);
      ::execlp("xprop", "xprop", "-display", disp.c_str(), "-root", "-spy",
               static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return true;
  }
  // Which of the two files the foreign server made (Xvfb -displayfd may create no lock file);
  // recorded once it is up, and required to stay.
  bool had_lock = false;
  bool had_socket = false;
  void record_files() {
    had_lock = path_exists(lock_file());
    had_socket = path_exists(socket_file());
  }
  std::string lock_file() const { return "/tmp/.X" + std::to_string(number) + "-lock"; }
  std::string socket_file() const { return "/tmp/.X11-unix/X" + std::to_string(number); }
  // The client is connected once xprop printed nothing fatal; we check with xdpyinfo-like
  // liveness: both processes running.
  bool untouched() const {
    return pid_running(xvfb) && pid_running(client) && (!had_lock || path_exists(lock_file())) &&
           (!had_socket || path_exists(socket_file()));
  }
  void stop() {
    if (client > 0) {
      ::kill(client, SIGTERM);
      ::waitpid(client, nullptr, 0);
    }
    if (xvfb > 0) {
      ::kill(xvfb, SIGTERM);
      ::waitpid(xvfb, nullptr, 0);
    }
    if (!dir.empty()) run("rm -rf " + dir);
    client = xvfb = -1;
  }
  ~ForeignX() { stop(); }
};

}  // namespace evident::testing
