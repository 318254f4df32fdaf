// What the session state machine needs from the agent task lane (docs/agents.md "The lane"):
// the task ops (task.begin/turn/abort/status) are ops of the session machine (manager.h), with
// the same lookup, actor, busy, sequence, phase, deadline, cleanup, evidence and run-log rules;
// what is specific to a task — the provider adapter, the limits, running a parsed turn — sits
// above this module (engine/task implements TaskLane) and is reached through this seam only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "evident/actions/action.h"
#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/session/backend.h"
#include "evident/session/request.h"

namespace evident {

// The image a model is shown of a display frame: the frame itself, or scaled for the provider.
struct TaskImage {
  std::string png;
  std::string sha256;
  int width = 0;
  int height = 0;
};

// The counters of one task (the snapshot's and the receipt's).
struct TaskCounters {
  std::int64_t turn_count = 0;
  std::int64_t call_count = 0;
  std::int64_t refused_call_count = 0;    // calls of refused turns (the refusal ended the task)
  std::int64_t invalid_result_count = 0;  // final answers that were not one JSON object
  std::int64_t safety_check_count = 0;    // provider safety checks seen (never acknowledged)
  std::int64_t turns_left = 0;
  std::int64_t actions_left = 0;
};

// One action a turn ran, for the transcript (the session's ActionRecord fields) and the
// commitment (the parsed action holds the typed text/key; it never leaves memory).
struct TaskRanAction {
  Action action;
  std::string type;
  Json projection;
  std::string status;
  bool input = false;
  std::int64_t input_events = 0;
  std::string frame_sha256;
};

// What one admitted turn did.
struct TaskTurnOutcome {
  enum class Kind { kCalls, kInvalidResult, kResult };
  Kind kind = Kind::kCalls;
  // The receipt's turn event (every kind).
  std::int64_t call_count = 0;
  std::vector<std::string> call_ids;        // raw provider ids: digested, never stored
  std::vector<std::string> native_actions;  // provider action names, in order
  // kCalls
  std::vector<TaskRanAction> actions;
  Json results = nullptr;       // per call: {"call","native_actions","status","actions"}
  Json tool_results = nullptr;  // provider-native answer to every call
  std::optional<SessionFrame> last_frame;  // the display after the turn
  std::optional<Error> failure;            // the turn ended the task (nothing more ran)
  // kInvalidResult
  Error result_error;
  Json retry_prompt = nullptr;
  // kResult
  Json result = nullptr;
};

// Writes a frame the turn took to the evidence directory before anything references it.
using TaskFrameSink = std::function<Status(const SessionFrame&)>;

// One task's own logic: its adapter, its limits (TaskBudget), the pointer position.
class TaskRun {
 public:
  virtual ~TaskRun() = default;
  // Parses `response` with the task's adapter and admits the whole turn against the limits at
  // monotonic time now_ms. Nothing runs and nothing is counted on success; the admitted turn is
  // kept for run_admitted(). An error is a refusal (task-response, task-forbidden-tool-call,
  // task-safety-check-refused, task-action-forbidden, task-call-id-invalid,
  // task-attest-input-refused, task-turn-limit, task-action-limit, task-deadline): it is
  // counted (refused_call_count, safety_check_count) and ends the task.
  virtual Status admit(const Json& response, std::int64_t now_ms) = 0;
  // Counts and runs the admitted turn on `lease` (first_action_index: task-wide index of its
  // first action). Final answers run nothing.
  virtual TaskTurnOutcome run_admitted(SessionLease& lease, std::int64_t first_action_index,
                                       const TaskFrameSink& sink) = 0;
  // The image the model is shown of `frame` ("image-scale-failed").
  virtual Result<TaskImage> model_image(const SessionFrame& frame) const = 0;
  virtual TaskCounters counters() const = 0;
  virtual std::int64_t deadline_ms_left(std::int64_t now_ms) const = 0;
  // {"max_turns","deadline_ms","input_sealed","max_actions_per_turn","max_actions"}.
  virtual Json limits_json() const = 0;
};

struct TaskStart {
  std::string mode;     // "stage" | "attest" (parsed already)
  std::string adapter;  // a registered adapter name (checked by the parser)
  int display_width = 0;
  int display_height = 0;
  std::int64_t admitted_ms = 0;  // monotonic: begin's admission (the deadline's start)
  TaskSettle settle;             // the wait before each frame after input (task.begin `settle`)
};

class TaskLane {
 public:
  virtual ~TaskLane() = default;
  // The deadline of a task of `mode` from its admission (ms).
  virtual std::int64_t deadline_ms(const std::string& mode) const = 0;
  // A new task's logic. Errors: "task-adapter-unknown".
  virtual Result<std::unique_ptr<TaskRun>> start(const TaskStart& start) const = 0;
};

}  // namespace evident
