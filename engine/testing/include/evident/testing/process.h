// Test support: subprocesses and process probes with deadlines. No sleeps as synchronisation:
// every wait blocks on a pipe, a pidfd or polls a condition until a deadline.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "evident/core/clock.h"
#include "evident/testing/files.h"

extern char** environ;

namespace evident::testing {

inline std::int64_t now_ms() { return steady_us() / 1000; }

// Polls `cond` until true or `timeout_ms` passes. Each poll blocks briefly in poll(2) on
// nothing, which is a bounded wait for a condition, not a fixed delay.
inline bool wait_until(const std::function<bool()>& cond, std::int64_t timeout_ms) {
  const std::int64_t deadline = now_ms() + timeout_ms;
  for (;;) {
    if (cond()) return true;
    if (now_ms() >= deadline) return false;
    ::poll(nullptr, 0, 5);
  }
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

struct CommandResult {
  int exit_status = -1;  // 128 + signal when the shell was killed by a signal
  std::string out;
};

// Runs `command` through /bin/sh, feeding `input` on stdin (via a temp file) when it is not
// empty; captures stdout (stderr goes to the test log unless the command redirects it).
inline CommandResult run_command(const std::string& command, const std::string& input = "") {
  std::string cmd = command;
  std::string in_path;
  if (!input.empty()) {
    char tmpl[] = "/tmp/evident-test-stdin-XXXXXX";
    int fd = ::mkstemp(tmpl);
    if (fd < 0) throw std::runtime_error("mkstemp");
    ::close(fd);
    in_path = tmpl;
    write_text(in_path, input);
    cmd += " < " + in_path;
  }
  CommandResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("popen");
  std::array<char, 65536> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = ::pclose(p);
  r.exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
  if (!in_path.empty()) std::remove(in_path.c_str());
  return r;
}

inline bool have_program(const std::string& name) {
  return run_command("command -v " + name + " >/dev/null 2>&1").exit_status == 0;
}

// One line of /proc/<pid>/stat, the fields the tests need.
struct ProcStat {
  pid_t pid = -1;
  char state = 0;
  long ppid = 0;
  long pgrp = 0;
};

inline std::optional<ProcStat> read_proc_stat(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return std::nullopt;
  const auto close = line.rfind(')');  // the command name may contain anything but ends here
  if (close == std::string::npos || close + 2 >= line.size()) return std::nullopt;
  ProcStat s;
  s.pid = pid;
  std::istringstream rest(line.substr(close + 2));
  rest >> s.state >> s.ppid >> s.pgrp;
  return s;
}

// Every process visible in /proc (zombies included: callers filter on `state`).
inline std::vector<ProcStat> list_processes() {
  std::vector<ProcStat> out;
  DIR* d = ::opendir("/proc");
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    if (auto s = read_proc_stat(pid)) out.push_back(*s);
  }
  if (d) ::closedir(d);
  return out;
}

inline bool is_dead_state(char state) { return state == 'Z' || state == 'X'; }

// True if `pid` exists and is not a zombie (a killed child whose reaper is slow counts as gone).
inline bool pid_running(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  auto s = read_proc_stat(pid);
  return s && !is_dead_state(s->state);
}

// Waits until process `pid` (not necessarily our child) has exited, with a pidfd.
inline bool wait_pid_gone(int pid, int timeout_ms = 10000) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return errno == ESRCH;
  pollfd p{fd, POLLIN, 0};
  int r = ::poll(&p, 1, timeout_ms);
  ::close(fd);
  return r > 0;
}

// A child process in its own process group, optionally with its stdout captured; stopped
// (TERM, then KILL after 3 s) and reaped when it goes out of scope.
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
      ::kill(pid, SIGTERM);
      const auto deadline = now_ms() + 3000;
      int st = 0;
      while (::waitpid(pid, &st, WNOHANG) == 0) {
        if (now_ms() > deadline) {
          ::kill(pid, SIGKILL);
          ::waitpid(pid, &st, 0);
          break;
        }
        ::poll(nullptr, 0, 5);  // bounded reaping loop, not synchronisation of the test subject
      }
      pid = -1;
    }
    if (out_fd >= 0) {
      ::close(out_fd);
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
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char tmp[4096];
      const ssize_t n = ::read(out_fd, tmp, sizeof tmp);
      if (n <= 0) return done(buffer);
      buffer.append(tmp, static_cast<std::size_t>(n));
    }
    return true;
  }
};

// Starts argv[0] (PATH lookup) in a new process group with this process's environment.
inline Child spawn(const std::vector<std::string>& argv, bool capture_stdout, bool merge_stderr = false) {
  Child c;
  int pipefd[2] = {-1, -1};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (capture_stdout) {
    if (::pipe2(pipefd, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
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
    ::close(pipefd[1]);
    c.out_fd = pipefd[0];
  }
  return c;
}

}  // namespace evident::testing
