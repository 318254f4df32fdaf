// Subcommands implemented by the Python package (docs/scale.md, "Which interpreter").
#pragma once

#include <string>
#include <vector>

namespace evident {

// Replaces this process with `<python> -m <module> ARGS...` (adding --json when `json` and it
// is not already there). Returns only on failure (exit status 2, code "python-unavailable").
int exec_python_module(const std::string& module, const std::vector<std::string>& args,
                       bool json);

}  // namespace evident
