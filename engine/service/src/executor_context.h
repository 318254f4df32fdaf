// The service's wiring of one owned display into the actions module: the executor's context
// (connection, capture, settle watcher, input device, extra connections) is built here and only
// here, for `cu actions` batches and session leases alike. Internal to evident_service.
#pragma once

#include <functional>
#include <memory>

#include "evident/actions/executor.h"
#include "evident/core/status.h"
#include "evident/display/display.h"

namespace evident {

// Opens a new cookie connection to the display while it lives (nullptr once it is gone or the
// connection fails). Holds the display weakly: it never keeps a destroyed display alive.
std::function<::Display*()> aux_connection_opener(const std::shared_ptr<OwnedDisplay>& display);

// `type`'s read-back (docs/accessibility.md, "Verified type") for a display created with an
// accessibility stack; null without one. Each call checks that the stack still runs (else the
// type is `injected`, accessibility-bus-gone in its reason) and reads through AxTypeReadback
// within ax_readback_timeout_ms per phase. Holds the display weakly.
TypeReadback type_readback_for(const std::shared_ptr<OwnedDisplay>& display);

// The executor's context for a live display: its persistent connection and mutex, capturer,
// change watcher, size, its one input device (display_input), aux_connection_opener and
// type_readback_for.
// observation_dir is left empty (the caller sets it when frames are written). Errors:
// "display-dead", those of display_input ("input-unavailable").
Result<ExecutorContext> executor_context_for(const std::shared_ptr<OwnedDisplay>& display);

}  // namespace evident
