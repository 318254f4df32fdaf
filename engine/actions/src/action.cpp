#include "evident/actions/action.h"

#include <array>
#include <utility>

#include "evident/input/keys.h"
#include "evident/input/unicode.h"

namespace evident {
namespace {

static_assert(std::size(protocol::kActionKinds) == protocol::kActionKindCount);

// Raw coordinates are bounded before scaling so x*W cannot overflow.
constexpr std::int64_t kCoordLimit = protocol::kCoordinateAbsMax;

struct Ctx {
  BatchMode mode;
  CoordinateSpace space;
  int w, h;
  std::string code;  // error code for an invalid action
};

std::int64_t scale(std::int64_t v, int size, CoordinateSpace space) {
  if (space != CoordinateSpace::kNormalized1000) return v;
  return v * size / protocol::kNormalizedScale;
}

Status button_field(const JsonFields& f, const std::string& ctx, int* button) {
  if (!f.has("button")) return ok_status();
  auto b = f.string("button");
  if (!b.ok()) return b.error();
  if (*b == "left") *button = 1;
  else if (*b == "middle") *button = 2;
  else if (*b == "right") *button = 3;
  else return make_error(f.error_code(), ctx + ": field \"button\" must be left, right or middle");
  return ok_status();
}

Status text_field(const JsonFields& f, const std::string& ctx, std::string* out) {
  auto t = f.string("text", 1, kMaxTextBytes);
  if (!t.ok()) return t.error();
  auto cps = decode_utf8(*t);
  if (!cps.ok()) return make_error(f.error_code(), ctx + ": field \"text\" is not valid UTF-8");
  for (char32_t cp : *cps) {
    if (cp != U'\n' && cp != U'\t' && (cp < 0x20 || (cp >= 0x7F && cp < 0xA0))) {
      return make_error(f.error_code(),
                        ctx + ": field \"text\" contains a control character other than \\n and \\t");
    }
  }
  *out = std::move(*t);
  return ok_status();
}

Result<Action> parse_one(const Json& item, int index, const Ctx& c) {
  const std::string ctx = "actions[" + std::to_string(index) + "]";
  JsonFields f(item, c.code, ctx);
  if (!item.is_object()) return make_error(c.code, ctx + ": must be a JSON object");
  auto type_name = f.string("type", 1, 64);
  if (!type_name.ok()) return type_name.error();
  auto type = parse_action_type(*type_name);
  if (!type) return make_error(c.code, ctx + ": unknown action type");
  if (c.mode == BatchMode::kSession && !action_kind_info(*type).session) {
    return make_error("session-action-forbidden",
                      ctx + ": " + std::string(to_string(*type)) + " is not allowed in a session");
  }
  Action a;
  a.type = *type;
  a.raw = item;
  auto off_display = [&](const char* field) {
    return make_error(c.code, ctx + ": field \"" + std::string(field) +
                                  "\" is outside the display after scaling (display " +
                                  std::to_string(c.w) + "x" + std::to_string(c.h) + ")");
  };
  auto pt = [&](const char* fx, const char* fy, int* x, int* y) -> Status {
    auto rx = f.integer(fx, -kCoordLimit, kCoordLimit);
    if (!rx.ok()) return rx.error();
    auto ry = f.integer(fy, -kCoordLimit, kCoordLimit);
    if (!ry.ok()) return ry.error();
    const std::int64_t sx = scale(*rx, c.w, c.space);
    const std::int64_t sy = scale(*ry, c.h, c.space);
    if (*rx < 0 || sx >= c.w) return off_display(fx);
    if (*ry < 0 || sy >= c.h) return off_display(fy);
    *x = static_cast<int>(sx);
    *y = static_cast<int>(sy);
    return ok_status();
  };
  switch (a.type) {
    case ActionType::kClick:
    case ActionType::kDoubleClick:
    case ActionType::kTripleClick:
    case ActionType::kMouseDown:
    case ActionType::kMouseUp:
      EVIDENT_TRY(f.only({"type", "x", "y", "button"}));
      EVIDENT_TRY(pt("x", "y", &a.x, &a.y));
      EVIDENT_TRY(button_field(f, ctx, &a.button));
      break;
    case ActionType::kMoveMouse:
      EVIDENT_TRY(f.only({"type", "x", "y"}));
      EVIDENT_TRY(pt("x", "y", &a.x, &a.y));
      break;
    case ActionType::kDrag:
      EVIDENT_TRY(f.only({"type", "start_x", "start_y", "end_x", "end_y", "button"}));
      EVIDENT_TRY(pt("start_x", "start_y", &a.x, &a.y));
      EVIDENT_TRY(pt("end_x", "end_y", &a.end_x, &a.end_y));
      EVIDENT_TRY(button_field(f, ctx, &a.button));
      break;
    case ActionType::kScroll: {
      EVIDENT_TRY(f.only({"type", "x", "y", "direction", "amount"}));
      EVIDENT_TRY(pt("x", "y", &a.x, &a.y));
      auto dir = f.string("direction");
      if (!dir.ok()) return dir.error();
      if (*dir == "up") a.scroll_button = 4;
      else if (*dir == "down") a.scroll_button = 5;
      else if (*dir == "left") a.scroll_button = 6;
      else if (*dir == "right") a.scroll_button = 7;
      else return make_error(c.code, ctx + ": field \"direction\" must be up, down, left or right");
      if (f.has("amount")) {
        auto amount = f.integer("amount", protocol::kScrollAmountMin, protocol::kScrollAmountMax);
        if (!amount.ok()) return amount.error();
        a.amount = static_cast<int>(*amount);
      }
      break;
    }
    case ActionType::kType:
    case ActionType::kPaste:
      EVIDENT_TRY(f.only({"type", "text"}));
      EVIDENT_TRY(text_field(f, ctx, &a.text));
      break;
    case ActionType::kKey:
    case ActionType::kHoldKey: {
      if (a.type == ActionType::kKey) {
        EVIDENT_TRY(f.only({"type", "key"}));
      } else {
        EVIDENT_TRY(f.only({"type", "key", "ms"}));
        auto ms = f.integer("ms", 0, kMaxHoldMs);
        if (!ms.ok()) return ms.error();
        a.ms = *ms;
      }
      auto key = f.string("key", protocol::kKeyMinBytes, protocol::kKeyMaxBytes);
      if (!key.ok()) return key.error();
      auto chord = parse_key_chord(*key, c.code);
      if (!chord.ok()) return make_error(c.code, ctx + ": field \"key\": " + chord.error().message);
      a.key = std::move(*key);
      break;
    }
    case ActionType::kWait: {
      EVIDENT_TRY(f.only({"type", "ms"}));
      auto ms = f.integer("ms", 0, kMaxWaitMs);
      if (!ms.ok()) return ms.error();
      a.ms = *ms;
      break;
    }
    case ActionType::kScreenshot:
      EVIDENT_TRY(f.only({"type"}));
      break;
    case ActionType::kZoom: {
      EVIDENT_TRY(f.only({"type", "x", "y", "width", "height"}));
      auto rx = f.integer("x", -kCoordLimit, kCoordLimit);
      if (!rx.ok()) return rx.error();
      auto ry = f.integer("y", -kCoordLimit, kCoordLimit);
      if (!ry.ok()) return ry.error();
      auto rw = f.integer("width", 1, kCoordLimit);
      if (!rw.ok()) return rw.error();
      auto rh = f.integer("height", 1, kCoordLimit);
      if (!rh.ok()) return rh.error();
      const std::int64_t x0 = scale(*rx, c.w, c.space), y0 = scale(*ry, c.h, c.space);
      const std::int64_t x1 = x0 + scale(*rw, c.w, c.space), y1 = y0 + scale(*rh, c.h, c.space);
      const std::int64_t cx0 = std::max<std::int64_t>(0, x0), cy0 = std::max<std::int64_t>(0, y0);
      const std::int64_t cx1 = std::min<std::int64_t>(c.w, x1), cy1 = std::min<std::int64_t>(c.h, y1);
      if (cx1 <= cx0 || cy1 <= cy0) {
        return make_error(c.code, ctx + ": zoom region is empty or entirely outside the display after scaling");
      }
      a.x = static_cast<int>(cx0);
      a.y = static_cast<int>(cy0);
      a.width = static_cast<int>(cx1 - cx0);
      a.height = static_cast<int>(cy1 - cy0);
      break;
    }
  }
  return a;
}

}  // namespace

const char* to_string(ActionType type) {
  const auto i = static_cast<std::size_t>(type);
  // The generated names are string literals, so data() is NUL-terminated.
  return i < protocol::kActionKindCount ? protocol::kActionKinds[i].name.data() : "unknown";
}

std::optional<ActionType> parse_action_type(const std::string& name) {
  for (std::size_t i = 0; i < protocol::kActionKindCount; ++i) {
    if (protocol::kActionKinds[i].name == name) return static_cast<ActionType>(i);
  }
  return std::nullopt;
}

std::optional<CoordinateSpace> parse_coordinate_space(const std::string& name) {
  if (name == "pixel") return CoordinateSpace::kPixel;
  if (name == "normalized_1000") return CoordinateSpace::kNormalized1000;
  return std::nullopt;
}

Json Action::projection() const {
  switch (action_kind_info(type).projection) {
    case protocol::Projection::kTypeOnly:
      return Json{{"type", to_string(type)}};
    case protocol::Projection::kTypeMs:
      return Json{{"type", to_string(type)}, {"ms", ms}};
    case protocol::Projection::kAsSent:
      break;
  }
  return raw;
}

Result<std::vector<Action>> parse_actions(const Json& actions_array, BatchMode mode,
                                          CoordinateSpace space, int display_width,
                                          int display_height) {
  const bool session = mode == BatchMode::kSession;
  const std::string shape_code = session ? "session-actions" : "actions-request";
  if (!actions_array.is_array()) return make_error(shape_code, "actions must be an array");
  if (actions_array.empty() || actions_array.size() > kMaxActionsPerBatch) {
    return make_error(shape_code, "actions must have 1.." + std::to_string(kMaxActionsPerBatch) + " items");
  }
  if (display_width <= 0 || display_height <= 0) {
    return make_error(shape_code, "the display size is unknown");
  }
  Ctx c{mode, space, display_width, display_height, session ? "session-action" : "action-invalid"};
  std::vector<Action> out;
  out.reserve(actions_array.size());
  int index = 0;
  for (const Json& item : actions_array) {
    auto a = parse_one(item, index++, c);
    if (!a.ok()) return a.error();
    out.push_back(std::move(*a));
  }
  return out;
}

}  // namespace evident
