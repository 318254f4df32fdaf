// Child processes evident starts (Xvfb servers and apps): vfork/exec behind a small seam.
// All spawns happen on one long-lived spawner thread, because PR_SET_PDEATHSIG fires when the
// *thread* that forked exits, and requests arrive on short-lived worker threads.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "evident/core/status.h"

namespace evident {

struct SpawnSpec {
  std::string path;               // absolute path of the executable (see resolve_executable)
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // the full environment, "KEY=VALUE"
  int stdin_fd = -1;              // dup2'ed onto 0/1/2 in the child (-1: /dev/null is not opened)
  int stdout_fd = -1;
  int stderr_fd = -1;
  int keep_fd = -1;               // one extra descriptor kept open across exec (Xvfb -displayfd)
  bool new_process_group = true;  // setpgid(0,0): the child leads its own group
  std::string cwd;                // chdir() in the child before exec (empty: inherit)
};

// A child we forked. It is never reaped before the caller asks (reap()), so while the object
// lives its pid — and its process-group id — cannot be reused by anyone else: signalling the
// group is safe until reap().
class Child {
 public:
  Child(pid_t pid, int pidfd);
  ~Child();  // reaps (KILLing the group first) if still unreaped
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  // True once the process has exited (peeked with WNOWAIT; it stays unreaped).
  bool exited();
  // exited(), or its pidfd already reports the exit. The kernel can wake pidfd pollers (another
  // process watching this one, a test) before the exit is waitable here, so a liveness check
  // that only waits (exited) can call a process alive that an observer has seen end.
  bool gone();
  // Waits up to `timeout_ms` for exit; true if exited. Event-driven (pidfd + poll).
  bool wait_exit(std::int64_t timeout_ms);
  // Signals the process group (or the process if no group) while the pid is still ours.
  void signal_group(int sig);
  // TERM the group, wait up to `bound_ms`, KILL the group, reap. Returns exit_status().
  int stop(std::int64_t bound_ms);
  // Blocks until exit, KILLs the rest of the group (its pgid is still reserved by the unreaped
  // leader), then reaps. Idempotent.
  int reap();
  // Exit code, or 128+signal when killed by a signal; nullopt while running.
  std::optional<int> exit_status();
  int pidfd() const { return pidfd_; }

 private:
  bool peek_locked();
  std::mutex mu_;
  pid_t pid_;
  int pidfd_;
  bool exited_ = false;
  bool reaped_ = false;
  int status_ = 0;
};

// Runs every spawn on its own thread (see the file comment). Thread-safe.
class Spawner {
 public:
  Spawner();
  ~Spawner();
  Spawner(const Spawner&) = delete;
  Spawner& operator=(const Spawner&) = delete;

  // vforks and execs `spec` with PR_SET_PDEATHSIG(SIGKILL), default signal dispositions and an
  // empty signal mask. An exec failure is reported through a CLOEXEC pipe.
  // Errors: "spawn-failed" (vfork/pipe), "exec-failed" (message names the errno).
  Result<std::unique_ptr<Child>> spawn(const SpawnSpec& spec);

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::thread thread_;
};

// Finds `name` like execvp would (a name with '/' is taken as is), using `path_env`.
// Error: "exec-not-found".
Result<std::string> resolve_executable(const std::string& name, const std::string& path_env);

// The current environment with `overrides` ("KEY=VALUE") replacing same-named entries.
std::vector<std::string> environment_with(const std::vector<std::string>& overrides);

}  // namespace evident
