// Unit tests for the spawn seam: exec failure reporting, exit statuses, group stop, PATH lookup,
// the child's clean signal state.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <unistd.h>

#include <dirent.h>
#include <pthread.h>

#include <fstream>
#include <sstream>

#include "evident/core/clock.h"
#include "evident/process/process.h"
#include "evident/testing/process.h"

namespace evident {
namespace {

// Live (non-zombie) members of process group `pgid`, from /proc.
int live_members(pid_t pgid) {
  int n = 0;
  for (const auto& p : testing::list_processes()) {
    if (p.pgrp == pgid && !testing::is_dead_state(p.state)) ++n;
  }
  return n;
}

SpawnSpec sh(const std::string& script) {
  SpawnSpec s;
  s.path = "/bin/sh";
  s.argv = {"sh", "-c", script};
  s.env = environment_with({});
  return s;
}

TEST(ProcessTest, ReportsExitStatusWithoutSleeping) {
  Spawner sp;
  auto c = sp.spawn(sh("exit 7"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_TRUE((*c)->wait_exit(10000));
  EXPECT_EQ((*c)->exit_status(), 7);
  EXPECT_EQ((*c)->reap(), 7);
}

TEST(ProcessTest, ExecFailureIsAnErrorNotAChild) {
  Spawner sp;
  SpawnSpec s;
  s.path = "/nonexistent/evident-no-such-binary";
  s.argv = {"x"};
  auto c = sp.spawn(s);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, "exec-failed");
}

// The Spawner's thread inherits a blocked TERM and an ignored PIPE from the thread that made it
// (as in the daemon); the exec'ed child must start with neither, and spawning must leave the
// spawner's own mask as it was (a second child sees the same clean state).
TEST(ProcessTest, ChildStartsWithEmptyMaskAndDefaultDispositions) {
  sigset_t term, saved;
  ::sigemptyset(&term);
  ::sigaddset(&term, SIGTERM);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &term, &saved), 0);
  struct sigaction ign{}, old_pipe{};
  ign.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGPIPE, &ign, &old_pipe), 0);
  {
    Spawner sp;
    char dir_tmpl[] = "/tmp/evident-process-test-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_tmpl), nullptr);
    const std::string dir = dir_tmpl;
    for (int round = 0; round < 2; ++round) {
      const std::string out = dir + "/status" + std::to_string(round);
      int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      ASSERT_GE(fd, 0);
      SpawnSpec s;
      s.path = "/bin/cat";
      s.argv = {"cat", "/proc/self/status"};
      s.env = environment_with({});
      s.stdout_fd = fd;
      auto c = sp.spawn(s);
      ::close(fd);
      ASSERT_TRUE(c.ok()) << c.error().message;
      ASSERT_TRUE((*c)->wait_exit(10000));
      EXPECT_EQ((*c)->reap(), 0);
      std::ifstream f(out);
      std::string line, blk, ign_mask;
      while (std::getline(f, line)) {
        if (line.rfind("SigBlk:", 0) == 0) blk = line.substr(7);
        if (line.rfind("SigIgn:", 0) == 0) ign_mask = line.substr(7);
      }
      auto trim = [](std::string v) { return v.erase(0, v.find_first_not_of(" \t")); };
      EXPECT_EQ(trim(blk), "0000000000000000") << "round " << round;
      EXPECT_EQ(trim(ign_mask), "0000000000000000") << "round " << round;
      ::unlink(out.c_str());
    }
    ::rmdir(dir.c_str());
  }
  ::sigaction(SIGPIPE, &old_pipe, nullptr);
  ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
}

TEST(ProcessTest, StopTermsTheWholeGroupAndKillsAfterTheBound) {
  Spawner sp;
  // The shell ignores TERM and has a child that ignores it too: only KILL ends them.
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  SpawnSpec spec = sh("trap '' TERM; sleep 1000 & echo ready; wait");
  spec.stdout_fd = p[1];
  auto c = sp.spawn(spec);
  ::close(p[1]);
  ASSERT_TRUE(c.ok());
  char buf[8] = {};
  ASSERT_GT(::read(p[0], buf, sizeof buf), 0);  // the traps are set from here on
  ::close(p[0]);
  pid_t pid = (*c)->pid();
  EXPECT_FALSE((*c)->exited());
  int status = (*c)->stop(200);
  EXPECT_EQ(status, 128 + SIGKILL);
  // No live member is left in the group (orphaned members may linger as zombies until init
  // reaps them, so wait with a deadline).
  std::int64_t deadline = steady_us() + 5000000;
  while (live_members(pid) > 0 && steady_us() < deadline) {
  }
  EXPECT_EQ(live_members(pid), 0);
}

TEST(ProcessTest, TermIsEnoughForWellBehavedChildren) {
  Spawner sp;
  auto c = sp.spawn(sh("exec sleep 1000"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->stop(10000), 128 + SIGTERM);
}

TEST(ProcessTest, ResolvesOnPath) {
  auto r = resolve_executable("sh", "/nonexistent:/bin");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "/bin/sh");
  EXPECT_EQ(resolve_executable("evident-no-such-binary", "/bin:/usr/bin").error().code,
            "exec-not-found");
  EXPECT_FALSE(resolve_executable("/etc/passwd", "").ok());
}

TEST(ProcessTest, EnvironmentOverridesReplace) {
  ::setenv("EVIDENT_TEST_VAR", "old", 1);
  auto env = environment_with({"EVIDENT_TEST_VAR=new"});
  int seen = 0;
  for (const auto& e : env) {
    if (e.rfind("EVIDENT_TEST_VAR=", 0) == 0) {
      ++seen;
      EXPECT_EQ(e, "EVIDENT_TEST_VAR=new");
    }
  }
  EXPECT_EQ(seen, 1);
}

}  // namespace
}  // namespace evident
