// What the `evident` front binary (main.cpp, verify_cli.cpp) and the `evident-daemon` program
// (daemon_main.cpp) share: how an error is printed, how a usage error is reported, where the running program
// lives, and the guard that turns anything escaping a command into an `internal` error response
// instead of std::terminate.
#pragma once

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

#include "evident/core/error_json.h"
#include "evident/core/json.h"
#include "evident/core/status.h"

namespace evident {

// Under --json one JSON line on stdout, else "evident: error [code]: message" on stderr.
inline int print_cli_error(bool json, const Error& e, int exit_code) {
  if (json) {
    std::cout << dump_json(error_response(e)) << std::endl;
  } else {
    std::cerr << "evident: error [" << e.code << "]: " << e.message << std::endl;
  }
  return exit_code;
}

// True when --json is among the arguments before any "--".
inline bool json_flag_given(int argc, char** argv) {
  for (int i = 1; i < argc && std::string_view(argv[i]) != "--"; ++i) {
    if (std::string_view(argv[i]) == "--json") return true;
  }
  return false;
}

// Parses the command line with `app`. nullopt: the command runs. Otherwise the exit status:
// 0 after --help was printed; 2 for a usage error, reported under --json (`json` is read after
// the parse) as an error response with the code `usage`, else on stderr with `help_hint`.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, const char* const* argv, const bool& json,
                                             std::string_view help_hint) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (json) {
      std::cout << dump_json(error_response(make_error("usage", e.what()))) << std::endl;
    } else {
      std::cerr << "evident: usage error: " << e.what() << "\n(run: " << help_hint << ")" << std::endl;
    }
    return 2;
  }
  return std::nullopt;
}

// The absolute path of the running program (/proc/self/exe); "" when it cannot be read.
inline std::string own_program_path() {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  return n > 0 ? std::string(self, static_cast<std::size_t>(n)) : std::string();
}

// Runs `run(argc, argv)`. Anything that escapes it (it should not: errors are values) is an
// `internal` error response: the message names no input, stdout keeps one JSON line under
// --json, and the exit status is that of an error response.
template <typename Run>
int run_guarded(Run run, int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (...) {
    return print_cli_error(json_flag_given(argc, argv),
                           make_error("internal", "an unexpected failure ended the command"), 1);
  }
}

}  // namespace evident
