// `evident browser ...` (docs/browsers.md, docs/cli.md): subcommands that each become one
// browser.* request to the daemon.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "evident/core/json.h"
#include "evident/core/status.h"

namespace evident {

class BrowserCli {
 public:
  explicit BrowserCli(CLI::App& app);
  // After parsing: the (op, args) to send if a browser subcommand was given; a bad --viewport
  // is a usage error.
  std::optional<Result<std::pair<std::string, Json>>> request() const;

 private:
  CLI::App* create_ = nullptr;
  CLI::App* close_ = nullptr;
  CLI::App* list_ = nullptr;
  CLI::App* status_ = nullptr;
  CLI::App* evaluate_ = nullptr;
  CLI::App* navigate_ = nullptr;
  CLI::App* element_box_ = nullptr;
  int display_id_ = 0;
  std::string generation_, url_, viewport_, browser_id_, expression_, selector_, profile_dir_;
  std::vector<std::string> extra_args_;
};

// Human output for browser.* results; false if `op` is not one of them.
bool print_browser_human(const std::string& op, const Json& r);

}  // namespace evident
