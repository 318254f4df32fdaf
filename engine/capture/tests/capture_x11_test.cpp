// Proves that frames of a real Xvfb carry exactly the pixels an X client drew (SHM and GetImage
// paths alike, depth 24 and 16), and that their PNGs decode in Pillow to those pixels.
#include <gtest/gtest.h>  // before Xlib: its None/Status macros break gtest
#include <stdlib.h>
#include <sys/ipc.h>
#include <sys/shm.h>

#include "evident/capture/capture.h"
#include "evident/core/sha256.h"
#include "evident/testing/pillow.h"
#include "evident/testing/xvfb.h"  // Xlib, its Status macro undone
#define Status int  // Xlib's Status, which xvfb.h #undef'd for evident::Status
#include <X11/Xatom.h>
#include <X11/Xutil.h>
#undef Status

#include <random>

namespace evident {
namespace {

using testing::Xvfb;

// The test's own model of the screen: what it asked the server to draw.
struct Model {
  RawImage image;
  void set(int x, int y, std::uint8_t r, std::uint8_t g, std::uint8_t b) {
    std::uint8_t* p = &image.rgb[(static_cast<std::size_t>(y) * image.width + x) * 3];
    p[0] = r;
    p[1] = g;
    p[2] = b;
  }
};

unsigned long pixel_for(Visual* v, std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  auto place = [](unsigned long mask, std::uint8_t c) {
    if (mask == 0) return 0ul;
    int shift = __builtin_ctzl(mask);
    int bits = __builtin_popcountl(mask);
    unsigned long value = bits >= 8 ? (static_cast<unsigned long>(c) << (bits - 8)) : (c >> (8 - bits));
    return (value << shift) & mask;
  };
  return place(v->red_mask, r) | place(v->green_mask, g) | place(v->blue_mask, b);
}

// Draws a random-pixel pattern (every channel value exercised) and some filled rectangles on the
// root window through Xlib (XPutImage converts on its own), returning the expected RGB.
RawImage draw_scene(Display* dpy, std::uint32_t seed) {
  int screen = DefaultScreen(dpy);
  Window root = RootWindow(dpy, screen);
  Visual* visual = DefaultVisual(dpy, screen);
  int depth = DefaultDepth(dpy, screen);
  int w = DisplayWidth(dpy, screen), h = DisplayHeight(dpy, screen);
  Model m;
  m.image.width = w;
  m.image.height = h;
  m.image.rgb.assign(static_cast<std::size_t>(w) * h * 3, 0);
  GC gc = XCreateGC(dpy, root, 0, nullptr);
  // Background and rectangles: full-scale primaries, exact at any depth.
  struct Rect { int x, y, w, h; std::uint8_t r, g, b; };
  const Rect rects[] = {{0, 0, w, h, 0, 0, 255},         {10, 10, 50, 30, 255, 0, 0},
                        {70, 20, 40, 60, 0, 255, 0},     {5, 80, 100, 10, 255, 255, 255},
                        {w - 20, h - 20, 20, 20, 255, 255, 0}};
  for (const auto& r : rects) {
    XSetForeground(dpy, gc, pixel_for(visual, r.r, r.g, r.b));
    XFillRectangle(dpy, root, gc, r.x, r.y, r.w, r.h);
    for (int y = r.y; y < r.y + r.h; ++y) {
      for (int x = r.x; x < r.x + r.w; ++x) m.set(x, y, r.r, r.g, r.b);
    }
  }
  if (depth == 24) {
    // Random pixels in a 64x32 patch: catches channel swaps and off-by-one bytes.
    std::mt19937 rng(seed);
    const int pw = 64, ph = 32, px = 120, py = 40;
    std::vector<std::uint32_t> data(pw * ph);
    XImage* xi = XCreateImage(dpy, visual, depth, ZPixmap, 0, reinterpret_cast<char*>(data.data()),
                              pw, ph, 32, 0);
    for (int y = 0; y < ph; ++y) {
      for (int x = 0; x < pw; ++x) {
        auto r = static_cast<std::uint8_t>(rng()), g = static_cast<std::uint8_t>(rng()),
             b = static_cast<std::uint8_t>(rng());
        XPutPixel(xi, x, y, pixel_for(visual, r, g, b));
        m.set(px + x, py + y, r, g, b);
      }
    }
    XPutImage(dpy, root, gc, xi, 0, 0, px, py, pw, ph);
    xi->data = nullptr;
    XDestroyImage(xi);
  }
  XFreeGC(dpy, gc);
  XSync(dpy, False);
  return m.image;
}

RawImage crop(const RawImage& im, int x, int y, int w, int h) {
  RawImage out;
  out.width = w;
  out.height = h;
  for (int row = y; row < y + h; ++row) {
    auto begin = im.rgb.begin() + (static_cast<std::ptrdiff_t>(row) * im.width + x) * 3;
    out.rgb.insert(out.rgb.end(), begin, begin + w * 3);
  }
  return out;
}

TEST(CaptureX11, ShmFrameHasExactlyTheDrawnPixelsAndPillowAgrees) {
  Xvfb server("320x240x24");
  ASSERT_TRUE(server.ok());
  Display* dpy = server.connect();
  ASSERT_NE(dpy, nullptr);
  RawImage want = draw_scene(dpy, 7);
  auto cap = Capturer::create(dpy);
  ASSERT_TRUE(cap.ok()) << cap.error().message;
  EXPECT_TRUE((*cap)->using_shm());
  auto got = (*cap)->grab();
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->width, 320);
  EXPECT_EQ(got->height, 240);
  EXPECT_TRUE(got->rgb == want.rgb) << "captured pixels differ from what was drawn";

