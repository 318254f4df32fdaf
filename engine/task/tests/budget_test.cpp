// Task limits: times are explicit monotonic milliseconds, so expiry is tested without waiting.
#include <gtest/gtest.h>

#include "evident/task/budget.h"

namespace evident::task {
using namespace agents;
namespace {

ParsedTurn turn(std::string_view adapter, std::string_view response) {
  auto j = parse_json_strict(response, 1 << 20, "test");
  EXPECT_TRUE(j.ok());
  AdapterInput in;
  in.geometry = Geometry{1280, 800, 1280, 800};
  auto t = find_adapter(adapter)->parse(*j, in);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? *t : ParsedTurn{};
}

std::string screenshots(int n) {
  std::string actions;
  for (int i = 0; i < n; ++i) actions += std::string(i ? "," : "") + R"({"type":"screenshot"})";
  return R"({"calls":[{"id":"c","actions":[)" + actions + "]}]}";
}

TEST(Budget, LimitsPerMode) {
  EXPECT_EQ(limits_for(TaskMode::kStage).to_json(),
            Json::parse(R"({"max_turns":12,"deadline_ms":180000,"input_sealed":false,"max_actions_per_turn":16,"max_actions":64})"));
  EXPECT_EQ(limits_for(TaskMode::kAttest).to_json(),
            Json::parse(R"({"max_turns":2,"deadline_ms":45000,"input_sealed":true,"max_actions_per_turn":16,"max_actions":64})"));
}

TEST(Budget, StageCountsTurnsAndActions) {
  TaskBudget b(TaskMode::kStage, 1000);
  const ParsedTurn sixteen = turn("evident", screenshots(16));
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(b.admit(sixteen, 1000 + i).ok());
    b.record(sixteen);
  }
  EXPECT_EQ(b.action_count(), 64u);
  EXPECT_EQ(b.actions_left(), 0u);
  EXPECT_EQ(b.turns_left(), 8);
  const ParsedTurn one = turn("evident", screenshots(1));
  auto refused = b.admit(one, 2000);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, "task-action-limit");
  // A final answer needs no actions and still counts as a turn.
  const ParsedTurn final_turn = turn("evident", R"({"result":{}})");
  EXPECT_TRUE(b.admit(final_turn, 2000).ok());
}

TEST(Budget, TurnLimitAndDeadline) {
  TaskBudget b(TaskMode::kStage, 0);
  const ParsedTurn answer = turn("evident", R"({"result":[]})");  // invalid result: still a turn
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(b.admit(answer, i).ok());
    b.record(answer);
  }
  auto r = b.admit(answer, 13);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "task-turn-limit");
  TaskBudget late(TaskMode::kStage, 500);
  EXPECT_EQ(late.deadline_ms_left(500), 180000);
  EXPECT_EQ(late.deadline_ms_left(180499), 1);
  EXPECT_TRUE(late.admit(answer, 180499).ok());
  auto d = late.admit(answer, 180500);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code, "task-deadline");
}

TEST(Budget, AttestSealsInputAndAllowsTwoTurns) {
  TaskBudget b(TaskMode::kAttest, 0);
  const ParsedTurn click = turn("evident", R"({"calls":[{"id":"c","actions":[{"type":"click","x":1,"y":1}]}]})");
  auto r = b.admit(click, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "task-attest-input-refused");
  const ParsedTurn pause = turn("evident", R"({"calls":[{"id":"c","actions":[{"type":"screenshot"},{"type":"wait","ms":10}]}]})");
  EXPECT_EQ(b.admit(pause, 0).error().code, "task-attest-input-refused");  // screenshot/zoom calls only
  const ParsedTurn look = turn("evident", R"({"calls":[{"id":"c","actions":[{"type":"screenshot"},{"type":"zoom","x":0,"y":0,"width":5,"height":5}]}]})");
  ASSERT_TRUE(b.admit(look, 0).ok());
  b.record(look);
  ASSERT_TRUE(b.admit(look, 44999).ok());
  b.record(look);
  EXPECT_EQ(b.admit(look, 44999).error().code, "task-turn-limit");
  TaskBudget t(TaskMode::kAttest, 0);
  EXPECT_EQ(t.admit(look, 45000).error().code, "task-deadline");
}

}  // namespace
}  // namespace evident::task
