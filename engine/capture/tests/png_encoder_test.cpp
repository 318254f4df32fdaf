// Proves the band-parallel PNG encoder emits valid, minimal, deterministic PNGs whose pixels two
// independent decoders (libpng and Pillow) read back exactly, and that pixel conversion is exact.
#include <gtest/gtest.h>
#include <png.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include "../tools/synthetic_image.h"
#include "evident/capture/capture.h"
#include "../src/png_encoder.h"
#include "evident/core/sha256.h"
#include "evident/testing/pillow.h"

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

// Encodes `im` on a fresh thread that first shifts its heap by `chaff` blocks, so the thread's
// deflate state lands at a different address than on any other thread.
std::string encode_on_fresh_thread(const RawImage& im, const PngOptions& o, int chaff) {
  std::string out;
  std::thread t([&] {
    std::vector<std::unique_ptr<char[]>> hold;
    for (int i = 0; i < chaff; ++i) hold.emplace_back(new char[40000]);
    auto f = encode_png(im, o);
    if (f.ok()) out = f->bytes;
  });
  t.join();
  return out;
}

TEST(PngEncoder, SamePixelsSameBytesWhateverTheThreads) {
  RawImage im = synthetic::screenshot_like(1920, 1080);
  for (auto deflater : {PngDeflater::kIsal, PngDeflater::kZlib}) {
    SCOPED_TRACE(deflater == PngDeflater::kIsal ? "isal" : "zlib");
    PngOptions pooled;
    pooled.deflater = deflater;
    PngOptions single = pooled;
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
      threads.emplace_back([&, i] { outs[i] = encode_png(im, pooled)->bytes; });
    }
    for (auto& t : threads) t.join();
    for (const auto& o : outs) EXPECT_TRUE(o == a->bytes) << first_difference(o, a->bytes);
    // Threads whose deflate state sits elsewhere in memory agree too.
    for (int chaff : {3, 17, 40}) {
      std::string o = encode_on_fresh_thread(im, single, chaff);
      EXPECT_TRUE(o == a->bytes) << "chaff " << chaff << ": " << first_difference(o, a->bytes);
    }
  }
  // A different band split is a different (still valid) encoding of the same pixels.
  PngOptions other;
  other.band_rows = 16;
  expect_roundtrip(im, other);
}

// The sub-filtered bytes of rows [y0, y1), as the encoder deflates them.
std::vector<std::uint8_t> sub_filtered(const RawImage& im, int y0, int y1) {
  std::vector<std::uint8_t> f;
  const int row = im.width * 3;
  for (int y = y0; y < y1; ++y) {
    const std::uint8_t* c = im.rgb.data() + static_cast<std::size_t>(row) * y;
    f.push_back(1);
    for (int i = 0; i < row; ++i) f.push_back(i < 3 ? c[i] : static_cast<std::uint8_t>(c[i] - c[i - 3]));
  }
  return f;
}

std::vector<std::uint8_t> raw_inflate(const std::string& deflated) {
  std::vector<std::uint8_t> out(1 << 20);
  z_stream z{};
  inflateInit2(&z, -15);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(deflated.data()));
  z.avail_in = static_cast<uInt>(deflated.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  int rc = inflate(&z, Z_SYNC_FLUSH);
  out.resize(rc == Z_OK || rc == Z_STREAM_END ? out.size() - z.avail_out : 0);
  inflateEnd(&z);
  return out;
}

