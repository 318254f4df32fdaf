// evident-bench-capture: medians of capture, PNG encode and SHA-256 for a 1920x1080 frame, and
// the PNG size against libpng level 6 (default filters). Prints one JSON object (integers only).
//
//   evident-bench-capture [--runs N] [--xvfb | --display [--paint]] [--matrix] [--out PATH]
//
// Without --display/--xvfb the frame is a deterministic synthetic screenshot-like image. --xvfb
// starts a private 1920x1080x24 Xvfb, paints that image as its root background and captures it.
// --display captures $DISPLAY (--paint paints it first; only on a display you own). --matrix adds
// encoder variants. --out writes the last full-path frame (capture_png with no band reuse, or
// the synthetic encode) to PATH and reports its path and SHA-256. Every time is reported as a
// wall-clock median and a process-CPU median.
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <png.h>
#undef Status  // Xlib's macro would shadow evident::Status

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <ctime>
#include <string>
#include <vector>

#include "evident/capture/capture.h"
#include "evident/core/clock.h"
#include "evident/core/json.h"
#include "evident/core/sha256.h"
#include "evident/testing/xvfb.h"  // a private Xvfb (test support, no gtest)
#include "synthetic_image.h"

namespace {

using evident::RawImage;

std::int64_t median(std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::int64_t cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

// CPU time of the whole process (all threads) for the last median_us call: on a shared, loaded
// machine wall time swings with other work, CPU time much less.
std::int64_t g_last_cpu_median = 0;

template <class F>
std::int64_t median_us(int runs, F&& f) {
  std::vector<std::int64_t> t, c;
  for (int i = 0; i < runs; ++i) {
    std::int64_t a = evident::steady_us();
    std::int64_t ca = cpu_us();
    f();
    c.push_back(cpu_us() - ca);
    t.push_back(evident::steady_us() - a);
  }
  g_last_cpu_median = median(c);
  return median(t);
}

void png_write(png_structp png, png_bytep data, png_size_t len) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<char*>(data), len);
}
void png_flush(png_structp) {}

std::string libpng_encode(const RawImage& im, int level) {
  std::string out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return {};
  }
  png_set_write_fn(png, &out, png_write, png_flush);
  png_set_IHDR(png, info, im.width, im.height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, level);
  png_write_info(png, info);
  std::vector<png_bytep> rows(im.height);
  for (int y = 0; y < im.height; ++y) {
    rows[y] = const_cast<png_bytep>(im.rgb.data() + static_cast<std::size_t>(y) * im.width * 3);
  }
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

// Sets `im` as the root window's background so captures see realistic content.
bool paint_root(Display* dpy, const RawImage& im) {
  int screen = DefaultScreen(dpy);
  Window root = RootWindow(dpy, screen);
  Visual* visual = DefaultVisual(dpy, screen);
  int depth = DefaultDepth(dpy, screen);
  if (depth != 24 || DisplayWidth(dpy, screen) < im.width) return false;
  std::vector<std::uint32_t> px(static_cast<std::size_t>(im.width) * im.height);
  for (std::size_t i = 0; i < px.size(); ++i) {
    px[i] = (std::uint32_t{im.rgb[3 * i]} << 16) | (std::uint32_t{im.rgb[3 * i + 1]} << 8) |
            im.rgb[3 * i + 2];
  }
  XImage* xi = XCreateImage(dpy, visual, depth, ZPixmap, 0, reinterpret_cast<char*>(px.data()),
                            im.width, im.height, 32, 0);
  Pixmap pm = XCreatePixmap(dpy, root, im.width, im.height, depth);
  GC gc = XCreateGC(dpy, pm, 0, nullptr);
  XPutImage(dpy, pm, gc, xi, 0, 0, 0, 0, im.width, im.height);
  XSetWindowBackgroundPixmap(dpy, root, pm);
  XClearWindow(dpy, root);
  XFreeGC(dpy, gc);
  XFreePixmap(dpy, pm);
  xi->data = nullptr;
  XDestroyImage(xi);
  XSync(dpy, False);
  return true;
}

