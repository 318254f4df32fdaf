// Browser workspaces through the real daemon and CLI (docs/browsers.md), with a real Chromium on
// a real Xvfb. Two Chromium starts in all: one closed by `display destroy`, one left behind by a
// SIGKILLed daemon.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include "evident/core/json.h"
#include "evident/testing/daemon.h"
#include "evident/testing/files.h"
#include "evident/testing/process.h"

namespace evident {
namespace {

using testing::path_exists;
using testing::run_command;

std::string q(const std::string& s) { return "'" + s + "'"; }

std::vector<pid_t> group_members(pid_t pgrp) {
  std::vector<pid_t> out;
  for (const auto& p : testing::list_processes()) {
    if (p.pgrp == pgrp && !testing::is_dead_state(p.state)) out.push_back(p.pid);
  }
  return out;
}

class BrowserCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The daemon's runtime dir (profiles live there) inside this test's temp dir.
    ASSERT_EQ(::mkdir((tmp_ / "xdg").c_str(), 0700), 0);
    ::setenv("XDG_RUNTIME_DIR", (tmp_ / "xdg").c_str(), 1);
    daemon_ = std::make_unique<testing::EvidentDaemon>(tmp_.path());
    ASSERT_TRUE(daemon_->start()) << testing::slurp(daemon_->log_path());
  }
  void TearDown() override { ::unsetenv("XDG_RUNTIME_DIR"); }
  Json cli(const std::string& args, int* exit_status = nullptr) {
    auto r = run_command(testing::evident_cli_path() + " --socket " + q(daemon_->socket()) + " --json " + args);
    if (exit_status) *exit_status = r.exit_status;
    try {
      return Json::parse(r.out);
    } catch (...) {
      ADD_FAILURE() << "not one JSON object: " << r.out;
      return Json();
    }
  }
  std::string display(int w, int h) {
    auto d = cli("display create --width " + std::to_string(w) + " --height " + std::to_string(h));
    EXPECT_TRUE(d.value("ok", false)) << d.dump();
    return std::to_string(d["display"]["id"].get<int>()) + " " + d["display"]["generation"].get<std::string>();
  }

  testing::TempDir tmp_;
  std::unique_ptr<testing::EvidentDaemon> daemon_;
};

TEST_F(BrowserCliTest, CreateUseAndDisplayDestroyCleansUp) {
  const std::string ids = display(480, 360);
  int rc = 0;
  // Refused before anything starts: usage errors exit 2, engine refusals exit 1.
  cli("browser create " + ids + " about:blank --viewport 10", &rc);
  EXPECT_EQ(rc, 2);
  auto big = cli("browser create " + ids + " about:blank --viewport 480x360", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(big["error"]["code"], "browser-viewport-range");
  EXPECT_EQ(cli("browser create " + ids + " chrome://version")["error"]["code"], "browser-url-scheme");
  EXPECT_EQ(cli("browser create " + ids + " about:blank --extra-arg=--user-data-dir=/tmp")["error"]["code"],
            "browser-args");
  const std::string id = ids.substr(0, ids.find(' '));
  EXPECT_EQ(cli("browser create " + id + " gen-00000000000000000000000000000000 about:blank")["error"]["code"],
            "display-generation-mismatch");
  EXPECT_TRUE(cli("app list")["apps"].empty());

  testing::write_text(tmp_ / "p.html", "<!doctype html><title>p</title><button id=b style=\"position:absolute;"
                                       "left:10px;top:20px;width:100px;height:40px\">b</button>");
  auto created = cli("browser create " + ids + " " + q("file://" + (tmp_ / "p.html")) + " --viewport 320x240", &rc);
  ASSERT_EQ(rc, 0) << created.dump();
  const Json b = created["browser"];
  const std::string bid = b["browser_id"].get<std::string>();
  EXPECT_EQ(b["viewport"], (Json{{"width", 320}, {"height", 240}}));
  const std::string profile = b["profile_dir"].get<std::string>();
  EXPECT_EQ(profile.rfind((tmp_ / "xdg/evident/engine-"), 0), 0u) << profile;
  EXPECT_TRUE(path_exists(profile));

  auto listed = cli("browser list");
  ASSERT_EQ(listed["browsers"].size(), 1u);
  EXPECT_EQ(listed["browsers"][0]["browser_id"], bid);
  EXPECT_EQ(listed["browsers"][0]["alive"], true);
  auto status = cli("browser status " + bid);
  EXPECT_EQ(status["live"], true) << status.dump();
  EXPECT_EQ(cli("browser evaluate " + bid + " document.title")["value_json"], "\"p\"");
  auto box = cli("browser element-box " + bid + " '#b'");
  EXPECT_EQ(box["box"], (Json{{"x", 10}, {"y", 20}, {"width", 100}, {"height", 40}, {"center_x", 60},
                              {"center_y", 40}, {"in_viewport", true}}));
  EXPECT_EQ(cli("browser element-box " + bid + " '#nothing'")["error"]["code"], "browser-element-not-found");
  EXPECT_EQ(cli("browser status browser-unknown")["error"]["code"], "browser-not-found");

  // Destroying the display closes its browsers first: process group gone, profile removed.
  const pid_t pid = b["pid"].get<int>();
  const auto members = group_members(pid);
  EXPECT_FALSE(members.empty());
  EXPECT_TRUE(cli("display destroy " + ids).value("ok", false));
  for (pid_t p : members) EXPECT_TRUE(testing::wait_pid_gone(p, 10000)) << p;
  EXPECT_FALSE(path_exists(profile));
  EXPECT_TRUE(cli("browser list")["browsers"].empty());
  EXPECT_EQ(cli("browser evaluate " + bid + " 1")["error"]["code"], "browser-not-found");
}

TEST_F(BrowserCliTest, SigkilledDaemonLeavesNoChromiumAndTheNextEngineRemovesTheProfile) {
  const std::string ids = display(480, 360);
  auto created = cli("browser create " + ids + " about:blank --viewport 320x240");
  ASSERT_TRUE(created.value("ok", false)) << created.dump();
  const pid_t pid = created["browser"]["pid"].get<int>();
  const std::string profile = created["browser"]["profile_dir"].get<std::string>();
  const auto members = group_members(pid);
  ASSERT_GE(members.size(), 2u);

  ASSERT_EQ(::kill(daemon_->pid(), SIGKILL), 0);
  EXPECT_EQ(daemon_->wait_exit(10000), 128 + SIGKILL);
  // Chromium dies by its parent-death signal; its helpers follow when it is gone.
  for (pid_t p : members) EXPECT_TRUE(testing::wait_pid_gone(p, 10000)) << p;
  EXPECT_TRUE(group_members(pid).empty());
  // A SIGKILLed process cleans up nothing: the profile is there until the next engine that uses
  // the same runtime directory starts, which removes dead engines' scratch.
  EXPECT_TRUE(path_exists(profile));
  // A directory of its own: the log must not already hold the first daemon's "listening on".
  ASSERT_EQ(::mkdir((tmp_ / "second").c_str(), 0700), 0);
  daemon_ = std::make_unique<testing::EvidentDaemon>(tmp_ / "second");
  ASSERT_TRUE(daemon_->start()) << testing::slurp(daemon_->log_path());
  EXPECT_FALSE(path_exists(profile));
}

}  // namespace
}  // namespace evident
