#include "app_logs.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace evident {

struct AppLogs::Log {
  std::string path;
  int pipe_rd = -1;
  int file = -1;
  std::uint64_t written = 0;  // bytes in the current file
  ~Log() {
    if (pipe_rd >= 0) ::close(pipe_rd);
    if (file >= 0) ::close(file);
  }
};

AppLogs::AppLogs(std::uint64_t max_bytes, std::size_t kept) : max_bytes_(max_bytes), kept_(kept) {
  epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_ >= 0 && wake_ >= 0) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr;
    if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev) == 0) thread_ = std::thread([this] { loop(); });
  }
}

AppLogs::~AppLogs() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    (void)!::write(wake_, &one, sizeof one);
    thread_.join();
  }
  std::lock_guard lock(mu_);
  for (auto& [path, log] : logs_) {
    if (log->pipe_rd >= 0) (void)pump(*log);
  }
  logs_.clear();
  if (epoll_ >= 0) ::close(epoll_);
  if (wake_ >= 0) ::close(wake_);
}

Result<int> AppLogs::open(const std::string& path) {
  auto fail = [](const char* what) {
    return make_error("app-launch-failed", std::string("cannot create the app's log (") + what +
                                               "): " + std::strerror(errno));
  };
  if (!thread_.joinable()) return make_error("app-launch-failed", "the app log thread is not running");
  auto log = std::make_unique<Log>();
  log->path = path;
  log->file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
  if (log->file < 0) return fail("file");
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return fail("pipe");
  log->pipe_rd = p[0];
  (void)::fcntl(p[0], F_SETFL, O_NONBLOCK);
  std::lock_guard lock(mu_);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = log.get();
  if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, p[0], &ev) != 0) {
    ::close(p[1]);
    return fail("epoll");
  }
  logs_[path] = std::move(log);
  return p[1];
}

bool AppLogs::pump(Log& log) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(log.pipe_rd, buf, sizeof buf);
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN;  // drained (or an error: treated as the end)
    }
    std::size_t off = 0;
    while (off < static_cast<std::size_t>(n)) {
      if (log.written >= max_bytes_) {
        // Rotate: the current file becomes .1 (replacing the previous one), a new one starts.
        (void)::rename(log.path.c_str(), rotated_path(log.path).c_str());
        ::close(log.file);
        log.file = ::open(log.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
        log.written = 0;
      }
      const std::size_t room = static_cast<std::size_t>(max_bytes_ - log.written);
      const std::size_t chunk = std::min(room, static_cast<std::size_t>(n) - off);
      // A full disk or a closed file loses output, never blocks the app: the bytes are counted.
      if (log.file >= 0) (void)!::write(log.file, buf + off, chunk);
      log.written += chunk;
      off += chunk;
    }
  }
}

void AppLogs::close_locked(const std::string& path) {
  auto it = logs_.find(path);
  if (it == logs_.end()) return;
  if (it->second->pipe_rd >= 0) (void)::epoll_ctl(epoll_, EPOLL_CTL_DEL, it->second->pipe_rd, nullptr);
  logs_.erase(it);
}

void AppLogs::loop() {
  epoll_event events[16];
  for (;;) {
    const int n = ::epoll_wait(epoll_, events, 16, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    std::lock_guard lock(mu_);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == nullptr) return;  // stop
      Log* log = static_cast<Log*>(events[i].data.ptr);
      // Only a log still registered (one closed by ended() meanwhile is gone).
      bool known = false;
      for (const auto& [path, l] : logs_) known = known || l.get() == log;
      if (!known) continue;
      if (!pump(*log)) {
        // Every writer closed its end (the app and its children are gone): the file is complete.
        (void)::epoll_ctl(epoll_, EPOLL_CTL_DEL, log->pipe_rd, nullptr);
        ::close(log->pipe_rd);
        log->pipe_rd = -1;
      }
    }
  }
}

void AppLogs::flush(const std::string& path) {
  std::lock_guard lock(mu_);
  auto it = logs_.find(path);
  if (it != logs_.end() && it->second->pipe_rd >= 0) (void)pump(*it->second);
}

void AppLogs::ended(const std::string& path) {
  std::lock_guard lock(mu_);
  auto it = logs_.find(path);
  if (it != logs_.end() && it->second->pipe_rd >= 0) (void)pump(*it->second);
  for (const auto& p : ended_) {
    if (p == path) return;
  }
  ended_.push_back(path);
  while (ended_.size() > kept_) {
    const std::string old = ended_.front();
    ended_.pop_front();
    close_locked(old);
    ::unlink(old.c_str());
    ::unlink(rotated_path(old).c_str());
  }
}

}  // namespace evident