// ISA-L 2.30 let the stream object's address pick one hash bucket (docs/capture.md, "ISA-L");
// with the encoder's workaround the bytes of a band are the same wherever the stream lives.
TEST(PngEncoder, IsalBandBytesDoNotDependOnWhereTheStreamLives) {
  if (!detail::isal_available()) GTEST_SKIP() << "built without ISA-L";
  RawImage im = synthetic::screenshot_like(1920, 1080);
  constexpr std::size_t kWindow = 1 << 16;  // the address bits that mattered start at bit 16
  constexpr int kPlaces = 1024;
  const std::size_t span = (kPlaces * 3 + 2) * kWindow;
  // Address space only; each placement makes its own pages writable (no large commit).
  void* area = mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(area, MAP_FAILED);
  const std::size_t stream_pages = (detail::isal_stream_bytes() + 0x4540 + 4095) & ~std::size_t(4095);
  const std::uintptr_t base = (reinterpret_cast<std::uintptr_t>(area) + kWindow - 1) & ~(kWindow - 1);
  // Bands of the synthetic frame where the defect showed most (found by scanning addresses).
  for (int band : {5, 8, 14, 18}) {
    SCOPED_TRACE(::testing::Message() << "band " << band);
    std::vector<std::uint8_t> in = sub_filtered(im, band * 32, band * 32 + 32);
    std::string first;
    int differing = 0;
    for (int k = 0; k < kPlaces; ++k) {
      const std::uintptr_t window = base + static_cast<std::size_t>(k) * 3 * kWindow;
      void* pages = reinterpret_cast<void*>(window);
      ASSERT_EQ(mprotect(pages, stream_pages, PROT_READ | PROT_WRITE), 0);
      std::string out;
      ASSERT_TRUE(detail::isal_deflate_band_at(reinterpret_cast<void*>(window + 0x4540), in.data(),
                                               in.size(), 1, false, &out));
      if (k == 0) first = out;
      differing += out != first;
      // Fresh pages for the next placement, and no resident memory piling up.
      madvise(pages, stream_pages, MADV_DONTNEED);
      mprotect(pages, stream_pages, PROT_NONE);
    }
    EXPECT_EQ(differing, 0) << "stream placements that changed the bytes, of " << kPlaces;
    EXPECT_TRUE(raw_inflate(first) == in) << "the band does not inflate to its input";
  }
  munmap(area, span);
}

// Child side of SameBytesInEveryProcess: prints the hashes this process produces.
void print_child_hashes(int chaff) {
  RawImage im = synthetic::screenshot_like(1920, 1080);
  std::vector<std::unique_ptr<char[]>> hold;  // moves this process's heap a little
  for (int i = 0; i < chaff; ++i) hold.emplace_back(new char[40000]);
  PngOptions single;
  single.threads = 1;
  std::vector<std::string> outs(3);
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) threads.emplace_back([&, i] { outs[i] = encode_png(im)->sha256; });
  for (auto& t : threads) t.join();
  outs.push_back(encode_png(im)->sha256);
  outs.push_back(encode_png(im, single)->sha256);
  for (const auto& h : outs) std::printf("frame-sha256 %s\n", h.c_str());
  std::fflush(stdout);
}

// Same pixels give the same PNG in separate processes (other heap and thread layouts, run
// concurrently), not only within one.
TEST(PngEncoder, SameBytesInEveryProcess) {
  if (const char* child = std::getenv("EVIDENT_PNG_TEST_CHILD")) {
    print_child_hashes(std::atoi(child));
    return;
  }
  RawImage im = synthetic::screenshot_like(1920, 1080);
  auto want = encode_png(im);
  ASSERT_TRUE(want.ok());
  std::vector<FILE*> children;
  for (int i = 0; i < 6; ++i) {
    std::string cmd = "EVIDENT_PNG_TEST_CHILD=" + std::to_string(1 + 7 * i) +
                      " /proc/" + std::to_string(getpid()) +
                      "/exe --gtest_filter=PngEncoder.SameBytesInEveryProcess 2>&1";
    children.push_back(popen(cmd.c_str(), "r"));
    ASSERT_NE(children.back(), nullptr);
  }
  for (FILE* p : children) {
    std::string text;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
    EXPECT_EQ(pclose(p), 0) << text;
    int seen = 0;
    for (std::size_t at = text.find("frame-sha256 "); at != std::string::npos;
         at = text.find("frame-sha256 ", at + 1)) {
      ++seen;
      EXPECT_EQ(text.substr(at + 13, 64), want->sha256);
    }
    EXPECT_EQ(seen, 5) << text;
  }
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
  o.deflater = PngDeflater::kZlib;
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
