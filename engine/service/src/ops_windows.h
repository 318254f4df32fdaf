// The window.*, wait.* and display.env op family (docs/windows.md, docs/windows.md). Internal to
// evident_service: engine.cpp calls register_window_ops from its op table.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/service/engine.h"

namespace evident {

class DisplayManager;

using WindowOpHandler = std::function<Result<Json>(const Actor&, const Json& args)>;
using WindowOpTable = std::map<std::string, WindowOpHandler, std::less<>>;

// Adds window.list, window.wait, window.capture, window.focus, wait.stable, wait.pixels and
// display.env to `ops`.
void register_window_ops(WindowOpTable& ops, DisplayManager& displays);

// Parses app.launch's optional "env" (array of "KEY=VALUE" strings) and "cwd" into `options`.
// request-args for wrong JSON types; the values are checked by validate_launch_options.
struct LaunchOptions;
Status parse_launch_env_args(const Json& args, LaunchOptions* options);

}  // namespace evident
