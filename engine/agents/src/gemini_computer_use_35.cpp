// Gemini computer use, the 3.5 function set (gemini-3.5-flash and later, per Google's reference
// implementation): docs/agents.md.
#include "common.h"
#include "evident/agents/convert.h"
#include "gemini_common.h"

namespace evident::agents::detail {
namespace {

Status map35(TurnBuilder& b, const std::string& fn, const Json& args, const std::string& where, bool* known) {
  auto xy = [&]() { return gemini_xy(b, args, "x", "y", where); };
  if (fn == "open_web_browser" || fn == "take_screenshot") {
    EVIDENT_TRY(only_keys(args, {}, where + " args"));
    return b.add(Json{{"type", "screenshot"}});
  }
  if (fn == "click" || fn == "double_click" || fn == "triple_click" || fn == "middle_click" ||
      fn == "right_click" || fn == "move") {
    EVIDENT_TRY(only_keys(args, {"x", "y"}, where + " args"));
    auto p = xy();
    if (!p) return p.error();
    Json j{{"x", p->x}, {"y", p->y}};
    if (fn == "click") j["type"] = "click";
    else if (fn == "middle_click") j.update(Json{{"type", "click"}, {"button", "middle"}});
    else if (fn == "right_click") j.update(Json{{"type", "click"}, {"button", "right"}});
    else if (fn == "move") j["type"] = "move_mouse";
    else j["type"] = fn;
    return b.add(std::move(j));
  }
  if (fn == "type") {
    EVIDENT_TRY(only_keys(args, {"text", "press_enter"}, where + " args"));
    auto text = get_string(args, "text");
    if (!text) return response_error(where + ": field \"text\" must be a string");
    auto enter = gemini_bool(args, "press_enter", false, where);
    if (!enter) return enter.error();
    EVIDENT_TRY(b.add(Json{{"type", "type"}, {"text", std::move(*text)}}));
    if (*enter) EVIDENT_TRY(b.add(Json{{"type", "key"}, {"key", "Return"}}));
    return ok_status();
  }
  if (fn == "drag_and_drop") {
    EVIDENT_TRY(only_keys(args, {"x", "y", "destination_x", "destination_y"}, where + " args"));
    auto s = xy();
    if (!s) return s.error();
    auto e = gemini_xy(b, args, "destination_x", "destination_y", where);
    if (!e) return e.error();
    return b.add(Json{{"type", "drag"}, {"start_x", s->x}, {"start_y", s->y}, {"end_x", e->x}, {"end_y", e->y}});
  }
  if (fn == "wait") {
    EVIDENT_TRY(only_keys(args, {"seconds"}, where + " args"));
    auto s = get_int(args, "seconds", where);
    if (!s) return s.error();
    auto ms = seconds_to_ms(s->value_or(1));
    if (!ms) return response_error(where + ": field \"seconds\" is out of range");
    return b.add(Json{{"type", "wait"}, {"ms", *ms}});
  }
  if (fn == "press_key") {
    EVIDENT_TRY(only_keys(args, {"key"}, where + " args"));
    auto key = get_string(args, "key");
    if (!key) return response_error(where + ": field \"key\" must be a string");
    auto k = provider_key_to_engine(*key);
    if (!k) return forbidden_action(where + ": the key does not convert to a key name");
    return b.add(Json{{"type", "key"}, {"key", std::move(*k)}});
  }
  if (fn == "hotkey") {
    EVIDENT_TRY(only_keys(args, {"keys"}, where + " args"));
    const Json* keys = get_array(args, "keys");
    if (!keys) return response_error(where + ": field \"keys\" must be an array of strings");
    std::vector<std::string> names;
    for (const Json& k : *keys) {
      if (!k.is_string()) return response_error(where + ": field \"keys\" must be an array of strings");
      names.push_back(k.get<std::string>());
    }
    auto chord = keys_to_chord(names);
    if (!chord) return forbidden_action(where + ": the keys do not convert to key names");
    return b.add(Json{{"type", "key"}, {"key", std::move(*chord)}});
  }
  if (fn == "scroll") {
    EVIDENT_TRY(only_keys(args, {"x", "y", "direction", "magnitude"}, where + " args"));
    auto p = xy();
    if (!p) return p.error();
    return gemini_scroll(b, *p, args, where);
  }
  if (fn == "mouse_down" || fn == "mouse_up" || fn == "key_down" || fn == "key_up") {
    return forbidden_action(where + ": separate press and release has no equivalent action in a task");
  }
  if (fn == "go_back" || fn == "go_forward" || fn == "navigate") {
    return forbidden_action(where + ": browser navigation has no equivalent action on a desktop display");
  }
  *known = false;
  return ok_status();
}

}  // namespace

const Adapter& gemini_computer_use_35_adapter() {
  static const GeminiAdapter adapter("gemini-computer-use-3.5", map35);
  return adapter;
}

}  // namespace evident::agents::detail
