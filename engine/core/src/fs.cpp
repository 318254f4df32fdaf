#include "evident/core/fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "evident/core/random.h"

namespace evident {
namespace {

Status write_all(int fd, std::string_view bytes, const std::string& path) {
  std::size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fs_error("cannot write", path, errno);
    }
    off += static_cast<std::size_t>(n);
  }
  return {};
}

}  // namespace

// Retryable when the same call can succeed later without changing it: the disk or quota was
// full, or the process or system ran out of descriptors (issue #9 item 8).
bool fs_retryable_errno(int err) {
  return err == ENOSPC || err == EDQUOT || err == EMFILE || err == ENFILE || err == EAGAIN ||
         err == EINTR || err == ENOMEM;
}

Error fs_error(const std::string& what, const std::string& path, int err) {
  return make_error("fs-error", what + " " + path + ": " + std::strerror(err), fs_retryable_errno(err));
}

Status make_private_dir(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p(path);
  if (p.has_parent_path() && !std::filesystem::exists(p.parent_path(), ec)) {
    // Missing ancestors are created 0700 too (e.g. the state dir above evidence/): whatever
    // evident creates to hold private files is private (docs/protocol.md §3).
    std::vector<std::filesystem::path> missing;
    for (auto a = p.parent_path(); !a.empty() && !std::filesystem::exists(a, ec); a = a.parent_path()) {
      missing.push_back(a);
      if (a == a.parent_path()) break;
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST) {
        return fs_error("cannot create", it->string(), errno);
      }
    }
  }
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return fs_error("cannot create", path, errno);
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return fs_error("cannot stat", path, errno);
  if (!S_ISDIR(st.st_mode)) return make_error("fs-error", path + " is not a directory", false);
  if (st.st_uid != ::geteuid()) {
    return make_error("fs-error", path + " is owned by another user", false);
  }
  if ((st.st_mode & 0777) != 0700 && ::chmod(path.c_str(), 0700) != 0) {
    return fs_error("cannot chmod", path, errno);
  }
  return {};
}

Status write_file_atomic(const std::string& path, std::string_view bytes, unsigned mode) {
  std::filesystem::path p(path);
  std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
  std::string tmp = dir + "/.tmp-" + random_hex(8);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return fs_error("cannot create", tmp, errno);
  Status st = write_all(fd, bytes, tmp);
  if (st.ok() && ::fchmod(fd, mode) != 0) st = fs_error("cannot chmod", tmp, errno);
  if (st.ok() && ::fsync(fd) != 0) st = fs_error("cannot fsync", tmp, errno);
  if (::close(fd) != 0 && st.ok()) st = fs_error("cannot close", tmp, errno);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) st = fs_error("cannot rename", path, errno);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

Result<std::string> read_file(const std::string& path, std::size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fs_error("cannot open", path, errno);
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      return fs_error("cannot read", path, e);
    }
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes) {
      ::close(fd);
      return make_error("fs-too-large", path + " is larger than " + std::to_string(max_bytes) +
                                            " bytes");
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

Status remove_tree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return fs_error("cannot remove", path, ec.value());
  return {};
}

std::string default_runtime_dir() {
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  if (xdg && *xdg && ::access(xdg, W_OK) == 0) return std::string(xdg) + "/evident";
  return "/tmp/evident-" + std::to_string(::geteuid());
}

std::string default_state_dir() {
  const char* xdg = std::getenv("XDG_STATE_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/evident";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.local/state/evident";
  return "/tmp/evident-state-" + std::to_string(::geteuid());
}

}  // namespace evident
