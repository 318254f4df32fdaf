#include "gemini_common.h"

#include "common.h"
#include "evident/agents/convert.h"

namespace evident::agents::detail {

Result<Point> gemini_xy(TurnBuilder& b, const Json& args, const char* kx, const char* ky, const std::string& where) {
  auto x = get_int(args, kx, where);
  if (!x) return x.error();
  auto y = get_int(args, ky, where);
  if (!y) return y.error();
  if (!*x || !*y) return response_error(where + ": coordinate fields are required");
  return b.normalized_point(**x, **y, where);
}

Result<bool> gemini_bool(const Json& args, const char* key, bool fallback, const std::string& where) {
  const Json* v = get(args, key);
  if (!v || v->is_null()) return fallback;
  if (!v->is_boolean()) return response_error(where + ": field \"" + std::string(key) + "\" must be a boolean");
  return v->get<bool>();
}

Status gemini_scroll(TurnBuilder& b, Point p, const Json& args, const std::string& where) {
  auto dir = get_string(args, "direction");
  if (!dir || (*dir != "up" && *dir != "down" && *dir != "left" && *dir != "right")) {
    return response_error(where + ": field \"direction\" must be up, down, left or right");
  }
  auto m = get_int(args, "magnitude", where);
  if (!m) return m.error();
  const std::int64_t magnitude = m->value_or(kGeminiDefaultMagnitude);
  const bool vertical = *dir == "up" || *dir == "down";
  const Geometry& g = b.geometry();
  auto px = normalized_to_display(magnitude, vertical ? g.display_height : g.display_width);
  if (!px) return forbidden_action(where + ": the scroll magnitude is outside the 0..999 grid");
  return b.add(Json{{"type", "scroll"}, {"x", p.x}, {"y", p.y}, {"direction", *dir},
                    {"amount", pixels_to_wheel_clicks(*px)}});
}

Result<ParsedTurn> GeminiAdapter::parse(const Json& response, const AdapterInput& in) const {
  const std::string name(name_);
  if (!response.is_object()) return response_error(name + " response: must be a GenerateContentResponse object");
  const Json* candidates = get_array(response, "candidates");
  if (!candidates || candidates->empty()) {
    return response_error(name + " response: no candidates (the prompt may have been blocked)");
  }
  const Json& cand = (*candidates)[0];
  const Json* content = get_object(cand, "content");
  if (!content) return response_error(name + " response: candidates[0] has no content object");
  const Json* parts = get_array(*content, "parts");
  if (!parts) return response_error(name + " response: candidates[0].content.parts must be an array");
  if (parts->size() > kMaxResponseItems) {
    return response_error(name + " response: more than " + std::to_string(kMaxResponseItems) + " parts");
  }
  TurnBuilder b(name, in);
  std::string text;
  bool calls = false;
  for (std::size_t i = 0; i < parts->size(); ++i) {
    const Json& part = (*parts)[i];
    const std::string where = name + " response: parts[" + std::to_string(i) + "]";
    if (!part.is_object()) return response_error(where + " must be an object");
    if (const Json* fc = get(part, "functionCall")) {
      if (!fc->is_object()) return response_error(where + ": functionCall must be an object");
      auto fn = get_string(*fc, "name");
      if (!fn) return response_error(where + ": functionCall.name must be a string");
      std::string id;
      if (const Json* idv = get(*fc, "id"); idv && !idv->is_null()) {
        if (!idv->is_string()) return make_error(kCallId, where + ": functionCall.id must be a string");
        id = idv->get<std::string>();
        if (id.empty()) return make_error(kCallId, where + " has an empty call id");
      }
      Json args = Json::object();
      if (const Json* a = get(*fc, "args"); a && !a->is_null()) {
        if (!a->is_object()) return response_error(where + ": functionCall.args must be an object");
        args = *a;
      }
      if (args.contains("safety_decision")) {
        return make_error(kSafety, where + " carries a safety decision that needs confirmation; the engine never confirms");
      }
      EVIDENT_TRY(b.begin_call(id, *fn, /*allow_empty_id=*/true));
      b.native(*fn);
      bool known = true;
      Status s = mapper_(b, *fn, args, where, &known);
      if (!known) return make_error(kForbiddenTool, where + " calls a function outside the computer-use function set");
      EVIDENT_TRY(s);
      calls = true;
      continue;
    }
    if (get(part, "executableCode") || get(part, "codeExecutionResult") || get(part, "functionResponse")) {
      return make_error(kForbiddenTool, where + " is code execution or a function response, not a computer call");
    }
    if (const Json* t = get(part, "text")) {
      if (!t->is_string()) return response_error(where + ": text must be a string");
      const Json* thought = get(part, "thought");
      if (thought && thought->is_boolean() && thought->get<bool>()) continue;  // thinking is not the answer
      const std::string s = t->get<std::string>();
      if (text.size() + s.size() > kMaxResultTextBytes + 1) text.resize(kMaxResultTextBytes + 1);
      else text += s;
      continue;
    }
    if (get(part, "thoughtSignature")) continue;
    return response_error(where + ": unknown part kind");
  }
  if (!calls) return final_answer(text);
  return b.finish();
}

Json GeminiAdapter::tool_results(const ParsedTurn& turn, const std::vector<CallOutcome>& outcomes) const {
  Json parts = Json::array();
  for (std::size_t i = 0; i < turn.calls.size() && i < outcomes.size(); ++i) {
    const CallOutcome& o = outcomes[i];
    Json fr{{"name", turn.calls[i].name},
            {"response", {{"status", o.status == CallStatus::kOk ? "ok" : o.status == CallStatus::kFailed ? "failed" : "not_run"},
                          {"detail", outcome_text(o)}}}};
    if (!turn.calls[i].id.empty()) fr["id"] = turn.calls[i].id;
    if (o.png) {
      fr["parts"] = Json::array({Json{{"inlineData", {{"mimeType", "image/png"}, {"data", base64_encode(*o.png)}}}}});
    }
    parts.push_back(Json{{"functionResponse", std::move(fr)}});
  }
  return Json{{"role", "user"}, {"parts", std::move(parts)}};
}

Json GeminiAdapter::retry_prompt(const Error& why) const {
  return Json{{"role", "user"},
              {"parts", Json::array({Json{{"text", "The final answer was not accepted (" + why.message +
                                                        "). Reply with exactly one JSON object as the final "
                                                        "answer, or continue with computer actions."}}})}};
}

}  // namespace evident::agents::detail
