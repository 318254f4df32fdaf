// Proves the band-parallel PNG encoder emits valid, minimal, deterministic PNGs whose pixels two
// independent decoders (libpng and Pillow) read back exactly, and that pixel conversion is exact.
#include <gtest/gtest.h>
#include <png.h>

#include <cstring>
#include <random>
#include <thread>

#include "../tools/synthetic_image.h"
#include "evident/capture/capture.h"
#include "evident/core/sha256.h"
#include "pillow_check.h"

namespace evident {
namespace {

RawImage random_image(int w, int h, std::uint32_t seed) {
  std::mt19937 rng(seed);
  RawImage im;
  im.width = w;
  im.height = h;
  im.rgb.resize(static_cast<std::size_t>(w) * h * 3);
  for (auto& v : im.rgb) v = static_cast<std::uint8_t>(rng());
  return im;
}

// Decodes with libpng's simplified API into packed RGB.
std::vector<std::uint8_t> libpng_decode(const std::string& png, int* w, int* h) {
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, png.data(), png.size())) return {};
  img.format = PNG_FORMAT_RGB;
  std::vector<std::uint8_t> out(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, out.data(), 0, nullptr)) return {};
  *w = static_cast<int>(img.width);
  *h = static_cast<int>(img.height);
  return out;
}

std::string first_difference(const std::string& x, const std::string& y) {
  std::size_t i = 0;
  while (i < x.size() && i < y.size() && x[i] == y[i]) ++i;
  return "sizes " + std::to_string(x.size()) + "/" + std::to_string(y.size()) +
         ", first difference at byte " + std::to_string(i);
}

void expect_roundtrip(const RawImage& im, const PngOptions& o) {
  auto frame = encode_png(im, o);
  ASSERT_TRUE(frame.ok()) << frame.error().message;
  EXPECT_EQ(frame->width, im.width);
  EXPECT_EQ(frame->height, im.height);
  EXPECT_EQ(frame->sha256, sha256_hex(frame->bytes));
  int w = 0, h = 0;
  auto pixels = libpng_decode(frame->bytes, &w, &h);
  EXPECT_EQ(w, im.width);
  EXPECT_EQ(h, im.height);
  EXPECT_TRUE(pixels == im.rgb) << "libpng decoded different pixels";
}

TEST(PngEncoder, RoundTripsThroughLibpngForEveryFilterLevelAndBand) {
  RawImage im = random_image(37, 29, 1);
  // Mix in flat areas so matches (not only literals) occur.
  for (std::size_t i = 0; i < im.rgb.size() / 2; ++i) im.rgb[i] = 7;
  for (auto deflater : {PngDeflater::kIsal, PngDeflater::kZlib}) {
    for (auto filter : {PngFilter::kNone, PngFilter::kSub, PngFilter::kUp}) {
      for (int level : {0, 1, 2, 3, 6, 9}) {
        if (deflater == PngDeflater::kIsal && level > 3) continue;
        for (int band_rows : {1, 4, 29, 64}) {
          PngOptions o;
          o.deflater = deflater;
          o.filter = filter;
          o.level = level;
          o.band_rows = band_rows;
          SCOPED_TRACE(::testing::Message()
                       << "deflater " << static_cast<int>(deflater) << " filter "
                       << static_cast<int>(filter) << " level " << level << " band_rows "
                       << band_rows);
          expect_roundtrip(im, o);
        }
      }
    }
  }
}

TEST(PngEncoder, LargeAndIncompressibleBandsRoundTrip) {
  RawImage noise = random_image(1500, 300, 4);  // output larger than input: buffer growth
  RawImage screen = synthetic::screenshot_like(1920, 1080);
  for (auto deflater : {PngDeflater::kIsal, PngDeflater::kZlib}) {
    PngOptions o;
    o.deflater = deflater;
    expect_roundtrip(noise, o);
    o.band_rows = 1080;  // one band: the whole frame in one deflate call
    expect_roundtrip(screen, o);
  }
}

TEST(PngEncoder, OddShapes) {
  for (auto [w, h] : {std::pair{1, 1}, std::pair{1, 300}, std::pair{1000, 1}, std::pair{3, 5}}) {
    expect_roundtrip(random_image(w, h, static_cast<std::uint32_t>(w * 7 + h)), PngOptions{});
  }
}

TEST(PngEncoder, PillowDecodesExactPixelsAndSeesOnlyMinimalChunks) {
  RawImage im = synthetic::screenshot_like(640, 400);
  auto frame = encode_png(im);
  ASSERT_TRUE(frame.ok());
  Json got = testing::pillow_check(frame->bytes);
  ASSERT_FALSE(got.is_null()) << "Pillow could not decode the PNG";
  EXPECT_EQ(got["mode"], "RGB");
  EXPECT_EQ(got["width"], 640);
  EXPECT_EQ(got["height"], 400);
  EXPECT_EQ(got["chunks"], Json::array({"IDAT", "IEND", "IHDR"}));
  EXPECT_EQ(got["pixels_sha256"], sha256_hex(im.rgb.data(), im.rgb.size()));
}

