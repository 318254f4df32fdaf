// Root-window capture through XCB on the caller's Xlib connection. XCB is used (rather than
// XShmGetImage/XGetImage) because its checked requests return X errors as values: Xlib would
// route them to the process-wide error handler, whose default exits the process.
#include <X11/Xlib-xcb.h>
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <xcb/shm.h>
#include <xcb/xcb.h>
#undef Status  // Xlib's macro would shadow evident::Status

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "evident/capture/capture.h"
#include "png_encoder.h"
#include "thread_pool.h"

namespace evident {
namespace {

Error unavailable(const std::string& why) { return make_error("capture-unavailable", why); }
Error failed(const std::string& why) { return make_error("capture-failed", why, true); }

// MADV_POPULATE_WRITE (Linux 5.14); older kernels answer EINVAL and the pages fault later.
#ifdef MADV_POPULATE_WRITE
constexpr int kMadvPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kMadvPopulateWrite = 23;
#endif

bool env_forces_no_shm() {
  const char* v = std::getenv("EVIDENT_CAPTURE_NO_SHM");
  return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
}

// Rows of the grabbed server image, converted into 64-row stripes in parallel.
constexpr int kConvertRows = 64;

// capture_png() asks the server for the frame in this many horizontal strips.
constexpr int kGrabStrips = 4;

// A full-frame MIT-SHM grab requested as a few strips at once (each into its own place in the
// shared segment), so the first bands are encoded while the server is still copying the rest:
// the copy happens in the X server's process and would otherwise leave our workers idle. Strip
// replies are collected in order by whichever worker first needs their rows.
class StripGrab {
 public:
  StripGrab(xcb_connection_t* conn, xcb_window_t root, xcb_shm_seg_t seg, int width, int height,
            std::size_t stride, int strip_rows)
      : conn_(conn), stride_(stride), height_(height) {
    for (int y = 0; y < height; y += strip_rows) {
      const int rows = std::min(strip_rows, height - y);
      cookies_.push_back(xcb_shm_get_image(conn, root, 0, static_cast<std::int16_t>(y),
                                           static_cast<std::uint16_t>(width),
                                           static_cast<std::uint16_t>(rows), ~0u,
                                           XCB_IMAGE_FORMAT_Z_PIXMAP, seg,
                                           static_cast<std::uint32_t>(stride * y)));
      ends_.push_back(y + rows);
    }
    xcb_flush(conn);
  }
  StripGrab(const StripGrab&) = delete;
  StripGrab& operator=(const StripGrab&) = delete;
  ~StripGrab() { (void)finish(); }

  // Returns once rows [0, y_end) are in the segment (or a strip failed: then the rows are stale
  // and finish() reports it; callers go on and the frame is discarded).
  void wait_rows(int y_end) {
    if (y_end <= ready_.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> lock(mu_);
    while (ready_.load(std::memory_order_relaxed) < y_end && next_ < cookies_.size()) collect_one();
  }

  // Collects every outstanding reply. False if any strip failed or came back short.
  bool finish() {
    std::lock_guard<std::mutex> lock(mu_);
    while (next_ < cookies_.size()) collect_one();
    return !failed_;
  }

 private:
  void collect_one() {
    xcb_generic_error_t* err = nullptr;
    xcb_shm_get_image_reply_t* reply = xcb_shm_get_image_reply(conn_, cookies_[next_], &err);
    const int y0 = next_ == 0 ? 0 : ends_[next_ - 1];
    if (reply == nullptr || reply->size < stride_ * static_cast<std::size_t>(ends_[next_] - y0)) {
      failed_ = true;
    }
    std::free(reply);
    std::free(err);
    ++next_;
    ready_.store(failed_ ? height_ : ends_[next_ - 1], std::memory_order_release);
  }

  xcb_connection_t* conn_;
  std::size_t stride_;
  int height_;
  std::vector<xcb_shm_get_image_cookie_t> cookies_;
  std::vector<int> ends_;  // first row after each strip
  std::mutex mu_;
  std::size_t next_ = 0;   // next reply to collect (under mu_)
  bool failed_ = false;    // under mu_
  std::atomic<int> ready_{0};
};

class XcbCapturer final : public Capturer {
 public:
  XcbCapturer(::Display* dpy, xcb_connection_t* conn, xcb_window_t root, int width, int height,
              PixelFormat format, int scanline_pad)
      : dpy_(dpy), conn_(conn), root_(root), width_(width), height_(height), format_(format),
        scanline_pad_(scanline_pad) {}

