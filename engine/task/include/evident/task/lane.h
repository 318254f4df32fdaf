// The agent task lane the session state machine runs task.* ops with (docs/agents.md "The
// lane"): the TaskLane of evident/session/task_lane.h over the provider adapters
// (engine/agents), the task limits (TaskBudget) and run_turn.
#pragma once

#include <memory>

#include "evident/session/task_lane.h"

namespace evident::task {

// The engine's lane (stateless; one per engine). Errors of start(): "task-adapter-unknown".
std::shared_ptr<const TaskLane> make_task_lane();

}  // namespace evident::task
