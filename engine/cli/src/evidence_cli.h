// `evident key …`, `evident log …` and `evident disclose`
// (docs/receipts.md §8–§9). Local commands: they read the state directory, no daemon needed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>


namespace evident {

struct EvidenceCli {
  CLI::App* key_init = nullptr;
  CLI::App* key_show = nullptr;
  CLI::App* log_show = nullptr;
  CLI::App* log_prove = nullptr;
  CLI::App* log_consistency = nullptr;
  CLI::App* log_verify = nullptr;
  std::string state_dir;
  std::uint64_t from = 0;
  std::uint64_t limit = 1000;
  std::string attempt;
  std::string job;
  std::string target;  // ID or INDEX
  std::uint64_t tree_size = 0;
  std::uint64_t old_size = 0;
  std::uint64_t new_size = 0;
  // disclose RECEIPT --action N [-o FILE]
  CLI::App* disclose = nullptr;
  std::string disclose_receipt;
  std::int64_t disclose_action = -1;
  std::string disclose_out;
};

void add_evidence_commands(CLI::App& app, EvidenceCli& cli);
// The exit status when one of these commands was parsed, else nullopt.
std::optional<int> run_evidence_commands(EvidenceCli& cli, bool json);

}  // namespace evident
