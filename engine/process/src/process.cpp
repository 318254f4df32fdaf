#include "evident/process/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <future>

#include "evident/core/clock.h"

extern char** environ;

namespace evident {
namespace {

int open_pidfd(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

int encode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

}  // namespace

// ---------------------------------------------------------------------------------------- Child

Child::Child(pid_t pid, int pidfd) : pid_(pid), pidfd_(pidfd) {}

Child::~Child() {
  reap();
  if (pidfd_ >= 0) ::close(pidfd_);
}

bool Child::peek_locked() {
  if (exited_) return true;
  siginfo_t info{};
  // WNOWAIT: look without reaping, so the pid (and pgid) stay reserved for us.
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
      info.si_pid == pid_) {
    exited_ = true;
    status_ = info.si_code == CLD_EXITED ? info.si_status : 128 + info.si_status;
  }
  return exited_;
}

bool Child::exited() {
  std::lock_guard lock(mu_);
  return peek_locked();
}

bool Child::gone() {
  if (exited()) return true;
  if (pidfd_ < 0) return false;
  pollfd p{pidfd_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

bool Child::wait_exit(std::int64_t timeout_ms) {
  const std::int64_t deadline = steady_us() / 1000 + timeout_ms;
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (peek_locked()) return true;
    }
    std::int64_t left = deadline - steady_us() / 1000;
    if (left <= 0) return false;
    if (pidfd_ >= 0) {
      pollfd p{pidfd_, POLLIN, 0};
      int r = ::poll(&p, 1, static_cast<int>(left));
      if (r < 0 && errno != EINTR) return false;
    } else {
      // Without pidfd (very old kernels) fall back to short polls; never on Debian 12.
      struct timespec ts{0, 2 * 1000 * 1000};
      ::nanosleep(&ts, nullptr);
    }
  }
}

void Child::signal_group(int sig) {
  std::lock_guard lock(mu_);
  if (reaped_) return;  // the pid may now belong to someone else: never signal it
  if (::kill(-pid_, sig) != 0) ::kill(pid_, sig);
}

int Child::stop(std::int64_t bound_ms) {
  signal_group(SIGTERM);
  if (!wait_exit(bound_ms)) signal_group(SIGKILL);
  return reap();
}

int Child::reap() {
  std::lock_guard lock(mu_);
  if (reaped_) return status_;
  if (!peek_locked()) {
    // Still running: the caller wants it gone (destructor path or after a stop bound).
    if (::kill(-pid_, SIGKILL) != 0) ::kill(pid_, SIGKILL);
  }
  // The leader is unreaped, so its pgid still names only our group: clear stragglers.
  ::kill(-pid_, SIGKILL);
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) status_ = encode_status(status);
  exited_ = true;
  reaped_ = true;
  return status_;
}

std::optional<int> Child::exit_status() {
  std::lock_guard lock(mu_);
  if (!peek_locked()) return std::nullopt;
  return status_;
}

// -------------------------------------------------------------------------------------- Spawner

Spawner::Spawner() : thread_([this] { loop(); }) {}

Spawner::~Spawner() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Spawner::loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

namespace {

// Runs in the vfork()ed child, which shares the parent's memory until execve: only
// async-signal-safe calls, no allocation, no writes to anything but this stack frame (and errno).
[[noreturn]] void child_exec(const SpawnSpec& spec, const char* path, char* const* argv,
                             char* const* envp, pid_t parent, int err_fd) {
  auto fail = [err_fd](int code) {
    int e = errno;
    int msg[2] = {code, e};
    ssize_t ignored = ::write(err_fd, msg, sizeof msg);
    (void)ignored;
    ::_exit(127);
  };
  // Every signal is blocked (the parent blocked them before vfork): a handler of the parent
  // must never run here on the shared memory. Dispositions go back to default first, then the
  // mask is cleared (the daemon blocks TERM/INT for signalfd; the child must not inherit that).
  for (int s = 1; s < NSIG; ++s) {
    if (s != SIGKILL && s != SIGSTOP) ::signal(s, SIG_DFL);  // e.g. SIGPIPE ignored by us
  }
  sigset_t none;
  ::sigemptyset(&none);
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(1);
  // The parent may have died between vfork and prctl: then nobody would kill us.
  if (::getppid() != parent) ::_exit(127);
  if (spec.new_process_group && ::setpgid(0, 0) != 0) fail(2);
  if (spec.stdin_fd >= 0 && ::dup2(spec.stdin_fd, 0) < 0) fail(3);
  if (spec.stdout_fd >= 0 && ::dup2(spec.stdout_fd, 1) < 0) fail(3);
  if (spec.stderr_fd >= 0 && ::dup2(spec.stderr_fd, 2) < 0) fail(3);
  // Nothing else of ours leaks into the child (descriptors opened without O_CLOEXEC by
  // other libraries included), except the one fd the spec keeps.
  ::syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */);
  if (spec.keep_fd >= 0) {
    int flags = ::fcntl(spec.keep_fd, F_GETFD);
    if (flags < 0 || ::fcntl(spec.keep_fd, F_SETFD, flags & ~FD_CLOEXEC) != 0) fail(4);
  }
  if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) fail(6);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(path, argv, envp);
  fail(5);
  ::_exit(127);
}

