// Building `evident.task-receipt/v1` (docs/receipts.md "Task receipts"). The events and members
// it shares with the session receipt come from build_parts.h; only the task's own parts are here.
#include "evident/receipts/task_receipt.h"

#include "build_parts.h"
#include "evident/core/clock.h"
#include "evident/receipts/jcs.h"

namespace evident {

using namespace receipt_parts;

std::optional<TaskReceiptLimits> task_limits_for(std::string_view mode) {
  TaskReceiptLimits l;
  l.max_actions_per_turn = protocol::kActionsPerBatchMax;
  l.max_actions = protocol::kActionsPerSessionMax;
  if (mode == "stage") {
    l.max_turns = protocol::kTaskStageMaxTurns;
    l.deadline_ms = protocol::kTaskStageTimeoutMs;
    l.input_sealed = false;
    return l;
  }
  if (mode == "attest") {
    l.max_turns = protocol::kTaskAttestMaxTurns;
    l.deadline_ms = protocol::kTaskAttestTimeoutMs;
    l.input_sealed = true;
    return l;
  }
  return std::nullopt;
}

bool is_task_receipt(const Json& receipt) {
  if (!receipt.is_object()) return false;
  auto it = receipt.find("schema");
  return it != receipt.end() && it->is_string() &&
         it->get_ref<const std::string&>() == kTaskReceiptSchema;
}

namespace {

Json limits_json(const TaskReceiptLimits& l) {
  return Json{{"max_turns", l.max_turns},
              {"deadline_ms", l.deadline_ms},
              {"input_sealed", l.input_sealed},
              {"max_actions_per_turn", l.max_actions_per_turn},
              {"max_actions", l.max_actions}};
}

}  // namespace

Result<Json> build_task_receipt(const TaskReceiptInput& in) {
  auto result_bytes = checked_claims_jcs(in.result, "task-result-invalid", "the result");
  if (!result_bytes.ok()) return result_bytes.error();
  const std::string result_sha = domain_digest_of_jcs(kDomainTaskResult, *result_bytes);

  auto limits = task_limits_for(in.mode);
  if (!limits) return make_error("receipt-invalid", "mode must be stage or attest");
  if (!in.binding.job_sha256.empty()) {
    return make_error("receipt-invalid", "a task binding carries no job_sha256 (task_sha256 instead)");
  }
  const bool attest = in.mode == "attest";
  if (attest != in.lineage.has_value()) {
    return make_error("receipt-invalid", attest ? "an attest receipt needs its lineage"
                                                : "a stage receipt has no lineage");
  }

  Json transcript = Json::array();
  std::int64_t index = 0;
  std::int64_t call_count = 0;
  transcript.push_back(frame_event(index++, "initial_frame", in.initial_frame_sha256));
  std::size_t next_action = 0;
  for (std::size_t k = 0; k < in.turns.size(); ++k) {
    const TaskTurnRecord& turn = in.turns[k];
    Json ids = Json::array();
    for (const auto& id : turn.call_ids) ids.push_back(id);
    // The raw ids are hashed, never written (docs/receipts.md).
    auto ids_sha = domain_digest(kDomainTaskCallIds, ids);
    if (!ids_sha.ok()) {
      return make_error("receipt-invalid", "turn " + std::to_string(k) + ": a call id is not UTF-8");
    }
    Json native = Json::array();
    for (const auto& n : turn.native_actions) native.push_back(n);
    call_count += static_cast<std::int64_t>(turn.call_ids.size());
    transcript.push_back(Json{{"index", index++},
                              {"kind", "turn"},
                              {"turn", turn.turn},
                              {"call_count", static_cast<std::int64_t>(turn.call_ids.size())},
                              {"call_ids_sha256", *ids_sha},
                              {"native_actions", std::move(native)},
                              {"model_image_sha256", turn.model_image_sha256},
                              {"frame_sha256", turn.frame_sha256}});
    if (turn.action_count > in.actions.size() - next_action) {
      return make_error("receipt-invalid",
                        "turn " + std::to_string(k) + ": more actions than were recorded");
    }
    for (std::size_t j = 0; j < turn.action_count; ++j, ++next_action) {
      auto event = action_event(in.actions[next_action], next_action, index++, true);
      if (!event.ok()) return event.error();
      transcript.push_back(std::move(*event));
    }
  }
  if (next_action != in.actions.size()) {
    return make_error("receipt-invalid", "actions were recorded that no turn holds");
  }
  transcript.push_back(frame_event(index++, "freeze", in.freeze_frame_sha256));
  const std::size_t stage_events = transcript.size();
  transcript.push_back(observation_event(index++, in.observation, in.pre_observation_sha256));
  transcript.push_back(Json{{"index", index++},
                            {"kind", "result"},
                            {"result_sha256", result_sha},
                            {"frame_sha256", in.observation.sha256}});

  Json stage = Json::array();
  for (std::size_t i = 0; i < stage_events; ++i) stage.push_back(transcript[i]);
  auto stage_sha = domain_digest(kDomainTaskStageTranscript, stage);
  if (!stage_sha.ok()) return stage_sha.error();
  const Json prior_transcript =
      attest ? Json(in.lineage->prior_transcript_sha256) : Json(nullptr);
  auto transcript_sha = domain_digest(
      kDomainTaskTranscript,
      Json{{"prior_transcript_sha256", prior_transcript}, {"events", transcript}});
  if (!transcript_sha.ok()) return transcript_sha.error();

  Json receipt{
      {"schema", kTaskReceiptSchema},
      {"task_id", in.task_id},
      {"mode", in.mode},
      {"engine", engine_json(in.engine_version, &in.host_id)},
      {"binding", binding_json(in.binding, false)},
      {"actor", in.actor},
      {"policy", {{"adapter", in.policy.adapter}, {"provider", in.policy.provider},
                  {"model", in.policy.model}}},
      {"task_sha256", in.task_sha256},
      {"execution",
       {{"kind", "caller-policy"},
        {"internal_model_calls", 0},
        {"claims_authority", "caller-policy"}}},
      {"limits", limits_json(*limits)},
      {"started_at", format_rfc3339_ms(in.started_wall_ms)},
      {"frozen_at", format_rfc3339_ms(in.frozen_wall_ms)},
      {"observed_at", format_rfc3339_ms(in.observed_wall_ms)},
      {"completed_at", format_rfc3339_ms(in.completed_wall_ms)},
      {"elapsed_ms", in.elapsed_ms},
      {"turn_count", static_cast<std::int64_t>(in.turns.size())},
      {"call_count", call_count},
      {"refused_call_count", in.refused_call_count},
      {"invalid_result_count", in.invalid_result_count},
      {"safety_check_count", in.safety_check_count},
      {"action_count", static_cast<std::int64_t>(in.actions.size())},
      {"input_event_count", in.input_event_count},
      {"post_observation_input_event_count", 0},
      {"prior_receipt_id", attest ? Json(in.lineage->prior_receipt_id) : Json(nullptr)},
      {"prior_transcript_sha256", prior_transcript},
      {"prior_transcript_event_count",
       attest ? Json(in.lineage->prior_transcript_event_count) : Json(nullptr)},
      {"prior_completed_at",
       attest ? Json(format_rfc3339_ms(in.lineage->prior_completed_wall_ms)) : Json(nullptr)},
      {"transcript", std::move(transcript)},
      {"stage_transcript_sha256", *stage_sha},
      {"transcript_sha256", *transcript_sha},
      {"pre_observation_sha256", in.pre_observation_sha256},
      {"observation", observation_json(in.observation)},
      {"result", in.result},
      {"result_sha256", result_sha},
  };
  auto receipt_sha = domain_digest(kDomainTaskReceipt, receipt);
  if (!receipt_sha.ok()) return receipt_sha.error();
  receipt["receipt_id"] = std::string(kTaskReceiptIdPrefix) + *receipt_sha;
  if (auto st = self_check(receipt); !st) return st.error();
  return receipt;
}

}  // namespace evident
