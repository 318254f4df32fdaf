// Helpers for the receipts tests: the golden inputs under receipts/golden (files and
// subprocesses come from engine/testing).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "evident/core/json.h"
#include "evident/receipts/commitment.h"
#include "evident/receipts/receipt.h"
#include "evident/testing/files.h"
#include "evident/testing/process.h"

namespace evident::testing {

inline std::string source_path(const std::string& rel) {
  return std::string(EVIDENT_SOURCE_DIR) + "/" + rel;
}

inline Json read_json(const std::string& path) {
  auto parsed = parse_json_strict(read_text(path), 64 << 20, "test-json");
  if (!parsed.ok()) throw std::runtime_error(path + ": " + parsed.error().message);
  return *parsed;
}

inline const std::vector<std::string>& golden_names() {
  static const std::vector<std::string> kNames = {
      "zero-actions",    "three-actions",    "sixty-four-actions",
      "v3-zero-actions", "v3-three-actions", "v3-sixty-four-actions",
      "v3-app-exit-settle", "v3-app-exit-observe", "v3-video"};
  return kNames;
}

// Builder goldens plus a real receipt produced by a live session (receipts/golden/real-tk-form,
// no input.json): everything the verifiers must accept.
inline const std::vector<std::string>& verified_names() {
  static const std::vector<std::string> kNames = {
      "zero-actions",    "three-actions",    "sixty-four-actions",    "real-tk-form",
      "v3-zero-actions", "v3-three-actions", "v3-sixty-four-actions",
      "v3-app-exit-settle", "v3-app-exit-observe", "v3-video"};
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
  in.schema_version = j.value("schema_version", 2);
  in.host_id = j.value("host_id", "");
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
    r.input_events = a.value("input_events", std::int64_t{0});
    r.settle = a.value("settle", "");
    if (a.contains("salt")) {
      const Json& act = a["action"];
      const std::string value = act.contains("text") ? act["text"].get<std::string>()
                                                     : act["key"].get<std::string>();
      auto c = commitment_digest(a["salt"].get<std::string>(), value);
      if (!c.ok()) throw std::runtime_error(name + ": bad salt in input.json");
      r.commitment = *c;
    }
    in.actions.push_back(std::move(r));
  }
  if (j.contains("app_exit")) {
    const Json& x = j["app_exit"];
    in.app_exit.present = true;
    in.app_exit.after_actions = x["after_actions"];
    in.app_exit.after_freeze = x["after_freeze"];
    in.app_exit.exit_status = x["exit_status"].is_null() ? -1 : x["exit_status"].get<std::int64_t>();
    in.app_exit.frame_sha256 = x["frame_sha256"];
  }
  in.freeze_frame_sha256 = j["freeze_frame_sha256"];
  in.input_event_count = j["input_event_count"];
  in.pre_observation_sha256 = j["pre_observation_sha256"];
  in.observation.sha256 = j["observation"]["sha256"];
  in.observation.byte_length = j["observation"]["byte_length"];
  in.observation.width = j["observation"]["width"];
  in.observation.height = j["observation"]["height"];
  in.claims = j["claims"];
  if (j.contains("artifacts")) {
    for (const Json& a : j["artifacts"]) {
      in.artifacts.push_back(ArtifactRecord{a["kind"], a["name"], a["media_type"], a["sha256"],
                                            a["byte_length"], a["fps"], a["start_offset_ms"]});
    }
  }
  return in;
}

}  // namespace evident::testing
