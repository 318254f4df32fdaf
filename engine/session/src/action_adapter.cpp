#include "action_adapter.h"

namespace evident {

Result<std::vector<Action>> validate_session_batch(const Json& actions, int width, int height) {
  // Sessions always use display pixels: the request has no coordinate_space field.
  return parse_actions(actions, BatchMode::kSession, CoordinateSpace::kPixel, width, height);
}

std::string action_type(const Action& action) { return to_string(action.type); }

Json action_projection(const Action& action) { return action.projection(); }

}  // namespace evident
