// Test support: a real `evident daemon` subprocess on a private socket.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "evident/testing/files.h"
#include "evident/testing/process.h"

namespace evident::testing {

// The `evident` binary of this build.
inline std::string evident_cli_path() { return std::string(EVIDENT_BINARY_DIR) + "/engine/cli/evident"; }

// `evident daemon --socket DIR/run/d.sock --state-dir DIR/state [extra...]`, stdout and stderr
// appended to DIR/daemon.log. start() returns once the daemon logged "listening on" (inotify,
// bounded). The destructor stops it: SIGTERM, then SIGKILL if it has not exited after 30 s.
class EvidentDaemon {
 public:
  explicit EvidentDaemon(std::string dir, std::vector<std::string> extra = {})
      : dir_(std::move(dir)), sock_(dir_ + "/run/d.sock"), extra_(std::move(extra)) {}
  EvidentDaemon(const EvidentDaemon&) = delete;
  EvidentDaemon& operator=(const EvidentDaemon&) = delete;
  ~EvidentDaemon() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      if (wait_exit(30000) < 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
      }
    }
  }

  bool start(int timeout_ms = 20000) {
    const std::string cli = evident_cli_path();
    std::vector<std::string> args = {cli, "daemon", "--socket", sock_, "--state-dir", dir_ + "/state"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string log = log_path();
    pid_ = ::fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execv(cli.c_str(), argv.data());
      ::_exit(127);
    }
    return wait_file_contains(log, "listening on", timeout_ms);
  }
  // SIGTERM and wait for the exit (a clean exit flushes and closes the log). Returns the exit
  // status (128 + signal if killed), or -1 if it did not exit within timeout_ms.
  int stop(std::int64_t timeout_ms = 30000) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    return wait_exit(timeout_ms);
  }
  // SIGKILL (no cleanup of any kind runs) and wait for the exit; the exit status, or -1.
  int kill_hard(std::int64_t timeout_ms = 30000) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGKILL);
    return wait_exit(timeout_ms);
  }
  // Waits for the exit (bounded); returns the exit status or -1 on timeout.
  int wait_exit(std::int64_t timeout_ms) {
    int status = 0;
    if (!wait_until([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, timeout_ms)) return -1;
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  pid_t pid() const { return pid_; }
  const std::string& socket() const { return sock_; }
  std::string log_path() const { return dir_ + "/daemon.log"; }

 private:
  std::string dir_;
  std::string sock_;
  std::vector<std::string> extra_;
  pid_t pid_ = -1;
};

// Connects to `socket_path` (-1 on failure), a client socket with close-on-exec.
inline int connect_unix(const std::string& socket_path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof(addr.sun_path) - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends raw bytes as one request and shuts down the write side; returns the connection (-1 if the
// daemon cannot be reached), whose answer read_daemon_answer() reads.
inline int send_daemon_request(const std::string& socket_path, const std::string& bytes) {
  int fd = connect_unix(socket_path);
  if (fd < 0) return -1;
  std::size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<std::size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  return fd;
}

// The whole answer on a connection from send_daemon_request ("" if none); closes it.
inline std::string read_daemon_answer(int fd) {
  if (fd < 0) return "";
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

// Sends raw bytes as one request (then shuts down the write side) and returns the whole answer
// ("" if the daemon cannot be reached or closes without one).
inline std::string raw_daemon_request(const std::string& socket_path, const std::string& bytes) {
  return read_daemon_answer(send_daemon_request(socket_path, bytes));
}

}  // namespace evident::testing
