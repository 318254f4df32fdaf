// The `evident-daemon` program: the daemon in the foreground. `evident daemon ARGS` execs it
// with ARGS (and the global --json/--socket given before `daemon`), so only this process loads
// the engine, X, D-Bus and the rest; every other `evident` command is a small client
// (docs/cli.md "One front binary, one daemon program").
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli_common.h"
#include "evident/core/fs.h"
#include "evident/core/utf8.h"
#include "evident/daemon/daemon.h"
#include "evident/service/engine.h"
#include "evident/protocol/protocol.h"

namespace evident {
namespace {

// Each warm size keeps one idle Xvfb running (a 1920x1080 one holds ~8 MB of framebuffer).
constexpr auto kMaxWarmSizes = static_cast<std::size_t>(protocol::kWarmSizesMax);

int run(int argc, char** argv) {
  bool json = json_flag_given(argc, argv);
  // As in the front binary: every argument valid UTF-8 before anything parses it; the
  // argument is not echoed, its position is.
  for (int i = 1; i < argc; ++i) {
    if (!is_valid_utf8(argv[i])) {
      return print_cli_error(json, make_error("usage", "argument " + std::to_string(i) +
                                                           " is not valid UTF-8"), 2);
    }
  }
  CLI::App app{"evident daemon: run the daemon in the foreground (until SIGTERM or SIGINT)",
               "evident daemon"};
  app.add_flag("--json", json, "print exactly one JSON object on a start-up error");
  std::string socket, state_dir;
  app.add_option("--socket", socket, "the socket to listen on (default $EVIDENT_SOCKET or " +
                                         default_socket_path() + ")");
  app.add_option("--state-dir", state_dir, "evidence directory (default " + default_state_dir() + ")");
  std::vector<std::string> warm_sizes;
  app.add_option("--warm", warm_sizes,
                 "keep one display of WIDTHxHEIGHT pre-started; a display create of exactly "
                 "that size leases it in about a millisecond (repeatable, at most " +
                     std::to_string(kMaxWarmSizes) + ")")
      ->take_all();
  if (auto done = parse_command_line(app, argc, argv, json, "evident daemon --help")) return *done;
  DaemonOptions o;
  o.socket_path = socket;
  o.state_dir = state_dir;
  if (warm_sizes.size() > kMaxWarmSizes) {
    return print_cli_error(
        json, make_error("usage", "--warm: at most " + std::to_string(kMaxWarmSizes) + " sizes"), 2);
  }
  for (const auto& text : warm_sizes) {
    auto size = parse_warm_size(text);
    if (!size.ok()) return print_cli_error(json, make_error("usage", "--warm: " + size.error().message), 2);
    o.warm.push_back(*size);
  }
  auto r = run_daemon(o, std::cerr);
  if (!r.ok()) return print_cli_error(json, r.error(), 1);
  return *r;
}

}  // namespace
}  // namespace evident

int main(int argc, char** argv) { return evident::run_guarded(evident::run, argc, argv); }