  ~XcbCapturer() override {
    if (shm_addr_ != nullptr) {
      if (shm_attached_) {
        xcb_shm_detach(conn_, shm_seg_);
        xcb_flush(conn_);
      }
      shmdt(shm_addr_);
    }
  }

  // Attaches a private segment large enough for the whole root: `prepared` when it is (taken),
  // else a new one. The segment is marked for removal as soon as the server holds it, so it
  // disappears with the last detach (or a crash).
  Status init_shm(ShmSegment* prepared) {
    const xcb_query_extension_reply_t* ext = xcb_get_extension_data(conn_, &xcb_shm_id);
    if (ext == nullptr || !ext->present) return unavailable("MIT-SHM is not present");
    const std::size_t size = stride(width_) * static_cast<std::size_t>(height_);
    ShmSegment own;
    if (prepared == nullptr || prepared->size() < size) {
      auto made = ShmSegment::create(size, false);
      if (!made.ok()) return made.error();
      own = std::move(*made);
      prepared = &own;
    }
    const int id = prepared->id();
    shm_addr_ = prepared->addr();
    prepared->release();  // ours now: detached in the destructor, removed just below
    shm_seg_ = xcb_generate_id(conn_);
    xcb_void_cookie_t cookie = xcb_shm_attach_checked(conn_, shm_seg_, static_cast<std::uint32_t>(id), 0);
    xcb_generic_error_t* err = xcb_request_check(conn_, cookie);
    shmctl(id, IPC_RMID, nullptr);
    if (err != nullptr) {
      std::free(err);
      return unavailable("the X server refused the shared segment");
    }
    shm_attached_ = true;
    return ok_status();
  }

  bool using_shm() const override { return shm_attached_; }

  Result<RawImage> grab() override { return grab_region(0, 0, width_, height_); }

  Status fetch_frame() override {
    auto pixels = fetch(0, 0, width_, height_);
    if (!pixels.ok()) return pixels.error();
    return ok_status();
  }

  Result<RawImage> grab_region(int x, int y, int width, int height) override {
    auto pixels = fetch(x, y, width, height);
    if (!pixels.ok()) return pixels.error();
    RawImage image;
    image.width = width;
    image.height = height;
    image.rgb.resize(static_cast<std::size_t>(width) * height * 3);
    const std::uint8_t* src = *pixels;
    const std::size_t src_stride = stride(width);
    const std::size_t dst_stride = static_cast<std::size_t>(width) * 3;
    std::uint8_t* dst = image.rgb.data();
    const int stripes = (height + kConvertRows - 1) / kConvertRows;
    detail::parallel_for(stripes, [&](int s) {
      int y1 = std::min(height, (s + 1) * kConvertRows);
      for (int row = s * kConvertRows; row < y1; ++row) {
        convert_row_to_rgb(format_, src + src_stride * row, width, dst + dst_stride * row);
      }
    });
    return image;
  }

