// Gemini computer use, the 2.5 function set (gemini-2.5-computer-use-preview-10-2025 and the
// models Google's reference implementation lists with it): docs/agents.md.
#include "common.h"
#include "evident/agents/convert.h"
#include "gemini_common.h"

namespace evident::agents::detail {
namespace {

Status map25(TurnBuilder& b, const std::string& fn, const Json& args, const std::string& where, bool* known) {
  auto xy = [&]() { return gemini_xy(b, args, "x", "y", where); };
  if (fn == "open_web_browser") {
    EVIDENT_TRY(only_keys(args, {}, where + " args"));
    return b.add(Json{{"type", "screenshot"}});
  }
  if (fn == "click_at" || fn == "hover_at") {
    EVIDENT_TRY(only_keys(args, {"x", "y"}, where + " args"));
    auto p = xy();
    if (!p) return p.error();
    if (fn == "click_at") return b.add(Json{{"type", "click"}, {"x", p->x}, {"y", p->y}});
    return b.add(Json{{"type", "move_mouse"}, {"x", p->x}, {"y", p->y}});
  }
  if (fn == "type_text_at") {
    EVIDENT_TRY(only_keys(args, {"x", "y", "text", "press_enter", "clear_before_typing"}, where + " args"));
    auto p = xy();
    if (!p) return p.error();
    auto text = get_string(args, "text");
    if (!text) return response_error(where + ": field \"text\" must be a string");
    auto enter = gemini_bool(args, "press_enter", false, where);
    if (!enter) return enter.error();
    auto clear = gemini_bool(args, "clear_before_typing", true, where);
    if (!clear) return clear.error();
    EVIDENT_TRY(b.add(Json{{"type", "click"}, {"x", p->x}, {"y", p->y}}));
    if (*clear) {
      EVIDENT_TRY(b.add(Json{{"type", "key"}, {"key", "ctrl+a"}}));
      EVIDENT_TRY(b.add(Json{{"type", "key"}, {"key", "Delete"}}));
    }
    EVIDENT_TRY(b.add(Json{{"type", "type"}, {"text", std::move(*text)}}));
    if (*enter) EVIDENT_TRY(b.add(Json{{"type", "key"}, {"key", "Return"}}));
    return ok_status();
  }
  if (fn == "scroll_document") {
    EVIDENT_TRY(only_keys(args, {"direction"}, where + " args"));
    auto dir = get_string(args, "direction");
    if (!dir) return response_error(where + ": field \"direction\" must be a string");
    if (*dir == "up") return b.add(Json{{"type", "key"}, {"key", "Prior"}});
    if (*dir == "down") return b.add(Json{{"type", "key"}, {"key", "Next"}});
    if (*dir == "left" || *dir == "right") {
      const Geometry& g = b.geometry();
      return b.add(Json{{"type", "scroll"}, {"x", g.display_width / 2}, {"y", g.display_height / 2},
                        {"direction", *dir}, {"amount", pixels_to_wheel_clicks(g.display_width / 2)}});
    }
    return response_error(where + ": field \"direction\" must be up, down, left or right");
  }
  if (fn == "scroll_at") {
    EVIDENT_TRY(only_keys(args, {"x", "y", "direction", "magnitude"}, where + " args"));
    auto p = xy();
    if (!p) return p.error();
    return gemini_scroll(b, *p, args, where);
  }
  if (fn == "wait_5_seconds") {
    EVIDENT_TRY(only_keys(args, {}, where + " args"));
    return b.add(Json{{"type", "wait"}, {"ms", 5000}});
  }
  if (fn == "key_combination") {
    EVIDENT_TRY(only_keys(args, {"keys"}, where + " args"));
    auto keys = get_string(args, "keys");
    if (!keys) return response_error(where + ": field \"keys\" must be a string");
    auto chord = combo_to_chord(*keys);
    if (!chord) return forbidden_action(where + ": the keys do not convert to key names");
    return b.add(Json{{"type", "key"}, {"key", std::move(*chord)}});
  }
  if (fn == "drag_and_drop") {
    EVIDENT_TRY(only_keys(args, {"x", "y", "destination_x", "destination_y"}, where + " args"));
    auto s = xy();
    if (!s) return s.error();
    auto e = gemini_xy(b, args, "destination_x", "destination_y", where);
    if (!e) return e.error();
    return b.add(Json{{"type", "drag"}, {"start_x", s->x}, {"start_y", s->y}, {"end_x", e->x}, {"end_y", e->y}});
  }
  if (fn == "go_back" || fn == "go_forward" || fn == "search" || fn == "navigate") {
    return forbidden_action(where + ": browser navigation has no equivalent action on a desktop display");
  }
  *known = false;
  return ok_status();
}

}  // namespace

const Adapter& gemini_computer_use_adapter() {
  static const GeminiAdapter adapter("gemini-computer-use", map25);
  return adapter;
}

}  // namespace evident::agents::detail
