#include "anthropic_common.h"

#include <algorithm>

#include "common.h"
#include "evident/agents/convert.h"

namespace evident::agents::detail {
namespace {

constexpr std::int64_t kMaxLongEdge = 1568;
constexpr std::int64_t kMaxPixels = 1'200'000;

// computer_toolset_20260801 (docs/agents.md): the family its member calls and results name, and its
// members, exactly the keys of the SDK's ComputerToolsetConfigs.
constexpr std::string_view kToolsetFamily = "computer";
constexpr std::string_view kToolsetMembers[] = {
    "cursor_position", "double_click", "hold_key",     "key",          "left_click",  "left_click_drag",
    "left_mouse_down", "left_mouse_up", "middle_click", "mouse_move",   "right_click", "screenshot",
    "scroll",          "triple_click",  "type",         "wait",         "zoom"};

bool is_toolset_member(std::string_view name) {
  return std::find(std::begin(kToolsetMembers), std::end(kToolsetMembers), name) != std::end(kToolsetMembers);
}

Result<std::pair<std::int64_t, std::int64_t>> pair_field(const Json& input, const char* key,
                                                         const std::string& where) {
  const Json* v = get(input, key);
  if (!v || !v->is_array() || v->size() != 2 || !(*v)[0].is_number_integer() ||
      !(*v)[1].is_number_integer()) {
    return response_error(where + ": field \"" + std::string(key) + "\" must be [x, y] integers");
  }
  return std::pair{(*v)[0].get<std::int64_t>(), (*v)[1].get<std::int64_t>()};
}

// A modifier held during a click or scroll (`text` or `key` on those actions) has no §4 equivalent.
Status no_held_keys(const Json& input, const std::string& where) {
  for (const char* k : {"text", "key"}) {
    const Json* v = get(input, k);
    if (v && !v->is_null() && !(v->is_string() && v->get<std::string>().empty())) {
      return forbidden_action(where + ": holding keys during a click or scroll has no equivalent action");
    }
  }
  return ok_status();
}

Status map_action(TurnBuilder& b, const Json& input, const AnthropicVersion& v, const std::string& where) {
  EVIDENT_TRY(only_keys(input, {"action", "coordinate", "start_coordinate", "text", "scroll_direction",
                                "scroll_amount", "duration", "key", "region"},
                        where + " input"));
  auto action = get_string(input, "action");
  if (!action) return response_error(where + ": field \"action\" must be a string");
  const std::string& a = *action;
  b.native(a);
  auto point = [&](const char* key) -> Result<Point> {
    const Json* c = get(input, key);
    if (!c || c->is_null()) return b.current_pointer(where);
    auto xy = pair_field(input, key, where);
    if (!xy) return xy.error();
    return b.image_point(xy->first, xy->second, where);
  };
  auto text = [&]() -> Result<std::string> {
    auto t = get_string(input, "text");
    if (!t) return response_error(where + ": field \"text\" must be a string");
    return *t;
  };
  auto duration_ms = [&]() -> Result<std::int64_t> {
    auto d = get_int(input, "duration", where);
    if (!d) return d.error();
    if (!*d) return response_error(where + ": field \"duration\" is required");
    auto ms = seconds_to_ms(**d);
    if (!ms) return response_error(where + ": field \"duration\" is out of range");
    return *ms;
  };

  if (a == "key") {
    auto t = text();
    if (!t) return t.error();
    auto chords = xdotool_keys_to_chords(*t);
    if (!chords) return forbidden_action(where + ": the key text does not convert to key names");
    for (std::string& c : *chords) EVIDENT_TRY(b.add(Json{{"type", "key"}, {"key", std::move(c)}}));
    return ok_status();
  }
  if (a == "type") {
    auto t = text();
    if (!t) return t.error();
    return b.add(Json{{"type", "type"}, {"text", std::move(*t)}});
  }
  if (a == "mouse_move") {
    auto p = point("coordinate");
    if (!p) return p.error();
    return b.add(Json{{"type", "move_mouse"}, {"x", p->x}, {"y", p->y}});
  }
  if (a == "left_click" || a == "right_click" || a == "middle_click" || a == "double_click" ||
      a == "triple_click") {
    EVIDENT_TRY(no_held_keys(input, where));
    auto p = point("coordinate");
    if (!p) return p.error();
    Json j{{"x", p->x}, {"y", p->y}};
    if (a == "double_click" || a == "triple_click") {
      j["type"] = a;
    } else {
      j["type"] = "click";
      j["button"] = a == "left_click" ? "left" : a == "right_click" ? "right" : "middle";
    }
    return b.add(std::move(j));
  }
  if (a == "left_click_drag") {
    auto s = point("start_coordinate");
    if (!s) return s.error();
    const Json* c = get(input, "coordinate");
    if (!c || c->is_null()) return response_error(where + ": field \"coordinate\" is required");
    auto e = point("coordinate");
    if (!e) return e.error();
    return b.add(Json{{"type", "drag"}, {"start_x", s->x}, {"start_y", s->y}, {"end_x", e->x}, {"end_y", e->y}});
  }
  if (a == "scroll") {
    const Json* t = get(input, "text");
    if (t && !t->is_null() && !(t->is_string() && t->get<std::string>().empty())) {
      return forbidden_action(where + ": holding keys during a click or scroll has no equivalent action");
    }
    auto p = point("coordinate");
    if (!p) return p.error();
    auto dir = get_string(input, "scroll_direction");
    if (!dir || (*dir != "up" && *dir != "down" && *dir != "left" && *dir != "right")) {
      return response_error(where + ": field \"scroll_direction\" must be up, down, left or right");
    }
    auto amount = get_int(input, "scroll_amount", where);
    if (!amount) return amount.error();
    if (!*amount) return response_error(where + ": field \"scroll_amount\" is required");
    return b.add(Json{{"type", "scroll"}, {"x", p->x}, {"y", p->y}, {"direction", *dir}, {"amount", **amount}});
  }
  if (a == "hold_key") {
    auto t = text();
    if (!t) return t.error();
    auto chords = xdotool_keys_to_chords(*t);
    if (!chords || chords->size() != 1) {
      return forbidden_action(where + ": the key text does not convert to one key or chord");
    }
    auto ms = duration_ms();
    if (!ms) return ms.error();
    return b.add(Json{{"type", "hold_key"}, {"key", std::move((*chords)[0])}, {"ms", *ms}});
  }
  if (a == "wait") {
    auto ms = duration_ms();
    if (!ms) return ms.error();
    return b.add(Json{{"type", "wait"}, {"ms", *ms}});
  }
  if (a == "screenshot") return b.add(Json{{"type", "screenshot"}});
  if (a == "zoom" && v.zoom) {
    const Json* r = get(input, "region");
    if (!r || !r->is_array() || r->size() != 4) {
      return response_error(where + ": field \"region\" must be [x0, y0, x1, y1] integers");
    }
    std::int64_t e[4];
    for (int i = 0; i < 4; ++i) {
      if (!(*r)[i].is_number_integer()) {
        return response_error(where + ": field \"region\" must be [x0, y0, x1, y1] integers");
      }
      e[i] = (*r)[i].get<std::int64_t>();
    }
    const Geometry& g = b.geometry();
    auto x0 = image_edge_to_display(e[0], g.image_width, g.display_width);
    auto y0 = image_edge_to_display(e[1], g.image_height, g.display_height);
    auto x1 = image_edge_to_display(e[2], g.image_width, g.display_width);
    auto y1 = image_edge_to_display(e[3], g.image_height, g.display_height);
    if (!x0 || !y0 || !x1 || !y1 || *x1 <= *x0 || *y1 <= *y0) {
      return forbidden_action(where + ": the zoom region is empty or outside the image");
    }
    return b.add(Json{{"type", "zoom"}, {"x", *x0}, {"y", *y0}, {"width", *x1 - *x0}, {"height", *y1 - *y0}});
  }
  if (a == "cursor_position" || a == "left_mouse_down" || a == "left_mouse_up") {
    return forbidden_action(where + ": this action has no equivalent in a task");
  }
  return response_error(where + ": unknown action for this tool version");
}

}  // namespace

std::pair<int, int> anthropic_image_size(int width, int height) {
  if (width <= 0 || height <= 0) return {width, height};
  const std::int64_t w = width, h = height, l = std::max(w, h);
  auto size = [&](std::int64_t edge) {  // the long edge scaled to `edge`, both sizes rounded down
    return std::pair<std::int64_t, std::int64_t>{std::max<std::int64_t>(1, w * edge / l),
                                                 std::max<std::int64_t>(1, h * edge / l)};
  };
  auto fits = [&](std::int64_t edge) {
    auto [ow, oh] = size(edge);
    return ow * oh <= kMaxPixels;
  };
  // The largest long edge <= min(l, 1568) whose size fits the pixel limit (monotone: binary search).
  std::int64_t lo = 1, hi = std::min(l, kMaxLongEdge);
  if (fits(hi)) lo = hi;
  while (lo < hi) {
    const std::int64_t mid = (lo + hi + 1) / 2;
    if (fits(mid)) lo = mid; else hi = mid - 1;
  }
  auto [ow, oh] = size(lo);
  return {static_cast<int>(ow), static_cast<int>(oh)};
}

std::pair<int, int> AnthropicAdapter::model_image_size(int width, int height) const {
  return anthropic_image_size(width, height);
}

Result<ParsedTurn> AnthropicAdapter::parse(const Json& response, const AdapterInput& in) const {
  const std::string name(v_.adapter);
  if (!response.is_object()) return response_error(name + " response: must be a Messages API message object");
  auto type = get_string(response, "type");
  if (!type || *type != "message") return response_error(name + " response: field \"type\" must be \"message\"");
  auto role = get_string(response, "role");
  if (role && *role != "assistant") return response_error(name + " response: field \"role\" must be \"assistant\"");
  const Json* content = get_array(response, "content");
  if (!content) return response_error(name + " response: field \"content\" must be an array");
  if (content->size() > kMaxResponseItems) {
    return response_error(name + " response: more than " + std::to_string(kMaxResponseItems) + " content blocks");
  }
  TurnBuilder b(name, in);
  std::string text;
  bool calls = false;
  for (std::size_t i = 0; i < content->size(); ++i) {
    const Json& block = (*content)[i];
    const std::string where = name + " response: content[" + std::to_string(i) + "]";
    auto bt = block.is_object() ? get_string(block, "type") : std::nullopt;
    if (!bt) return response_error(where + " must be an object with a string \"type\"");
    if (*bt == "text") {
      auto t = get_string(block, "text");
      if (!t) return response_error(where + ": field \"text\" must be a string");
      if (text.size() + t->size() > kMaxResultTextBytes + 1) text.resize(kMaxResultTextBytes + 1);
      else text += *t;
      continue;
    }
    if (*bt == "thinking" || *bt == "redacted_thinking") continue;
    if (*bt == "tool_use") {
      auto tool = get_string(block, "name");
      if (!tool) return response_error(where + ": field \"name\" must be a string");
      const Json* family = get(block, "toolset_name");
      const bool member = family && !family->is_null();
      if (v_.toolset) {
        // The toolset declares no tool named "computer": each call names its member and the family.
        if (!member) return make_error(kForbiddenTool, where + " calls a tool outside the computer toolset");
        if (!family->is_string() || family->get<std::string>() != kToolsetFamily) {
          return make_error(kForbiddenTool, where + " calls a member of a toolset other than the computer toolset");
        }
        if (!is_toolset_member(*tool)) {
          return make_error(kForbiddenTool, where + " calls a tool that is not a member of the computer toolset");
        }
      } else if (member) {
        return make_error(kForbiddenTool, where + " calls a toolset member; this version declares the computer tool");
      } else if (*tool != "computer") {
        return make_error(kForbiddenTool, where + " calls a tool other than the computer tool");
      }
      const Json* id = get(block, "id");
      if (!id || !id->is_string()) return make_error(kCallId, where + ": field \"id\" must be a string");
      const Json* input = get_object(block, "input");
      if (!input) return response_error(where + ": field \"input\" must be an object");
      EVIDENT_TRY(b.begin_call(id->get<std::string>(), v_.toolset ? *tool : std::string("computer")));
      if (v_.toolset) {
        // A member's input is the computer_20251124 action's fields without "action": the name says it.
        if (input->contains("action")) {
          return response_error(where + ": a toolset member's input has no field \"action\"");
        }
        Json with_action = *input;
        with_action["action"] = *tool;
        EVIDENT_TRY(map_action(b, with_action, v_, where));
      } else {
        EVIDENT_TRY(map_action(b, *input, v_, where));
      }
      calls = true;
      continue;
    }
    if (bt->ends_with("tool_use") || bt->ends_with("tool_result")) {
      return make_error(kForbiddenTool, where + " is a server or connector tool call");
    }
    return response_error(where + ": unknown content block type");
  }
  if (!calls) return final_answer(text);
  return b.finish();
}

Json AnthropicAdapter::tool_results(const ParsedTurn& turn, const std::vector<CallOutcome>& outcomes) const {
  Json content = Json::array();
  for (std::size_t i = 0; i < turn.calls.size() && i < outcomes.size(); ++i) {
    const CallOutcome& o = outcomes[i];
    Json parts = Json::array();
    parts.push_back(Json{{"type", "text"}, {"text", outcome_text(o)}});
    if (o.png) {
      parts.push_back(Json{{"type", "image"},
                           {"source", {{"type", "base64"}, {"media_type", "image/png"},
                                       {"data", base64_encode(*o.png)}}}});
    }
    Json result{{"type", "tool_result"}, {"tool_use_id", turn.calls[i].id},
                {"content", std::move(parts)}, {"is_error", o.status != CallStatus::kOk}};
    if (v_.toolset) result["toolset_name"] = std::string(kToolsetFamily);  // the family of the paired member call
    content.push_back(std::move(result));
  }
  return Json{{"role", "user"}, {"content", std::move(content)}};
}

Json AnthropicAdapter::retry_prompt(const Error& why) const {
  return Json{{"role", "user"},
              {"content", Json::array({Json{{"type", "text"},
                                            {"text", "The final answer was not accepted (" + why.message +
                                                         "). Reply with exactly one JSON object as the "
                                                         "final answer, or continue with computer actions."}}})}};
}

}  // namespace evident::agents::detail
