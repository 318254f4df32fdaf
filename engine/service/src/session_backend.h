// SessionBackend over the engine's DisplayManager and the actions module's executor: the only
// place where sessions touch real displays, apps, capture and input.
#pragma once

#include "evident/display/display.h"
#include "evident/session/backend.h"

namespace evident {

class BrowserManager;

class DisplaySessionBackend final : public SessionBackend {
 public:
  // `browsers` (may be null: then no session can bind a browser) must outlive every lease.
  explicit DisplaySessionBackend(DisplayManager& displays, BrowserManager* browsers = nullptr)
      : displays_(displays), browsers_(browsers) {}
  // Errors: display-generation-mismatch (an unknown display, or a stale, foreign or malformed
  // generation), display-dead, app-not-live, session-binding, session-busy,
  // input-unavailable.
  Result<std::unique_ptr<SessionLease>> acquire(std::int64_t display_id,
                                                const std::string& generation,
                                                const std::string& app_id) override;

 private:
  DisplayManager& displays_;
  BrowserManager* browsers_;
};

}  // namespace evident