  auto png = (*cap)->capture_png();
  ASSERT_TRUE(png.ok());
  EXPECT_EQ(png->sha256, sha256_hex(png->bytes));
  Json decoded = testing::pillow_check(png->bytes);
  ASSERT_FALSE(decoded.is_null());
  EXPECT_EQ(decoded["mode"], "RGB");
  EXPECT_EQ(decoded["pixels_sha256"], sha256_hex(want.rgb.data(), want.rgb.size()));
  // The fused capture path and encode_png(grab()) give the same bytes; a static screen too.
  EXPECT_EQ(png->bytes, encode_png(*got)->bytes);
  EXPECT_EQ(png->sha256, (*cap)->capture_png()->sha256);
}

TEST(CaptureX11, GetImageFallbackMatchesShm) {
  Xvfb server("320x240x24");
  ASSERT_TRUE(server.ok());
  Display* dpy = server.connect();
  ASSERT_NE(dpy, nullptr);
  RawImage want = draw_scene(dpy, 8);
  auto shm = Capturer::create(dpy);
  CaptureOptions no_shm;
  no_shm.allow_shm = false;
  auto plain = Capturer::create(dpy, no_shm);
  ASSERT_TRUE(shm.ok() && plain.ok());
  EXPECT_TRUE((*shm)->using_shm());
  EXPECT_FALSE((*plain)->using_shm());
  EXPECT_TRUE((*plain)->grab()->rgb == want.rgb);
  EXPECT_TRUE((*shm)->grab()->rgb == (*plain)->grab()->rgb);
  EXPECT_EQ((*shm)->capture_png()->bytes, (*plain)->capture_png()->bytes);

  setenv("EVIDENT_CAPTURE_NO_SHM", "1", 1);
  auto forced = Capturer::create(dpy);
  unsetenv("EVIDENT_CAPTURE_NO_SHM");
  ASSERT_TRUE(forced.ok());
  EXPECT_FALSE((*forced)->using_shm());
}

// A segment prepared (and populated) before the capturer exists is taken when large enough and
// frames through it are exact; one too small is left alone and the capturer makes its own.
TEST(CaptureX11, PreparedShmSegmentIsTakenWhenLargeEnough) {
  Xvfb server("320x240x24");
  ASSERT_TRUE(server.ok());
  Display* dpy = server.connect();
  ASSERT_NE(dpy, nullptr);
  RawImage want = draw_scene(dpy, 9);

  auto big = ShmSegment::create(320 * 240 * 4, true);
  ASSERT_TRUE(big.ok()) << big.error().message;
  const int big_id = big->id();
  CaptureOptions with_big;
  with_big.shm = &*big;
  auto cap = Capturer::create(dpy, with_big);
  ASSERT_TRUE(cap.ok()) << cap.error().message;
  EXPECT_TRUE((*cap)->using_shm());
  EXPECT_EQ(big->id(), -1) << "the prepared segment was not taken";
  EXPECT_EQ(big->addr(), nullptr);
  EXPECT_TRUE((*cap)->grab()->rgb == want.rgb);
  struct shmid_ds info{};
  ASSERT_EQ(shmctl(big_id, IPC_STAT, &info), 0);
  EXPECT_TRUE(info.shm_perm.mode & SHM_DEST) << "the taken segment is not marked for removal";

  auto small = ShmSegment::create(64, false);
  ASSERT_TRUE(small.ok());
  const int small_id = small->id();
  CaptureOptions with_small;
  with_small.shm = &*small;
  auto other = Capturer::create(dpy, with_small);
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE((*other)->using_shm());
  EXPECT_EQ(small->id(), small_id) << "a too small segment was taken";
  EXPECT_TRUE((*other)->grab()->rgb == want.rgb);
  small = ShmSegment();  // the unused segment removes itself
  EXPECT_NE(shmctl(small_id, IPC_STAT, &info), 0);
}

TEST(CaptureX11, ServerWithoutShmFallsBackToGetImage) {
  Xvfb server("200x100x24", {"-extension", "MIT-SHM"});
  ASSERT_TRUE(server.ok());
  Display* dpy = server.connect();
  ASSERT_NE(dpy, nullptr);
  RawImage want = draw_scene(dpy, 9);
  auto cap = Capturer::create(dpy);
  ASSERT_TRUE(cap.ok()) << cap.error().message;
  EXPECT_FALSE((*cap)->using_shm());
  EXPECT_TRUE((*cap)->grab()->rgb == want.rgb);
}

TEST(CaptureX11, RegionIsExactAndOutOfRangeIsRefused) {
  Xvfb server("320x240x24");
  ASSERT_TRUE(server.ok());
  Display* dpy = server.connect();
  ASSERT_NE(dpy, nullptr);
  RawImage want = draw_scene(dpy, 10);
  for (bool allow_shm : {true, false}) {
    CaptureOptions o;
    o.allow_shm = allow_shm;
    auto cap = Capturer::create(dpy, o);
    ASSERT_TRUE(cap.ok());
    auto region = (*cap)->grab_region(100, 30, 90, 50);
    ASSERT_TRUE(region.ok());
    EXPECT_EQ(region->width, 90);
    EXPECT_EQ(region->height, 50);
    EXPECT_TRUE(region->rgb == crop(want, 100, 30, 90, 50).rgb);
    auto corner = (*cap)->grab_region(319, 239, 1, 1);
    ASSERT_TRUE(corner.ok());
    EXPECT_TRUE(corner->rgb == crop(want, 319, 239, 1, 1).rgb);
    EXPECT_EQ((*cap)->grab_region(300, 0, 21, 10).error().code, "capture-failed");
    EXPECT_EQ((*cap)->grab_region(0, 0, 0, 10).error().code, "capture-failed");
    EXPECT_EQ((*cap)->grab_region(-1, 0, 5, 5).error().code, "capture-failed");
  }
}

TEST(CaptureX11, Depth16IsConvertedExactly) {
  Xvfb server("160x120x16");
  ASSERT_TRUE(server.ok());
  Display* dpy = server.connect();
  ASSERT_NE(dpy, nullptr);
  ASSERT_EQ(DefaultDepth(dpy, DefaultScreen(dpy)), 16);
  RawImage want = draw_scene(dpy, 11);
  for (bool allow_shm : {true, false}) {
    CaptureOptions o;
    o.allow_shm = allow_shm;
    auto cap = Capturer::create(dpy, o);
    ASSERT_TRUE(cap.ok()) << cap.error().message;
    auto got = (*cap)->grab();
    ASSERT_TRUE(got.ok());
    EXPECT_TRUE(got->rgb == want.rgb);
    Json decoded = testing::pillow_check((*cap)->capture_png()->bytes);
    EXPECT_EQ(decoded["pixels_sha256"], sha256_hex(want.rgb.data(), want.rgb.size()));
  }
}

TEST(CaptureX11, BandReuseGivesTheSameBytesAsAFreshEncode) {
  Xvfb server("320x240x24");
  ASSERT_TRUE(server.ok());
  Display* dpy = server.connect();
  ASSERT_NE(dpy, nullptr);
  RawImage want = draw_scene(dpy, 12);
  auto warm = Capturer::create(dpy);
  CaptureOptions cold_options;
  cold_options.reuse_bands = false;
  auto cold = Capturer::create(dpy, cold_options);
  ASSERT_TRUE(warm.ok() && cold.ok());
  GC gc = XCreateGC(dpy, DefaultRootWindow(dpy), 0, nullptr);
  // Changes inside one band, across the band boundary (rows 63/64), on the first row of a
  // band, on the last row of a band only (the next band's first row is coded against it with
  // the "up" filter), at the bottom, and back to an earlier colour.
  struct Change { int x, y, w, h; unsigned long pixel; };
  const Change changes[] = {{0, 0, 0, 0, 0},          {5, 5, 20, 10, 0x123456},
                            {50, 60, 30, 8, 0xabcdef}, {200, 64, 1, 1, 0x010203},
                            {100, 63, 10, 1, 0x445566},
                            {0, 239, 320, 1, 0xfefefe}, {5, 5, 20, 10, 0x0000ff}};
  std::string previous_sha;
  for (const auto& c : changes) {
    if (c.w > 0) {
      XSetForeground(dpy, gc, c.pixel);
      XFillRectangle(dpy, DefaultRootWindow(dpy), gc, c.x, c.y, c.w, c.h);
      XSync(dpy, False);
    }
    auto a = (*warm)->capture_png();
    auto b = (*cold)->capture_png();
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->bytes, b->bytes) << "reused bands differ from a fresh encode";
    RawImage now = *(*cold)->grab();
    Json decoded = testing::pillow_check(a->bytes);
    EXPECT_EQ(decoded["pixels_sha256"], sha256_hex(now.rgb.data(), now.rgb.size()));
    if (c.w > 0) {
      EXPECT_NE(a->sha256, previous_sha);
    }
    previous_sha = a->sha256;
  }
  XFreeGC(dpy, gc);
}

TEST(CaptureX11, NullDisplayIsUnavailable) {
  EXPECT_EQ(Capturer::create(nullptr).error().code, "capture-unavailable");
}

}  // namespace
}  // namespace evident
