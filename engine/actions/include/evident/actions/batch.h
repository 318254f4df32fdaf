// The cu.actions batch runner (docs/protocol.md §4): validate the request, run every action, release
// held input, settle, observe.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "evident/actions/action.h"
#include "evident/actions/executor.h"
#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/protocol/protocol.h"

namespace evident {

// Settle parameters (docs/protocol.md §4): quiet window and caps.
inline constexpr std::int64_t kSettleQuietMs = protocol::kSettleQuietMs;
inline constexpr std::int64_t kSettleDefaultCapMs = protocol::kSettleDefaultCapMs;
inline constexpr std::int64_t kSettleMaxCapMs = protocol::kSettleMaxCapMs;

// What a batch returns after its actions ("observe").
enum class ObserveKind { kPixels, kNone, kAx };

// A §4 batch request, validated whole before anything runs.
struct ActionBatchRequest {
  std::vector<Action> actions;     // parsed for the display's size (BatchMode::kCuActions)
  ObserveKind observe = ObserveKind::kPixels;  // "observe": "pixels" (default) | "none" | "ax"
  std::int64_t settle_cap_ms = 0;  // 0 = settle off
};

// The accessibility observation of a batch with "observe": "ax", supplied by the layer that
// owns the display's accessibility stack (the service; this module knows no AT-SPI).
struct AxObserver {
  // Before any action runs: an error refuses the batch (nothing ran), e.g. accessibility-off.
  std::function<Status()> check;
  // After the actions and the settle: the observation's "ax" object, or an error that the
  // observation reports (kind "none", the code in its reason); the actions' results stand.
  std::function<Result<Json>()> observe;
};

// Parses and validates a §4 request ({"actions","observe","settle","coordinate_space"}) for a
// display of display_width x display_height. Pure (no X): run_action_batch's first step, and
// what the actions fuzz harness drives. Errors: "actions-request" (bad top-level shape, field or
// value), "action-invalid" (a bad action); messages never echo request content.
Result<ActionBatchRequest> parse_action_batch_request(const Json& request, int display_width,
                                                      int display_height);

// True when `request` can only take a short, bounded time: an object whose "settle" is absent
// or false and whose "actions" are all of kinds the protocol file marks `bounded` (no waits, no
// clipboard, no per-character typing; protocol::kBoundedActionKinds). Looks at the shape only:
// a request it accepts may still be refused by the parser, quickly. Pure; never fails.
bool batch_is_bounded(const Json& request);

// Runs a §4 request ({"actions","observe","settle","coordinate_space"}) and returns
// {"results":[...],"observation":{...},"settle":{...}} (without "ok").
// Errors before anything ran: "actions-request" (bad top-level shape/field/value),
// "action-invalid" (a bad action), and for "observe": "ax" "accessibility-off" (no `ax`
// observer) or what ax->check() returns. After actions ran, failures are results, except a
// failed release ("input-release-failed", "keymap-restore-failed"), which is returned as an
// error. Settle "fixed" means the batch had no input action, so there was nothing to settle.
Result<Json> run_action_batch(ActionExecutor& executor, const Json& request,
                              const AxObserver* ax = nullptr);

}  // namespace evident
