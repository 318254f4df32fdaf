// `evident merge` and `evident fanout` run the Python package (evident.merge,
// evident.fanout); the CLI replaces itself with that interpreter (docs/scale.md, "Which
// interpreter"). Lookup: $EVIDENT_PYTHON, else /usr/bin/python3, else python3 on PATH. The
// package is found on $EVIDENT_PYTHONPATH, else in this source tree (EVIDENT_TREE_PYTHON_DIR,
// compiled in; used only if it holds the package), else wherever the interpreter finds it
// (an installed package). The tree's compiled module dir is added too, so the C++ verifier is
// available to the Python side.
#include "python_delegate.h"

#include "cli_common.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

namespace evident {
namespace {

bool is_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

std::string python_path() {
  std::vector<std::string> parts;
  if (const char* v = std::getenv("EVIDENT_PYTHONPATH"); v != nullptr && *v != '\0') {
    parts.emplace_back(v);
  }
#ifdef EVIDENT_TREE_PYTHON_DIR
  if (is_file(std::string(EVIDENT_TREE_PYTHON_DIR) + "/evident/merge.py")) {
    parts.emplace_back(EVIDENT_TREE_PYTHON_DIR);
  }
#endif
#ifdef EVIDENT_TREE_CORE_DIR
  parts.emplace_back(EVIDENT_TREE_CORE_DIR);
#endif
  if (const char* v = std::getenv("PYTHONPATH"); v != nullptr && *v != '\0') parts.emplace_back(v);
  std::string joined;
  for (const auto& p : parts) joined += (joined.empty() ? "" : ":") + p;
  return joined;
}

}  // namespace

int exec_python_module(const std::string& module, const std::vector<std::string>& args,
                       bool json) {
  std::string interpreter;
  if (const char* v = std::getenv("EVIDENT_PYTHON"); v != nullptr && *v != '\0') {
    interpreter = v;
  } else if (access("/usr/bin/python3", X_OK) == 0) {
    interpreter = "/usr/bin/python3";
  } else {
    interpreter = "python3";
  }
  std::vector<std::string> argv_s = {interpreter, "-m", module};
  bool has_json = false;
  for (const auto& a : args) has_json = has_json || a == "--json";
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  if (json && !has_json) argv_s.emplace_back("--json");
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string pp = python_path();
  if (!pp.empty()) setenv("PYTHONPATH", pp.c_str(), 1);
  // The package's C++ cross-checks (merge's `evident verify --key`) run this same binary.
  if (const char* v = std::getenv("EVIDENT_BIN"); v == nullptr || *v == '\0') {
    if (const std::string self = own_program_path(); !self.empty()) setenv("EVIDENT_BIN", self.c_str(), 1);
  }
  execvp(interpreter.c_str(), argv.data());
  int err = errno;
  if (json) {
    std::cout << R"({"ok":false,"error":{"code":"python-unavailable","message":"cannot run the )"
              << "Python interpreter (" << std::strerror(err)
              << R"(); set EVIDENT_PYTHON","retryable":false}})" << std::endl;
  } else {
    std::cerr << "evident: error [python-unavailable]: cannot run the Python interpreter ("
              << std::strerror(err) << "); set EVIDENT_PYTHON" << std::endl;
  }
  return 2;
}

}  // namespace evident
