// Proves that the warm pool leases a pre-started, ready, listed display with a fresh
// generation, refills it with a different Xvfb, leaves other sizes to a normal create, keeps idle
// pooled displays out of list(), and leaves no Xvfb behind after destroy_all().
#include <gtest/gtest.h>

#include <signal.h>

#include <set>
#include <sstream>

#include "evident/display/display.h"
#include "evident/service/display_capture.h"
#include "evident/testing/files.h"
#include "evident/testing/process.h"

namespace evident {
namespace {

using testing::pid_running;
using testing::run_command;

constexpr std::int64_t kWaitMs = 30000;

TEST(WarmPoolTest, LeaseRefillOtherSizesAndTeardown) {
  const std::string dir = testing::make_temp_dir();
  DisplayManagerOptions o;
  o.readiness = capture_readiness();  // as the Engine has it: capture is part of readiness
  o.runtime_dir = dir + "/rt";
  o.warm = {DisplayOptions::of(320, 240, 24, 96), DisplayOptions::of(320, 240, 24, 96)};  // a duplicate is kept once
  auto mgr = std::make_unique<DisplayManager>(o);

  ASSERT_TRUE(mgr->wait_warm(kWaitMs));
  EXPECT_EQ(mgr->warm_ready(), 1);
  // The idle pooled display is neither listed nor counted as a caller's display.
  EXPECT_TRUE(mgr->list().empty());

  std::set<std::string> generations;
  std::set<pid_t> pids;
  auto our_xvfbs = [] {
    std::set<pid_t> out;
    auto r = run_command("pgrep -P " + std::to_string(::getpid()) + " -x Xvfb");
    std::istringstream in(r.out);
    pid_t p = 0;
    while (in >> p) out.insert(p);
    return out;
  };
  const std::set<pid_t> pooled = our_xvfbs();
  ASSERT_EQ(pooled.size(), 1u);
  auto lease = [&]() -> std::shared_ptr<OwnedDisplay> {
    auto d = mgr->create(DisplayOptions::of(320, 240, 24, 96));
    EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.error().code + ": " + d.error().message);
    if (!d.ok()) return nullptr;
    const DisplayInfo& info = (*d)->info();
    EXPECT_TRUE((*d)->alive());
    EXPECT_TRUE(is_generation_token(info.generation));
    EXPECT_TRUE(generations.insert(info.generation).second) << "generation reused";
    EXPECT_TRUE(pids.insert(info.xvfb_pid).second) << "Xvfb pid reused";
    EXPECT_TRUE(pid_running(info.xvfb_pid));
    // Ready: a screenshot of the right size works on the leased display.
    {
      std::lock_guard lock((*d)->x_mutex());
      EXPECT_NE(display_capturer(**d), nullptr);
      if (display_capturer(**d)) {
        auto img = display_capturer(**d)->grab();
        EXPECT_TRUE(img.ok());
        if (img.ok()) {
          EXPECT_EQ(img->width, 320);
          EXPECT_EQ(img->height, 240);
        }
      }
    }
    auto got = mgr->get(info.id, info.generation);
    EXPECT_TRUE(got.ok());
    auto status = mgr->status(info.id, info.generation);
    EXPECT_TRUE(status.ok() && status->ready);
    bool listed = false;
    for (const auto& l : mgr->list()) listed = listed || l.generation == info.generation;
    EXPECT_TRUE(listed);
    return *d;
  };

  auto first = lease();
  ASSERT_NE(first, nullptr);
  // The leased display was the pooled one: it was already running before the lease.
  EXPECT_EQ(first->info().xvfb_pid, *pooled.begin());
  ASSERT_TRUE(mgr->wait_warm(kWaitMs));  // refilled in the background
  EXPECT_EQ(mgr->list().size(), 1u);     // the refill is not listed
  auto second = lease();
  ASSERT_NE(second, nullptr);
  EXPECT_NE(first->info().xvfb_pid, second->info().xvfb_pid);
  EXPECT_NE(first->info().generation, second->info().generation);

  // A size with no warm entry: a normal create.
  auto other = mgr->create(DisplayOptions::of(640, 480, 24, 96));
  ASSERT_TRUE(other.ok()) << other.error().code;
  pids.insert((*other)->info().xvfb_pid);
  EXPECT_TRUE(generations.insert((*other)->info().generation).second);
  {
    std::lock_guard lock((*other)->x_mutex());
    auto img = display_capturer(**other)->grab();
    ASSERT_TRUE(img.ok());
    EXPECT_EQ(img->width, 640);
  }
  EXPECT_EQ(mgr->list().size(), 3u);

  // A pooled display that died while idle is discarded, never leased.
  ASSERT_TRUE(mgr->wait_warm(kWaitMs));
  // Find the idle pooled Xvfb: an Xvfb child of ours that no listed display owns.
  pid_t idle_pid = 0;
  for (pid_t p : our_xvfbs()) {
    if (!pids.count(p)) idle_pid = p;
  }
  ASSERT_GT(idle_pid, 0);
  pids.insert(idle_pid);
  ASSERT_EQ(::kill(idle_pid, SIGKILL), 0);
  ASSERT_TRUE(testing::wait_until([&] { return !pid_running(idle_pid); }, kWaitMs));
  auto third = lease();
  ASSERT_NE(third, nullptr);
  EXPECT_NE(third->info().xvfb_pid, idle_pid);

  first.reset();
  second.reset();
  third.reset();
  other = make_error("x", "x");
  ASSERT_TRUE(mgr->wait_warm(kWaitMs));
  for (pid_t p : our_xvfbs()) pids.insert(p);
  EXPECT_GE(pids.size(), 6u);  // 3 leases + 1 normal + 1 killed idle + 1 idle refill
  mgr->destroy_all();
  EXPECT_FALSE(mgr->wait_warm(0));  // shut down
  for (pid_t p : pids) EXPECT_FALSE(pid_running(p)) << "Xvfb " << p << " survived";
  auto refused = mgr->create(DisplayOptions::of(320, 240, 24, 96));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, "engine-shutting-down");
  mgr.reset();
  run_command("rm -rf " + dir);
}

// Proves that with no warm entries nothing is pre-started and wait_warm is true at once.
TEST(WarmPoolTest, EmptyPoolIsInert) {
  const std::string dir = testing::make_temp_dir();
  DisplayManagerOptions o;
  o.readiness = capture_readiness();  // as the Engine has it: capture is part of readiness
  o.runtime_dir = dir + "/rt";
  DisplayManager mgr(o);
  EXPECT_TRUE(mgr.wait_warm(0));
  EXPECT_EQ(mgr.warm_ready(), 0);
  auto r = run_command("pgrep -P " + std::to_string(::getpid()) + " -x Xvfb");
  EXPECT_TRUE(r.out.empty());
  run_command("rm -rf " + dir);
}

}  // namespace
}  // namespace evident