  // Bands whose server rows equal the previous capture's are not recompressed: between actions
  // most of the screen stays the same. Reuse is decided by comparing the rows themselves (not
  // by DAMAGE), so a reused band is byte-identical to a fresh encode by construction.
  Result<PngFrame> capture_png() override {
    const PngOptions options;
    const std::uint8_t* src = nullptr;
    std::unique_ptr<StripGrab> strips;
    if (shm_attached_) {
      // Strips of whole bands, so a band never waits for two strips.
      const int band_rows = options.band_rows;
      const int bands = (height_ + band_rows - 1) / band_rows;
      const int strip_rows = (bands + kGrabStrips - 1) / kGrabStrips * band_rows;
      strips = std::make_unique<StripGrab>(conn_, root_, shm_seg_, width_, height_,
                                           stride(width_), strip_rows);
      src = shm_addr_;
    } else {
      auto pixels = fetch(0, 0, width_, height_);
      if (!pixels.ok()) return pixels.error();
      src = *pixels;
    }
    StripGrab* grab = strips.get();
    auto wait_rows = [grab](int y_end) {
      if (grab != nullptr) grab->wait_rows(y_end);
    };
    const std::size_t src_stride = stride(width_);
    const PixelFormat format = format_;
    const int width = width_;
    const std::size_t frame_bytes = src_stride * static_cast<std::size_t>(height_);
    if (previous_.size() != frame_bytes) {
      previous_.assign(frame_bytes, 0);
      bands_.clear();
    }
    std::uint8_t* previous = previous_.data();
    detail::BandReuse reuse;
    reuse.cache = &bands_;
    reuse.unchanged = [&](int, int y0, int y1) {
      wait_rows(y1);
      // With the "up" filter a band's first row is coded against the row above it.
      int from = options.filter == PngFilter::kUp && y0 > 0 ? y0 - 1 : y0;
      std::size_t at = src_stride * static_cast<std::size_t>(from);
      return std::memcmp(src + at, previous + at, src_stride * static_cast<std::size_t>(y1 - from)) == 0;
    };
    reuse.encoded = [&](int, int y0, int y1) {
      std::size_t at = src_stride * static_cast<std::size_t>(y0);
      std::memcpy(previous + at, src + at, src_stride * static_cast<std::size_t>(y1 - y0));
    };
    // Conversion runs inside the band workers: one pass over the pixels instead of two.
    auto frame = detail::encode_png_rows(
        width_, height_,
        [src, src_stride, format, width, &wait_rows](int row, std::uint8_t* scratch) {
          wait_rows(row + 1);
          convert_row_to_rgb(format, src + src_stride * row, width, scratch);
          return static_cast<const std::uint8_t*>(scratch);
        },
        options, reuse_bands_ ? &reuse : nullptr);
    if (grab != nullptr && !grab->finish()) {
      // Bands may have been built (and rows remembered) from stale segment contents.
      bands_.clear();
      previous_.clear();
      return failed("XShmGetImage failed or returned a short image");
    }
    return frame;
  }

  void set_band_reuse(bool on) { reuse_bands_ = on; }

 private:
  std::size_t stride(int width) const {
    std::size_t bits = static_cast<std::size_t>(width) * format_.bits_per_pixel;
    std::size_t pad = static_cast<std::size_t>(scanline_pad_);
    return (bits + pad - 1) / pad * pad / 8;
  }

  // Returns the server's Z-pixmap bytes for the rectangle (valid until the next fetch).
  Result<const std::uint8_t*> fetch(int x, int y, int width, int height) {
    if (x < 0 || y < 0 || width <= 0 || height <= 0 || x + width > width_ ||
        y + height > height_) {
      return failed("region outside the display");
    }
    xcb_generic_error_t* err = nullptr;
    if (shm_attached_) {
      auto cookie = xcb_shm_get_image(conn_, root_, static_cast<std::int16_t>(x),
                                      static_cast<std::int16_t>(y), static_cast<std::uint16_t>(width),
                                      static_cast<std::uint16_t>(height), ~0u,
                                      XCB_IMAGE_FORMAT_Z_PIXMAP, shm_seg_, 0);
      xcb_shm_get_image_reply_t* reply = xcb_shm_get_image_reply(conn_, cookie, &err);
      if (reply == nullptr) {
        std::free(err);
        return failed("XShmGetImage failed");
      }
      bool size_ok = reply->size >= stride(width) * static_cast<std::size_t>(height);
      std::free(reply);
      if (!size_ok) return failed("XShmGetImage returned a short image");
      return static_cast<const std::uint8_t*>(shm_addr_);
    }
    auto cookie = xcb_get_image(conn_, XCB_IMAGE_FORMAT_Z_PIXMAP, root_,
                                static_cast<std::int16_t>(x), static_cast<std::int16_t>(y),
                                static_cast<std::uint16_t>(width),
                                static_cast<std::uint16_t>(height), ~0u);
    xcb_get_image_reply_t* reply = xcb_get_image_reply(conn_, cookie, &err);
    if (reply == nullptr) {
      std::free(err);
      return failed("GetImage failed");
    }
    std::size_t need = stride(width) * static_cast<std::size_t>(height);
    std::size_t got = static_cast<std::size_t>(xcb_get_image_data_length(reply));
    if (got < need) {
      std::free(reply);
      return failed("GetImage returned a short image");
    }
    fallback_.assign(xcb_get_image_data(reply), xcb_get_image_data(reply) + need);
    std::free(reply);
    return static_cast<const std::uint8_t*>(fallback_.data());
  }

