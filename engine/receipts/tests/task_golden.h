// The task receipt test vectors under receipts/task/ (made by receipts/task/make_task_vectors.py,
// which computes every digest independently of the code under test).
#pragma once

#include <stdexcept>
#include <string>

#include "evident/core/json.h"
#include "evident/receipts/commitment.h"
#include "evident/receipts/task_receipt.h"
#include "golden.h"

namespace evident::testing {

inline std::string task_vector_dir(const std::string& name) {
  return source_path("receipts/task/" + name);
}

inline TaskReceiptInput task_vector_input(const std::string& name) {
  Json j = read_json(task_vector_dir(name) + "/input.json");
  TaskReceiptInput in;
  in.task_id = j["task_id"];
  in.host_id = j["host_id"];
  in.engine_version = j["engine_version"];
  in.mode = j["mode"];
  const Json& b = j["binding"];
  in.binding.display_id = b["display_id"];
  in.binding.display_name = b["display_name"];
  in.binding.generation = b["generation"];
  in.binding.app_id = b["app_id"];
  in.binding.app_pid = b["app_pid"];
  in.binding.app_argv_sha256 = b["app_argv_sha256"];
  in.binding.attempt_id = b["attempt_id"];
  in.actor = j["actor"];
  in.policy.adapter = j["policy"]["adapter"];
  in.policy.provider = j["policy"]["provider"];
  in.policy.model = j["policy"]["model"];
  in.task_sha256 = j["task_sha256"];
  in.started_wall_ms = j["started_wall_ms"];
  in.frozen_wall_ms = j["frozen_wall_ms"];
  in.observed_wall_ms = j["observed_wall_ms"];
  in.completed_wall_ms = j["completed_wall_ms"];
  in.elapsed_ms = j["elapsed_ms"];
  in.initial_frame_sha256 = j["initial_frame_sha256"];
  for (const Json& t : j["turns"]) {
    TaskTurnRecord r;
    r.turn = t["turn"];
    for (const Json& id : t["call_ids"]) r.call_ids.push_back(id);
    for (const Json& n : t["native_actions"]) r.native_actions.push_back(n);
    r.model_image_sha256 = t["model_image_sha256"];
    r.frame_sha256 = t["frame_sha256"];
    r.action_count = t["action_count"];
    in.turns.push_back(std::move(r));
  }
  for (const Json& a : j["actions"]) {
    ActionRecord r;
    r.type = a["action"]["type"];
    r.projection = a["action"];  // the full action, secrets included: the builder projects it
    r.status = a["status"];
    r.input = a["input"];
    r.input_events = a["input_events"];
    r.frame_sha256 = a["frame_sha256"];
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
  in.freeze_frame_sha256 = j["freeze_frame_sha256"];
  in.input_event_count = j["input_event_count"];
  in.pre_observation_sha256 = j["pre_observation_sha256"];
  in.observation.sha256 = j["observation"]["sha256"];
  in.observation.byte_length = j["observation"]["byte_length"];
  in.observation.width = j["observation"]["width"];
  in.observation.height = j["observation"]["height"];
  in.result = j["result"];
  in.refused_call_count = j["refused_call_count"];
  in.invalid_result_count = j["invalid_result_count"];
  in.safety_check_count = j["safety_check_count"];
  if (!j["lineage"].is_null()) {
    const Json& l = j["lineage"];
    in.lineage = TaskLineage{l["prior_receipt_id"], l["prior_transcript_sha256"],
                             l["prior_transcript_event_count"], l["prior_completed_wall_ms"]};
  }
  return in;
}

}  // namespace evident::testing
