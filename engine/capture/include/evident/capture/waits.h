// Waits without input (docs/windows.md): a region that stays quiet (DAMAGE), and pixel checks
// (a colour with tolerance, a reference image with a bounded difference). The DAMAGE side runs
// on a connection the caller owns, so a wait never holds the display's shared connection.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "evident/capture/capture.h"
#include "evident/core/json.h"
#include "evident/core/status.h"

typedef struct _XDisplay Display;  // Xlib

namespace evident {

struct Rect {
  int x = 0, y = 0, width = 0, height = 0;
};

// Clamps `r` to a width x height screen; nullopt when nothing of it is on screen or it is empty.
std::optional<Rect> clamp_rect(const Rect& r, int width, int height);

// DAMAGE on the root window of a caller-owned connection, filtered to one region (or the whole
// screen). Non-empty report mode: one event per burst; the accumulated damage is fetched into a
// region and tested against ours.
class RegionDamage {
 public:
  // "capture-unavailable" when the server lacks DAMAGE 1.x or XFixes 2.x.
  static Result<std::unique_ptr<RegionDamage>> create(::Display* dpy, std::optional<Rect> region);
  ~RegionDamage();
  RegionDamage(const RegionDamage&) = delete;
  RegionDamage& operator=(const RegionDamage&) = delete;

  enum class Wake { kChanged, kTimeout, kDead };
  // Blocks (poll on the connection, no sleeps) until damage that intersects the region is
  // reported, or `deadline_us` (steady_us clock) passes.
  Wake wait_change(std::int64_t deadline_us);
  // Non-blocking: true if damage intersecting the region accumulated since the last call (one
  // round trip).
  bool changed_now();

 private:
  RegionDamage(::Display* dpy, int event_base, std::optional<Rect> region);
  bool take_damage();  // subtracts into parts_, true if any rect meets the region
  int drain();
  ::Display* dpy_;
  int event_base_;
  std::optional<Rect> region_;
  unsigned long damage_ = 0;
  unsigned long parts_ = 0;
};

enum class StableOutcome { kStable, kTimeout, kDead };
const char* to_string(StableOutcome o);  // "stable" | "timeout" | "display_dead"

struct StableResult {
  StableOutcome outcome = StableOutcome::kTimeout;
  std::int64_t elapsed_ms = 0;
  int changes = 0;  // change bursts seen in the region during the wait
};

// Waits until the region shows no change for `quiet_ms`, counted from the call (so an idle screen
// is "stable" after exactly quiet_ms), or `timeout_ms` passes with changes still arriving.
StableResult wait_stable(RegionDamage& damage, std::int64_t quiet_ms, std::int64_t timeout_ms);

// A colour to look for: every channel within `tolerance` (0..255) of r,g,b.
struct ColorSpec {
  int r = 0, g = 0, b = 0;
  int tolerance = 0;
  int min_permille = 1000;  // the share of the region's pixels that must match (1..1000)
};

struct PixelVerdict {
  bool matched = false;
  std::int64_t matching = 0;   // pixels within tolerance
  std::int64_t total = 0;      // pixels compared
  int max_channel_diff = 0;    // the largest per-channel difference seen
  Json to_json() const;        // {"matching","total","max_channel_diff"}
};

// Pure: does `image` show the colour (at least min_permille of its pixels within tolerance)?
PixelVerdict compare_color(const RawImage& image, const ColorSpec& color);
// Pure: pixels of `image` that differ from `reference` (same size) by more than `tolerance` on
// some channel; matched when there are at most `max_pixels` of them.
PixelVerdict compare_reference(const RawImage& image, const RawImage& reference, int tolerance,
                               std::int64_t max_pixels);

// Template search (docs/windows.md, "Finding an image"): OpenCV's matchTemplate with
// TM_CCOEFF_NORMED (the normalised correlation coefficient, 1 for an exact copy, insensitive to a
// uniform brightness change) over the three channels.
struct ImageMatch {
  int x = 0, y = 0;           // top-left of the best match, in the searched image
  int width = 0, height = 0;  // the template's size
  int score_permille = 0;     // the best score, floor(1000 * coefficient), -1000..1000
  Json to_json() const;       // {"x","y","width","height","score_permille"}
};

// Limits of a template search (checked before any work; the template must also fit in the
// searched region): at most kMaxTemplatePixels template pixels and kMaxSearchPixels searched.
inline constexpr std::int64_t kMaxTemplatePixels = 1024 * 1024;
inline constexpr std::int64_t kMaxSearchPixels = 4096 * 4096;

// Checks a template before a search: non-empty, within kMaxTemplatePixels, and not of one colour
// (a flat template has no correlation coefficient: it would match anywhere or nowhere).
// "wait-reference-invalid".
Status validate_template(const RawImage& templ);

// Pure: the best match of `templ` in `image` (which must be at least as large in both directions
// and within kMaxSearchPixels). "wait-reference-invalid" when it does not fit, "internal" when
// OpenCV fails.
Result<ImageMatch> match_template(const RawImage& image, const RawImage& templ);

// Decodes a PNG (any colour type libpng reads; alpha is dropped after compositing on black) to
// packed RGB. Refused before decoding when larger than max_pixels. "wait-reference-invalid".
Result<RawImage> decode_png_rgb(const std::string& bytes, std::int64_t max_pixels);

}  // namespace evident
