// One request of the externally driven session protocol (docs/protocol.md §5), parsed strictly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/protocol/protocol.h"

namespace evident {

// Limits of protocol/evident.json, under the names this module uses.
inline constexpr std::size_t kMaxSessionRequestBytes = protocol::kSessionRequestMaxBytes;
inline constexpr std::size_t kMaxSessionBatchActions = protocol::kActionsPerBatchMax;
inline constexpr std::int64_t kMaxSessionActions = protocol::kActionsPerSessionMax;

// In the protocol file's op order: the session ops, then the task ops (docs/agents.md "The
// lane"), which are ops of the same machine but reach it only through the task layer's parser
// (engine/task, parse_task_session_request); parse_session_request refuses them.
enum class SessionOp {
  kBegin, kActions, kFreeze, kObserve, kFinish, kClose, kAbort, kStatus,
  kTaskBegin, kTaskTurn, kTaskAbort, kTaskStatus,
};
const char* to_string(SessionOp op);
constexpr bool is_task_op(SessionOp op) { return op >= SessionOp::kTaskBegin; }

// task.begin `settle` (docs/agents.md "The lane"): the wait, after an action that injected
// input, before the frame a turn takes of it. Off: the frame straight after the action.
// On: no change for quiet_ms, at most cap_ms after the last input (§4 settle).
struct TaskSettle {
  bool enabled = true;
  std::int64_t quiet_ms = protocol::kSettleQuietMs;
  std::int64_t cap_ms = protocol::kSettleDefaultCapMs;
  // The snapshot's `settle`: false, or {"quiet_ms","cap_ms"}.
  Json to_json() const {
    if (!enabled) return Json(false);
    return Json{{"quiet_ms", quiet_ms}, {"cap_ms", cap_ms}};
  }
};

// The fields of one request; only those of its op are set.
struct SessionRequest {
  SessionOp op = SessionOp::kStatus;
  // begin
  std::int64_t display_id = 0;
  std::string generation;
  std::string app_id;
  std::string attempt_id;
  std::string job_sha256;
  // begin's optional "app_exit": "record" makes the app's exit an app_exit event instead of the
  // end of the session ("end", the default: docs/sessions.md "App exit").
  bool record_app_exit = false;
  bool record_video = false;  // begin's "record_video" (docs/evidence.md "Video")
  std::string browser_id;     // begin's optional "browser": a workspace to bind (docs/sessions.md "Browser")
  // continuations
  std::string session_id;
  std::int64_t sequence = -1;           // -1 for begin and status
  Json actions;                         // actions: the raw array, 1..16 items (validated later)
  std::int64_t settle_cap_ms = 0;       // actions' optional "settle": 0 off, else the cap in ms
  std::string pre_observation_sha256;   // observe
  std::string observation_sha256;       // finish
  Json claims;                          // finish: an object, JCS form ≤ 16 KiB
  // task.begin (display_id, generation, app_id, attempt_id above; session_id holds task_id)
  std::string task_mode;                // "stage" | "attest"
  std::string task_sha256;
  std::string policy_adapter, policy_provider, policy_model;
  std::string prior_receipt_id;         // attest only
  TaskSettle task_settle;               // default: on, the §4 defaults
  // task.turn
  Json response;                        // the provider's response object, as received
};

// Parses and shape-checks one raw request. Errors:
//   "session-input-size"  more than 96 KiB;
//   "session-json"        not strict JSON (syntax, duplicate keys at any depth, trailing data,
//                         invalid UTF-8, floats, integers beyond ±(2^53−1));
//   "session-command"     valid JSON of the wrong shape: not an object, missing or unknown op,
//                         unknown/missing fields, wrong types, out-of-range scalars
//                         (attempt_id length, sha256 hex, negative sequence, an app_exit
//                         other than "end"/"record", a settle other than false/true/1..5000);
//   "session-actions"     `actions` is an array with 0 or more than 16 items;
//   "session-claims"      `claims` is not an object, or its canonical form exceeds 16 KiB.
// Field values are never echoed in messages.
Result<SessionRequest> parse_session_request(std::string_view raw);

}  // namespace evident
