// Waits without input: region DAMAGE, colour and reference-image checks (docs/windows.md).
#include "evident/capture/waits.h"

#include <X11/Xlib.h>
#include <X11/extensions/Xdamage.h>
#include <X11/extensions/Xfixes.h>
#include <png.h>
#include <poll.h>
#undef Status  // Xlib's macro would shadow evident::Status

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "evident/core/clock.h"

namespace evident {

std::optional<Rect> clamp_rect(const Rect& r, int width, int height) {
  if (r.width <= 0 || r.height <= 0) return std::nullopt;
  const long x0 = std::max<long>(0, r.x), y0 = std::max<long>(0, r.y);
  const long x1 = std::min<long>(width, static_cast<long>(r.x) + r.width);
  const long y1 = std::min<long>(height, static_cast<long>(r.y) + r.height);
  if (x1 <= x0 || y1 <= y0) return std::nullopt;
  return Rect{static_cast<int>(x0), static_cast<int>(y0), static_cast<int>(x1 - x0),
              static_cast<int>(y1 - y0)};
}

const char* to_string(StableOutcome o) {
  switch (o) {
    case StableOutcome::kStable: return "stable";
    case StableOutcome::kTimeout: return "timeout";
    case StableOutcome::kDead: return "display_dead";
  }
  return "timeout";
}

// ------------------------------------------------------------------------------ RegionDamage

RegionDamage::RegionDamage(::Display* dpy, int event_base, std::optional<Rect> region)
    : dpy_(dpy), event_base_(event_base), region_(region) {
  damage_ = XDamageCreate(dpy_, DefaultRootWindow(dpy_), XDamageReportNonEmpty);
  parts_ = XFixesCreateRegion(dpy_, nullptr, 0);
  // Start empty: whatever was drawn before the call is not a change during the wait.
  XDamageSubtract(dpy_, damage_, None, None);
  XSync(dpy_, False);
  drain();
}

RegionDamage::~RegionDamage() {
  XDamageDestroy(dpy_, damage_);
  XFixesDestroyRegion(dpy_, parts_);
  XFlush(dpy_);
}

Result<std::unique_ptr<RegionDamage>> RegionDamage::create(::Display* dpy,
                                                           std::optional<Rect> region) {
  if (dpy == nullptr) return make_error("capture-unavailable", "no display connection");
  int damage_event = 0, damage_error = 0, fixes_event = 0, fixes_error = 0, major = 0, minor = 0;
  if (!XDamageQueryExtension(dpy, &damage_event, &damage_error) ||
      !XFixesQueryExtension(dpy, &fixes_event, &fixes_error) ||
      !XFixesQueryVersion(dpy, &major, &minor) || major < 2 ||
      !XDamageQueryVersion(dpy, &major, &minor) || major < 1) {
    return make_error("capture-unavailable", "the X server lacks DAMAGE or XFixes regions");
  }
  return std::unique_ptr<RegionDamage>(new RegionDamage(dpy, damage_event, region));
}

int RegionDamage::drain() {
  XEventsQueued(dpy_, QueuedAfterFlush);
  int n = 0;
  XEvent ev;
  // This connection is ours: everything in its queue is DAMAGE (or nothing we need).
  while (XPending(dpy_) > 0) {
    XNextEvent(dpy_, &ev);
    if (ev.type == event_base_ + XDamageNotify) ++n;
  }
  return n;
}

bool RegionDamage::take_damage() {
  XDamageSubtract(dpy_, damage_, None, parts_);  // also re-arms the non-empty report
  int count = 0;
  XRectangle* rects = XFixesFetchRegion(dpy_, parts_, &count);
  bool hit = false;
  for (int i = 0; rects && i < count && !hit; ++i) {
    if (!region_) {
      hit = true;
      break;
    }
    const Rect& r = *region_;
    const long ax0 = rects[i].x, ay0 = rects[i].y;
    const long ax1 = ax0 + rects[i].width, ay1 = ay0 + rects[i].height;
    hit = ax0 < static_cast<long>(r.x) + r.width && r.x < ax1 &&
          ay0 < static_cast<long>(r.y) + r.height && r.y < ay1;
  }
  if (rects) XFree(rects);
  return hit;
}

bool RegionDamage::changed_now() {
  drain();
  return take_damage();
}

RegionDamage::Wake RegionDamage::wait_change(std::int64_t deadline_us) {
  const int fd = ConnectionNumber(dpy_);
  for (;;) {
    // Always look at the accumulated damage, not only when a notify arrived: a notify drained
    // earlier (e.g. by the constructor, for damage after its subtract) is not sent again until
    // the damage is subtracted, so skipping take_damage() here would miss every later change.
    drain();
    if (take_damage()) return Wake::kChanged;
    const std::int64_t left = deadline_us - steady_us();
    if (left <= 0) return Wake::kTimeout;
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>((left + 999) / 1000));
    if (n > 0 && (p.revents & (POLLHUP | POLLERR))) return Wake::kDead;
  }
}

