// Building and verifying `evident.task-receipt/v1` receipts (docs/receipts.md "Task receipts").
// A task is a session whose input came from a caller's policy through a provider adapter; its
// receipt is the session receipt (v3 rules: input_events, commitments, host_id) plus the task's
// mode, declared policy, task_sha256, limits, counters, lineage and one `turn` event before each
// turn's action events. Pure logic, no X: the task lane (engine/task) records what happened and
// calls build_task_receipt(); `evident verify` / `evident-verify` and the independent Python
// verifier (bindings/python/evident/task_verify.py) check it.
//
// Never in a task receipt: the task text, typed text or key names (only salted commitments),
// raw call ids (only call_ids_sha256), model text or thinking, provider bodies or their digests
// or lengths.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/protocol/protocol.h"
#include "evident/receipts/receipt.h"
#include "evident/receipts/verify.h"

namespace evident {

inline constexpr std::string_view kTaskReceiptSchema = "evident.task-receipt/v1";
inline constexpr std::string_view kTaskReceiptIdPrefix = "etr-";
// DSSE predicateType of a signed task receipt (engine/evidence).
inline constexpr std::string_view kTaskReceiptPredicateType = "urn:evident:task-receipt:v1";

// Digest domains of the task receipt (each H() input: domain, 0x00, JCS(value)).
inline constexpr std::string_view kDomainTaskReceipt = "evident/task-receipt/v1";
// H(stage domain, [events up to and including freeze]).
inline constexpr std::string_view kDomainTaskStageTranscript = "evident/task-stage-transcript/v1";
// H(domain, {"prior_transcript_sha256": <prior's transcript_sha256 | null>, "events": [all]}):
// in attest it chains the stage receipt's transcript digest; null in stage.
inline constexpr std::string_view kDomainTaskTranscript = "evident/task-transcript/v1";
inline constexpr std::string_view kDomainTaskResult = "evident/task-result/v1";
// H(domain, [the turn's raw call ids in order]) ([] for a final-answer turn).
inline constexpr std::string_view kDomainTaskCallIds = "evident/task-call-ids/v1";

// The declared policy (task.begin's `policy`; provider and model are declared, not proven).
struct TaskPolicy {
  std::string adapter;   // a registered adapter name, 1..256 bytes
  std::string provider;  // 1..256 bytes, as declared by the caller
  std::string model;     // 1..256 bytes, as declared by the caller
};

// The receipt's "limits" object. The values of each mode are fixed (task_limits_for); the
// verifier checks the receipt carries exactly its mode's.
struct TaskReceiptLimits {
  std::int64_t max_turns = 0;
  std::int64_t deadline_ms = 0;  // from begin's admission
  bool input_sealed = false;     // attest: screenshot/zoom only
  std::int64_t max_actions_per_turn = 0;
  std::int64_t max_actions = 0;
};

// stage: {12, 180000, false, 16, 64}; attest: {2, 45000, true, 16, 64}. `mode` other than
// "stage"/"attest": std::nullopt.
std::optional<TaskReceiptLimits> task_limits_for(std::string_view mode);

// One turn (a response handed to task.turn that was admitted: a calls turn that ran, or a final
// answer, valid or not). Its `turn` event precedes its `action_count` action events.
struct TaskTurnRecord {
  std::int64_t turn = 0;                    // 1-based, contiguous
  std::vector<std::string> call_ids;        // raw provider call ids, in order; only hashed
                                            // (call_ids_sha256), never written; empty: a final answer
  std::vector<std::string> native_actions;  // the provider's action names, in call order
  std::string model_image_sha256;           // the image the model was shown for this turn
  std::string frame_sha256;                 // the full-display frame that image was made from
                                            // (an earlier issued frame; equal to model_image_sha256
                                            // when not scaled)
  std::size_t action_count = 0;             // the next action_count entries of
                                            // TaskReceiptInput::actions belong to this turn
};

// The stage receipt an attest task is bound to (null in stage).
struct TaskLineage {
  std::string prior_receipt_id;              // "etr-<64 hex>" of a stage task receipt
  std::string prior_transcript_sha256;       // that receipt's transcript_sha256
  std::int64_t prior_transcript_event_count = 0;  // that receipt's transcript length
  std::int64_t prior_completed_wall_ms = 0;  // that receipt's completed_at (ms since epoch)
};

// Everything a task receipt binds. Shares the session receipt's records (ReceiptBinding,
// ActionRecord, ObservationRecord) and rules: project_action() projections, v3 input_events
// and commitments. Times are wall-clock ms since the epoch (rendered RFC 3339).
struct TaskReceiptInput {
  std::string task_id;                        // "tsk-<32 hex>"
  std::string host_id;                        // engine.host_id, "hst-<32 hex>"
  std::string engine_version = EVIDENT_VERSION;
  std::string mode;                           // "stage" | "attest"
  ReceiptBinding binding;                     // job_sha256 must be empty (tasks carry task_sha256)
  Json actor;                                 // as resolved by the control surface
  TaskPolicy policy;
  std::string task_sha256;                    // 64 lowercase hex, as sent to task.begin
  std::int64_t started_wall_ms = 0;           // begin's admission
  std::int64_t frozen_wall_ms = 0;            // the internal freeze after the valid final answer
  std::int64_t observed_wall_ms = 0;
  std::int64_t completed_wall_ms = 0;         // the internal finish
  std::int64_t elapsed_ms = 0;                // monotonic, begin's admission to finish
  std::string initial_frame_sha256;           // captured by begin
  std::vector<TaskTurnRecord> turns;          // in order; the last is the valid final answer
  std::vector<ActionRecord> actions;          // every action that ran, in order (turns split them)
  std::string freeze_frame_sha256;
  std::int64_t input_event_count = 0;         // sum of the actions' input_events
  std::string pre_observation_sha256;         // the last frame issued before observe
  ObservationRecord observation;
  Json result;                                // the valid final answer (the claims), an object
  // Counters the lane keeps (turn_count and call_count are derived from `turns`):
  std::int64_t refused_call_count = 0;
  std::int64_t invalid_result_count = 0;      // final answers refused with task-result-invalid
  std::int64_t safety_check_count = 0;
  std::optional<TaskLineage> lineage;         // required in attest, absent in stage
};

// Builds the task receipt: transcript (initial_frame; per turn a `turn` event then its action
// events; freeze; observation; result), the digests and receipt_id, then verifies it with
// verify_task_receipt() as a self-check (a receipt `evident verify` would reject is never
// returned). Errors: "task-result-invalid" (result not an object, or over 16 KiB canonical),
// "receipt-invalid" (a malformed or inconsistent input field; the message names the field, never
// its value), "receipt-noncanonical" (a float in a projection, actor or result).
Result<Json> build_task_receipt(const TaskReceiptInput& input);

// True when `receipt` is an object whose "schema" is kTaskReceiptSchema.
bool is_task_receipt(const Json& receipt);

// Runs every applicable check of a task receipt (docs/receipts.md "Task receipts: verification",
// in that order): schema, receipt_id, transcript_sha256, stage_transcript_sha256, result_sha256,
// event_order, turns, turn_frames, counters, input_flags, projections, limits, attest_input,
// lineage, post_observation_input_event_count, timestamps, observation_digest, then with options:
// frames, png, expect_task (options.expect_job_sha256 against task_sha256), expect_uid,
// disclosure_*, and with options.prior set: prior_receipt, prior_binding, prior_chronology,
// prior_transcript. Never fails: problems are checks. verify_receipt() calls this for a task
// receipt, so every caller of verify_receipt handles both kinds.
VerifyReport verify_task_receipt(const Json& receipt, const VerifyOptions& options);

// The lineage checks alone: `receipt` (an attest task receipt that passed "schema") against
// `prior` (the parsed --prior file). Appends prior_receipt, prior_binding, prior_chronology,
// prior_transcript to `report`.
void check_task_lineage(const Json& receipt, const Json& prior, VerifyReport& report);

}  // namespace evident
