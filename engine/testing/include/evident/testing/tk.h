// Test support: engine/input/tests/tk_client.py, a real Tk client that prints JSON lines
// ({"ready":...}, {"value":...} after each change, {"submitted":...} per Return). No GoogleTest:
// engine/actions/tools/bench_input.cpp uses it too.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "evident/core/json.h"
#include "evident/testing/fixture_log.h"
#include "evident/testing/process.h"

namespace evident::testing {

#ifdef EVIDENT_SOURCE_DIR
// Starts the Tk client (window title `title`, `mode`: entry|text|clicks) in a UTF-8 locale (XIM
// decodes non-Latin-1 text) with its stdout captured, and waits up to 15 s for its {"ready":...}
// line (the widget is mapped, exposed and focused).
inline Child start_tk(const std::string& mode = "entry", const std::string& title = "evident-tk") {
  ::setenv("LC_ALL", "C.UTF-8", 1);
  Child tk = spawn({"/usr/bin/python3", std::string(EVIDENT_SOURCE_DIR) + "/engine/input/tests/tk_client.py",
                    title, mode},
                   true);
  tk.read_until([](const std::string& b) { return b.find("\"ready\"") != std::string::npos; }, 15000);
  return tk;
}
#endif

// Every string value of `key` the client printed, in order.
inline std::vector<std::string> tk_values(const std::string& out, const std::string& key) {
  std::vector<std::string> v;
  for (const Json& j : json_lines(out)) {
    if (j.contains(key) && j[key].is_string()) v.push_back(j[key].get<std::string>());
  }
  return v;
}

// The last {"value":...} the client printed ("" if none).
inline std::string last_value(const std::string& out) {
  auto v = tk_values(out, "value");
  return v.empty() ? "" : v.back();
}

// Every {"submitted":...} value (one per Return), in order.
inline std::vector<std::string> submitted(const std::string& out) { return tk_values(out, "submitted"); }

}  // namespace evident::testing
