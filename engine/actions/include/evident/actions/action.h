// The action vocabulary (docs/protocol.md, "Action kinds"): parsing and validation of a whole batch before anything
// runs, coordinate scaling, and the redacted projection used by receipts (docs/protocol.md, "Receipts").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/protocol/protocol.h"

namespace evident {

// The action kinds, in the order of protocol/evident.json ("action_kinds"), which is where a kind
// is declared (its name, fields, input flag, projection rule and whether sessions allow it).
enum class ActionType {
#define EVIDENT_ACTION_ENUMERATOR(e, name, input, projection, session) e,
  EVIDENT_PROTOCOL_ACTION_KINDS(EVIDENT_ACTION_ENUMERATOR)
#undef EVIDENT_ACTION_ENUMERATOR
};
// The kind's row of the protocol table.
constexpr const protocol::ActionKindInfo& action_kind_info(ActionType type) {
  return protocol::kActionKinds[static_cast<std::size_t>(type)];
}

// "click", "double_click", ...; parse_action_type returns nullopt for unknown names.
const char* to_string(ActionType type);
std::optional<ActionType> parse_action_type(const std::string& name);

// True for actions that inject input events (everything but wait, screenshot, zoom).
constexpr bool is_input_action(ActionType type) { return action_kind_info(type).input; }

enum class BatchMode { kCuActions, kSession };
enum class CoordinateSpace { kPixel, kNormalized1000 };

// "pixel" | "normalized_1000"; nullopt otherwise.
std::optional<CoordinateSpace> parse_coordinate_space(const std::string& name);

// One parsed, validated action. Coordinates are in display pixels after scaling
// (x, y, end_x, end_y, width, height); `raw` is the action exactly as the caller sent it.
struct Action {
  ActionType type = ActionType::kWait;
  int x = 0, y = 0;          // click..scroll, zoom (top-left, before clamping)
  int end_x = 0, end_y = 0;  // drag end (x, y = start)
  int width = 0, height = 0;  // zoom, clamped to the display
  int button = 1;             // X button: 1 left, 2 middle, 3 right
  int scroll_button = 5;      // 4 up, 5 down, 6 left, 7 right
  int amount = static_cast<int>(protocol::kScrollAmountDefault);  // scroll
  std::int64_t ms = 0;        // hold_key, wait
  std::string text;           // type, paste (secret)
  std::string key;            // key, hold_key (secret)
  Json raw;                   // as sent (pre-scaling)

  // The receipt projection (docs/protocol.md, "Receipts"): type/key/paste -> {"type"}; hold_key -> {"type","ms"};
  // every other action -> all its fields as the caller sent them (pre-scaling geometry and ms).
  Json projection() const;
  bool input() const { return is_input_action(type); }
};

// Validates a whole batch before anything runs.
// cu mode: a bad batch shape -> "actions-request"; a bad action -> "action-invalid".
// session mode: bad shape (not an array, 0 or >16 items) -> "session-actions"; paste, mouse_down,
// mouse_up, zoom -> "session-action-forbidden"; any other invalid action -> "session-action".
// Invalid: unknown type or field, wrong type, missing field, out of range (text > 4096 bytes or
// invalid UTF-8 or a control character other than \n \t; key 1..256 bytes and a known key/chord;
// hold_key.ms and wait.ms 0..5000; scroll.amount 1..100; coordinates outside the display after
// scaling; zoom empty or fully off-screen). Messages name the index, field and rule, never the
// text or key.
Result<std::vector<Action>> parse_actions(const Json& actions_array, BatchMode mode,
                                          CoordinateSpace space, int display_width,
                                          int display_height);

// Limits of protocol/evident.json, under the names this module uses.
inline constexpr std::size_t kMaxActionsPerBatch = protocol::kActionsPerBatchMax;
inline constexpr std::size_t kMaxTextBytes = protocol::kTextMaxBytes;
inline constexpr std::int64_t kMaxHoldMs = protocol::kHoldKeyMsMax;
inline constexpr std::int64_t kMaxWaitMs = protocol::kWaitMsMax;

}  // namespace evident
