// The limits of one agent task (docs/agents.md "Limits"): turns, actions and the
// deadline, checked for a whole parsed turn before its first action runs. Pure logic: the task
// lane passes monotonic milliseconds from its Clock.
#pragma once

#include <cstddef>
#include <cstdint>

#include "evident/agents/adapter.h"
#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/protocol/protocol.h"
#include "evident/session/request.h"

namespace evident::task {

using agents::ParsedTurn;

enum class TaskMode { kStage, kAttest };
const char* to_string(TaskMode mode);  // "stage" | "attest"

struct TaskLimits {
  int max_turns = 0;
  std::int64_t deadline_ms = 0;  // from begin's admission
  bool input_sealed = false;     // attest: screenshot/zoom calls only
  std::size_t max_actions_per_turn = agents::kMaxActionsPerTurn;
  std::size_t max_actions = 0;
  // {"max_turns","deadline_ms","input_sealed","max_actions_per_turn","max_actions"} (the receipt's
  // "limits").
  Json to_json() const;
};

// The limits of protocol/evident.json (one place), under the names this module uses.
inline constexpr int kStageMaxTurns = static_cast<int>(protocol::kTaskStageMaxTurns);
inline constexpr std::int64_t kStageDeadlineMs = protocol::kTaskStageTimeoutMs;
inline constexpr int kAttestMaxTurns = static_cast<int>(protocol::kTaskAttestMaxTurns);
inline constexpr std::int64_t kAttestDeadlineMs = protocol::kTaskAttestTimeoutMs;
// A task is a session: the same 64 actions in all (docs/sessions.md, docs/agents.md).
inline constexpr std::size_t kMaxActionsPerTask = static_cast<std::size_t>(kMaxSessionActions);

TaskLimits limits_for(TaskMode mode);

class TaskBudget {
 public:
  TaskBudget(TaskMode mode, std::int64_t admitted_ms);

  // Whether `turn` may run at monotonic time now_ms; nothing is counted. In order:
  // task-deadline (the deadline has passed), task-turn-limit (no turn left),
  // task-attest-input-refused (in attest, any action but screenshot and zoom), task-action-limit (the turn would take
  // the task past 64 actions; the per-turn 16 is the adapter's).
  Status admit(const ParsedTurn& turn, std::int64_t now_ms) const;
  // Counts an admitted turn (a final answer, valid or not, counts as a turn).
  void record(const ParsedTurn& turn);

  TaskMode mode() const { return mode_; }
  const TaskLimits& limits() const { return limits_; }
  int turn_count() const { return turns_; }
  std::size_t action_count() const { return actions_; }
  std::size_t call_count() const { return calls_; }
  int turns_left() const { return limits_.max_turns - turns_; }
  std::size_t actions_left() const { return limits_.max_actions - actions_; }
  std::int64_t deadline_ms_left(std::int64_t now_ms) const;
  bool expired(std::int64_t now_ms) const { return deadline_ms_left(now_ms) == 0; }

 private:
  TaskMode mode_;
  TaskLimits limits_;
  std::int64_t admitted_ms_;
  int turns_ = 0;
  std::size_t actions_ = 0;
  std::size_t calls_ = 0;
};

}  // namespace evident::task
