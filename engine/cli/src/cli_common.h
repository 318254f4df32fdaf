// What the `evident` front binary (main.cpp) and the `evident-daemon` program (daemon_main.cpp)
// share: how an error is printed, and the guard that turns anything escaping a command into an
// `internal` error response instead of std::terminate.
#pragma once

#include <exception>
#include <iostream>
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
