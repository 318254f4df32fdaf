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

// The display's input device, created on first use. The caller holds display->x_mutex() and
// has just found the display alive (executor_context_for checks liveness once per batch: it
// costs a waitid on the server process). Errors: those of InputDevice::create
// ("input-unavailable"), "display-dead" when the display was torn down.
Result<std::shared_ptr<InputDevice>> display_input_locked(const std::shared_ptr<OwnedDisplay>& display);

}  // namespace evident