const char* filter_name(evident::PngFilter f) {
  switch (f) {
    case evident::PngFilter::kNone: return "none";
    case evident::PngFilter::kSub: return "sub";
    case evident::PngFilter::kUp: return "up";
  }
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 21;
  bool use_display = false, paint = false, matrix = false, own_xvfb = false;
  std::string out_path;  // --out: write one captured PNG there (bench/ decodes it with Pillow)
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--display") {
      use_display = true;
    } else if (a == "--xvfb") {
      own_xvfb = use_display = paint = true;
    } else if (a == "--paint") {
      paint = true;
    } else if (a == "--out" && i + 1 < argc) {
      out_path = argv[++i];
    } else if (a == "--matrix") {
      matrix = true;
    } else {
      std::fprintf(stderr, "usage: evident-bench-capture [--runs N] [--xvfb | --display [--paint]] [--matrix] [--out PNG]\n");
      return 2;
    }
  }

  evident::Json out;
  out["runs"] = runs;
  RawImage image = evident::synthetic::screenshot_like();
  Display* dpy = nullptr;
  std::unique_ptr<evident::testing::Xvfb> server;
  evident::PngFrame last_frame;
  if (use_display) {
    if (own_xvfb) {
      try {
        server = std::make_unique<evident::testing::Xvfb>("1920x1080x24");
        dpy = server->connect();
      } catch (const std::exception&) {
        dpy = nullptr;
      }
    } else {
      dpy = XOpenDisplay(nullptr);
    }
    if (dpy == nullptr) {
      std::fprintf(stderr, "cannot open the display\n");
      return 1;
    }
    if (paint && !paint_root(dpy, image)) {
      std::fprintf(stderr, "cannot paint the root window (needs depth 24, >= 1920x1080)\n");
      return 1;
    }
    auto cap = evident::Capturer::create(dpy);
    evident::CaptureOptions cold_options;
    cold_options.reuse_bands = false;
    auto cold = evident::Capturer::create(dpy, cold_options);
    if (!cap.ok() || !cold.ok()) {
      std::fprintf(stderr, "capture unavailable\n");
      return 1;
    }
    auto& c = *cap;
    out["source"] = own_xvfb ? "xvfb-painted" : (paint ? "display-painted" : "display");
    out["using_shm"] = c->using_shm();
    auto g = c->grab();
    if (!g.ok()) return 1;
    image = std::move(*g);
    out["grab_rgb_us_median"] = median_us(runs, [&] { (void)c->grab(); });
    out["grab_rgb_cpu_us_median"] = g_last_cpu_median;
    // Full path: capture + PNG + SHA-256, every band deflated (a frame that changed everywhere).
    out["capture_png_cold_us_median"] =
        median_us(runs, [&] { last_frame = *(*cold)->capture_png(); });
    out["capture_png_cold_cpu_us_median"] = g_last_cpu_median;
    out["capture_png_bytes"] = last_frame.bytes.size();
    out["capture_png_sha256"] = last_frame.sha256;
    // Older name of the same measurement, kept for callers that read it.
    out["capture_png_sha256_us_median"] = out["capture_png_cold_us_median"];
    // Same screen again: every band reused.
    (void)c->capture_png();
    out["capture_png_unchanged_us_median"] = median_us(runs, [&] { (void)c->capture_png(); });
    out["capture_png_unchanged_cpu_us_median"] = g_last_cpu_median;
    // A typical action: a 300x40 region (a text field) changes between frames.
    GC gc = XCreateGC(dpy, DefaultRootWindow(dpy), 0, nullptr);
    int step = 0;
    out["capture_png_small_change_us_median"] = median_us(runs, [&] {
      XSetForeground(dpy, gc, (step++ % 2) ? 0xf0f0f0 : 0x202020);
      XFillRectangle(dpy, DefaultRootWindow(dpy), gc, 600, 500, 300, 40);
      XSync(dpy, False);
      (void)c->capture_png();
    });
    out["capture_png_small_change_cpu_us_median"] = g_last_cpu_median;
    XFreeGC(dpy, gc);
  } else {
    out["source"] = "synthetic";
  }
  out["width"] = image.width;
  out["height"] = image.height;

  evident::PngFrame frame;
  out["encode_us_median"] = median_us(runs, [&] { frame = *evident::encode_png(image); });
  out["encode_cpu_us_median"] = g_last_cpu_median;
  out["sha256_us_median"] =
      median_us(runs, [&] { (void)evident::sha256_hex(frame.bytes.data(), frame.bytes.size()); });
  out["png_bytes"] = frame.bytes.size();
  if (last_frame.bytes.empty()) last_frame = frame;
  if (!out_path.empty()) {
    std::FILE* f = std::fopen(out_path.c_str(), "wb");
    if (f == nullptr || std::fwrite(last_frame.bytes.data(), 1, last_frame.bytes.size(), f) !=
                            last_frame.bytes.size()) {
      std::fprintf(stderr, "cannot write %s\n", out_path.c_str());
      return 1;
    }
    std::fclose(f);
    out["capture_png_path"] = out_path;
    out["capture_png_sha256"] = last_frame.sha256;
  }
  std::string ref;
  int ref_runs = std::max(1, runs / 4);
  out["libpng6_encode_us_median"] = median_us(ref_runs, [&] { ref = libpng_encode(image, 6); });
  out["libpng6_encode_cpu_us_median"] = g_last_cpu_median;
  out["libpng6_bytes"] = ref.size();
  out["size_vs_libpng6_permille"] =
      ref.empty() ? 0 : static_cast<std::int64_t>(frame.bytes.size() * 1000 / ref.size());

  if (matrix) {
    evident::Json rows = evident::Json::array();
    for (auto deflater : {evident::PngDeflater::kIsal, evident::PngDeflater::kZlib})
    for (auto filter : {evident::PngFilter::kNone, evident::PngFilter::kSub, evident::PngFilter::kUp}) {
      for (int level : {1, 2, 3, 6}) {
        if (deflater == evident::PngDeflater::kIsal && level > 3) continue;
        for (int band_rows : {16, 32, 64, 128}) {
          for (int threads : {1, 0}) {
            evident::PngOptions o;
            o.deflater = deflater;
            o.filter = filter;
            o.level = level;
            o.band_rows = band_rows;
            o.threads = threads;
            evident::PngFrame f;
            std::int64_t us = median_us(std::max(3, runs / 3), [&] { f = *evident::encode_png(image, o); });
            rows.push_back({{"deflater", deflater == evident::PngDeflater::kIsal ? "isal" : "zlib"},
                            {"filter", filter_name(filter)}, {"level", level},
                            {"band_rows", band_rows}, {"threads", threads == 1 ? 1 : 0},
                            {"encode_us_median", us}, {"encode_cpu_us_median", g_last_cpu_median},
                            {"png_bytes", f.bytes.size()}});
          }
        }
      }
    }
    out["matrix"] = rows;
  }
  if (dpy != nullptr && !own_xvfb) XCloseDisplay(dpy);
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
