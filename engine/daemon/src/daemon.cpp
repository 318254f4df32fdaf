#include "evident/daemon/daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "evident/core/clock.h"
#include "evident/core/fs.h"
#include "evident/service/engine.h"

namespace evident {
namespace {

std::int64_t now_ms() { return steady_us() / 1000; }

std::string errno_text(int e) { return std::strerror(e); }

bool make_addr(const std::string& path, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr->sun_path)) return false;
  std::memcpy(addr->sun_path, path.c_str(), path.size() + 1);
  return true;
}

// Writes everything (MSG_NOSIGNAL: a vanished peer must not kill us with SIGPIPE).
bool send_all(int fd, std::string_view data) {
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += static_cast<std::size_t>(n);
  }
  return true;
}

enum class ReadOutcome { kOk, kTooLarge, kTimeout, kError };

// Reads until EOF, at most max_bytes (one more byte means too large), before the deadline.
ReadOutcome read_all(int fd, std::size_t max_bytes, std::int64_t deadline_ms, std::string* out) {
  char buf[16384];
  for (;;) {
    std::int64_t left = deadline_ms - now_ms();
    if (left <= 0) return ReadOutcome::kTimeout;
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ReadOutcome::kError;
    }
    if (r == 0) return ReadOutcome::kTimeout;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return ReadOutcome::kError;
    }
    if (n == 0) return ReadOutcome::kOk;
    out->append(buf, static_cast<std::size_t>(n));
    if (out->size() > max_bytes) return ReadOutcome::kTooLarge;
  }
}

std::string dir_of(const std::string& path) {
  std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : ".";
}

// The socket's directory must be ours and 0700; we create it if missing.
Status check_socket_dir(const std::string& dir) {
  struct stat st{};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return make_error("daemon-socket-dir-unsafe", "cannot stat " + dir + ": " + errno_text(errno));
    }
    auto made = make_private_dir(dir);
    if (!made.ok()) return make_error("daemon-socket-dir-unsafe", made.error().message);
    if (::lstat(dir.c_str(), &st) != 0) {
      return make_error("daemon-socket-dir-unsafe", "cannot stat " + dir);
    }
  }
  if (!S_ISDIR(st.st_mode)) {
    return make_error("daemon-socket-dir-unsafe", dir + " is not a directory");
  }
  if (st.st_uid != ::geteuid()) {
    return make_error("daemon-socket-dir-unsafe", dir + " is owned by another user");
  }
  if ((st.st_mode & 0777) != 0700) {
    return make_error("daemon-socket-dir-unsafe",
                      dir + " must have mode 0700 (run: chmod 700 " + dir + ")");
  }
  return {};
}

class Daemon {
 public:
  Daemon(const DaemonOptions& o, std::ostream& log) : options_(o), log_(log) {}
  Result<int> run();

 private:
  Status open_socket();
  void serve(int fd);
  void log_line(const std::string& line) {
    std::lock_guard lock(log_mu_);
    log_ << "evident daemon: " << format_rfc3339_ms(SystemClock::instance().wall_ms()) << " "
         << line << std::endl;
  }

  DaemonOptions options_;
  std::ostream& log_;
  std::mutex log_mu_;
  int listen_fd_ = -1;
  int lock_fd_ = -1;
  ino_t socket_ino_ = 0;
  std::unique_ptr<Engine> engine_;
  std::mutex conn_mu_;
  std::condition_variable conn_cv_;
  int active_ = 0;
};

