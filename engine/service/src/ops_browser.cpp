#include "ops_common.h"

#include "evident/browser/browser.h"

namespace evident {

namespace {

Result<std::string> browser_id_arg(const JsonFields& f) { return f.string("browser_id", 1, 256); }
}  // namespace

void register_browser_ops(OpTable& ops, BrowserManager& browsers) {
  ops["browser.create"] = [&browsers](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"display_id", "generation", "url", "viewport", "extra_args", "profile_dir"}));
    BrowserOptions o;
    auto id = f.integer("display_id", 0, 65535);
    if (!id.ok()) return id.error();
    o.display_id = static_cast<int>(*id);
    auto gen = f.string("generation", 0, 256);
    if (!gen.ok()) return gen.error();
    o.generation = *gen;
    auto url = f.string("url", 0, BrowserLimits::kMaxUrlBytes + 1);
    if (!url.ok()) return url.error();
    o.url = *url;
    if (f.has("viewport")) {
      auto vp = f.object("viewport");
      if (!vp.ok()) return vp.error();
      JsonFields v(**vp, kArgs, "viewport");
      EVIDENT_TRY(v.only({"width", "height"}));
      // Range (and the display's size) are checked by the browser layer: browser-viewport-range.
      auto w = v.integer("width", 0, 1 << 20);
      if (!w.ok()) return w.error();
      auto h = v.integer("height", 0, 1 << 20);
      if (!h.ok()) return h.error();
      if (*w == 0 || *h == 0) {
        return make_error("browser-viewport-range", "the viewport's sides must be positive");
      }
      o.width = static_cast<int>(std::min<std::int64_t>(*w, BrowserLimits::kMaxViewport + 1));
      o.height = static_cast<int>(std::min<std::int64_t>(*h, BrowserLimits::kMaxViewport + 1));
    }
    if (f.has("extra_args")) {
      auto xs = f.array("extra_args", 0, BrowserLimits::kMaxExtraArgs);
      if (!xs.ok()) return make_error("browser-args", "at most " + std::to_string(BrowserLimits::kMaxExtraArgs) +
                                                          " extra arguments, each a string");
      for (const auto& a : **xs) {
        if (!a.is_string()) return make_error("browser-args", "extra arguments must be strings");
        o.extra_args.push_back(a.get<std::string>());
      }
    }
    if (f.has("profile_dir")) {
      auto p = f.string("profile_dir", 1, BrowserLimits::kMaxPathBytes);
      if (!p.ok()) return p.error();
      o.profile_dir = *p;
    }
    auto b = browsers.create(o);
    if (!b.ok()) return b.error();
    return Json{{"browser", b->to_json()}};
  };

  ops["browser.close"] = [&browsers](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"browser_id"}));
    auto id = browser_id_arg(f);
    if (!id.ok()) return id.error();
    auto st = browsers.close(*id);
    if (!st.ok()) return st.error();
    return Json{{"browser_id", *id}, {"exit_status", *st}};
  };

  ops["browser.list"] = [&browsers](const Actor&, const Json& args) -> Result<Json> {
    EVIDENT_TRY(JsonFields(args, kArgs, "args").only({}));
    Json list = Json::array();
    for (const auto& b : browsers.list()) {
      Json j = b.to_json();
      j["alive"] = b.alive;
      list.push_back(std::move(j));
    }
    return Json{{"browsers", list}};
  };

  ops["browser.status"] = [&browsers](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"browser_id"}));
    auto id = browser_id_arg(f);
    if (!id.ok()) return id.error();
    auto st = browsers.status(*id);
    if (!st.ok()) return st.error();
    Json out = st->to_json();
    out["browser_id"] = *id;
    return out;
  };

  ops["browser.evaluate"] = [&browsers](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"browser_id", "expression"}));
    auto id = browser_id_arg(f);
    if (!id.ok()) return id.error();
    auto e = f.string("expression", 1, BrowserLimits::kMaxExpressionBytes);
    if (!e.ok()) return e.error();
    auto v = browsers.evaluate(*id, *e);
    if (!v.ok()) return v.error();
    return Json{{"value_json", *v}};
  };

  ops["browser.navigate"] = [&browsers](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"browser_id", "url"}));
    auto id = browser_id_arg(f);
    if (!id.ok()) return id.error();
    auto url = f.string("url", 0, BrowserLimits::kMaxUrlBytes + 1);
    if (!url.ok()) return url.error();
    auto r = browsers.navigate(*id, *url);
    if (!r.ok()) return r.error();
    return Json{{"url", *r}};
  };

  ops["browser.element_box"] = [&browsers](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"browser_id", "selector"}));
    auto id = browser_id_arg(f);
    if (!id.ok()) return id.error();
    auto sel = f.string("selector", 1, BrowserLimits::kMaxSelectorBytes);
    if (!sel.ok()) return sel.error();
    auto box = browsers.element_box(*id, *sel);
    if (!box.ok()) return box.error();
    return Json{{"box", box->to_json()}};
  };
}

}  // namespace evident
