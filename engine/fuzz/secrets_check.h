// Invariants about parsed actions and secrets, shared by the request harnesses.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "evident/actions/action.h"
#include "fuzz_check.h"

namespace evident::fuzz {

EVIDENT_FUZZ_UNTRACED inline bool lower_word(std::string_view s) {
  unsigned bad = 0;
  for (unsigned char c : s) bad |= !(static_cast<unsigned>(c - 'a') < 26u);
  return bad == 0;
}

// Typed text and key names never reach a message: no `text` or `key` value of any action object
// in `actions` (6 bytes or more, and not a plain lower-case word a message may contain anyway)
// appears in `message`.
inline void require_no_secrets(const Json& actions, std::string_view message) {
  if (!actions.is_array()) return;
  for (const Json& a : actions) {
    if (!a.is_object()) continue;
    for (const char* field : {"text", "key"}) {
      auto it = a.find(field);
      if (it == a.end() || !it->is_string()) continue;
      const std::string& s = it->get_ref<const std::string&>();
      if (s.size() < 6) continue;
      const bool plain_word = lower_word(s);
      if (!plain_word && contains_bytes(message, s)) {
        fail("a message carries typed text or a key name", message);
      }
    }
  }
}

// Accepted actions: allowed in this mode, inside the display, projections without secrets.
inline void check_parsed_actions(const std::vector<Action>& actions, int width, int height,
                                 bool session) {
  require(!actions.empty() && actions.size() <= kMaxActionsPerBatch, "batch size out of bounds");
  for (const Action& a : actions) {
    const auto& info = action_kind_info(a.type);
    if (session) require(info.session, "a session accepted an action sessions forbid", info.name);
    const Json p = a.projection();
    require(p.is_object() && p.value("type", "") == info.name, "projection without its type", info.name);
    switch (info.projection) {
      case protocol::Projection::kTypeOnly:
        require(p.size() == 1, "type/key/paste projection keeps more than its type", info.name);
        break;
      case protocol::Projection::kTypeMs:
        require(p.size() == 2 && p.contains("ms"), "hold_key projection is not {type, ms}");
        break;
      case protocol::Projection::kAsSent:
        require(!p.contains("text") && !p.contains("key"), "projection keeps text or key", info.name);
        break;
    }
    require_round_trip(p);
    switch (a.type) {
      case ActionType::kClick: case ActionType::kDoubleClick: case ActionType::kTripleClick:
      case ActionType::kMouseDown: case ActionType::kMouseUp: case ActionType::kMoveMouse:
      case ActionType::kScroll:
        require(a.x >= 0 && a.x < width && a.y >= 0 && a.y < height, "pointer action outside the display", info.name);
        break;
      case ActionType::kDrag:
        require(a.x >= 0 && a.x < width && a.y >= 0 && a.y < height && a.end_x >= 0 &&
                    a.end_x < width && a.end_y >= 0 && a.end_y < height,
                "drag outside the display");
        break;
      case ActionType::kType: case ActionType::kPaste:
        require(a.text.size() <= kMaxTextBytes && is_valid_utf8(a.text), "text out of bounds");
        break;
      case ActionType::kHoldKey:
        require(a.ms >= 0 && a.ms <= kMaxHoldMs, "hold_key ms out of range");
        break;
      case ActionType::kWait:
        require(a.ms >= 0 && a.ms <= kMaxWaitMs, "wait ms out of range");
        break;
      case ActionType::kZoom:
        require(a.width > 0 && a.height > 0 && a.width <= width && a.height <= height, "zoom region out of bounds");
        break;
      default:
        break;
    }
  }
}

}  // namespace evident::fuzz
