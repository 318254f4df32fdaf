#include "evident/task/budget.h"

namespace evident::task {

const char* to_string(TaskMode mode) { return mode == TaskMode::kStage ? "stage" : "attest"; }

Json TaskLimits::to_json() const {
  return Json{{"max_turns", max_turns},
              {"deadline_ms", deadline_ms},
              {"input_sealed", input_sealed},
              {"max_actions_per_turn", max_actions_per_turn},
              {"max_actions", max_actions}};
}

TaskLimits limits_for(TaskMode mode) {
  TaskLimits l;
  l.max_actions = kMaxActionsPerTask;
  if (mode == TaskMode::kStage) {
    l.max_turns = kStageMaxTurns;
    l.deadline_ms = kStageDeadlineMs;
    l.input_sealed = false;
  } else {
    l.max_turns = kAttestMaxTurns;
    l.deadline_ms = kAttestDeadlineMs;
    l.input_sealed = true;
  }
  return l;
}

TaskBudget::TaskBudget(TaskMode mode, std::int64_t admitted_ms)
    : mode_(mode), limits_(limits_for(mode)), admitted_ms_(admitted_ms) {}

std::int64_t TaskBudget::deadline_ms_left(std::int64_t now_ms) const {
  const std::int64_t left = admitted_ms_ + limits_.deadline_ms - now_ms;
  return left > 0 ? left : 0;
}

Status TaskBudget::admit(const agents::ParsedTurn& turn, std::int64_t now_ms) const {
  if (expired(now_ms)) {
    return make_error("task-deadline", std::string("the task's ") + std::to_string(limits_.deadline_ms / 1000) +
                                           " s deadline has passed");
  }
  if (turns_left() <= 0) {
    return make_error("task-turn-limit", "the task has used all of its " + std::to_string(limits_.max_turns) + " turns");
  }
  bool only_looks = true;  // attest: screenshot and zoom calls only (docs/agents.md)
  for (const agents::MappedCall& c : turn.calls) {
    for (const Action& a : c.parsed) {
      only_looks = only_looks && (a.type == ActionType::kScreenshot || a.type == ActionType::kZoom);
    }
  }
  if (limits_.input_sealed && !only_looks) {
    return make_error("task-attest-input-refused",
                      "an attest task's input is sealed: only screenshot and zoom calls are allowed");
  }
  if (turn.action_count() > actions_left()) {
    return make_error("task-action-limit", "the turn's " + std::to_string(turn.action_count()) +
                                               " actions would take the task past " +
                                               std::to_string(limits_.max_actions));
  }
  return ok_status();
}

void TaskBudget::record(const agents::ParsedTurn& turn) {
  ++turns_;
  actions_ += turn.action_count();
  calls_ += turn.calls.size();
}

}  // namespace evident::task
