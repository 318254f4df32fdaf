// Capture attached to owned displays by the service layer (docs/architecture.md: capture sits
// above display; the display module only offers the DisplayReadiness hook and knows nothing of
// capturers). Every display the engine starts (created or pre-started by the warm pool) gets a
// capturer on its persistent connection, its first full frame read as part of readiness, and a
// change watcher (docs/displays.md, "Starting a display").
#pragma once

#include <memory>

#include "evident/capture/capture.h"
#include "evident/display/display.h"

namespace evident {

// The readiness step to put in DisplayManagerOptions::readiness (the Engine does).
std::shared_ptr<DisplayReadiness> capture_readiness();

// The display's capturer and change watcher, made by capture_readiness() at readiness; null
// without it or after destroy. Hold the display's x_mutex() while using them.
Capturer* display_capturer(OwnedDisplay& display);
ChangeWatcher* display_change_watcher(OwnedDisplay& display);

}  // namespace evident
