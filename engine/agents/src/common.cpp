#include "common.h"

#include "evident/agents/convert.h"
#include "evident/receipts/jcs.h"
#include "evident/receipts/receipt.h"

namespace evident::agents {

bool MappedCall::input() const {
  for (const Action& a : parsed) {
    if (a.input()) return true;
  }
  return false;
}

std::size_t ParsedTurn::action_count() const {
  std::size_t n = 0;
  for (const MappedCall& c : calls) n += c.parsed.size();
  return n;
}

bool ParsedTurn::input() const {
  for (const MappedCall& c : calls) {
    if (c.input()) return true;
  }
  return false;
}

namespace detail {

Error response_error(const std::string& message) { return make_error(kResponse, message); }
Error forbidden_action(const std::string& message) { return make_error(kForbiddenAction, message); }

TurnBuilder::TurnBuilder(std::string_view adapter, const AdapterInput& in)
    : adapter_(adapter), in_(in), pointer_(in.pointer) {
  turn_.kind = TurnKind::kCalls;
}

Status TurnBuilder::begin_call(const std::string& id, const std::string& name, bool allow_empty_id) {
  const std::string where = "call " + std::to_string(turn_.calls.size());
  if (id.empty() && !allow_empty_id) {
    return make_error(kCallId, adapter_ + " response: " + where + " has an empty call id");
  }
  if (id.size() > kMaxCallIdBytes) {
    return make_error(kCallId, adapter_ + " response: " + where + " has a call id over " +
                                   std::to_string(kMaxCallIdBytes) + " bytes");
  }
  if (!id.empty() && !ids_.insert(id).second) {
    return make_error(kCallId, adapter_ + " response: " + where + " repeats an earlier call id");
  }
  if (turn_.calls.size() >= kMaxActionsPerTurn) {
    return make_error(kActionLimit, adapter_ + " response: more than " +
                                        std::to_string(kMaxActionsPerTurn) + " calls in one turn");
  }
  MappedCall c;
  c.id = id;
  c.name = name;
  turn_.calls.push_back(std::move(c));
  return ok_status();
}

void TurnBuilder::native(std::string name) { turn_.calls.back().native_actions.push_back(std::move(name)); }

Status TurnBuilder::add(Json action) {
  if (++actions_ > kMaxActionsPerTurn) {
    return make_error(kActionLimit, adapter_ + " response: the turn maps to more than " +
                                        std::to_string(kMaxActionsPerTurn) + " actions");
  }
  // The pointer follows pointer actions (values checked here only for tracking; the §4 parser
  // validates them in finish()).
  auto coord = [&](const char* kx, const char* ky) -> std::optional<Point> {
    const Json* x = get(action, kx);
    const Json* y = get(action, ky);
    if (!x || !y || !x->is_number_integer() || !y->is_number_integer()) return std::nullopt;
    const std::int64_t vx = x->get<std::int64_t>(), vy = y->get<std::int64_t>();
    if (vx < 0 || vy < 0 || vx > 1'000'000 || vy > 1'000'000) return std::nullopt;
    return Point{static_cast<int>(vx), static_cast<int>(vy)};
  };
  const std::optional<std::string> type = get_string(action, "type");
  if (type && *type == "drag") {
    if (auto p = coord("end_x", "end_y")) pointer_ = p;
  } else if (type && *type != "zoom") {
    if (auto p = coord("x", "y")) pointer_ = p;
  }
  turn_.calls.back().actions.push_back(std::move(action));
  return ok_status();
}

Result<Point> TurnBuilder::image_point(std::int64_t x, std::int64_t y, const std::string& where) const {
  const Geometry& g = in_.geometry;
  auto dx = image_to_display(x, g.image_width, g.display_width);
  auto dy = image_to_display(y, g.image_height, g.display_height);
  if (!dx || !dy) {
    return forbidden_action(adapter_ + " response: " + where + ": the coordinate is outside the " +
                            std::to_string(g.image_width) + "x" + std::to_string(g.image_height) +
                            " image the model was shown");
  }
  return Point{*dx, *dy};
}

Result<Point> TurnBuilder::normalized_point(std::int64_t x, std::int64_t y, const std::string& where) const {
  auto dx = normalized_to_display(x, in_.geometry.display_width);
  auto dy = normalized_to_display(y, in_.geometry.display_height);
  if (!dx || !dy) {
    return forbidden_action(adapter_ + " response: " + where +
                            ": the coordinate is outside the 0..999 grid");
  }
  return Point{*dx, *dy};
}

Result<Point> TurnBuilder::current_pointer(const std::string& where) const {
  if (!pointer_) {
    return forbidden_action(adapter_ + " response: " + where +
                            ": the action has no coordinate and the pointer position is not known yet");
  }
  return *pointer_;
}

Result<ParsedTurn> TurnBuilder::finish() {
  if (turn_.calls.empty()) return response_error(adapter_ + " response: no computer call");
  for (std::size_t i = 0; i < turn_.calls.size(); ++i) {
    MappedCall& c = turn_.calls[i];
    if (c.actions.empty()) {
      return response_error(adapter_ + " response: call " + std::to_string(i) + " maps to no action");
    }
    for (const Json& a : c.actions) {
      const std::string type = get_string(a, "type").value_or("");
      if (type == "paste" || type == "mouse_down" || type == "mouse_up") {
        return forbidden_action(adapter_ + " response: call " + std::to_string(i) + ": " + type +
                                " is not allowed in a task");
      }
    }
    auto parsed = parse_actions(c.actions, BatchMode::kCuActions, CoordinateSpace::kPixel,
                                in_.geometry.display_width, in_.geometry.display_height);
    if (!parsed) {
      return forbidden_action(adapter_ + " response: call " + std::to_string(i) +
                              " does not map to valid actions: " + parsed.error().message);
    }
    c.parsed = std::move(*parsed);
  }
  turn_.pointer = pointer_;
  return std::move(turn_);
}

namespace {

std::string_view trim(std::string_view s) {
  auto ws = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!s.empty() && ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && ws(s.back())) s.remove_suffix(1);
  return s;
}

ParsedTurn invalid_result(const std::string& message) {
  ParsedTurn t;
  t.kind = TurnKind::kFinal;
  t.result_error = make_error(kResultInvalid, "final answer: " + message);
  return t;
}

}  // namespace

ParsedTurn final_answer(std::string_view text) {
  if (text.size() > kMaxResultTextBytes) {
    return invalid_result("the text is over " + std::to_string(kMaxResultTextBytes) + " bytes");
  }
  std::string_view body = trim(text);
  if (body.starts_with("```")) {
    const std::size_t nl = body.find('\n');
    if (nl == std::string_view::npos || !body.ends_with("```") || body.size() < nl + 4) {
      return invalid_result("an unterminated code fence");
    }
    const std::string_view tag = trim(body.substr(3, nl - 3));
    if (!tag.empty() && tag != "json") return invalid_result("a code fence that is not json");
    body = trim(body.substr(nl + 1, body.size() - nl - 1 - 3));
  }
  if (body.empty()) return invalid_result("no JSON object (the response holds no computer call and no text)");
  auto parsed = parse_json_strict(body, kMaxResultTextBytes, kResultInvalid);
  if (!parsed) return invalid_result("not exactly one strict JSON value: " + parsed.error().message);
  if (!parsed->is_object()) return invalid_result("the JSON value is not an object");
  auto canon = canonicalize(*parsed);
  if (!canon) return invalid_result(canon.error().message);
  if (canon->size() > kMaxClaimsCanonicalBytes) {
    return invalid_result("the object is " + std::to_string(canon->size()) +
                          " bytes in canonical form; the limit is " +
                          std::to_string(kMaxClaimsCanonicalBytes));
  }
  ParsedTurn t;
  t.kind = TurnKind::kFinal;
  t.result = std::move(*parsed);
  return t;
}

std::string outcome_text(const CallOutcome& o) {
  switch (o.status) {
    case CallStatus::kOk: return o.detail.empty() ? "ok" : o.detail;
    case CallStatus::kFailed: return "failed: " + (o.detail.empty() ? std::string("an action failed") : o.detail);
    case CallStatus::kNotRun:
      return "not run: " + (o.detail.empty() ? std::string("an earlier call of this turn failed") : o.detail);
  }
  return "";
}

const Json* get(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}
const Json* get_array(const Json& obj, std::string_view key) {
  const Json* v = get(obj, key);
  return v && v->is_array() ? v : nullptr;
}
const Json* get_object(const Json& obj, std::string_view key) {
  const Json* v = get(obj, key);
  return v && v->is_object() ? v : nullptr;
}
std::optional<std::string> get_string(const Json& obj, std::string_view key) {
  const Json* v = get(obj, key);
  if (!v || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

Result<std::optional<std::int64_t>> get_int(const Json& obj, std::string_view key, const std::string& where) {
  const Json* v = get(obj, key);
  if (!v || v->is_null()) return std::optional<std::int64_t>{};
  if (!v->is_number_integer()) {
    return response_error(where + ": field \"" + std::string(key) + "\" must be an integer");
  }
  return std::optional<std::int64_t>{v->get<std::int64_t>()};
}

Status only_keys(const Json& obj, std::initializer_list<std::string_view> allowed, const std::string& where) {
  if (!obj.is_object()) return response_error(where + " must be a JSON object");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (std::string_view a : allowed) ok = ok || it.key() == a;
    if (!ok) return response_error(where + " has a field this adapter does not accept");
  }
  return ok_status();
}

}  // namespace detail
}  // namespace evident::agents
