// The few things the session state machine needs from the actions module, in one place.
#pragma once

#include <string>
#include <vector>

#include "evident/actions/action.h"
#include "evident/core/json.h"
#include "evident/core/status.h"

namespace evident {

// Validates a whole session batch with the actions module's session-mode parse (pixel
// coordinates). Errors: "session-action", "session-action-forbidden".
Result<std::vector<Action>> validate_session_batch(const Json& actions, int width, int height);
// The action's "type" (never secret).
std::string action_type(const Action& action);
// The receipt projection P (secrets removed).
Json action_projection(const Action& action);

}  // namespace evident
