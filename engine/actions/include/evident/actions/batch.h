// The cu.actions batch runner (contract §4): validate the request, run every action, release
// held input, settle, observe.
#pragma once

#include "evident/actions/executor.h"
#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/protocol/protocol.h"

namespace evident {

// Settle parameters (contract §4): quiet window and caps.
inline constexpr std::int64_t kSettleQuietMs = protocol::kSettleQuietMs;
inline constexpr std::int64_t kSettleDefaultCapMs = protocol::kSettleDefaultCapMs;
inline constexpr std::int64_t kSettleMaxCapMs = protocol::kSettleMaxCapMs;

// Runs a §4 request ({"actions","observe","settle","coordinate_space"}) and returns
// {"results":[...],"observation":{...},"settle":{...}} (without "ok").
// Errors before anything ran: "actions-request" (bad top-level shape/field/value),
// "action-invalid" (a bad action). After actions ran, failures are results, except a failed
// release ("input-release-failed", "keymap-restore-failed"), which is returned as an error.
// Settle "fixed" means the batch had no input action, so there was nothing to settle.
Result<Json> run_action_batch(ActionExecutor& executor, const Json& request);

}  // namespace evident
