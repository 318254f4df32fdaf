// window.list / window.wait / window.capture / window.focus, wait.stable / wait.pixels /
// wait.image
// (docs/windows.md). Every X call here goes through a connection of
// its own (OwnedDisplay::open_connection), except frame grabs, which use the display's capturer
// under its x_mutex for the grab only: a wait never holds the display's shared connection.
#include "ops_common.h"

#include <cstdint>
#include <memory>
#include <mutex>

#include "evident/capture/capture.h"
#include "evident/capture/waits.h"
#include "evident/core/clock.h"
#include "evident/core/fs.h"
#include "evident/core/random.h"
#include "evident/display/display.h"
#include "evident/display/windows.h"
#include "evident/display/x11.h"
#include "evident/service/display_capture.h"

namespace evident {
namespace {

constexpr std::int64_t kMaxWaitMs = 120000;
constexpr std::int64_t kDefaultWindowWaitMs = 10000;
constexpr std::int64_t kDefaultWaitMs = 5000;
constexpr std::int64_t kDefaultQuietMs = 300;
constexpr std::int64_t kMaxQuietMs = 60000;
constexpr std::int64_t kMaxReferenceFileBytes = 64 * 1024 * 1024;
constexpr std::int64_t kDefaultMinScorePermille = 950;


Result<std::shared_ptr<OwnedDisplay>> live_display(DisplayManager& dm, const DisplayRef& ref) {
  return dm.get_live(ref.id, ref.generation);
}

// A connection of our own to the display, closed on scope exit.
class OwnConnection {
 public:
  static Result<std::unique_ptr<OwnConnection>> open(const OwnedDisplay& d) {
    auto c = d.open_connection();
    if (!c.ok()) return display_dead_error();
    return std::unique_ptr<OwnConnection>(new OwnConnection(*c));
  }
  ~OwnConnection() { close_x_connection(dpy_); }
  ::Display* get() const { return dpy_; }

