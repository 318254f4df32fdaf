// A display whose Xvfb died (not destroyed through evident) gives `display-dead` on every op that
// needs it live, through Engine::call, the same path the daemon and the Python module take; a
// stale or foreign generation of that display is still `display-generation-mismatch` (a
// different condition: the generation names no current lifetime), and status/destroy still work.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include "evident/display/display.h"
#include "evident/service/engine.h"
#include "engine_fixture.h"
#include "evident/testing/files.h"
#include "evident/testing/process.h"

namespace evident {
namespace {

using DeadDisplayTest = testing::InProcessEngineTest;

TEST_F(DeadDisplayTest, EveryOpThatNeedsTheDisplaySaysDisplayDead) {
  Json created = call("display.create", Json{{"width", 320}, {"height", 240}});
  ASSERT_EQ(code(created), "ok") << created.dump();
  const int id = created["display"]["id"];
  const std::string gen = created["display"]["generation"];
  const Json ref{{"display_id", id}, {"generation", gen}};
  auto with = [&](Json extra) {
    Json a = ref;
    for (auto it = extra.begin(); it != extra.end(); ++it) a[it.key()] = it.value();
    return a;
  };
  // An app that does not use X, so it outlives the server: a session could bind to it.
  Json app = call("app.launch", with(Json{{"argv", Json::array({"sleep", "60"})}}));
  ASSERT_EQ(code(app), "ok") << app.dump();
  // While alive, the ops below answer normally (so the codes after the kill are the kill's).
  ASSERT_EQ(code(call("display.screenshot", with(Json{{"out", dir_ + "/before.png"}}))), "ok");
  ASSERT_EQ(code(call("window.list", ref)), "ok");

  pid_t xvfb = 0;
  for (const auto& d : engine_->displays().list()) {
    if (d.id == id) xvfb = d.xvfb_pid;
  }
  ASSERT_GT(xvfb, 0);
  ASSERT_EQ(::kill(xvfb, SIGKILL), 0);
  ASSERT_TRUE(testing::wait_pid_gone(xvfb));

  const Json click = Json::array({Json{{"type", "click"}, {"x", 10}, {"y", 10}}});
  const Json region{{"x", 0}, {"y", 0}, {"width", 10}, {"height", 10}};
  struct Case {
    std::string op;
    Json args;
  };
  const std::vector<Case> cases = {
      {"display.screenshot", with(Json{{"out", dir_ + "/after.png"}})},
      {"app.launch", with(Json{{"argv", Json::array({"true"})}})},
      {"app.launch", with(Json{{"argv", Json::array({"true"})}, {"wait_window_ms", 1000}})},
      {"cu.actions", with(Json{{"request", Json{{"actions", click}}}})},
      {"window.list", ref},
      {"window.wait", with(Json{{"title", "x"}, {"timeout_ms", 1000}})},
      {"window.capture", with(Json{{"id", 1}, {"out", dir_ + "/w.png"}})},
      {"window.focus", with(Json{{"id", 1}})},
      {"wait.stable", with(Json{{"quiet_ms", 50}, {"timeout_ms", 1000}})},
      {"wait.pixels", with(Json{{"region", region},
                                {"color", Json{{"r", 0}, {"g", 0}, {"b", 0}}},
                                {"timeout_ms", 1000}})},
  };
  for (const auto& c : cases) {
    Json r = call(c.op, c.args);
    EXPECT_EQ(code(r), "display-dead") << c.op << " " << c.args.dump() << " -> " << r.dump();
  }
  // A session's begin on the dead display.
  Json begin{{"op", "begin"},          {"display_id", id},
             {"generation", gen},      {"app_id", app["app"]["app_id"]},
             {"attempt_id", "attempt-dead"}, {"job_sha256", std::string(64, 'a')}};
  Json b = call("session", Json{{"request", begin.dump()}});
  EXPECT_EQ(code(b), "display-dead") << b.dump();

  // A generation that is not the current one stays a mismatch, dead display or not.
  const Json stale{{"display_id", id}, {"generation", "gen-" + std::string(32, '0')}};
  EXPECT_EQ(code(call("display.screenshot", Json{{"display_id", id},
                                                 {"generation", "gen-" + std::string(32, '0')},
                                                 {"out", dir_ + "/s.png"}})),
            "display-generation-mismatch");
  EXPECT_EQ(code(call("window.list", stale)), "display-generation-mismatch");
  begin["generation"] = "gen-" + std::string(32, '0');
  EXPECT_EQ(code(call("session", Json{{"request", begin.dump()}})), "display-generation-mismatch");

  // status answers, naming what is blocked; destroy works, and the id is then unknown.
  Json st = call("display.status", ref);
  ASSERT_EQ(code(st), "ok") << st.dump();
  EXPECT_EQ(st["ready"], false);
  bool target_blocked = false;
  for (const auto& l : st["layers"]) {
    if (l["name"] == "target_display") target_blocked = l["state"] == "blocked";
  }
  EXPECT_TRUE(target_blocked) << st.dump();
  EXPECT_EQ(code(call("display.destroy", ref)), "ok");
  EXPECT_EQ(code(call("display.screenshot", with(Json{{"out", dir_ + "/gone.png"}}))),
            "display-not-found");
}

}  // namespace
}  // namespace evident
