// Helpers for the session integration tests: an in-process Engine with a real Xvfb display and
// the fixture app on it. The generic pieces (the app's event log, processes, Pillow) live in
// engine/testing.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "evident/core/fs.h"
#include "evident/core/json.h"
#include "evident/core/random.h"
#include "evident/service/engine.h"
#include "evident/testing/fixture_log.h"
#include "evident/testing/pillow.h"
#include "evident/testing/process.h"

namespace evident::testing {

namespace fs = std::filesystem;

inline std::string code_of(const Json& r) {
  return r.value("ok", false) ? "ok" : r["error"]["code"].get<std::string>();
}

// An in-process engine with one display and the fixture app on it.
class EngineHarness {
 public:
  // `clock` (optional): the sessions' and tasks' clock (a FakeClock moves their deadlines).
  explicit EngineHarness(int width = 800, int height = 600, const Clock* clock = nullptr) {
    root_ = (fs::temp_directory_path() / ("evident-session-x11-" + random_hex(6))).string();
    EngineOptions o;
    o.clock = clock;
    o.state_dir = root_ + "/state";
    o.runtime_dir = root_ + "/run";
    (void)make_private_dir(root_);
    engine_ = std::make_unique<Engine>(o);
    actor_.kind = Actor::Kind::kInProcess;
    actor_.uid = ::getuid();
    actor_.pid = ::getpid();
    Json d = call("display.create", Json{{"width", width}, {"height", height}});
    if (code_of(d) != "ok") {
      ADD_FAILURE() << "display.create: " << d.dump();
      return;
    }
    display_ = d["display"];
  }
  ~EngineHarness() {
    engine_.reset();
    (void)remove_tree(root_);
  }

  Json call(const std::string& op, const Json& args) {
    return engine_->call(actor_, Json{{"op", op}, {"args", args}});
  }
  Json session(const Json& request) { return session_raw(request.dump()); }
  Json session_raw(const std::string& raw) { return session_as(actor_, raw); }
  Json session_as(const Actor& a, const std::string& raw) {
    return engine_->call(a, Json{{"op", "session"}, {"args", {{"request", raw}}}});
  }

  // Launches the fixture app at (0,0) and waits for its window.
  std::string launch_app(const std::string& name = "app") {
    std::string log = root_ + "/" + name + "-events.jsonl";
    Json r = call("app.launch", Json{{"display_id", display_id()},
                                     {"generation", generation()},
                                     {"argv", Json::array({fixture_app_path(), "--events", log})},
                                     {"wait_window_ms", 10000}});
    if (code_of(r) != "ok") {
      ADD_FAILURE() << "app.launch: " << r.dump();
      return "";
    }
    app_ = r["app"];
    log_ = std::make_unique<EventLog>(log);
    // The app logs `ready` once its first Expose is painted and synced.
    EXPECT_TRUE(log_->wait_for([](const std::vector<Json>& ev) {
      return !ev.empty() && ev[0]["type"] == "ready";
    }));
    return app_["app_id"];
  }

  Json begin(const std::string& attempt = "attempt-" + random_hex(4)) {
    return session(Json{{"op", "begin"},
                        {"display_id", display_id()},
                        {"generation", generation()},
                        {"app_id", app_["app_id"]},
                        {"attempt_id", attempt},
                        {"job_sha256", std::string(64, 'a')}});
  }

  int display_id() const { return display_["id"]; }
  std::string generation() const { return display_["generation"]; }
  int app_pid() const { return app_["pid"]; }
  EventLog& log() { return *log_; }
  Engine& engine() { return *engine_; }
  const Actor& actor() const { return actor_; }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
  std::unique_ptr<Engine> engine_;
  Actor actor_;
  Json display_;
  Json app_;
  std::unique_ptr<EventLog> log_;
};

}  // namespace evident::testing
