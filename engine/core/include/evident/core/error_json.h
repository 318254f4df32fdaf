// The one JSON shape of a refusal, for every surface that answers with one (the engine's op table,
// the session layer, the daemon, the CLI and evident-verify): docs/protocol.md §2.
//   {"ok": false, "error": {"code", "message", "retryable"}}
#pragma once

#include "evident/core/json.h"
#include "evident/core/status.h"

namespace evident {

inline Json error_response(const Error& error) {
  return Json{{"ok", false},
              {"error", {{"code", error.code}, {"message", error.message},
                         {"retryable", error.retryable}}}};
}

}  // namespace evident
