#include "evident/session/machine.h"

namespace evident {

// SessionOp lists the protocol file's session ops in its order (op_row indexes by it).
static_assert(kSessionOpCount == static_cast<std::size_t>(SessionOp::kTaskStatus) + 1,
              "SessionOp must have one enumerator per op of protocol/evident.json");
static_assert(op_row(SessionOp::kBegin).name == "begin");
static_assert(op_row(SessionOp::kActions).name == "actions");
static_assert(op_row(SessionOp::kFreeze).name == "freeze");
static_assert(op_row(SessionOp::kObserve).name == "observe");
static_assert(op_row(SessionOp::kFinish).name == "finish");
static_assert(op_row(SessionOp::kClose).name == "close");
static_assert(op_row(SessionOp::kAbort).name == "abort");
static_assert(op_row(SessionOp::kStatus).name == "status");
static_assert(op_row(SessionOp::kTaskBegin).name == "task.begin");
static_assert(op_row(SessionOp::kTaskTurn).name == "task.turn");
static_assert(op_row(SessionOp::kTaskAbort).name == "task.abort");
static_assert(op_row(SessionOp::kTaskStatus).name == "task.status");

std::string allowed_phase_names(const SessionOpRow& row) {
  std::string out;
  std::size_t n = 0;
  for (std::size_t i = 0; i < kSessionPhaseCount; ++i) n += allowed_in(row, static_cast<Phase>(i)) ? 1 : 0;
  std::size_t seen = 0;
  for (std::size_t i = 0; i < kSessionPhaseCount; ++i) {
    Phase p = static_cast<Phase>(i);
    if (!allowed_in(row, p)) continue;
    if (seen > 0) out += seen + 1 == n ? " or " : ", ";
    out += to_string(p);
    ++seen;
  }
  return out;
}

}  // namespace evident
