// What every op family file shares (engine.cpp holds the table; one file per family registers
// into it). Internal to evident_service.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/protocol/protocol.h"
#include "evident/service/engine.h"

namespace evident {

class BrowserManager;
class DisplayManager;
class SessionManager;
struct LaunchOptions;

// Handler: validated args in, result body out (Engine::call adds "ok":true).
using OpTable = std::map<std::string, std::function<Result<Json>(const Actor&, const Json&)>, std::less<>>;

// The error code of every malformed op argument.
inline constexpr const char* kArgs = "request-args";

// The (display_id, generation) pair every display-scoped op names. Generations are checked by
// the display manager (malformed: display-generation-mismatch); here only the JSON type and bound.
struct DisplayRef {
  int id = 0;
  std::string generation;
};

inline Result<DisplayRef> display_ref_arg(const JsonFields& f) {
  auto id = f.integer("display_id", 0, protocol::kDisplayIdMax);
  if (!id.ok()) return id.error();
  auto gen = f.string("generation", 0, protocol::kGenerationMaxBytes);
  if (!gen.ok()) return gen.error();
  return DisplayRef{static_cast<int>(*id), std::move(*gen)};
}

// display.create|destroy|list|status|screenshot|env (ops_display.cpp).
void register_display_ops(OpTable& ops, DisplayManager& displays, BrowserManager& browsers);
// app.launch|stop|list (ops_apps.cpp).
void register_app_ops(OpTable& ops, DisplayManager& displays);
// app.launch's optional "env" (array of "KEY=VALUE" strings) and "cwd" into `options`:
// request-args for wrong JSON types; the values are checked by validate_launch_options.
Status parse_launch_env_args(const Json& args, LaunchOptions* options);
// cu.actions (ops_actions.cpp); its observation frames go under runtime_dir/cu-frames.
void register_action_ops(OpTable& ops, DisplayManager& displays, std::string runtime_dir);
// session (ops_session.cpp).
void register_session_ops(OpTable& ops, SessionManager& sessions);
// task (ops_task.cpp): task.begin|turn|abort|status on the session state machine.
void register_task_ops(OpTable& ops, SessionManager& sessions);
// browser.create|close|list|status|evaluate|navigate|element_box (ops_browser.cpp).
void register_browser_ops(OpTable& ops, BrowserManager& browsers);
// accessibility.tree (ops_accessibility.cpp).
void register_accessibility_ops(OpTable& ops, DisplayManager& displays);
// window.list|wait|capture|focus, wait.stable|pixels (ops_windows.cpp).
void register_window_ops(OpTable& ops, DisplayManager& displays);

}  // namespace evident
