// Full-display frames: capture (MIT-SHM, fallback XGetImage), deterministic PNG, SHA-256;
// and change watching (DAMAGE) for settle.
// (Interface agreed between modules; the capture module implements it.)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "evident/core/status.h"

typedef struct _XDisplay Display;  // Xlib

namespace evident {

struct RawImage {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> rgb;  // tightly packed RGB, 3 bytes per pixel, row-major
};

struct PngFrame {
  std::string bytes;   // the exact PNG file bytes
  std::string sha256;  // lowercase hex of bytes
  int width = 0;
  int height = 0;
};

// Encodes a deterministic PNG (no time/text chunks; same pixels -> same bytes). "png-encode-failed".
Result<PngFrame> encode_png(const RawImage& image);

// Grabs the root window of an X connection. The caller owns `dpy`, keeps it open for the
// Capturer's lifetime and serialises all use of `dpy` (one mutex per display).
class Capturer {
 public:
  virtual ~Capturer() = default;
  // "capture-unavailable" when the display cannot be read at all.
  static Result<std::unique_ptr<Capturer>> create(::Display* dpy);
  // The full display. "capture-failed".
  virtual Result<RawImage> grab() = 0;
  // A rectangle, already clamped by the caller. "capture-failed".
  virtual Result<RawImage> grab_region(int x, int y, int width, int height) = 0;
  // grab() + encode_png().
  virtual Result<PngFrame> capture_png() = 0;
  virtual bool using_shm() const = 0;
};

enum class SettleOutcome { kSettled, kStillLoading, kFixed, kOff };
const char* to_string(SettleOutcome o);  // "settled" | "still_loading" | "fixed" | "off"

// Watches the root window for changes (DAMAGE; a frame fingerprint where DAMAGE is missing).
class ChangeWatcher {
 public:
  virtual ~ChangeWatcher() = default;
  // "capture-unavailable".
  static Result<std::unique_ptr<ChangeWatcher>> create(::Display* dpy);
  // Forgets changes seen so far; call at the anchor (right after the last input action).
  virtual void reset() = 0;
  // Waits until no change for `quiet_ms` (returns kSettled) or until `cap_ms` after `anchor_us`
  // (steady_us() clock) passes with changes still arriving (kStillLoading). Never sleeps blindly:
  // blocks on the X connection with poll() and a deadline. The caller holds the display lock
  // only while this runs.
  virtual SettleOutcome wait_settled(std::int64_t anchor_us, std::int64_t quiet_ms,
                                     std::int64_t cap_ms) = 0;
};

}  // namespace evident