Status Daemon::open_socket() {
  const std::string& path = options_.socket_path;
  sockaddr_un addr{};
  if (!make_addr(path, &addr)) {
    return make_error("daemon-socket-failed", "the socket path is too long");
  }
  EVIDENT_TRY(check_socket_dir(dir_of(path)));
  // One daemon per socket path: an flock'ed lock file beside the socket, held for life.
  std::string lock_path = path + ".lock";
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock_fd_ < 0) {
    return make_error("daemon-socket-failed", "cannot open " + lock_path + ": " + errno_text(errno));
  }
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return make_error("daemon-already-running",
                      "another evident daemon is running on " + path);
  }
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0) {
    int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int r = ::connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    int e = errno;
    ::close(probe);
    if (r == 0) {
      return make_error("daemon-already-running", "another evident daemon answers on " + path);
    }
    // Remove only a stale socket of ours: connect refused, a socket, owned by us.
    if (e == ECONNREFUSED && S_ISSOCK(st.st_mode) && st.st_uid == ::geteuid()) {
      ::unlink(path.c_str());
    } else {
      return make_error("daemon-socket-in-use",
                        path + " exists and is not a stale evident socket; remove it or choose "
                               "another --socket");
    }
  }
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return make_error("daemon-socket-failed", "socket: " + errno_text(errno));
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int e = errno;
    return make_error(e == EADDRINUSE ? "daemon-socket-in-use" : "daemon-socket-failed",
                      "cannot bind " + path + ": " + errno_text(e));
  }
  // The directory is 0700 already; the socket itself is 0600 as well.
  if (::chmod(path.c_str(), 0600) != 0 || ::lstat(path.c_str(), &st) != 0) {
    return make_error("daemon-socket-failed", "cannot chmod " + path + ": " + errno_text(errno));
  }
  socket_ino_ = st.st_ino;
  if (::listen(listen_fd_, 64) != 0) {
    return make_error("daemon-socket-failed", "listen: " + errno_text(errno));
  }
  return {};
}

void Daemon::serve(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != ::geteuid()) {
    send_all(fd, dump_json(error_response(make_error(
                     "daemon-peer-refused",
                     "this daemon admits only its owner's uid " + std::to_string(::geteuid())))) +
                     "\n");
    log_line("refused a connection from uid " + std::to_string(cred.uid));
    return;
  }
  Actor actor;
  actor.kind = Actor::Kind::kLocalUser;
  actor.uid = cred.uid;
  std::string request;
  const std::int64_t t0 = steady_us();
  auto outcome = read_all(fd, Engine::kMaxRequestBytes, now_ms() + options_.read_timeout_ms,
                          &request);
  Json response;
  std::string op = "-";
  switch (outcome) {
    case ReadOutcome::kTooLarge:
      response = error_response(make_error(
          "request-too-large",
          "the request is larger than " + std::to_string(Engine::kMaxRequestBytes) + " bytes"));
      break;
    case ReadOutcome::kTimeout:
      response = error_response(make_error(
          "request-timeout", "the request was not complete (EOF) within the read deadline", true));
      break;
    case ReadOutcome::kError:
      return;
    case ReadOutcome::kOk: {
      auto parsed = parse_json_strict(request, Engine::kMaxRequestBytes, "request-json");
      if (!parsed.ok()) {
        response = error_response(parsed.error());
        break;
      }
      // Log the op name only if it looks like one of ours (never payloads).
      if (parsed->is_object() && parsed->contains("op") && (*parsed)["op"].is_string()) {
        const auto& s = (*parsed)["op"].get_ref<const std::string&>();
        bool clean = s.size() <= 32 && !s.empty();
        for (char c : s) clean = clean && ((c >= 'a' && c <= 'z') || c == '.' || c == '_');
        if (clean) op = s;
      }
      response = engine_->call(actor, *parsed);
      break;
    }
  }
  // A client that went away does not cancel work: the engine call above already completed.
  send_all(fd, dump_json(response) + "\n");
  std::string code = response.value("ok", false) ? "ok" : response["error"].value("code", "?");
  log_line("uid=" + std::to_string(cred.uid) + " op=" + op + " -> " + code + " (" +
           std::to_string((steady_us() - t0) / 1000) + " ms)");
}

