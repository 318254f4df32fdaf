// Provider adapters for bounded agent tasks (docs/agents.md): each one parses one provider's
// response object, exactly as received, into computer calls whose actions are mapped to the §4
// action vocabulary and validated by the action parser before anything runs, or into a final
// answer; and builds the provider-native tool results (frames included) for the next model message.
// Pure logic: no X, no clock, no I/O.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evident/actions/action.h"
#include "evident/core/json.h"
#include "evident/core/status.h"

namespace evident::agents {

// Limits of one turn (docs/agents.md); the task lane enforces the per-task ones.
inline constexpr std::size_t kMaxActionsPerTurn = kMaxActionsPerBatch;  // 16
inline constexpr std::size_t kMaxCallIdBytes = 256;
inline constexpr std::size_t kMaxResponseBytes = 1024 * 1024;  // task.turn "response"
// Content blocks / output items / parts a response may hold (bounds the work before mapping).
inline constexpr std::size_t kMaxResponseItems = 256;
// A final answer's text, before it is parsed as the result object.
inline constexpr std::size_t kMaxResultTextBytes = 64 * 1024;
// Scroll: one X wheel click stands for this many pixels of a provider's pixel distance
// (OpenAI scroll_x/scroll_y, Gemini magnitude after de-normalisation); docs/agents.md.
inline constexpr int kScrollPixelsPerClick = 100;

// The sizes coordinates are mapped between.
struct Geometry {
  int display_width = 0;   // the display, native pixels
  int display_height = 0;
  int image_width = 0;     // the image the model was shown (== display unless scaled)
  int image_height = 0;
};

struct Point {
  int x = 0;
  int y = 0;
  bool operator==(const Point&) const = default;
};

struct AdapterInput {
  Geometry geometry;
  // Where the pointer is, in display pixels, if the task knows (the end of the previous turn's
  // last pointer action). Provider actions without a coordinate (an Anthropic click with no
  // `coordinate`) act there; unknown -> task-action-forbidden.
  std::optional<Point> pointer;
};

// One provider computer call, mapped.
struct MappedCall {
  std::string id;    // the provider's call id ("" for a Gemini call without id); never logged
  std::string name;  // the tool/function name the answer must name (Gemini), else the tool name
  std::vector<std::string> native_actions;  // provider action names, in order
  Json actions = Json::array();             // §4 action objects in display pixels
  std::vector<Action> parsed;               // the same, validated (BatchMode::kCuActions)
  bool input() const;                       // any input action
};

enum class TurnKind { kCalls, kFinal };

struct ParsedTurn {
  TurnKind kind = TurnKind::kCalls;
  std::vector<MappedCall> calls;     // kCalls: 1..16 calls, 1..16 actions in all
  std::optional<Point> pointer;      // the pointer after this turn's actions (display pixels)
  // kFinal: exactly one of these.
  std::optional<Json> result;        // the result object (≤ 16 KiB canonical)
  std::optional<Error> result_error; // "task-result-invalid": the turn counts, retry_prompt follows
  std::size_t action_count() const;
  bool input() const;
};

// What happened to one call, for its tool result.
enum class CallStatus {
  kOk,      // every action ran (ok or injected)
  kFailed,  // an action failed; the call's result carries is_error / the failure
  kNotRun,  // an earlier call of this turn failed, or the turn was refused (halt rule)
};

struct CallOutcome {
  CallStatus status = CallStatus::kNotRun;
  std::string detail;       // for the model; never typed text or key names
  const std::string* png = nullptr;  // the image this call answers with (model-sized); may be null
  int image_width = 0;
  int image_height = 0;
};

class Adapter {
 public:
  virtual ~Adapter() = default;
  virtual std::string_view name() const = 0;

  // Parses one provider response. Errors (the turn is refused whole, nothing runs):
  // task-response, task-forbidden-tool-call, task-safety-check-refused, task-action-forbidden,
  // task-call-id-invalid, task-action-limit. A final answer that is not exactly one JSON object
  // is not an error here: it is a kFinal turn with result_error set.
  virtual Result<ParsedTurn> parse(const Json& response, const AdapterInput& in) const = 0;

  // The provider-native content for the next model message: one answer per call of `turn`, in
  // order (outcomes.size() == turn.calls.size()).
  virtual Json tool_results(const ParsedTurn& turn, const std::vector<CallOutcome>& outcomes) const = 0;

  // The provider-native user message asking again for a valid final answer.
  virtual Json retry_prompt(const Error& why) const = 0;

  // The image size this provider should be shown for a display of width x height (no larger
  // than the display; aspect kept, docs/agents.md "Image scaling").
  virtual std::pair<int, int> model_image_size(int width, int height) const {
    return {width, height};
  }
};

// The adapter registered under `name` (names in docs/agents.md), or nullptr.
const Adapter* find_adapter(std::string_view name);
// Every adapter name, in the documented order.
std::vector<std::string_view> adapter_names();

}  // namespace evident::agents
