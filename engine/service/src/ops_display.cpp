// The display.* op family: create, destroy, list, status, screenshot, env (docs/displays.md,
// docs/windows.md for env).
#include "ops_common.h"

#include <memory>
#include <mutex>
#include <string>

#include "evident/browser/browser.h"
#include "evident/capture/capture.h"
#include "evident/core/fs.h"
#include "evident/display/display.h"
#include "evident/service/display_capture.h"

namespace evident {

void register_display_ops(OpTable& ops, DisplayManager& displays, BrowserManager& browsers) {
  ops["display.create"] = [&displays, &browsers](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"width", "height", "depth", "dpi", "keyboard_layout", "manage_windows", "accessibility"}));
    DisplayOptions o;
    if (f.has("width")) {
      auto v = f.integer("width", protocol::kDisplayWidthMin, protocol::kDisplayWidthMax);
      if (!v.ok()) return v.error();
      o.width = static_cast<int>(*v);
    }
    if (f.has("height")) {
      auto v = f.integer("height", protocol::kDisplayHeightMin, protocol::kDisplayHeightMax);
      if (!v.ok()) return v.error();
      o.height = static_cast<int>(*v);
    }
    if (f.has("depth")) {
      auto v = f.integer("depth", 16, 24);
      if (!v.ok()) return v.error();
      if (*v != 16 && *v != 24) return make_error(kArgs, "field \"depth\" must be 16 or 24");
      o.depth = static_cast<int>(*v);
    }
    if (f.has("dpi")) {
      auto v = f.integer("dpi", protocol::kDisplayDpiMin, protocol::kDisplayDpiMax);
      if (!v.ok()) return v.error();
      o.dpi = static_cast<int>(*v);
    }
    if (f.has("keyboard_layout")) {
      auto v = f.string("keyboard_layout", 1, 32);
      if (!v.ok()) return v.error();
      o.keyboard_layout = *v;
    }
    if (f.has("manage_windows")) {
      auto v = f.boolean("manage_windows");
      if (!v.ok()) return v.error();
      o.manage_windows = *v;
    }
    if (f.has("accessibility")) {
      auto v = f.boolean("accessibility");
      if (!v.ok()) return v.error();
      o.accessibility = *v;
    }
    auto d = displays.create(o);
    if (!d.ok()) return d.error();
    Json out{{"display", (*d)->info().to_json()}};
    if (!o.keyboard_layout.empty()) out["keyboard_layout"] = o.keyboard_layout;
    if (o.manage_windows) out["manage_windows"] = true;
    if (o.accessibility) out["accessibility"] = true;
    return out;
  };

  ops["display.destroy"] = [&displays, &browsers](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"display_id", "generation"}));
    auto ref = display_ref_arg(f);
    if (!ref.ok()) return ref.error();
    // Browsers of exactly that generation go first (their profiles with them).
    if (displays.get(ref->id, ref->generation).ok()) browsers.close_display(ref->id, ref->generation);
    EVIDENT_TRY(displays.destroy(ref->id, ref->generation));
    return Json{{"display_id", ref->id}, {"generation", ref->generation}};
  };

  ops["display.list"] = [&displays, &browsers](const Actor&, const Json& args) -> Result<Json> {
    EVIDENT_TRY(JsonFields(args, kArgs, "args").only({}));
    Json list = Json::array();
    for (const auto& d : displays.list()) list.push_back(d.to_json());
    return Json{{"displays", list}};
  };

  ops["display.status"] = [&displays, &browsers](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"display_id", "generation"}));
    auto ref = display_ref_arg(f);
    if (!ref.ok()) return ref.error();
    auto st = displays.status(ref->id, ref->generation);
    if (!st.ok()) return st.error();
    Json layers = Json::array();
    for (const auto& l : st->layers) layers.push_back(l.to_json());
    return Json{{"ready", st->ready},
                {"layers", layers},
                {"keyboard_layout", st->keyboard_layout.empty() ? Json(nullptr) : Json(st->keyboard_layout)},
                {"window_keeper", st->window_keeper
                                      ? Json{{"managed", st->window_keeper->managed},
                                             {"fitted", st->window_keeper->fitted},
                                             {"focused", st->window_keeper->focused}}
                                      : Json(nullptr)}};
  };

  ops["display.screenshot"] = [&displays, &browsers](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"display_id", "generation", "out"}));
    auto ref = display_ref_arg(f);
    if (!ref.ok()) return ref.error();
    auto out = f.string("out", 1, protocol::kScreenshotPathMaxBytes);
    if (!out.ok()) return out.error();
    if ((*out)[0] != '/' || out->find('\0') != std::string::npos) {
      return make_error(kArgs, "field \"out\" must be an absolute path");
    }
    auto d = displays.get(ref->id, ref->generation);
    if (!d.ok()) return d.error();
    Result<PngFrame> frame = display_dead_error();
    // alive() takes x_mutex itself: probe it before locking (it is not recursive).
    if ((*d)->alive()) {
      std::lock_guard lock((*d)->x_mutex());
      if (Capturer* capturer = display_capturer(**d)) frame = capturer->capture_png();
    }
    if (!frame.ok()) return frame.error();
    if (auto st = write_file_atomic(*out, frame->bytes, 0600); !st.ok()) {
      // The message of a file error names the path, which is request content here.
      const std::string& m = st.error().message;
      const auto colon = m.rfind(": ");
      return make_error("screenshot-write-failed",
                        "cannot write the PNG to the path in field \"out\"" +
                            (colon == std::string::npos ? std::string() : m.substr(colon)));
    }
    return Json{{"png", {{"path", *out}, {"sha256", frame->sha256},
                         {"byte_length", frame->bytes.size()}, {"width", frame->width},
                         {"height", frame->height}}}};
  };

  ops["display.env"] = [&displays](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"display_id", "generation"}));
    auto ref = display_ref_arg(f);
    if (!ref.ok()) return ref.error();
    auto d = displays.get(ref->id, ref->generation);
    if (!d.ok()) return d.error();
    return Json{{"env", {{"DISPLAY", (*d)->info().name}, {"XAUTHORITY", (*d)->auth_file()}}}};
  };
}

}  // namespace evident
