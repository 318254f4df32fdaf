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

// PNG scanline filter applied to every row (one fixed choice keeps the output deterministic).
enum class PngFilter { kNone, kSub, kUp };

// The deflate implementation behind the PNG bands. Either way the bytes depend only on the pixels
// and PngOptions (band_rows, level, filter, deflater), never on `threads` or on where buffers sit
// in memory; they can differ between builds (ISA-L present or not, ISA-L version, CPU SIMD
// level), which is why receipts bind the bytes themselves.
enum class PngDeflater {
  kZlib,  // zlib (levels 0..9)
  // ISA-L igzip (levels 0..3), ~5x faster than zlib level 1; served by zlib at the same level if
  // the build has no ISA-L. The default.
  kIsal,
};

// Encoder knobs (docs/capture.md has the measurements behind the defaults).
struct PngOptions {
  int band_rows = 32;                  // rows per independently deflated band (1..height)
  int level = 1;                       // 0..9 for kZlib, 0..3 for kIsal
  PngFilter filter = PngFilter::kSub;
  PngDeflater deflater = PngDeflater::kIsal;
  int threads = 0;                     // 0: the shared pool; 1: the calling thread only
};

// encode_png with explicit options. "png-encode-failed" (also for invalid options or image).
Result<PngFrame> encode_png(const RawImage& image, const PngOptions& options);

// A private SysV shared-memory segment whose pages are already populated. The display layer
// makes one while Xvfb is still starting, so the first frame does not pay for fresh pages on the
// critical path (docs/displays.md, "first frame"). Move-only; an unused segment removes itself.
class ShmSegment {
 public:
  // With `populate`, the pages are populated now (MADV_POPULATE_WRITE where the kernel has it;
  // else they fault later, as without it): worth it only off the critical path, since the
  // server's first write into fresh pages costs less than populating them here and then writing.
  // "capture-unavailable" when no segment can be made.
  static Result<ShmSegment> create(std::size_t size, bool populate);
  ShmSegment() = default;
  ShmSegment(ShmSegment&& other) noexcept { *this = std::move(other); }
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ~ShmSegment();
  int id() const { return id_; }
  std::uint8_t* addr() const { return addr_; }
  std::size_t size() const { return size_; }
  // Hands the segment over (the capturer detaches and removes it); this object becomes empty.
  void release() { id_ = -1; addr_ = nullptr; size_ = 0; }

 private:
  int id_ = -1;
  std::uint8_t* addr_ = nullptr;
  std::size_t size_ = 0;
};

// Options for Capturer::create.
struct CaptureOptions {
  // false forces the XGetImage path (as does the environment variable EVIDENT_CAPTURE_NO_SHM=1).
  bool allow_shm = true;
  // capture_png() re-deflates only the bands of rows that changed since its previous frame
  // (the bytes are identical either way; false is for measuring the cold path).
  bool reuse_bands = true;
  // A prepared segment to use for MIT-SHM when it is large enough (it is then taken: moved from);
  // otherwise the capturer makes its own and leaves this one alone.
  ShmSegment* shm = nullptr;
  // create() reads one pixel before it hands the capturer out, proving the display can be read.
  // false: the caller proves it itself with a whole frame right away (fetch_frame(), as a
  // display's readiness does), and the one-pixel read would only cost a round trip.
  bool probe = true;
};

// Grabs the root window of an X connection. The caller owns `dpy`, keeps it open for the
// Capturer's lifetime and serialises all use of `dpy` (one mutex per display).
class Capturer {
 public:
  virtual ~Capturer() = default;
  // "capture-unavailable" when the display cannot be read at all.
  static Result<std::unique_ptr<Capturer>> create(::Display* dpy);
  // create() with options. "capture-unavailable".
  static Result<std::unique_ptr<Capturer>> create(::Display* dpy, const CaptureOptions& options);
  // The full display. "capture-failed".
  virtual Result<RawImage> grab() = 0;
  // A rectangle, already clamped by the caller. "capture-failed".
  virtual Result<RawImage> grab_region(int x, int y, int width, int height) = 0;
  // grab() + encode_png() in one pass (default PngOptions); bands whose rows did not change since
  // this capturer's previous frame are reused (same bytes as a fresh encode).
  // "capture-failed", "png-encode-failed".
  virtual Result<PngFrame> capture_png() = 0;
  // Reads the full display into the capturer's own buffer (the MIT-SHM segment, or the GetImage
  // copy) without converting or encoding it: proves the whole framebuffer is readable through
  // this capturer at a fraction of grab()'s cost (display readiness uses it). "capture-failed".
  virtual Status fetch_frame() = 0;
  // True when frames come through MIT-SHM; false for the GetImage fallback.
  virtual bool using_shm() const = 0;
};

// Converts one row of server pixels to packed RGB. Exposed for unit tests of the pixel paths.
struct PixelFormat {
  int bits_per_pixel = 32;      // 16, 24 or 32
  bool msb_first = false;       // server image byte order
  std::uint32_t red_mask = 0xff0000, green_mask = 0xff00, blue_mask = 0xff;
};
// `src` holds `width` pixels in `format`; writes 3*width bytes to `dst`.
void convert_row_to_rgb(const PixelFormat& format, const std::uint8_t* src, int width,
                        std::uint8_t* dst);

enum class SettleOutcome { kSettled, kStillLoading, kFixed, kOff };
const char* to_string(SettleOutcome o);  // "settled" | "still_loading" | "fixed" | "off"

// Options for ChangeWatcher::create.
struct WatchOptions {
  // false forces the frame-fingerprint fallback (as does EVIDENT_SETTLE_NO_DAMAGE=1).
  bool allow_damage = true;
};

// Watches the root window for changes (DAMAGE; a frame fingerprint where DAMAGE is missing).
class ChangeWatcher {
 public:
  virtual ~ChangeWatcher() = default;
  // "capture-unavailable" (only when neither DAMAGE nor a capture for the fingerprint works).
  static Result<std::unique_ptr<ChangeWatcher>> create(::Display* dpy);
  // create() with options. "capture-unavailable".
  static Result<std::unique_ptr<ChangeWatcher>> create(::Display* dpy, const WatchOptions& options);
  // True when DAMAGE drives the watcher; false for the frame-fingerprint fallback.
  virtual bool using_damage() const = 0;
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
