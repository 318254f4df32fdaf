// The one input device of an owned display, shared by its `cu actions` batches and sessions, with
// its deferred keymap restore (docs/input.md, "Deferred restore"). Internal to evident_service.
#pragma once

#include <cstdint>
#include <memory>

#include "evident/core/status.h"
#include "evident/display/display.h"

namespace evident {

class InputDevice;

// Keys are sent under the display's x_mutex(); the restore runs `kRestoreIdleMs` after the last.
inline constexpr std::int64_t kRestoreIdleMs = 1000;

// The display's input device, created on first use (under x_mutex()). Errors: those of
// InputDevice::create ("input-unavailable"), "display-dead" when the display is gone.
Result<std::shared_ptr<InputDevice>> display_input(const std::shared_ptr<OwnedDisplay>& display);

}  // namespace evident
