// Helpers shared by the display module's source files (not installed).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "evident/core/clock.h"
#include "evident/core/fs.h"
#include "evident/core/status.h"

namespace evident::display_detail {


inline Error not_found(int id) {
  return make_error("display-not-found", "no display " + std::to_string(id) +
                                             " is owned by this engine");
}

inline Error generation_mismatch(int id) {
  return make_error("display-generation-mismatch",
                    "the generation does not name the current lifetime of display " +
                        std::to_string(id) + " (stale, foreign or malformed); the display is "
                        "unchanged");
}

inline Error shutting_down() {
  return make_error("engine-shutting-down", "the engine is shutting down");
}

inline std::int64_t now_ms() { return steady_us() / 1000; }

inline std::string path_env() {
  const char* p = std::getenv("PATH");
  return p ? p : "/usr/local/bin:/usr/bin:/bin";
}

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

inline std::string last_line_of(const std::string& path) {
  auto text = read_file(path, 1 << 20);
  if (!text.ok()) return "";
  std::string s = *text;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  auto nl = s.rfind('\n');
  std::string line = nl == std::string::npos ? s : s.substr(nl + 1);
  return line.substr(0, 300);
}

// Creates `path` (which must not exist yet) 0600 and writes `bytes` to it.
inline Status write_private_file(const std::string& path, const std::string& bytes) {
  Fd f(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (f.fd < 0) return fs_error("cannot create", path, errno);
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(f.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fs_error("cannot write", path, errno);
    done += static_cast<std::size_t>(n);
  }
  if (::close(f.fd) != 0) {
    f.fd = -1;
    return fs_error("cannot write", path, errno);
  }
  f.fd = -1;
  return {};
}


// TERM every group at once, then one shared bound, then KILL+reap the rest.
template <class Apps>
void stop_all(Apps& apps, std::int64_t bound_ms) {
  for (auto& a : apps) a->child->signal_group(SIGTERM);
  const std::int64_t deadline = now_ms() + bound_ms;
  for (auto& a : apps) a->child->wait_exit(std::max<std::int64_t>(0, deadline - now_ms()));
  for (auto& a : apps) a->child->reap();
}

}  // namespace evident::display_detail
