// `evident window list|wait|capture|focus`, `evident wait stable|pixels` and
// `evident display env` (docs/cli.md): each one request to the daemon (ops in docs/windows.md).
#pragma once

#include <memory>
#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace evident {

struct WindowCli;

// Registers the commands on `app` (window, wait) and on its `display` subcommand (env).
std::shared_ptr<WindowCli> add_window_commands(CLI::App& app, CLI::App& display);

// When one of those commands was parsed: sends it, prints the answer, returns the exit status
// (0 ok; 1 error response, or a wait whose outcome is "timeout"; 2 usage). nullopt otherwise.
std::optional<int> run_window_command(const WindowCli& cli, bool json, const std::string& socket);

}  // namespace evident