 private:
  explicit OwnConnection(::Display* d) : dpy_(d) {}
  ::Display* dpy_;
};

Result<std::optional<Rect>> region_arg(const JsonFields& f, bool required) {
  if (!f.has("region")) {
    if (required) return make_error(kArgs, "args: a region is required here");
    return std::optional<Rect>{};
  }
  auto obj = f.object("region");
  if (!obj.ok()) return obj.error();
  JsonFields r(**obj, kArgs, "region");
  EVIDENT_TRY(r.only({"x", "y", "width", "height"}));
  Rect out;
  auto x = r.integer("x", -65536, 65536);
  if (!x.ok()) return x.error();
  auto y = r.integer("y", -65536, 65536);
  if (!y.ok()) return y.error();
  auto w = r.integer("width", 1, 65536);
  if (!w.ok()) return w.error();
  auto h = r.integer("height", 1, 65536);
  if (!h.ok()) return h.error();
  out = Rect{static_cast<int>(*x), static_cast<int>(*y), static_cast<int>(*w), static_cast<int>(*h)};
  return std::optional<Rect>{out};
}

Json rect_json(const Rect& r) {
  return Json{{"x", r.x}, {"y", r.y}, {"width", r.width}, {"height", r.height}};
}

Result<std::int64_t> int_or(const JsonFields& f, std::string_view key, std::int64_t min,
                            std::int64_t max, std::int64_t dflt) {
  if (!f.has(key)) return dflt;
  return f.integer(key, min, max);
}

// The app's pid when it runs on exactly this display generation. app-not-found.
Result<pid_t> app_pid_on(DisplayManager& dm, const std::string& app_id, const DisplayRef& ref) {
  auto a = dm.app(app_id);
  if (!a.ok()) return a.error();
  if (a->display_id != ref.id || a->generation != ref.generation) {
    return make_error("app-not-found", "that app does not run on this display generation");
  }
  return a->pid;
}

// Grabs `r` (already clamped) through the display's capturer, under its lock for the grab only.
Result<RawImage> grab(OwnedDisplay& d, const Rect& r) {
  if (!d.alive()) return display_dead_error();
  std::lock_guard lock(d.x_mutex());
  Capturer* capturer = display_capturer(d);
  if (!d.dpy() || !capturer) return display_dead_error();
  return capturer->grab_region(r.x, r.y, r.width, r.height);
}

Result<std::string> absolute_out(const JsonFields& f) {
  auto out = f.string("out", 1, 4096);
  if (!out.ok()) return out.error();
  if ((*out)[0] != '/' || out->find('\0') != std::string::npos) {
    return make_error(kArgs, "args: the output path must be absolute");
  }
  return *out;
}

}  // namespace

void register_window_ops(OpTable& ops, DisplayManager& dm) {
  DisplayManager* displays = &dm;

  ops["window.list"] = [displays](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"display_id", "generation", "app_id", "mapped_only"}));
    auto ref = display_ref_arg(f);
    if (!ref.ok()) return ref.error();
    std::optional<pid_t> tree;
    if (f.has("app_id")) {
      auto id = f.string("app_id", 1, 256);
      if (!id.ok()) return id.error();
      auto pid = app_pid_on(*displays, *id, *ref);
      if (!pid.ok()) return pid.error();
      tree = *pid;
    }
    bool mapped_only = false;
    if (f.has("mapped_only")) {
      auto b = f.boolean("mapped_only");
      if (!b.ok()) return b.error();
      mapped_only = *b;
    }
    auto d = live_display(*displays, *ref);
    if (!d.ok()) return d.error();
    auto conn = OwnConnection::open(**d);
    if (!conn.ok()) return conn.error();
    auto listed = list_windows((*conn)->get());
    if (!listed.ok()) return listed.error();
    Json windows = Json::array();
    for (const auto& w : listed->windows) {
      if (mapped_only && !w.mapped) continue;
      if (tree && !(w.pid && pid_in_tree(static_cast<pid_t>(*w.pid), *tree))) continue;
      windows.push_back(w.to_json());
    }
    return Json{{"windows", windows}, {"focus", listed->focus.to_json()}};
  };

  ops["window.wait"] = [displays](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"display_id", "generation", "title", "class", "pid", "app_id", "id",
                        "timeout_ms"}));
    auto ref = display_ref_arg(f);
    if (!ref.ok()) return ref.error();
    WindowMatch m;
    if (f.has("title")) {
      auto t = f.string("title", 1, kMaxMatchTextBytes);
      if (!t.ok()) return t.error();
      m.title = *t;
    }
    if (f.has("class")) {
      auto c = f.string("class", 1, 256);
      if (!c.ok()) return c.error();
      m.wm_class = *c;
    }
    if (f.has("pid") && f.has("app_id")) {
      return make_error(kArgs, "args: give a pid or an app id, not both");
    }
    if (f.has("pid")) {
      auto p = f.integer("pid", 1, 4194304);
      if (!p.ok()) return p.error();
      m.pid_tree = static_cast<pid_t>(*p);
    }
    if (f.has("app_id")) {
      auto id = f.string("app_id", 1, 256);
      if (!id.ok()) return id.error();
      auto pid = app_pid_on(*displays, *id, *ref);
      if (!pid.ok()) return pid.error();
      m.pid_tree = *pid;
    }
    if (f.has("id")) {
      auto w = f.integer("id", 1, 0xFFFFFFFFLL);
      if (!w.ok()) return w.error();
      m.id = static_cast<std::uint64_t>(*w);
    }
    auto timeout = int_or(f, "timeout_ms", 0, kMaxWaitMs, kDefaultWindowWaitMs);
    if (!timeout.ok()) return timeout.error();
    auto d = live_display(*displays, *ref);
    if (!d.ok()) return d.error();
    auto conn = OwnConnection::open(**d);
    if (!conn.ok()) return conn.error();
    auto r = wait_for_window((*conn)->get(), m, *timeout);
    if (!r.ok()) return r.error();
    bool managed = false;
    if (r->found) {
      if (auto keeper = (*d)->keeper()) {
        // The keeper acts on the map too: answer with the window as it left it (fitted, raised,
        // focused), so the caller can type at once (docs/windows.md, "Managed windows").
        managed = keeper->sync(WindowKeeper::kSyncBoundMs);
        auto again = list_windows((*conn)->get());
        if (!again.ok()) return again.error();
        for (const auto& w : again->windows) {
          if (w.id == r->window->id) r->window = w;
        }
      }
    }
    return Json{{"outcome", r->found ? "found" : "timeout"},
                {"elapsed_ms", r->elapsed_ms},
                {"window", r->window ? r->window->to_json() : Json(nullptr)},
                {"waited_for", describe_match(m)},
                {"seen", describe_scan(r->last_scan, false)},
                {"managed", managed}};
  };

  ops["window.capture"] = [displays](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"display_id", "generation", "id", "out"}));
    auto ref = display_ref_arg(f);
    if (!ref.ok()) return ref.error();
    auto id = f.integer("id", 1, 0xFFFFFFFFLL);
    if (!id.ok()) return id.error();
    auto out = absolute_out(f);
    if (!out.ok()) return out.error();
    auto d = live_display(*displays, *ref);
    if (!d.ok()) return d.error();
    std::optional<WindowInfo> target;
    {
      auto conn = OwnConnection::open(**d);
      if (!conn.ok()) return conn.error();
      auto listed = list_windows((*conn)->get());
      if (!listed.ok()) return listed.error();
      for (const auto& w : listed->windows) {
        if (w.id == static_cast<std::uint64_t>(*id) || w.frame == static_cast<std::uint64_t>(*id)) {
          target = w;
        }
      }
    }
    if (!target) {
      return make_error("window-not-found", "no top-level window with that id on this display");
    }
    if (!target->mapped) {
      return make_error("window-not-viewable", "the window is not mapped: it shows no pixels");
    }
    const Rect want{target->x, target->y, target->width, target->height};
    auto rect = clamp_rect(want, (*d)->info().width, (*d)->info().height);
    if (!rect) {
      return make_error("window-offscreen", "the window lies entirely outside the display");
    }
    auto img = grab(**d, *rect);
    if (!img.ok()) return img.error();
    auto png = encode_png(*img);
    if (!png.ok()) return png.error();
    if (auto st = write_file_atomic(*out, png->bytes, 0600); !st.ok()) {
      return make_error("screenshot-write-failed", st.error().message);
    }
    const bool clipped = rect->x != want.x || rect->y != want.y || rect->width != want.width ||
                         rect->height != want.height;
    return Json{{"png", {{"path", *out}, {"sha256", png->sha256},
                         {"byte_length", png->bytes.size()}, {"width", png->width},
                         {"height", png->height}}},
                {"window", target->to_json()},
                {"region", rect_json(*rect)},
                {"clipped", clipped}};
  };

  ops["window.focus"] = [displays](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"display_id", "generation", "id"}));
    auto ref = display_ref_arg(f);
    if (!ref.ok()) return ref.error();
    auto id = f.integer("id", 1, 0xFFFFFFFFLL);
    if (!id.ok()) return id.error();
    auto d = live_display(*displays, *ref);
    if (!d.ok()) return d.error();
    // Focus is input: like cu.actions, refused while a session (or a batch) holds the display.
    std::shared_ptr<OwnedDisplay> disp = *d;
    const std::string owner = random_id("window-focus");
    if (!disp->try_acquire_session(owner)) {
      return make_error("display-busy", "a session or an action batch holds this display");
    }
    struct Release {
      std::shared_ptr<OwnedDisplay> d;
      std::string owner;
      ~Release() { d->release_session(owner); }
    } release{disp, owner};
    auto conn = OwnConnection::open(*disp);
    if (!conn.ok()) return conn.error();
    auto focus = focus_window((*conn)->get(), static_cast<std::uint64_t>(*id));
    if (!focus.ok()) return focus.error();
    return Json{{"focus", focus->to_json()},
                {"focused", focus->top_level != 0}};
  };

  ops["wait.stable"] = [displays](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"display_id", "generation", "region", "quiet_ms", "timeout_ms"}));
    auto ref = display_ref_arg(f);
    if (!ref.ok()) return ref.error();
    auto region = region_arg(f, false);
    if (!region.ok()) return region.error();
    auto quiet = int_or(f, "quiet_ms", 1, kMaxQuietMs, kDefaultQuietMs);
    if (!quiet.ok()) return quiet.error();
    auto timeout = int_or(f, "timeout_ms", 1, kMaxWaitMs, kDefaultWaitMs);
    if (!timeout.ok()) return timeout.error();
    if (*quiet > *timeout) {
      return make_error(kArgs, "args: the quiet time must not exceed the timeout");
    }
    auto d = live_display(*displays, *ref);
    if (!d.ok()) return d.error();
    std::optional<Rect> rect;
    if (*region) {
      rect = clamp_rect(**region, (*d)->info().width, (*d)->info().height);
      if (!rect) return make_error(kArgs, "args: the region lies entirely outside the display");
    }
    auto conn = OwnConnection::open(**d);
    if (!conn.ok()) return conn.error();
    auto damage = RegionDamage::create((*conn)->get(), rect);
    if (!damage.ok()) return damage.error();
    const StableResult r = wait_stable(**damage, *quiet, *timeout);
    if (r.outcome == StableOutcome::kDead) return display_dead_error();
    return Json{{"outcome", to_string(r.outcome)},
                {"elapsed_ms", r.elapsed_ms},
                {"quiet_ms", *quiet},
                {"changes", r.changes},
                {"region", rect ? rect_json(*rect) : Json(nullptr)}};
  };

  ops["wait.image"] = [displays](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"display_id", "generation", "template", "region", "min_score_permille",
                        "timeout_ms"}));
    auto ref = display_ref_arg(f);
    if (!ref.ok()) return ref.error();
    auto region = region_arg(f, false);
    if (!region.ok()) return region.error();
    auto min_score = int_or(f, "min_score_permille", 1, 1000, kDefaultMinScorePermille);
    if (!min_score.ok()) return min_score.error();
    auto timeout = int_or(f, "timeout_ms", 0, kMaxWaitMs, kDefaultWaitMs);
    if (!timeout.ok()) return timeout.error();
    auto path = f.string("template", 1, 4096);
    if (!path.ok()) return path.error();
    if ((*path)[0] != '/' || path->find('\0') != std::string::npos) {
      return make_error(kArgs, "args: the template path must be absolute");
    }
    auto d = live_display(*displays, *ref);
    if (!d.ok()) return d.error();
    const int dw = (*d)->info().width, dh = (*d)->info().height;
    Rect rect{0, 0, dw, dh};
    if (*region) {
      auto clamped = clamp_rect(**region, dw, dh);
      if (!clamped) return make_error(kArgs, "args: the region lies entirely outside the display");
      rect = *clamped;
    }
    auto bytes = read_file(*path, kMaxReferenceFileBytes);
    if (!bytes.ok()) {
      return make_error("wait-reference-invalid",
                        "the template image cannot be read (missing, unreadable or over 64 MiB)");
    }
    auto templ = decode_png_rgb(*bytes, kMaxTemplatePixels);
    if (!templ.ok()) return templ.error();
    EVIDENT_TRY(validate_template(*templ));
    if (templ->width > rect.width || templ->height > rect.height) {
      return make_error("wait-reference-invalid",
                        "the template image is larger than the region searched (clipped to the "
                        "display)");
    }
    auto conn = OwnConnection::open(**d);
    if (!conn.ok()) return conn.error();
    // Watch first, then look: a change between the look and the wait is never missed.
    auto damage = RegionDamage::create((*conn)->get(), rect);
    if (!damage.ok()) return damage.error();
    const std::int64_t t0 = steady_us();
    const std::int64_t deadline = t0 + *timeout * 1000;
    int checks = 0;
    ImageMatch best;
    bool found = false;
    for (;;) {
      auto img = grab(**d, rect);
      if (!img.ok()) return img.error();
      ++checks;
      auto m = match_template(*img, *templ);
      if (!m.ok()) return m.error();
      best = *m;
      best.x += rect.x;
      best.y += rect.y;
      if (best.score_permille >= *min_score) {
        found = true;
        break;
      }
      const auto wake = (*damage)->wait_change(deadline);
      if (wake == RegionDamage::Wake::kDead) return display_dead_error();
      if (wake == RegionDamage::Wake::kTimeout) break;  // nothing changed since the last look
    }
    return Json{{"outcome", found ? "found" : "timeout"},
                {"elapsed_ms", (steady_us() - t0) / 1000},
                {"checks", checks},
                {"region", rect_json(rect)},
                {"min_score_permille", *min_score},
                {"best", best.to_json()},
                {"match", found ? best.to_json() : Json(nullptr)}};
  };

  ops["wait.pixels"] = [displays](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"display_id", "generation", "region", "color", "tolerance",
                        "min_permille", "reference", "max_pixels", "until", "timeout_ms"}));
    auto ref = display_ref_arg(f);
    if (!ref.ok()) return ref.error();
    auto region = region_arg(f, true);
    if (!region.ok()) return region.error();
    if (f.has("color") == f.has("reference")) {
      return make_error(kArgs, "args: give exactly one of a colour or a reference image");
    }
    auto tolerance = int_or(f, "tolerance", 0, 255, 0);
    if (!tolerance.ok()) return tolerance.error();
    auto timeout = int_or(f, "timeout_ms", 0, kMaxWaitMs, kDefaultWaitMs);
    if (!timeout.ok()) return timeout.error();
    ColorSpec color;
    RawImage reference;
    std::int64_t max_pixels = 0;
    const bool by_color = f.has("color");
    // "differs": the condition is the opposite one, the region no longer matching the reference
    // (what a caller that has just looked at the screen waits for: the next change after it).
    bool differs = false;
    if (f.has("until")) {
      auto until = f.string("until", 1, 16);
      if (!until.ok()) return until.error();
      if (*until != "matches" && *until != "differs") {
        return make_error(kArgs, "args: until must be matches or differs");
      }
      differs = *until == "differs";
      if (differs && by_color) return make_error(kArgs, "args: until differs applies to a reference image");
    }
    if (by_color) {
      if (f.has("max_pixels")) return make_error(kArgs, "args: max_pixels applies to a reference image");
      auto c = f.object("color");
      if (!c.ok()) return c.error();
      JsonFields cf(**c, kArgs, "color");
      EVIDENT_TRY(cf.only({"r", "g", "b"}));
      auto r = cf.integer("r", 0, 255);
      if (!r.ok()) return r.error();
      auto g = cf.integer("g", 0, 255);
      if (!g.ok()) return g.error();
      auto b = cf.integer("b", 0, 255);
      if (!b.ok()) return b.error();
      auto permille = int_or(f, "min_permille", 1, 1000, 1000);
      if (!permille.ok()) return permille.error();
      color = ColorSpec{static_cast<int>(*r), static_cast<int>(*g), static_cast<int>(*b),
                        static_cast<int>(*tolerance), static_cast<int>(*permille)};
    } else {
      if (f.has("min_permille")) return make_error(kArgs, "args: min_permille applies to a colour");
      auto mp = int_or(f, "max_pixels", 0, 67108864, 0);
      if (!mp.ok()) return mp.error();
      max_pixels = *mp;
    }
    auto d = live_display(*displays, *ref);
    if (!d.ok()) return d.error();
    const Rect want = **region;
    if (!by_color) {
      auto path = f.string("reference", 1, 4096);
      if (!path.ok()) return path.error();
      if ((*path)[0] != '/' || path->find('\0') != std::string::npos) {
        return make_error(kArgs, "args: the reference path must be absolute");
      }
      auto bytes = read_file(*path, kMaxReferenceFileBytes);
      if (!bytes.ok()) {
        return make_error("wait-reference-invalid",
                          "the reference image cannot be read (missing, unreadable or over 64 MiB)");
      }
      const std::int64_t screen =
          static_cast<std::int64_t>((*d)->info().width) * (*d)->info().height;
      auto decoded = decode_png_rgb(*bytes, screen);
      if (!decoded.ok()) return decoded.error();
      reference = std::move(*decoded);
      if (reference.width != want.width || reference.height != want.height) {
        return make_error("wait-reference-invalid",
                          "the region's size differs from the reference image's size");
      }
    }
    auto rect = clamp_rect(want, (*d)->info().width, (*d)->info().height);
    if (!rect) return make_error(kArgs, "args: the region lies entirely outside the display");
    if (!by_color && (rect->x != want.x || rect->y != want.y || rect->width != want.width ||
                      rect->height != want.height)) {
      return make_error(kArgs, "args: a reference image's region must lie inside the display");
    }
    auto conn = OwnConnection::open(**d);
    if (!conn.ok()) return conn.error();
    // Watch first, then look: a change between the look and the wait is never missed.
    auto damage = RegionDamage::create((*conn)->get(), *rect);
    if (!damage.ok()) return damage.error();
    const std::int64_t t0 = steady_us();
    const std::int64_t deadline = t0 + *timeout * 1000;
    int checks = 0;
    PixelVerdict last;
    std::string outcome = "timeout";
    for (;;) {
      auto img = grab(**d, *rect);
      if (!img.ok()) return img.error();
      ++checks;
      last = by_color ? compare_color(*img, color)
                      : compare_reference(*img, reference, static_cast<int>(*tolerance), max_pixels);
      if (last.matched != differs) {
        outcome = "matched";
        break;
      }
      const auto wake = (*damage)->wait_change(deadline);
      if (wake == RegionDamage::Wake::kDead) return display_dead_error();
      if (wake == RegionDamage::Wake::kTimeout) break;  // nothing changed since the last look
    }
    return Json{{"outcome", outcome},
                {"elapsed_ms", (steady_us() - t0) / 1000},
                {"checks", checks},
                {"until", differs ? "differs" : "matches"},
                {"region", rect_json(*rect)},
                {"last", last.to_json()}};
  };
}

}  // namespace evident