StableResult wait_stable(RegionDamage& damage, std::int64_t quiet_ms, std::int64_t timeout_ms) {
  StableResult r;
  const std::int64_t t0 = steady_us();
  const std::int64_t deadline = t0 + timeout_ms * 1000;
  std::int64_t last_change = t0;
  for (;;) {
    const std::int64_t quiet_at = last_change + quiet_ms * 1000;
    const auto wake = damage.wait_change(std::min(quiet_at, deadline));
    const std::int64_t now = steady_us();
    if (wake == RegionDamage::Wake::kDead) {
      r.outcome = StableOutcome::kDead;
      break;
    }
    if (wake == RegionDamage::Wake::kChanged) {
      ++r.changes;
      last_change = now;
      if (now >= deadline) {
        r.outcome = StableOutcome::kTimeout;
        break;
      }
      continue;
    }
    // Timed out waiting for a change: quiet reached, or the deadline.
    if (now >= last_change + quiet_ms * 1000) {
      // A last round trip: damage that arrived without its event reaching us yet counts.
      if (damage.changed_now()) {
        ++r.changes;
        last_change = steady_us();
        if (last_change >= deadline) {
          r.outcome = StableOutcome::kTimeout;
          break;
        }
        continue;
      }
      r.outcome = StableOutcome::kStable;
      break;
    }
    if (now >= deadline) {
      r.outcome = StableOutcome::kTimeout;
      break;
    }
  }
  r.elapsed_ms = (steady_us() - t0) / 1000;
  return r;
}

// ---------------------------------------------------------------------------------- pixels

Json PixelVerdict::to_json() const {
  return Json{{"matching", matching}, {"total", total}, {"max_channel_diff", max_channel_diff}};
}

PixelVerdict compare_color(const RawImage& image, const ColorSpec& c) {
  PixelVerdict v;
  v.total = static_cast<std::int64_t>(image.width) * image.height;
  const std::uint8_t* p = image.rgb.data();
  for (std::int64_t i = 0; i < v.total; ++i, p += 3) {
    const int d = std::max({std::abs(p[0] - c.r), std::abs(p[1] - c.g), std::abs(p[2] - c.b)});
    v.max_channel_diff = std::max(v.max_channel_diff, d);
    if (d <= c.tolerance) ++v.matching;
  }
  v.matched = v.total > 0 && v.matching * 1000 >= static_cast<std::int64_t>(c.min_permille) * v.total;
  return v;
}

PixelVerdict compare_reference(const RawImage& image, const RawImage& ref, int tolerance,
                               std::int64_t max_pixels) {
  PixelVerdict v;
  if (image.width != ref.width || image.height != ref.height) return v;
  v.total = static_cast<std::int64_t>(image.width) * image.height;
  const std::uint8_t* a = image.rgb.data();
  const std::uint8_t* b = ref.rgb.data();
  for (std::int64_t i = 0; i < v.total; ++i, a += 3, b += 3) {
    const int d = std::max({std::abs(a[0] - b[0]), std::abs(a[1] - b[1]), std::abs(a[2] - b[2])});
    v.max_channel_diff = std::max(v.max_channel_diff, d);
    if (d <= tolerance) ++v.matching;
  }
  v.matched = v.total > 0 && v.total - v.matching <= max_pixels;
  return v;
}

Result<RawImage> decode_png_rgb(const std::string& bytes, std::int64_t max_pixels) {
  auto bad = [](const std::string& why) {
    return make_error("wait-reference-invalid", "the reference image is not usable: " + why);
  };
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, bytes.data(), bytes.size())) {
    png_image_free(&img);
    return bad("not a readable PNG");
  }
  if (img.width == 0 || img.height == 0 ||
      static_cast<std::int64_t>(img.width) * img.height > max_pixels) {
    png_image_free(&img);
    return bad("its size is empty or larger than the display");
  }
  img.format = PNG_FORMAT_RGB;
  RawImage out;
  out.width = static_cast<int>(img.width);
  out.height = static_cast<int>(img.height);
  out.rgb.resize(PNG_IMAGE_SIZE(img));
  png_color black{0, 0, 0};
  if (!png_image_finish_read(&img, &black, out.rgb.data(), 0, nullptr)) {
    png_image_free(&img);
    return bad("its pixel data is corrupt");
  }
  png_image_free(&img);
  return out;
}

}  // namespace evident
