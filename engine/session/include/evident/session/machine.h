// The session protocol as a state machine (docs/sessions.md "The state machine"): the phases
// and the transition table come from the protocol file (protocol::SessionPhase,
// protocol::kSessionOps); this header says how a request meets a session in a phase, before any
// work starts. SessionManager (manager.h) runs one handler per op on top of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

#include "evident/protocol/protocol.h"
#include "evident/session/request.h"

namespace evident {

using Phase = protocol::SessionPhase;
using SessionOpRow = protocol::SessionOpInfo;

inline constexpr std::size_t kSessionPhaseCount = std::size(protocol::kSessionPhaseNames);
inline constexpr std::size_t kSessionOpCount = std::size(protocol::kSessionOps);

// to_string(Phase) (names exist only at the reply/log boundary: snapshots, messages, the run
// log) and is_live(Phase), from the protocol file.
using protocol::is_live;
using protocol::to_string;

// The transition-table row of `op` (SessionOp is in the protocol file's op order).
constexpr const SessionOpRow& op_row(SessionOp op) {
  return protocol::kSessionOps[static_cast<std::size_t>(op)];
}
constexpr bool allowed_in(const SessionOpRow& row, Phase p) {
  return (row.allowed_phases & protocol::phase_bit(p)) != 0;
}
// "stage", "stage or frozen", ...: the phases `row` may run in, for messages.
std::string allowed_phase_names(const SessionOpRow& row);

// How every request addressed to a session in a phase is met, whatever its op. The switch has
// no default, so a new phase does not compile (-Wswitch) until it is given its gate.
enum class PhaseGate {
  kInvisible,  // not yet visible: session-not-found (begin is still setting it up)
  kExpired,    // session-expired for every session op, status too; task.status answers (a task
               // snapshot reports phase expired), every other task op gets task-deadline
  kEnded,      // ended: read-only ops answer; any other op is session-phase ("has ended")
  kLive,       // the op's row decides
};
constexpr PhaseGate phase_gate(Phase p) {
  switch (p) {
    case Phase::kBeginning: return PhaseGate::kInvisible;
    case Phase::kStage:
    case Phase::kFrozen:
    case Phase::kObserved:
    case Phase::kFinished:
    case Phase::kRunning: return PhaseGate::kLive;
    case Phase::kClosed:
    case Phase::kAborted:
    case Phase::kFailed: return PhaseGate::kEnded;
    case Phase::kExpired: return PhaseGate::kExpired;
  }
  return PhaseGate::kInvisible;
}

// The outcome of one op in one phase, decided before anything runs.
enum class Verdict {
  kNotAddressed,  // the op names no session (begin): its handler decides
  kNotFound,      // session-not-found
  kExpired,       // session-expired (task ops: task-deadline)
  kRead,          // a read-only op (no sequence): its handler answers under the manager's lock
  kEnded,         // session-phase: the session has ended
  kWrongPhase,    // session-phase: the op needs another phase (after the busy and sequence checks)
  kRun,           // busy and sequence checks, then the op's handler; its success leads to
                  // row.next, a failure of its work to row.on_failure (nullopt: unchanged)
};
constexpr Verdict verdict(SessionOp op, Phase p) {
  const SessionOpRow& row = op_row(op);
  if (row.allowed_phases == 0) return Verdict::kNotAddressed;
  switch (phase_gate(p)) {
    case PhaseGate::kInvisible: return Verdict::kNotFound;
    case PhaseGate::kExpired:
      return !row.checks_sequence && allowed_in(row, p) ? Verdict::kRead : Verdict::kExpired;
    case PhaseGate::kEnded:
      return !row.checks_sequence && allowed_in(row, p) ? Verdict::kRead : Verdict::kEnded;
    case PhaseGate::kLive:
      if (!row.checks_sequence) return allowed_in(row, p) ? Verdict::kRead : Verdict::kWrongPhase;
      return allowed_in(row, p) ? Verdict::kRun : Verdict::kWrongPhase;
  }
  return Verdict::kNotFound;
}

}  // namespace evident
