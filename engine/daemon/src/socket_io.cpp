#include "socket_io.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "evident/core/clock.h"

namespace evident::socket_io {

std::int64_t now_ms() { return steady_us() / 1000; }

std::string errno_text(int e) { return std::strerror(e); }

bool make_addr(const std::string& path, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr->sun_path)) return false;
  std::memcpy(addr->sun_path, path.c_str(), path.size() + 1);
  return true;
}

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

}  // namespace evident::socket_io