Result<int> Daemon::run() {
  // Block TERM/INT before any thread exists (the engine starts threads), then take them from a
  // signalfd. Children get an empty mask back (see process.cpp).
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  int sfd = ::signalfd(-1, &sigs, SFD_CLOEXEC);
  if (sfd < 0) return make_error("daemon-socket-failed", "signalfd: " + errno_text(errno));

  if (auto st = open_socket(); !st.ok()) {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (lock_fd_ >= 0) ::close(lock_fd_);
    ::close(sfd);
    return st.error();
  }
  EngineOptions eo;
  eo.state_dir = options_.state_dir;
  eo.warm = options_.warm;
  if (!eo.warm.empty()) {
    eo.on_warm_ready = [this](const std::string& name, const WarmDisplaySize& s) {
      log_line("warm display " + name + " " + std::to_string(s.width) + "x" +
               std::to_string(s.height) + " ready");
    };
  }
  engine_ = std::make_unique<Engine>(eo);
  log_line("listening on " + options_.socket_path + " (pid " + std::to_string(::getpid()) + ")");

  int signo = 0;
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {sfd, POLLIN, 0}};
    int r = ::poll(fds, 2, -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo si{};
      if (::read(sfd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
        signo = static_cast<int>(si.ssi_signo);
      }
      break;
    }
    if (!(fds[0].revents & POLLIN)) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    {
      std::lock_guard lock(conn_mu_);
      if (active_ >= options_.max_connections) {
        send_all(fd, dump_json(error_response(make_error(
                         "daemon-busy", "too many concurrent requests; retry", true))) + "\n");
        ::close(fd);
        continue;
      }
      ++active_;
    }
    std::thread([this, fd] {
      serve(fd);
      ::close(fd);
      std::lock_guard lock(conn_mu_);
      --active_;
      conn_cv_.notify_all();
    }).detach();
  }

  log_line(std::string("stopping (") + (signo ? ::strsignal(signo) : "poll error") + ")");
  ::close(listen_fd_);
  struct stat st{};
  if (::lstat(options_.socket_path.c_str(), &st) == 0 && st.st_ino == socket_ino_) {
    ::unlink(options_.socket_path.c_str());
  }
  engine_->shutdown();
  {
    // In-flight requests finish (the engine refuses new work); each is bounded.
    std::unique_lock lock(conn_mu_);
    conn_cv_.wait_for(lock, std::chrono::seconds(60), [this] { return active_ == 0; });
  }
  engine_.reset();
  ::close(lock_fd_);
  ::close(sfd);
  log_line("stopped");
  return 0;
}

}  // namespace

std::string default_socket_path() { return default_runtime_dir() + "/evident.sock"; }

std::string socket_path_from_env() {
  const char* env = std::getenv("EVIDENT_SOCKET");
  if (env && *env) return env;
  return default_socket_path();
}

Result<int> run_daemon(const DaemonOptions& options, std::ostream& log) {
  DaemonOptions o = options;
  if (o.socket_path.empty()) o.socket_path = socket_path_from_env();
  if (o.state_dir.empty()) o.state_dir = default_state_dir();
  Daemon d(o, log);
  return d.run();
}

Result<Json> daemon_call(const std::string& socket_path, std::string_view request,
                         int timeout_ms) {
  auto unavailable = [&](const std::string& why) {
    std::string start = socket_path == default_socket_path()
                            ? "evident daemon &"
                            : "evident daemon --socket " + socket_path + " &";
    return make_error("daemon-unavailable", "no evident daemon is listening on " + socket_path +
                                                " (" + why + "); start one with: " + start,
                      true);
  };
  sockaddr_un addr{};
  if (!make_addr(socket_path, &addr)) return unavailable("the socket path is too long");
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return unavailable(errno_text(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return unavailable(errno_text(errno));
  }
  // A too-large request may be cut off by the daemon (it answers request-too-large and closes):
  // keep going to read its answer.
  bool sent = send_all(fd, request);
  ::shutdown(fd, SHUT_WR);
  std::string answer;
  auto outcome = read_all(fd, 64 * 1024 * 1024, now_ms() + timeout_ms, &answer);
  if (outcome == ReadOutcome::kTimeout) {
    return make_error("daemon-timeout", "the daemon did not answer in time", true);
  }
  if (answer.empty()) {
    return make_error("daemon-protocol", sent ? "the daemon closed without answering"
                                              : "the daemon closed the connection");
  }
  // A response wraps a receipt (itself within kMaxJsonDepth) one level deeper.
  auto parsed = parse_json_strict(answer, 64 * 1024 * 1024, "daemon-protocol", kMaxResponseJsonDepth);
  if (!parsed.ok() || !parsed->is_object() || !parsed->contains("ok")) {
    return make_error("daemon-protocol", "the daemon's answer is not a JSON response object");
  }
  return *parsed;
}

}  // namespace evident