  ::Display* dpy_;
  xcb_connection_t* conn_;
  xcb_window_t root_;
  int width_;
  int height_;
  PixelFormat format_;
  int scanline_pad_;
  std::uint8_t* shm_addr_ = nullptr;
  xcb_shm_seg_t shm_seg_ = 0;
  bool shm_attached_ = false;
  std::vector<std::uint8_t> fallback_;
  bool reuse_bands_ = true;
  std::vector<std::uint8_t> previous_;           // server rows the cached bands were built from
  std::vector<detail::EncodedBand> bands_;
};

}  // namespace

Result<ShmSegment> ShmSegment::create(std::size_t size, bool populate) {
  ShmSegment s;
  s.id_ = shmget(IPC_PRIVATE, size, IPC_CREAT | 0600);
  if (s.id_ < 0) return unavailable("shmget failed");
  void* addr = shmat(s.id_, nullptr, 0);
  if (addr == reinterpret_cast<void*>(-1)) return unavailable("shmat failed");  // ~ removes it
  s.addr_ = static_cast<std::uint8_t*>(addr);
  s.size_ = size;
  // Fresh pages cost a fault each (~4.5 us on this VM, 2025 of them for 1920x1080); populated
  // ahead of time, the server's first write into the segment costs ~9 ms instead of 12-16 ms.
  if (populate) (void)::madvise(addr, size, kMadvPopulateWrite);
  return s;
}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    this->~ShmSegment();
    id_ = other.id_;
    addr_ = other.addr_;
    size_ = other.size_;
    other.release();
  }
  return *this;
}

ShmSegment::~ShmSegment() {
  if (addr_ != nullptr) shmdt(addr_);
  if (id_ >= 0) shmctl(id_, IPC_RMID, nullptr);
  release();
}

Result<std::unique_ptr<Capturer>> Capturer::create(::Display* dpy) {
  return create(dpy, CaptureOptions{});
}

Result<std::unique_ptr<Capturer>> Capturer::create(::Display* dpy, const CaptureOptions& options) {
  if (dpy == nullptr) return unavailable("no display connection");
  xcb_connection_t* conn = XGetXCBConnection(dpy);
  if (conn == nullptr || xcb_connection_has_error(conn)) return unavailable("X connection is broken");
  const int screen = DefaultScreen(dpy);
  Visual* visual = DefaultVisual(dpy, screen);
  const int depth = DefaultDepth(dpy, screen);
  if (visual == nullptr || (visual->c_class != TrueColor && visual->c_class != DirectColor)) {
    return unavailable("the root visual is not TrueColor");
  }
  int count = 0;
  XPixmapFormatValues* formats = XListPixmapFormats(dpy, &count);
  int bpp = 0, pad = 0;
  for (int i = 0; i < count; ++i) {
    if (formats[i].depth == depth) {
      bpp = formats[i].bits_per_pixel;
      pad = formats[i].scanline_pad;
    }
  }
  if (formats != nullptr) XFree(formats);
  if ((bpp != 16 && bpp != 24 && bpp != 32) || pad <= 0 || pad % 8 != 0) {
    return unavailable("unsupported pixel format (depth " + std::to_string(depth) + ")");
  }
  PixelFormat format;
  format.bits_per_pixel = bpp;
  format.msb_first = ImageByteOrder(dpy) == MSBFirst;
  format.red_mask = static_cast<std::uint32_t>(visual->red_mask);
  format.green_mask = static_cast<std::uint32_t>(visual->green_mask);
  format.blue_mask = static_cast<std::uint32_t>(visual->blue_mask);
  const int width = DisplayWidth(dpy, screen);
  const int height = DisplayHeight(dpy, screen);
  if (width <= 0 || height <= 0) return unavailable("the root window has no size");

  auto capturer = std::make_unique<XcbCapturer>(dpy, conn, RootWindow(dpy, screen), width, height,
                                                format, pad);
  capturer->set_band_reuse(options.reuse_bands);
  if (options.allow_shm && !env_forces_no_shm()) {
    // A refused segment is not fatal: GetImage still works, only slower.
    (void)capturer->init_shm(options.shm);
  }
  // Prove the display can be read at all before handing the capturer out (unless the caller
  // reads a whole frame next).
  if (options.probe) {
    auto probe = capturer->grab_region(0, 0, 1, 1);
    if (!probe.ok()) return unavailable("the root window cannot be read: " + probe.error().message);
  }
  return std::unique_ptr<Capturer>(std::move(capturer));
}

}  // namespace evident
