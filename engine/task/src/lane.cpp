#include "evident/task/lane.h"

#include <optional>
#include <utility>
#include <vector>

#include "evident/agents/adapter.h"
#include "evident/task/budget.h"
#include "evident/task/turn.h"

namespace evident::task {
namespace {

class Run final : public TaskRun {
 public:
  Run(const agents::Adapter& adapter, TaskMode mode, int width, int height, std::int64_t admitted_ms,
      TaskSettle settle)
      : adapter_(adapter), budget_(mode, admitted_ms), width_(width), height_(height), settle_(settle) {}

  Status admit(const Json& response, std::int64_t now_ms) override {
    admitted_.reset();
    auto [iw, ih] = adapter_.model_image_size(width_, height_);
    agents::AdapterInput in;
    in.geometry = agents::Geometry{width_, height_, iw, ih};
    in.pointer = pointer_;
    auto parsed = adapter_.parse(response, in);
    if (!parsed) {
      // The adapter refused the response whole: one refused call (its calls were never mapped).
      refused_calls_ += 1;
      if (parsed.error().code == "task-safety-check-refused") safety_checks_ += 1;
      return parsed.error();
    }
    if (Status st = budget_.admit(*parsed, now_ms); !st) {
      refused_calls_ += static_cast<std::int64_t>(std::max<std::size_t>(parsed->calls.size(), 1));
      return st;
    }
    admitted_ = std::move(parsed).value();
    return ok_status();
  }

  TaskTurnOutcome run_admitted(SessionLease& lease, std::int64_t first_action_index,
                               const TaskFrameSink& sink) override {
    TaskTurnOutcome out;
    if (!admitted_) {  // never: the state machine admits first
      out.kind = TaskTurnOutcome::Kind::kCalls;
      out.failure = make_error("internal", "a task turn ran without admission");
      return out;
    }
    agents::ParsedTurn turn = std::move(*admitted_);
    admitted_.reset();
    budget_.record(turn);
    if (turn.kind == agents::TurnKind::kFinal) {
      if (turn.result) {
        out.kind = TaskTurnOutcome::Kind::kResult;
        out.result = *turn.result;
      } else {
        out.kind = TaskTurnOutcome::Kind::kInvalidResult;
        out.result_error = turn.result_error.value_or(
            make_error("task-result-invalid", "the final answer is not one JSON object"));
        out.retry_prompt = adapter_.retry_prompt(out.result_error);
        invalid_results_ += 1;
      }
      return out;
    }
    out.kind = TaskTurnOutcome::Kind::kCalls;
    out.call_count = static_cast<std::int64_t>(turn.calls.size());
    std::vector<const Action*> flat;
    for (const agents::MappedCall& c : turn.calls) {
      out.call_ids.push_back(c.id);
      for (const auto& n : c.native_actions) out.native_actions.push_back(n);
      for (const Action& a : c.parsed) flat.push_back(&a);
    }
    TurnRun run = run_turn(lease, adapter_, turn, first_action_index, sink, settle_);
    for (std::size_t i = 0; i < run.actions.size() && i < flat.size(); ++i) {
      RanAction& ran = run.actions[i];
      TaskRanAction a;
      a.action = *flat[i];
      a.type = ran.type;
      a.projection = std::move(ran.projection);
      a.status = ran.status;
      a.input = ran.input;
      a.input_events = ran.input_events;
      a.frame_sha256 = ran.frame_sha256;
      out.actions.push_back(std::move(a));
    }
    out.results = std::move(run.results);
    out.tool_results = std::move(run.tool_results);
    out.last_frame = std::move(run.last_frame);
    out.failure = std::move(run.failure);
    if (!out.failure && turn.pointer) pointer_ = turn.pointer;
    return out;
  }

  Result<TaskImage> model_image(const SessionFrame& frame) const override {
    auto img = model_image_of(adapter_, frame);
    if (!img) return img.error();
    return TaskImage{std::move(img->png), std::move(img->sha256), img->width, img->height};
  }

  TaskCounters counters() const override {
    TaskCounters c;
    c.turn_count = budget_.turn_count();
    c.call_count = static_cast<std::int64_t>(budget_.call_count());
    c.refused_call_count = refused_calls_;
    c.invalid_result_count = invalid_results_;
    c.safety_check_count = safety_checks_;
    c.turns_left = budget_.turns_left();
    c.actions_left = static_cast<std::int64_t>(budget_.actions_left());
    return c;
  }

  std::int64_t deadline_ms_left(std::int64_t now_ms) const override { return budget_.deadline_ms_left(now_ms); }
  Json limits_json() const override { return budget_.limits().to_json(); }

 private:
  const agents::Adapter& adapter_;
  TaskBudget budget_;
  int width_;
  int height_;
  TaskSettle settle_;
  std::optional<agents::Point> pointer_;      // display pixels, after the last pointer action
  std::optional<agents::ParsedTurn> admitted_;
  std::int64_t refused_calls_ = 0;
  std::int64_t invalid_results_ = 0;
  std::int64_t safety_checks_ = 0;
};

class Lane final : public TaskLane {
 public:
  std::int64_t deadline_ms(const std::string& mode) const override {
    return limits_for(mode == "attest" ? TaskMode::kAttest : TaskMode::kStage).deadline_ms;
  }
  Result<std::unique_ptr<TaskRun>> start(const TaskStart& s) const override {
    const agents::Adapter* adapter = agents::find_adapter(s.adapter);
    if (!adapter) {
      return make_error("task-adapter-unknown", "policy.adapter is not a known adapter (docs/agents.md lists them)");
    }
    const TaskMode mode = s.mode == "attest" ? TaskMode::kAttest : TaskMode::kStage;
    return std::unique_ptr<TaskRun>(
        std::make_unique<Run>(*adapter, mode, s.display_width, s.display_height, s.admitted_ms, s.settle));
  }
};

}  // namespace

std::shared_ptr<const TaskLane> make_task_lane() { return std::make_shared<Lane>(); }

}  // namespace evident::task