// vfork instead of fork: fork copies the page tables of the whole (possibly large, e.g. a
// Python interpreter) process and makes its other threads take copy-on-write faults; that cost
// ~5-15 ms per display start on this machine, vfork costs none. Only this spawner thread is
// suspended until the child execs or exits. Kept in its own function so the caller's locals
// cannot be clobbered by the child (vfork returns twice).
__attribute__((noinline)) pid_t vfork_exec(const SpawnSpec& spec, const char* path,
                                           char* const* argv, char* const* envp, pid_t parent,
                                           int err_fd) {
  pid_t pid = ::vfork();
  if (pid == 0) child_exec(spec, path, argv, envp, parent, err_fd);
  return pid;
}

}  // namespace

Result<std::unique_ptr<Child>> Spawner::spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) return make_error("spawn-failed", "empty argv", false);
  // Everything the child needs is built before fork (no allocation after fork).
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  std::promise<Result<std::unique_ptr<Child>>> promise;
  auto future = promise.get_future();
  auto job = [&] {
    int errp[2];
    if (::pipe2(errp, O_CLOEXEC) != 0) {
      promise.set_value(make_error("spawn-failed", std::string("pipe: ") + std::strerror(errno), false));
      return;
    }
    pid_t parent = ::getpid();
    sigset_t all, saved;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &saved);
    pid_t pid = vfork_exec(spec, spec.path.c_str(), argv.data(), envp.data(), parent, errp[1]);
    int e = errno;
    ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    if (pid < 0) {
      ::close(errp[0]);
      ::close(errp[1]);
      promise.set_value(make_error("spawn-failed", std::string("vfork: ") + std::strerror(e), true));
      return;
    }
    ::close(errp[1]);
    // Also set the group from the parent side, so a signal to -pid works even before the
    // child ran setpgid (either call wins; EACCES after exec is fine).
    if (spec.new_process_group) ::setpgid(pid, pid);
    int msg[2] = {0, 0};
    ssize_t n;
    do {
      n = ::read(errp[0], msg, sizeof msg);
    } while (n < 0 && errno == EINTR);
    ::close(errp[0]);
    int pidfd = open_pidfd(pid);
    auto child = std::make_unique<Child>(pid, pidfd);
    if (n == static_cast<ssize_t>(sizeof msg)) {
      child->reap();
      static const char* steps[] = {"", "prctl", "setpgid", "dup2", "fcntl", "execve", "chdir"};
      const char* step = (msg[0] >= 1 && msg[0] <= 6) ? steps[msg[0]] : "child";
      promise.set_value(make_error("exec-failed", std::string(step) + " failed: " +
                                                      std::strerror(msg[1])));
      return;
    }
    promise.set_value(std::move(child));
  };
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(job);
  }
  cv_.notify_one();
  return future.get();
}

Result<std::string> resolve_executable(const std::string& name, const std::string& path_env) {
  auto usable = [](const std::string& p) {
    struct stat st{};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.empty()) return make_error("exec-not-found", "empty command");
  if (name.find('/') != std::string::npos) {
    if (usable(name)) return name;
    return make_error("exec-not-found", "no executable file at the given path");
  }
  std::size_t start = 0;
  while (start <= path_env.size()) {
    std::size_t end = path_env.find(':', start);
    if (end == std::string::npos) end = path_env.size();
    std::string dir = path_env.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    if (usable(candidate)) return candidate;
    start = end + 1;
  }
  return make_error("exec-not-found", "command not found on PATH");
}

std::vector<std::string> environment_with(const std::vector<std::string>& overrides) {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    std::string entry(*e);
    std::string key = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& o : overrides) replaced = replaced || o.substr(0, o.find('=')) == key;
    if (!replaced) out.push_back(entry);
  }
  for (const auto& o : overrides) out.push_back(o);
  return out;
}

}  // namespace evident
