// The browser.* op family (docs/browsers.md), registered into the engine's op table.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/service/engine.h"

namespace evident {

class BrowserManager;

using OpTable = std::map<std::string, std::function<Result<Json>(const Actor&, const Json&)>, std::less<>>;

// Adds browser.create|close|list|status|evaluate|navigate|element_box to `ops`.
void register_browser_ops(OpTable& ops, BrowserManager& browsers);

}  // namespace evident
