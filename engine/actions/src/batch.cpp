#include <X11/Xlib.h>
#undef Status

#include "evident/actions/batch.h"

#include "evident/capture/capture.h"
#include "evident/core/clock.h"
#include "evident/core/fs.h"

namespace evident {

Result<ActionBatchRequest> parse_action_batch_request(const Json& request, int display_width,
                                                      int display_height) {
  const std::string code = "actions-request";
  JsonFields f(request, code, "request");
  EVIDENT_TRY(f.only({"actions", "observe", "settle", "coordinate_space"}));
  ActionBatchRequest out;
  if (f.has("observe")) {
    auto o = f.string("observe");
    if (!o.ok()) return o.error();
    if (*o == "pixels") {
      out.observe = ObserveKind::kPixels;
    } else if (*o == "none") {
      out.observe = ObserveKind::kNone;
    } else if (*o == "ax") {
      out.observe = ObserveKind::kAx;
    } else {
      return make_error(code, "request: field \"observe\" must be pixels, none or ax");
    }
  }
  if (f.has("settle")) {
    const Json& s = request.at("settle");
    if (s.is_boolean()) {
      out.settle_cap_ms = s.get<bool>() ? kSettleDefaultCapMs : 0;
    } else {
      auto ms = f.integer("settle", 1, kSettleMaxCapMs);
      if (!ms.ok()) {
        return make_error(code, "request: field \"settle\" must be true, false or an integer 1.." +
                                    std::to_string(kSettleMaxCapMs));
      }
      out.settle_cap_ms = *ms;
    }
  }
  CoordinateSpace space = CoordinateSpace::kPixel;
  if (f.has("coordinate_space")) {
    auto cs = f.string("coordinate_space");
    if (!cs.ok()) return cs.error();
    auto parsed = parse_coordinate_space(*cs);
    if (!parsed) return make_error(code, "request: field \"coordinate_space\" must be pixel or normalized_1000");
    space = *parsed;
  }
  auto arr = f.array("actions");
  if (!arr.ok()) return arr.error();
  auto actions = parse_actions(**arr, BatchMode::kCuActions, space, display_width, display_height);
  if (!actions.ok()) return actions.error();
  out.actions = std::move(*actions);
  return out;
}

bool batch_is_bounded(const Json& request) {
  if (!request.is_object()) return false;
  if (auto s = request.find("settle"); s != request.end() && !(s->is_boolean() && !s->get<bool>())) {
    return false;
  }
  auto acts = request.find("actions");
  if (acts == request.end() || !acts->is_array() ||
      acts->size() > static_cast<std::size_t>(protocol::kActionsPerBatchMax)) {
    return false;
  }
  for (const Json& a : *acts) {
    if (!a.is_object()) return false;
    auto t = a.find("type");
    if (t == a.end() || !t->is_string()) return false;
    const std::string& type = t->get_ref<const std::string&>();
    bool bounded = false;
    for (std::string_view k : protocol::kBoundedActionKinds) bounded = bounded || k == type;
    if (!bounded) return false;
  }
  return true;
}

Result<Json> run_action_batch(ActionExecutor& executor, const Json& request, const AxObserver* ax) {
  const ExecutorContext& ctx = executor.context();
  auto parsed = parse_action_batch_request(request, ctx.width, ctx.height);
  if (!parsed.ok()) return parsed.error();
  const std::vector<Action>& actions = parsed->actions;
  const std::int64_t settle_cap_ms = parsed->settle_cap_ms;
  const bool observe = parsed->observe == ObserveKind::kPixels;
  const bool observe_ax = parsed->observe == ObserveKind::kAx;
  if (observe_ax) {
    if (!ax || !ax->check || !ax->observe) {
      return make_error("accessibility-off",
                        "observe \"ax\" needs a display created with accessibility; nothing ran");
    }
    EVIDENT_TRY(ax->check());
  }

  executor.set_settle_tracking(settle_cap_ms > 0);
  Json results = Json::array();
  bool any_input = false;
  for (std::size_t i = 0; i < actions.size(); ++i) {
    ActionResult r = executor.execute(actions[i], static_cast<int>(i));
    any_input = any_input || r.input;
    results.push_back(r.to_json());
    // A failed action ends the batch: later actions depended on it (documented in docs/actions.md).
    if (r.status == ActionStatus::kFailed) break;
  }
  EVIDENT_TRY(executor.release_all_checked());

  Json settle{{"outcome", "off"}, {"elapsed_ms", 0}};
  if (settle_cap_ms > 0) {
    if (!any_input) {
      settle["outcome"] = "fixed";  // nothing was injected, so there is nothing to settle
    } else if (ctx.watcher) {
      const std::int64_t anchor = executor.last_input_us();
      SettleOutcome outcome;
      {
        std::lock_guard<std::mutex> lock(*ctx.dpy_mutex);
        outcome = ctx.watcher->wait_settled(anchor, kSettleQuietMs, settle_cap_ms);
      }
      settle["outcome"] = to_string(outcome);
      settle["elapsed_ms"] = (steady_us() - anchor) / 1000;
    }
  }

  Json observation{{"kind", "none"}, {"reason", "not requested (observe: none)"}, {"png", nullptr}};
  if (observe_ax) {
    // After the settle, like a frame; the read is D-Bus only (no X, no display mutex).
    Result<Json> tree = ax->observe();
    if (!tree.ok()) {
      observation["reason"] = "accessibility read failed (" + tree.error().code + "): " +
                              tree.error().message;
    } else {
      observation = Json{{"kind", "ax"},
                         {"reason", "the display's accessibility tree after the batch and its settle"},
                         {"png", nullptr},
                         {"ax", std::move(*tree)}};
    }
  }
  if (observe) {
    Result<PngFrame> frame = make_error("capture-unavailable", "no capturer for this display");
    if (ctx.capturer) {
      std::lock_guard<std::mutex> lock(*ctx.dpy_mutex);
      XSync(ctx.dpy, False);  // every earlier request, input included, is processed before the grab
      frame = ctx.capturer->capture_png();
    }
    if (!frame.ok()) {
      observation["reason"] = "capture failed: " + frame.error().message;
    } else {
      Json png{{"path", nullptr}, {"sha256", frame->sha256},
               {"byte_length", static_cast<std::int64_t>(frame->bytes.size())},
               {"width", frame->width}, {"height", frame->height}};
      if (!ctx.observation_dir.empty()) {
        const std::string path = ctx.observation_dir + "/" + frame->sha256 + ".png";
        if (Status s = write_file_atomic(path, frame->bytes); s.ok()) png["path"] = path;
      }
      observation = Json{{"kind", "pixels"}, {"reason", "full display after the batch and its settle"},
                         {"png", png}};
    }
  }
  return Json{{"results", results}, {"observation", observation}, {"settle", settle}};
}

}  // namespace evident
