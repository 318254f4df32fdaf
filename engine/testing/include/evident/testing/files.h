// Test support: files and directories, and bounded waits for a file's contents (inotify on the
// file's directory, so a file that does not exist yet is waited for too; never slept on).
#pragma once

#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "evident/core/fs.h"

namespace evident::testing {

// The whole file, or "" when it cannot be opened.
inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// The whole file; throws when it cannot be opened (for inputs that must exist).
inline std::string read_text(const std::string& path) {
  if (!std::ifstream(path, std::ios::binary)) throw std::runtime_error("cannot open " + path);
  return slurp(path);
}

inline void write_text(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

inline bool path_exists(const std::string& p) {
  struct stat st{};
  return ::lstat(p.c_str(), &st) == 0;
}

// A fresh /tmp/evident-test-XXXXXX directory ("" on failure).
inline std::string make_temp_dir() {
  char tmpl[] = "/tmp/evident-test-XXXXXX";
  char* d = ::mkdtemp(tmpl);
  return d ? d : "";
}

// A fresh temporary directory, removed with everything in it when the object goes away.
class TempDir {
 public:
  TempDir() : path_(make_temp_dir()) {}
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    if (!path_.empty()) (void)remove_tree(path_);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

// Waits until `done(contents of path)` holds or `timeout_ms` passes; wakes on every change in
// the file's directory (create, write, close, rename into place).
inline bool wait_file(const std::string& path, const std::function<bool(const std::string&)>& done,
                      int timeout_ms) {
  if (done(slurp(path))) return true;
  const int fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0) return false;
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  ::inotify_add_watch(fd, dir.c_str(), IN_MODIFY | IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_TO);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool found = false;
  // Checked after the watch exists, so a change between the first check and here is not lost.
  while (!(found = done(slurp(path)))) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) > 0) {
      char buf[4096];
      while (::read(fd, buf, sizeof buf) > 0) {
      }
    }
  }
  ::close(fd);
  return found;
}

// Waits (inotify, bounded) until `path` contains `needle`.
inline bool wait_file_contains(const std::string& path, const std::string& needle, int timeout_ms) {
  return wait_file(path, [&](const std::string& text) { return text.find(needle) != std::string::npos; },
                   timeout_ms);
}

}  // namespace evident::testing
