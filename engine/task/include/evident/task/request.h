// One request of the agent task protocol (docs/agents.md "Requests"), parsed strictly
// before anything is looked up or runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "evident/agents/adapter.h"
#include "evident/task/budget.h"
#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/protocol/protocol.h"
#include "evident/session/request.h"

namespace evident::task {

// A task.turn carries the provider's response (≤ 1 MiB serialized) plus a few small fields.
inline constexpr std::size_t kMaxTaskRequestBytes = protocol::kTaskRequestMaxBytes;
static_assert(agents::kMaxResponseBytes == protocol::kTaskResponseMaxBytes,
              "the adapters' response bound is the protocol's task_response_max_bytes");
static_assert(kMaxTaskRequestBytes == agents::kMaxResponseBytes + 4096);
inline constexpr std::size_t kMaxPolicyFieldBytes = 256;

enum class TaskOp { kBegin, kTurn, kAbort, kStatus };
const char* to_string(TaskOp op);

struct TaskPolicy {
  std::string adapter;   // a registered adapter name
  std::string provider;  // declared, not proven
  std::string model;     // declared, not proven
};

struct TaskRequest {
  TaskOp op = TaskOp::kStatus;
  // begin
  TaskMode mode = TaskMode::kStage;
  std::int64_t display_id = 0;
  std::string generation;
  std::string app_id;
  std::string attempt_id;
  std::string task_sha256;
  TaskPolicy policy;
  std::string prior_receipt_id;  // attest only: "etr-" + 64 lowercase hex
  TaskSettle settle;             // optional: false | true (default) | {"quiet_ms","cap_ms"}
  // continuations
  std::string task_id;
  std::int64_t sequence = -1;
  Json response;                 // turn: the provider's response object, as received
};

// Errors:
//   "task-input-size"       the request is over kMaxTaskRequestBytes, or `response` is over
//                           1 MiB serialized;
//   "task-json"             not strict JSON (syntax, duplicate keys, trailing data, floats, …);
//   "task-command"          the wrong shape: not an object, unknown op, unknown/missing fields,
//                           wrong types, out-of-range scalars (attempt_id length, hex digests,
//                           negative sequence, policy strings over 256 bytes, unknown mode,
//                           a bad `settle`, `response` not an object);
//   "task-adapter-unknown"  `policy.adapter` is not a registered adapter;
//   "task-lineage-invalid"  `prior_receipt_id` in a stage task, or missing or malformed in an
//                           attest task.
// Field values are never echoed in messages.
Result<TaskRequest> parse_task_request(std::string_view raw);

// The same request as the session state machine's SessionRequest (op task.*; task_id in
// session_id), for SessionManager::handle. Errors: those of parse_task_request.
Result<SessionRequest> parse_task_session_request(std::string_view raw);

}  // namespace evident::task
