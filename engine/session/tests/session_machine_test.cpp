// The session transition table is total and says what docs/sessions.md says: every op in every
// phase has exactly one outcome, decided before anything runs (machine.h), and every op has
// its handler row (manager.cpp). The expected matrix below is written by hand from
// docs/sessions.md "The state machine", not derived from the code under test.
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "evident/session/machine.h"
#include "evident/session/manager.h"

namespace evident {
namespace {

// One letter per outcome: A not addressed (begin), N session-not-found, X session-expired,
// S read-only answer (status), E session-phase "has ended", P session-phase "needs phase",
// R runs (after the busy and sequence checks).
char letter(Verdict v) {
  switch (v) {
    case Verdict::kNotAddressed: return 'A';
    case Verdict::kNotFound: return 'N';
    case Verdict::kExpired: return 'X';
    case Verdict::kRead: return 'S';
    case Verdict::kEnded: return 'E';
    case Verdict::kWrongPhase: return 'P';
    case Verdict::kRun: return 'R';
  }
  return '?';
}

// Columns: beginning stage frozen observed finished closed aborted failed expired.
const std::map<std::string, std::string> kExpected = {
    {"begin", "AAAAAAAAA"},   {"actions", "NRPPPEEEX"}, {"freeze", "NRPPPEEEX"},
    {"observe", "NPRPPEEEX"}, {"finish", "NPPRPEEEX"},  {"close", "NPPPREEEX"},
    {"abort", "NRRRREEEX"},   {"status", "NSSSSSSSX"},
};
const std::vector<std::string> kPhaseOrder = {"beginning", "stage",   "frozen", "observed", "finished",
                                              "closed",    "aborted", "failed", "expired"};

TEST(SessionMachine, EveryOpInEveryPhaseHasExactlyTheDocumentedOutcome) {
  ASSERT_EQ(kSessionPhaseCount, kPhaseOrder.size()) << "a phase was added: extend kExpected";
  ASSERT_EQ(kSessionOpCount, kExpected.size()) << "an op was added: extend kExpected";
  for (std::size_t p = 0; p < kSessionPhaseCount; ++p) {
    EXPECT_EQ(to_string(static_cast<Phase>(p)), kPhaseOrder[p]);
  }
  for (std::size_t o = 0; o < kSessionOpCount; ++o) {
    auto op = static_cast<SessionOp>(o);
    std::string name(op_row(op).name);
    ASSERT_TRUE(kExpected.count(name)) << name;
    std::string got;
    for (std::size_t p = 0; p < kSessionPhaseCount; ++p) got += letter(verdict(op, static_cast<Phase>(p)));
    EXPECT_EQ(got, kExpected.at(name)) << "op " << name;
    EXPECT_EQ(got.find('?'), std::string::npos) << "op " << name << " has an undefined outcome";
  }
}

TEST(SessionMachine, EveryRunnableCellLeadsSomewhereOnSuccessAndOnFailure) {
  for (std::size_t o = 0; o < kSessionOpCount; ++o) {
    auto op = static_cast<SessionOp>(o);
    const SessionOpRow& row = op_row(op);
    std::string name(row.name);
    for (std::size_t p = 0; p < kSessionPhaseCount; ++p) {
      auto phase = static_cast<Phase>(p);
      Verdict v = verdict(op, phase);
      if (v != Verdict::kRun && v != Verdict::kNotAddressed) continue;
      ASSERT_TRUE(row.next.has_value()) << name << " runs but leads nowhere";
      // A failure of the work either leaves the phase as it was or ends the session.
      if (row.on_failure) {
        EXPECT_FALSE(is_live(*row.on_failure)) << name;
      }
      EXPECT_TRUE(row.checks_sequence || v == Verdict::kNotAddressed) << name;
    }
  }
  // The documented transitions themselves.
  auto next = [](SessionOp op) { return std::string(to_string(*op_row(op).next)); };
  EXPECT_EQ(next(SessionOp::kBegin), "stage");
  EXPECT_EQ(next(SessionOp::kActions), "stage");
  EXPECT_EQ(next(SessionOp::kFreeze), "frozen");
  EXPECT_EQ(next(SessionOp::kObserve), "observed");
  EXPECT_EQ(next(SessionOp::kFinish), "finished");
  EXPECT_EQ(next(SessionOp::kClose), "closed");
  EXPECT_EQ(next(SessionOp::kAbort), "aborted");
  EXPECT_FALSE(op_row(SessionOp::kStatus).next.has_value());
  for (SessionOp op : {SessionOp::kActions, SessionOp::kFreeze, SessionOp::kObserve, SessionOp::kClose,
                       SessionOp::kAbort}) {
    ASSERT_TRUE(op_row(op).on_failure.has_value()) << to_string(op);
    EXPECT_EQ(to_string(*op_row(op).on_failure), "failed") << to_string(op);
  }
  for (SessionOp op : {SessionOp::kBegin, SessionOp::kFinish, SessionOp::kStatus}) {
    EXPECT_FALSE(op_row(op).on_failure.has_value()) << to_string(op);
  }
  // Sequence: every op but begin and status carries it; actions..finish advance it.
  for (SessionOp op : {SessionOp::kActions, SessionOp::kFreeze, SessionOp::kObserve, SessionOp::kFinish}) {
    EXPECT_TRUE(op_row(op).advances_sequence) << to_string(op);
  }
  for (SessionOp op : {SessionOp::kBegin, SessionOp::kClose, SessionOp::kAbort, SessionOp::kStatus}) {
    EXPECT_FALSE(op_row(op).advances_sequence) << to_string(op);
  }
  EXPECT_FALSE(op_row(SessionOp::kBegin).checks_sequence);
  EXPECT_FALSE(op_row(SessionOp::kStatus).checks_sequence);
}

TEST(SessionMachine, EveryLivePhaseIsReachableAndEveryPhaseHasAGate) {
  std::vector<bool> reached(kSessionPhaseCount, false);
  reached[static_cast<std::size_t>(Phase::kBeginning)] = true;  // begin's admission
  reached[static_cast<std::size_t>(Phase::kExpired)] = true;    // the deadline (not an op)
  for (const SessionOpRow& row : protocol::kSessionOps) {
    if (row.next) reached[static_cast<std::size_t>(*row.next)] = true;
    if (row.on_failure) reached[static_cast<std::size_t>(*row.on_failure)] = true;
  }
  for (std::size_t p = 0; p < kSessionPhaseCount; ++p) {
    EXPECT_TRUE(reached[p]) << to_string(static_cast<Phase>(p)) << " is never entered";
  }
  EXPECT_EQ(phase_gate(Phase::kBeginning), PhaseGate::kInvisible);
  EXPECT_EQ(phase_gate(Phase::kExpired), PhaseGate::kExpired);
  for (Phase p : {Phase::kStage, Phase::kFrozen, Phase::kObserved, Phase::kFinished}) {
    EXPECT_EQ(phase_gate(p), PhaseGate::kLive) << to_string(p);
    EXPECT_TRUE(is_live(p));
  }
  for (Phase p : {Phase::kClosed, Phase::kAborted, Phase::kFailed}) {
    EXPECT_EQ(phase_gate(p), PhaseGate::kEnded) << to_string(p);
    EXPECT_FALSE(is_live(p));
  }
}

TEST(SessionMachine, EveryOpHasItsHandlerRowAndItsName) {
  EXPECT_EQ(SessionManager::handler_table_problems(), "");
  for (std::size_t o = 0; o < kSessionOpCount; ++o) {
    auto op = static_cast<SessionOp>(o);
    EXPECT_EQ(std::string(to_string(op)), std::string(protocol::kSessionOps[o].name));
  }
  EXPECT_EQ(allowed_phase_names(op_row(SessionOp::kFreeze)), "stage");
  EXPECT_EQ(allowed_phase_names(op_row(SessionOp::kAbort)), "stage, frozen, observed or finished");
}

}  // namespace
}  // namespace evident
