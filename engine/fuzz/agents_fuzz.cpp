// Fuzz target: the provider adapters' response parsing (engine/agents), every registered
// adapter. Input: byte 0 picks the adapter (adapter_names() order), byte 1 the pointer state, the
// rest is the provider response as task.turn carries it (strict JSON, an object).
// Invariants: refusals carry one of the documented turn codes with a good message; a calls turn
// has 1..16 calls and 1..16 actions in all, each mapped action in the display and accepted by the
// §4 parser; a final turn has exactly one of result / result_error (task-result-invalid); tool
// results and retry prompts are JSON that round-trips.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "evident/agents/adapter.h"
#include "evident/receipts/jcs.h"
#include "fuzz_check.h"
#include "secrets_check.h"

using namespace evident;
using namespace evident::agents;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const auto names = adapter_names();
  const Adapter* adapter = find_adapter(names[data[0] % names.size()]);
  fuzz::require(adapter != nullptr, "a listed adapter is not found");
  const std::string_view input(reinterpret_cast<const char*>(data + 2), size - 2);
  auto response = parse_json_strict(input, kMaxResponseBytes, "task-json");
  if (!response.ok() || !response->is_object()) return 0;  // parse_task_request refuses these

  AdapterInput in;
  in.geometry.display_width = 1280;
  in.geometry.display_height = 800;
  const auto [iw, ih] = adapter->model_image_size(1280, 800);
  fuzz::require(iw >= 1 && ih >= 1 && iw <= 1280 && ih <= 800, "model image larger than the display");
  in.geometry.image_width = iw;
  in.geometry.image_height = ih;
  if (data[1] & 1) in.pointer = Point{static_cast<int>(data[1]) % 1280, 400};

  auto turn = adapter->parse(*response, in);
  if (!turn.ok()) {
    fuzz::require_good_error(turn.error(), input,
                             {"task-response", "task-forbidden-tool-call", "task-safety-check-refused",
                              "task-action-forbidden", "task-call-id-invalid", "task-action-limit"});
    fuzz::require_round_trip(adapter->retry_prompt(turn.error()));
    return 0;
  }
  const ParsedTurn& t = *turn;
  if (t.kind == TurnKind::kFinal) {
    fuzz::require(t.calls.empty(), "a final turn with calls");
    fuzz::require(t.result.has_value() != t.result_error.has_value(), "final turn: not exactly one of result/error");
    if (t.result) {
      fuzz::require(t.result->is_object(), "final result is not an object");
      auto jcs = canonicalize(*t.result);
      fuzz::require(jcs.ok() && jcs->size() <= protocol::kClaimsMaxCanonicalBytes, "final result over 16 KiB canonical");
    } else {
      fuzz::require(t.result_error->code == "task-result-invalid", "final answer error code", t.result_error->code);
      fuzz::require_good_error(*t.result_error, input);
      fuzz::require_round_trip(adapter->retry_prompt(*t.result_error));
    }
    fuzz::trace("final", adapter->name());
    return 0;
  }
  fuzz::require(!t.calls.empty() && t.calls.size() <= kMaxActionsPerTurn, "call count out of bounds");
  fuzz::require(t.action_count() >= 1 && t.action_count() <= kMaxActionsPerTurn, "action count out of bounds");
  std::vector<CallOutcome> outcomes;
  for (const MappedCall& c : t.calls) {
    fuzz::require(c.id.size() <= kMaxCallIdBytes, "call id over the limit");
    fuzz::require(c.actions.is_array() && c.actions.size() == c.parsed.size(), "mapped and parsed actions differ");
    if (!c.parsed.empty()) {
      fuzz::check_parsed_actions(c.parsed, 1280, 800, /*session=*/false);
      auto again = parse_actions(c.actions, BatchMode::kCuActions, CoordinateSpace::kPixel, 1280, 800);
      fuzz::require(again.ok(), "a mapped action the §4 parser refuses");
    }
    outcomes.push_back(CallOutcome{CallStatus::kOk, "done", nullptr, 0, 0});
  }
  if (t.pointer) {
    fuzz::require(t.pointer->x >= 0 && t.pointer->x < 1280 && t.pointer->y >= 0 && t.pointer->y < 800,
                  "pointer outside the display");
  }
  fuzz::require_round_trip(adapter->tool_results(t, outcomes));
  fuzz::trace("calls", adapter->name());
  return 0;
}
