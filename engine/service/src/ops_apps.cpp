// The app.* op family: launch, stop, list (docs/displays.md, "Apps"; env and cwd: docs/windows.md).
#include "ops_common.h"

#include <memory>
#include <mutex>
#include <string>

#include "evident/display/display.h"

namespace evident {

Status parse_launch_env_args(const Json& args, LaunchOptions* o) {
  JsonFields f(args, kArgs, "args");
  if (f.has("env")) {
    auto env = f.array("env", 0, LaunchOptions::kMaxEnvEntries);
    if (!env.ok()) return env.error();
    for (const auto& e : **env) {
      if (!e.is_string()) return make_error(kArgs, "args: env must hold only \"KEY=VALUE\" strings");
      o->env.push_back(e.get<std::string>());
    }
  }
  if (f.has("cwd")) {
    auto cwd = f.string("cwd", 1, LaunchOptions::kMaxCwdBytes);
    if (!cwd.ok()) return cwd.error();
    o->cwd = *cwd;
  }
  return {};
}

void register_app_ops(OpTable& ops, DisplayManager& displays) {
  ops["app.launch"] = [&displays](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"display_id", "generation", "argv", "wait_window_ms", "env", "cwd"}));
    auto ref = display_ref_arg(f);
    if (!ref.ok()) return ref.error();
    auto argv_json = f.array("argv", 1, protocol::kAppArgvItemsMax);
    if (!argv_json.ok()) return argv_json.error();
    std::vector<std::string> argv;
    for (const auto& a : **argv_json) {
      if (!a.is_string()) return make_error(kArgs, "field \"argv\" must hold only strings");
      argv.push_back(a.get<std::string>());
    }
    std::int64_t wait_ms = 0;
    if (f.has("wait_window_ms")) {
      auto w = f.integer("wait_window_ms", 0, DisplayManager::kMaxWaitWindowMs);
      if (!w.ok()) return w.error();
      wait_ms = *w;
    }
    LaunchOptions launch;
    launch.wait_window_ms = wait_ms;
    EVIDENT_TRY(parse_launch_env_args(args, &launch));  // env, cwd (docs/windows.md)
    auto app = displays.launch_app(ref->id, ref->generation, argv, launch);
    if (!app.ok()) return app.error();
    return Json{{"app", app->to_json()}};
  };

  ops["app.stop"] = [&displays](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"app_id"}));
    auto id = f.string("app_id", 1, 256);
    if (!id.ok()) return id.error();
    auto status = displays.stop_app(*id);
    if (!status.ok()) return status.error();
    return Json{{"app_id", *id}, {"exit_status", *status}};
  };

  ops["app.list"] = [&displays](const Actor&, const Json& args) -> Result<Json> {
    EVIDENT_TRY(JsonFields(args, kArgs, "args").only({}));
    Json list = Json::array();
    for (const auto& a : displays.list_apps()) list.push_back(a.to_list_json());
    return Json{{"apps", list}};
  };
}

}  // namespace evident
