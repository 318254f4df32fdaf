// The session transition table is total and says what docs/sessions.md says: every op in every
// phase has exactly one outcome, decided before anything runs (machine.h), and every op has
// its handler row (manager.cpp). The expected outcomes are the matrix of docs/sessions.md §3
// ("The state machine"), read from the document, so the page and the code cannot drift apart;
// the transitions themselves are spelled out below by hand.
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "evident/session/machine.h"
#include "evident/session/manager.h"

namespace evident {
namespace {

// The documented word for each outcome.
std::string word(Verdict v) {
  switch (v) {
    case Verdict::kNotAddressed: return "—";
    case Verdict::kNotFound: return "not-found";
    case Verdict::kExpired: return "expired";
    case Verdict::kRead: return "read";
    case Verdict::kEnded: return "ended";
    case Verdict::kWrongPhase: return "phase";
    case Verdict::kRun: return "run";
  }
  return "?";
}

std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::stringstream in(row);
  std::string cell;
  std::getline(in, cell, '|');  // before the first bar
  while (std::getline(in, cell, '|')) {
    auto b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
    out.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
  }
  if (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

struct DocMatrix {
  std::vector<std::string> phases;                        // the header's phase columns
  std::map<std::string, std::vector<std::string>> rows;  // op -> one word per phase
};

DocMatrix read_doc_matrix() {
  std::ifstream f(std::string(EVIDENT_SOURCE_DIR) + "/docs/sessions.md");
  std::string line;
  bool in = false;
  DocMatrix m;
  while (std::getline(f, line)) {
    if (line.rfind("<!-- BEGIN SESSION VERDICTS", 0) == 0) in = true;
    else if (line.rfind("<!-- END SESSION VERDICTS", 0) == 0) break;
    else if (in && line.rfind("| op", 0) == 0) {
      auto c = cells(line);
      m.phases.assign(c.begin() + 1, c.end());
    } else if (in && line.rfind("| `", 0) == 0) {
      auto c = cells(line);
      std::string op = c[0].substr(1, c[0].size() - 2);
      m.rows[op].assign(c.begin() + 1, c.end());
    }
  }
  return m;
}

TEST(SessionMachine, EveryOpInEveryPhaseHasExactlyTheDocumentedOutcome) {
  DocMatrix doc = read_doc_matrix();
  ASSERT_EQ(doc.phases.size(), kSessionPhaseCount) << "docs/sessions.md §3 needs one column per phase";
  ASSERT_EQ(doc.rows.size(), kSessionOpCount) << "docs/sessions.md §3 needs one row per op";
  for (std::size_t p = 0; p < kSessionPhaseCount; ++p) {
    EXPECT_EQ(std::string(to_string(static_cast<Phase>(p))), doc.phases[p]) << "column " << p;
  }
  for (std::size_t o = 0; o < kSessionOpCount; ++o) {
    auto op = static_cast<SessionOp>(o);
    std::string name(op_row(op).name);
    ASSERT_TRUE(doc.rows.count(name)) << "docs/sessions.md §3 has no row for " << name;
    const auto& want = doc.rows.at(name);
    ASSERT_EQ(want.size(), kSessionPhaseCount) << name;
    for (std::size_t p = 0; p < kSessionPhaseCount; ++p) {
      auto phase = static_cast<Phase>(p);
      std::string got = word(verdict(op, phase));
      EXPECT_NE(got, "?") << name << " in " << to_string(phase) << " has no defined outcome";
      EXPECT_EQ(got, want[p]) << name << " in " << to_string(phase);
    }
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
  // The task ops (docs/agents.md "The lane"): a turn keeps the task running (a valid final
  // answer closes it from inside the handler, reported "finished"); abort ends it.
  EXPECT_EQ(next(SessionOp::kTaskBegin), "running");
  EXPECT_EQ(next(SessionOp::kTaskTurn), "running");
  EXPECT_EQ(next(SessionOp::kTaskAbort), "aborted");
  EXPECT_FALSE(op_row(SessionOp::kTaskStatus).next.has_value());
  EXPECT_EQ(std::string(to_string(*op_row(SessionOp::kTaskTurn).on_failure)), "failed");
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
  for (Phase p : {Phase::kStage, Phase::kFrozen, Phase::kObserved, Phase::kFinished, Phase::kRunning}) {
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
