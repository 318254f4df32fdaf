#include "openai_common.h"

#include "common.h"
#include "evident/agents/convert.h"

namespace evident::agents::detail {
namespace {

Status no_held_keys(const Json& action, const std::string& where) {
  const Json* k = get(action, "keys");
  if (!k || k->is_null()) return ok_status();
  if (!k->is_array()) return response_error(where + ": field \"keys\" must be an array");
  if (!k->empty()) return forbidden_action(where + ": holding keys during a pointer action has no equivalent action");
  return ok_status();
}

Result<Point> xy(TurnBuilder& b, const Json& action, const std::string& where) {
  auto x = get_int(action, "x", where);
  if (!x) return x.error();
  auto y = get_int(action, "y", where);
  if (!y) return y.error();
  if (!*x || !*y) return response_error(where + ": fields \"x\" and \"y\" are required");
  return b.image_point(**x, **y, where);
}

Status map_action(TurnBuilder& b, const Json& action, const std::string& where) {
  auto type = action.is_object() ? get_string(action, "type") : std::nullopt;
  if (!type) return response_error(where + " must be an object with a string \"type\"");
  const std::string& t = *type;
  b.native(t);
  if (t == "click") {
    EVIDENT_TRY(only_keys(action, {"type", "button", "x", "y", "keys"}, where));
    EVIDENT_TRY(no_held_keys(action, where));
    auto button = get_string(action, "button");
    std::string engine_button = "left";
    if (button) {
      if (*button == "left" || *button == "right") engine_button = *button;
      else if (*button == "wheel") engine_button = "middle";
      else if (*button == "back" || *button == "forward") {
        return forbidden_action(where + ": the back/forward buttons have no equivalent action");
      } else {
        return response_error(where + ": field \"button\" must be left, right, wheel, back or forward");
      }
    } else if (get(action, "button")) {
      return response_error(where + ": field \"button\" must be a string");
    }
    auto p = xy(b, action, where);
    if (!p) return p.error();
    return b.add(Json{{"type", "click"}, {"x", p->x}, {"y", p->y}, {"button", engine_button}});
  }
  if (t == "double_click") {
    EVIDENT_TRY(only_keys(action, {"type", "x", "y", "keys"}, where));
    EVIDENT_TRY(no_held_keys(action, where));
    auto p = xy(b, action, where);
    if (!p) return p.error();
    return b.add(Json{{"type", "double_click"}, {"x", p->x}, {"y", p->y}});
  }
  if (t == "move") {
    EVIDENT_TRY(only_keys(action, {"type", "x", "y", "keys"}, where));
    EVIDENT_TRY(no_held_keys(action, where));
    auto p = xy(b, action, where);
    if (!p) return p.error();
    return b.add(Json{{"type", "move_mouse"}, {"x", p->x}, {"y", p->y}});
  }
  if (t == "drag") {
    EVIDENT_TRY(only_keys(action, {"type", "path", "keys"}, where));
    EVIDENT_TRY(no_held_keys(action, where));
    const Json* path = get_array(action, "path");
    if (!path || path->size() < 2) return response_error(where + ": field \"path\" must be an array of at least 2 points");
    if (path->size() > 2) {
      return forbidden_action(where + ": a drag path with more than 2 points has no equivalent action");
    }
    Point pts[2];
    for (int i = 0; i < 2; ++i) {
      const std::string pw = where + " path[" + std::to_string(i) + "]";
      EVIDENT_TRY(only_keys((*path)[i], {"x", "y"}, pw));
      auto p = xy(b, (*path)[i], pw);
      if (!p) return p.error();
      pts[i] = *p;
    }
    return b.add(Json{{"type", "drag"}, {"start_x", pts[0].x}, {"start_y", pts[0].y},
                      {"end_x", pts[1].x}, {"end_y", pts[1].y}});
  }
  if (t == "keypress") {
    EVIDENT_TRY(only_keys(action, {"type", "keys"}, where));
    const Json* keys = get_array(action, "keys");
    if (!keys || keys->empty()) return response_error(where + ": field \"keys\" must be a non-empty array");
    std::vector<std::string> names;
    for (const Json& k : *keys) {
      if (!k.is_string()) return response_error(where + ": field \"keys\" must hold strings");
      names.push_back(k.get<std::string>());
    }
    auto chord = keys_to_chord(names);
    if (!chord) return forbidden_action(where + ": the keys do not convert to key names");
    return b.add(Json{{"type", "key"}, {"key", std::move(*chord)}});
  }
  if (t == "type") {
    EVIDENT_TRY(only_keys(action, {"type", "text"}, where));
    auto text = get_string(action, "text");
    if (!text) return response_error(where + ": field \"text\" must be a string");
    return b.add(Json{{"type", "type"}, {"text", std::move(*text)}});
  }
  if (t == "scroll") {
    EVIDENT_TRY(only_keys(action, {"type", "x", "y", "scroll_x", "scroll_y", "keys"}, where));
    EVIDENT_TRY(no_held_keys(action, where));
    auto p = xy(b, action, where);
    if (!p) return p.error();
    auto sx = get_int(action, "scroll_x", where);
    if (!sx) return sx.error();
    auto sy = get_int(action, "scroll_y", where);
    if (!sy) return sy.error();
    const std::int64_t dx = sx->value_or(0), dy = sy->value_or(0);
    if (dx == 0 && dy == 0) return b.add(Json{{"type", "move_mouse"}, {"x", p->x}, {"y", p->y}});
    if (dy != 0) {
      EVIDENT_TRY(b.add(Json{{"type", "scroll"}, {"x", p->x}, {"y", p->y}, {"direction", dy > 0 ? "down" : "up"},
                             {"amount", pixels_to_wheel_clicks(dy)}}));
    }
    if (dx != 0) {
      EVIDENT_TRY(b.add(Json{{"type", "scroll"}, {"x", p->x}, {"y", p->y}, {"direction", dx > 0 ? "right" : "left"},
                             {"amount", pixels_to_wheel_clicks(dx)}}));
    }
    return ok_status();
  }
  if (t == "wait") {
    EVIDENT_TRY(only_keys(action, {"type"}, where));
    return b.add(Json{{"type", "wait"}, {"ms", kOpenAiWaitMs}});
  }
  if (t == "screenshot") {
    EVIDENT_TRY(only_keys(action, {"type"}, where));
    return b.add(Json{{"type", "screenshot"}});
  }
  return response_error(where + ": unknown computer action type");
}

}  // namespace

Result<ParsedTurn> OpenAiAdapter::parse(const Json& response, const AdapterInput& in) const {
  const std::string name(name_);
  if (!response.is_object()) return response_error(name + " response: must be a Responses API response object");
  auto object = get_string(response, "object");
  if (object && *object != "response") return response_error(name + " response: field \"object\" must be \"response\"");
  const Json* output = get_array(response, "output");
  if (!output) return response_error(name + " response: field \"output\" must be an array");
  if (output->size() > kMaxResponseItems) {
    return response_error(name + " response: more than " + std::to_string(kMaxResponseItems) + " output items");
  }
  TurnBuilder b(name, in);
  std::string text;
  bool calls = false;
  for (std::size_t i = 0; i < output->size(); ++i) {
    const Json& item = (*output)[i];
    const std::string where = name + " response: output[" + std::to_string(i) + "]";
    auto type = item.is_object() ? get_string(item, "type") : std::nullopt;
    if (!type) return response_error(where + " must be an object with a string \"type\"");
    if (*type == "reasoning") continue;
    if (*type == "message") {
      const Json* content = get_array(item, "content");
      if (!content) return response_error(where + ": field \"content\" must be an array");
      if (content->size() > kMaxResponseItems) return response_error(where + ": too many content parts");
      for (const Json& part : *content) {
        auto pt = part.is_object() ? get_string(part, "type") : std::nullopt;
        if (!pt) return response_error(where + ": a content part must have a string \"type\"");
        if (*pt != "output_text") continue;  // refusal parts carry no result
        auto t = get_string(part, "text");
        if (!t) return response_error(where + ": an output_text part must have a string \"text\"");
        if (text.size() + t->size() > kMaxResultTextBytes + 1) text.resize(kMaxResultTextBytes + 1);
        else text += *t;
      }
      continue;
    }
    if (*type == "computer_call") {
      const Json* checks = get(item, "pending_safety_checks");
      if (checks && !checks->is_null()) {
        if (!checks->is_array()) return response_error(where + ": field \"pending_safety_checks\" must be an array");
        if (!checks->empty()) {
          return make_error(kSafety, where + " carries " + std::to_string(checks->size()) +
                                         " pending safety check(s); the engine never acknowledges them");
        }
      }
      const Json* id = get(item, "call_id");
      if (!id || !id->is_string()) return make_error(kCallId, where + ": field \"call_id\" must be a string");
      EVIDENT_TRY(b.begin_call(id->get<std::string>(), "computer"));
      const Json* single = get(item, "action");
      const Json* batch = get(item, "actions");
      if (single && single->is_null()) single = nullptr;
      if (batch && batch->is_null()) batch = nullptr;
      if (batched_) {
        if (single) return response_error(where + ": the GA computer tool sends \"actions\", not \"action\"");
        if (!batch || !batch->is_array() || batch->empty()) {
          return response_error(where + ": field \"actions\" must be a non-empty array");
        }
        if (batch->size() > kMaxActionsPerTurn) {
          return make_error(kActionLimit, where + ": more than " + std::to_string(kMaxActionsPerTurn) + " actions");
        }
        for (std::size_t k = 0; k < batch->size(); ++k) {
          EVIDENT_TRY(map_action(b, (*batch)[k], where + " actions[" + std::to_string(k) + "]"));
        }
      } else {
        if (batch) return response_error(where + ": the preview tool sends one \"action\", not \"actions\"");
        if (!single) return response_error(where + ": field \"action\" must be an object");
        EVIDENT_TRY(map_action(b, *single, where + " action"));
      }
      calls = true;
      continue;
    }
    if (type->ends_with("_call") || *type == "mcp_list_tools" || *type == "mcp_approval_request") {
      return make_error(kForbiddenTool, where + " is a call to a tool other than the computer tool");
    }
    return response_error(where + ": unknown output item type");
  }
  if (!calls) return final_answer(text);
  return b.finish();
}

Json OpenAiAdapter::tool_results(const ParsedTurn& turn, const std::vector<CallOutcome>& outcomes) const {
  Json items = Json::array();
  for (std::size_t i = 0; i < turn.calls.size() && i < outcomes.size(); ++i) {
    Json output{{"type", "computer_screenshot"}};
    if (outcomes[i].png) output["image_url"] = "data:image/png;base64," + base64_encode(*outcomes[i].png);
    items.push_back(Json{{"type", "computer_call_output"}, {"call_id", turn.calls[i].id}, {"output", std::move(output)}});
  }
  return items;
}

Json OpenAiAdapter::retry_prompt(const Error& why) const {
  return Json::array({Json{{"type", "message"}, {"role", "user"},
                           {"content", Json::array({Json{{"type", "input_text"},
                                                         {"text", "The final answer was not accepted (" + why.message +
                                                                      "). Reply with exactly one JSON object as the "
                                                                      "final answer, or continue with computer actions."}}})}}});
}

}  // namespace evident::agents::detail
