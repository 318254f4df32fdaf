// Helpers shared by the receipts tests: golden inputs, files, subprocesses.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "evident/core/json.h"
#include "evident/receipts/receipt.h"

namespace evident::test {

inline std::string source_path(const std::string& rel) {
  return std::string(EVIDENT_SOURCE_DIR) + "/" + rel;
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

inline void write_text(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

inline Json read_json(const std::string& path) {
  auto parsed = parse_json_strict(read_text(path), 64 << 20, "test-json");
  if (!parsed.ok()) throw std::runtime_error(path + ": " + parsed.error().message);
  return *parsed;
}

inline const std::vector<std::string>& golden_names() {
  static const std::vector<std::string> kNames = {"zero-actions", "three-actions",
                                                  "sixty-four-actions"};
  return kNames;
}

// Builder goldens plus a real receipt produced by a live session (receipts/golden/real-tk-form,
// no input.json): everything the verifiers must accept.
inline const std::vector<std::string>& verified_names() {
  static const std::vector<std::string> kNames = {"zero-actions", "three-actions",
                                                  "sixty-four-actions", "real-tk-form"};
  return kNames;
}

inline std::string golden_dir(const std::string& name) {
  return source_path("receipts/golden/" + name);
}

// The builder inputs stored in receipts/golden/<name>/input.json (written by make_golden.py).
inline ReceiptInput golden_input(const std::string& name) {
  Json j = read_json(golden_dir(name) + "/input.json");
  ReceiptInput in;
  in.session_id = j["session_id"];
  in.engine_version = j["engine_version"];
  const Json& b = j["binding"];
  in.binding.display_id = b["display_id"];
  in.binding.display_name = b["display_name"];
  in.binding.generation = b["generation"];
  in.binding.app_id = b["app_id"];
  in.binding.app_pid = b["app_pid"];
  in.binding.app_argv_sha256 = b["app_argv_sha256"];
  in.binding.attempt_id = b["attempt_id"];
  in.binding.job_sha256 = b["job_sha256"];
  in.actor = j["actor"];
  in.started_wall_ms = j["started_wall_ms"];
  in.frozen_wall_ms = j["frozen_wall_ms"];
  in.observed_wall_ms = j["observed_wall_ms"];
  in.completed_wall_ms = j["completed_wall_ms"];
  in.elapsed_ms = j["elapsed_ms"];
  in.initial_frame_sha256 = j["initial_frame_sha256"];
  for (const Json& a : j["actions"]) {
    ActionRecord r;
    r.type = a["action"]["type"];
    r.projection = a["action"];  // the full action, secrets included: the builder projects it
    r.status = a["status"];
    r.input = a["input"];
    r.frame_sha256 = a["frame_sha256"];
    in.actions.push_back(std::move(r));
  }
  in.freeze_frame_sha256 = j["freeze_frame_sha256"];
  in.input_event_count = j["input_event_count"];
  in.pre_observation_sha256 = j["pre_observation_sha256"];
  in.observation.sha256 = j["observation"]["sha256"];
  in.observation.byte_length = j["observation"]["byte_length"];
  in.observation.width = j["observation"]["width"];
  in.observation.height = j["observation"]["height"];
  in.claims = j["claims"];
  return in;
}

struct CommandResult {
  int exit_status = -1;
  std::string out;
};

// Runs `command` through /bin/sh, feeding `input` on stdin via a temp file; captures stdout.
inline CommandResult run_command(const std::string& command, const std::string& input = "") {
  std::string cmd = command;
  std::string in_path;
  if (!input.empty()) {
    char tmpl[] = "/tmp/evident-receipts-stdin-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) throw std::runtime_error("mkstemp");
    close(fd);
    in_path = tmpl;
    write_text(in_path, input);
    cmd += " < " + in_path;
  }
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("popen");
  std::array<char, 65536> buf{};
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (!in_path.empty()) std::remove(in_path.c_str());
  return r;
}

inline bool have_program(const std::string& name) {
  return run_command("command -v " + name + " >/dev/null 2>&1").exit_status == 0;
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

}  // namespace evident::test