TEST(PngEncoder, SamePixelsSameBytesWhateverTheThreads) {
  RawImage im = synthetic::screenshot_like(1920, 1080);
  PngOptions pooled;
  PngOptions single;
  single.threads = 1;
  auto a = encode_png(im, pooled);
  auto b = encode_png(im, pooled);
  auto c = encode_png(im, single);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->sha256, b->sha256) << first_difference(a->bytes, b->bytes);
  EXPECT_EQ(a->sha256, c->sha256) << first_difference(a->bytes, c->bytes);
  // Concurrent encodes (several sessions) share the pool and still agree.
  std::vector<std::string> outs(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] { outs[i] = encode_png(im)->bytes; });
  }
  for (auto& t : threads) t.join();
  for (const auto& o : outs) EXPECT_TRUE(o == a->bytes) << first_difference(o, a->bytes);
  // A different band split is a different (still valid) encoding of the same pixels.
  PngOptions other;
  other.band_rows = 16;
  expect_roundtrip(im, other);
}

TEST(PngEncoder, ChangedPixelChangesBytes) {
  RawImage im = synthetic::screenshot_like(320, 200);
  auto a = encode_png(im);
  im.rgb[3 * (100 * 320 + 10)] ^= 1;
  auto b = encode_png(im);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->sha256, b->sha256);
}

TEST(PngEncoder, RefusesBadInput) {
  RawImage empty;
  EXPECT_EQ(encode_png(empty).error().code, "png-encode-failed");
  RawImage short_buf = random_image(4, 4, 2);
  short_buf.rgb.pop_back();
  EXPECT_EQ(encode_png(short_buf).error().code, "png-encode-failed");
  RawImage ok = random_image(4, 4, 3);
  PngOptions o;
  o.band_rows = 0;
  EXPECT_EQ(encode_png(ok, o).error().code, "png-encode-failed");
  o.band_rows = 8;
  o.level = 10;
  EXPECT_EQ(encode_png(ok, o).error().code, "png-encode-failed");
  o.level = 4;
  EXPECT_TRUE(encode_png(ok, o).ok());
  o.deflater = PngDeflater::kIsal;  // ISA-L has levels 0..3
  EXPECT_EQ(encode_png(ok, o).error().code, "png-encode-failed");
}

TEST(PixelConvert, Bgrx32LittleEndianIncludingTail) {
  PixelFormat f;  // 32 bpp, LSB first, 8-8-8
  std::vector<std::uint8_t> src;
  for (int i = 0; i < 7; ++i) src.insert(src.end(), {std::uint8_t(i), std::uint8_t(10 + i), std::uint8_t(20 + i), 0xee});
  std::vector<std::uint8_t> dst(21);
  convert_row_to_rgb(f, src.data(), 7, dst.data());
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(dst[3 * i], 20 + i);
    EXPECT_EQ(dst[3 * i + 1], 10 + i);
    EXPECT_EQ(dst[3 * i + 2], i);
  }
}

TEST(PixelConvert, FastPathMatchesTheMaskPathOnLongRows) {
  std::mt19937 rng(5);
  for (int width : {1, 5, 6, 7, 37, 1920}) {
    std::vector<std::uint8_t> src(static_cast<std::size_t>(width) * 4);
    for (auto& v : src) v = static_cast<std::uint8_t>(rng());
    std::vector<std::uint8_t> fast(width * 3 + 1, 0xaa), want(width * 3 + 1, 0xaa);
    convert_row_to_rgb(PixelFormat{}, src.data(), width, fast.data());
    for (int i = 0; i < width; ++i) {  // BGRX little-endian: bytes B, G, R, X
      want[3 * i] = src[4 * i + 2];
      want[3 * i + 1] = src[4 * i + 1];
      want[3 * i + 2] = src[4 * i];
    }
    EXPECT_EQ(fast, want) << "width " << width << " (the byte past the row must stay untouched)";
  }
}

TEST(PixelConvert, MsbFirstAnd24Bpp) {
  PixelFormat f;
  f.msb_first = true;
  const std::uint8_t src32[] = {0x00, 0x11, 0x22, 0x33};
  std::uint8_t dst[3];
  convert_row_to_rgb(f, src32, 1, dst);
  EXPECT_EQ(dst[0], 0x11);
  EXPECT_EQ(dst[1], 0x22);
  EXPECT_EQ(dst[2], 0x33);
  f.msb_first = false;
  f.bits_per_pixel = 24;
  const std::uint8_t src24[] = {0x33, 0x22, 0x11, 0x66, 0x55, 0x44};
  std::uint8_t dst2[6];
  convert_row_to_rgb(f, src24, 2, dst2);
  const std::uint8_t want[] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66};
  EXPECT_EQ(0, std::memcmp(dst2, want, 6));
}

TEST(PixelConvert, Rgb565ExpandsByBitReplication) {
  PixelFormat f;
  f.bits_per_pixel = 16;
  f.red_mask = 0xf800;
  f.green_mask = 0x07e0;
  f.blue_mask = 0x001f;
  // Pixels: full red, full green, full blue, white, black, red=0b10000 (-> 0b10000100).
  const std::uint16_t px[] = {0xf800, 0x07e0, 0x001f, 0xffff, 0x0000, 0x8000};
  std::uint8_t src[12];
  std::memcpy(src, px, sizeof px);  // little-endian host, LSB-first image
  std::uint8_t dst[18];
  convert_row_to_rgb(f, src, 6, dst);
  const std::uint8_t want[] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 0x84, 0, 0};
  EXPECT_EQ(0, std::memcmp(dst, want, 18));
}

}  // namespace
}  // namespace evident
