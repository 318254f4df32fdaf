// Session overhead micro-benchmark (docs/sessions.md, performance target: ≤ 300 ms for
// begin → 16 clicks → freeze → observe → finish → close on a display that is already up).
// In-process through Engine::call, against the fixture app; prints one JSON object.
// Usage: evident-bench-session [--runs N] [--width W] [--height H]
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "evident/core/clock.h"
#include "evident/core/fs.h"
#include "evident/core/json.h"
#include "evident/core/random.h"
#include "evident/service/engine.h"

using namespace evident;

namespace {

std::int64_t median(std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 7, width = 1280, height = 800;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--runs") runs = std::atoi(argv[i + 1]);
    else if (a == "--width") width = std::atoi(argv[i + 1]);
    else if (a == "--height") height = std::atoi(argv[i + 1]);
  }
  std::string root = std::filesystem::temp_directory_path().string() + "/evident-bench-session-" + random_hex(6);
  (void)make_private_dir(root);
  int rc = 0;
  {
    EngineOptions o;
    o.state_dir = root + "/state";
    o.runtime_dir = root + "/run";
    Engine engine(o);
    Actor actor;
    actor.kind = Actor::Kind::kInProcess;
    actor.uid = ::getuid();
    actor.pid = ::getpid();
    auto call = [&](const std::string& op, const Json& args) {
      return engine.call(actor, Json{{"op", op}, {"args", args}});
    };
    auto session = [&](const Json& req) {
      Json r = call("session", Json{{"request", req.dump()}});
      if (!r.value("ok", false)) throw std::runtime_error(r.dump());
      return r;
    };
    try {
      Json d = call("display.create", Json{{"width", width}, {"height", height}});
      if (!d.value("ok", false)) throw std::runtime_error(d.dump());
      int id = d["display"]["id"];
      std::string gen = d["display"]["generation"];
      Json app = call("app.launch", Json{{"display_id", id}, {"generation", gen},
                                         {"argv", Json::array({std::string(EVIDENT_BINARY_DIR) + "/fixtures/app/evident-fixture-app",
                                                               "--events", root + "/events.jsonl"})},
                                         {"wait_window_ms", 10000}});
      if (!app.value("ok", false)) throw std::runtime_error(app.dump());
      std::string app_id = app["app"]["app_id"];
      Json clicks = Json::array();
      for (int i = 0; i < 16; ++i) clicks.push_back(Json{{"type", "click"}, {"x", 245}, {"y", 105}});

      std::vector<std::int64_t> total, t_begin, t_actions, t_freeze, t_observe, t_finish, t_close;
      for (int run = 0; run < runs; ++run) {
        std::int64_t t0 = steady_us();
        Json b = session(Json{{"op", "begin"}, {"display_id", id}, {"generation", gen}, {"app_id", app_id},
                              {"attempt_id", "bench-" + std::to_string(run)}, {"job_sha256", std::string(64, '0')}});
        std::string sid = b["session_id"];
        std::int64_t t1 = steady_us();
        session(Json{{"op", "actions"}, {"session_id", sid}, {"sequence", 0}, {"actions", clicks}});
        std::int64_t t2 = steady_us();
        session(Json{{"op", "freeze"}, {"session_id", sid}, {"sequence", 1}});
        std::int64_t t3 = steady_us();
        Json ob = session(Json{{"op", "observe"}, {"session_id", sid}, {"sequence", 2},
                               {"pre_observation_sha256", std::string(64, '0')}});
        std::int64_t t4 = steady_us();
        session(Json{{"op", "finish"}, {"session_id", sid}, {"sequence", 3},
                     {"observation_sha256", ob["frame"]["sha256"]}, {"claims", {{"bench", true}}}});
        std::int64_t t5 = steady_us();
        session(Json{{"op", "close"}, {"session_id", sid}, {"sequence", 4}});
        std::int64_t t6 = steady_us();
        total.push_back(t6 - t0);
        t_begin.push_back(t1 - t0);
        t_actions.push_back(t2 - t1);
        t_freeze.push_back(t3 - t2);
        t_observe.push_back(t4 - t3);
        t_finish.push_back(t5 - t4);
        t_close.push_back(t6 - t5);
      }
      std::int64_t med = median(total);
      Json out{{"benchmark", "session_overhead"},
               {"display", std::to_string(width) + "x" + std::to_string(height)},
               {"runs", runs},
               {"median_total_us", med},
               {"median_us", {{"begin", median(t_begin)}, {"actions_16_clicks", median(t_actions)},
                              {"freeze", median(t_freeze)}, {"observe", median(t_observe)},
                              {"finish", median(t_finish)}, {"close", median(t_close)}}},
               {"all_total_us", total},
               {"target_ms", 300},
               {"meets_target", med <= 300000}};
      std::cout << out.dump(2) << std::endl;
      rc = med <= 300000 ? 0 : 1;
    } catch (const std::exception& e) {
      std::cerr << "evident-bench-session: " << e.what() << std::endl;
      rc = 2;
    }
  }
  (void)remove_tree(root);
  return rc;
}
