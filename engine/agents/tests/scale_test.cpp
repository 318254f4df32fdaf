// Image scaling: the scaled PNG is decoded here with libpng's own reader, and the expected
// pixels are area means worked out by hand.
#include <gtest/gtest.h>
#include <png.h>

#include <cstdlib>
#include <tuple>

#include "evident/agents/scale.h"
#include "evident/capture/capture.h"
#include "evident/core/sha256.h"

namespace evident::agents {
namespace {

std::string encode(int w, int h, const std::vector<std::uint8_t>& rgb) {
  RawImage raw;
  raw.width = w;
  raw.height = h;
  raw.rgb = rgb;
  auto png = encode_png(raw);
  EXPECT_TRUE(png.ok());
  return png.ok() ? png->bytes : std::string();
}

struct Pixels {
  int w = 0, h = 0;
  std::vector<std::uint8_t> rgb;
  const std::uint8_t* at(int x, int y) const { return &rgb[(static_cast<std::size_t>(y) * w + x) * 3]; }
};

Pixels decode(const std::string& png) {
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  Pixels p;
  if (!png_image_begin_read_from_memory(&img, png.data(), png.size())) return p;
  img.format = PNG_FORMAT_RGB;
  p.w = static_cast<int>(img.width);
  p.h = static_cast<int>(img.height);
  p.rgb.resize(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, p.rgb.data(), 0, nullptr)) p.w = p.h = 0;
  return p;
}

void expect_near(const std::uint8_t* px, int r, int g, int b) {
  EXPECT_NEAR(px[0], r, 1);
  EXPECT_NEAR(px[1], g, 1);
  EXPECT_NEAR(px[2], b, 1);
}

TEST(Scale, EachOutputPixelIsTheMeanOfTheBlockItCovers) {
  // 4x2 -> 2x1: each output pixel averages a 2x2 block.
  const std::vector<std::uint8_t> rgb = {
      0, 0, 0,   100, 100, 100, 200, 0, 0,   0, 200, 0,
      0, 0, 0,   100, 100, 100, 0, 0, 200,   50, 50, 50,
  };
  auto out = scale_png_for_model(encode(4, 2, rgb), 2, 1);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_TRUE(out->scaled);
  EXPECT_EQ(out->sha256, sha256_hex(out->png));
  Pixels p = decode(out->png);
  ASSERT_EQ(p.w, 2);
  ASSERT_EQ(p.h, 1);
  expect_near(p.at(0, 0), 50, 50, 50);
  expect_near(p.at(1, 0), 63, 63, 63);  // (200+0+0+50)/4 = 62.5 for each channel
}

TEST(Scale, ADisplaySizedGradientKeepsItsValuesWhereTheyMapBack) {
  // 1920x1080, red = x / 8 (0..239), green = y / 8 (0..134): scaled to Anthropic's 1461x821.
  const int w = 1920, h = 1080;
  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      std::uint8_t* p = &rgb[(static_cast<std::size_t>(y) * w + x) * 3];
      p[0] = static_cast<std::uint8_t>(x / 8);
      p[1] = static_cast<std::uint8_t>(y / 8);
      p[2] = 7;
    }
  }
  const std::string frame = encode(w, h, rgb);
  auto out = scale_png_for_model(frame, 1461, 821);
  ASSERT_TRUE(out.ok()) << out.error().message;
  Pixels p = decode(out->png);
  ASSERT_EQ(p.w, 1461);
  ASSERT_EQ(p.h, 821);
  // Model pixel (730, 410) covers display x 959.5..960.8, y 539.4..540.7 -> red ~120, green ~67.
  const std::uint8_t* c = p.at(730, 410);
  EXPECT_NEAR(c[0], 120, 1);
  EXPECT_NEAR(c[1], 67, 1);
  EXPECT_EQ(c[2], 7);
  // Corners stay the corners (no black border from the edges).
  EXPECT_EQ(p.at(0, 0)[0], 0);
  EXPECT_EQ(p.at(0, 0)[2], 7);
  EXPECT_NEAR(p.at(1460, 820)[0], 239, 1);
  EXPECT_NEAR(p.at(1460, 820)[1], 134, 1);
  EXPECT_EQ(p.at(1460, 820)[2], 7);
}

TEST(Scale, SameSizeReturnsTheFrameItself) {
  const std::string frame = encode(2, 2, std::vector<std::uint8_t>(12, 9));
  auto out = scale_png_for_model(frame, 2, 2);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->scaled);
  EXPECT_EQ(out->png, frame);
  EXPECT_EQ(out->sha256, sha256_hex(frame));
}

TEST(Scale, RefusesBadInputWithOneCode) {
  const std::string frame = encode(4, 4, std::vector<std::uint8_t>(48, 1));
  for (auto [w, h] : {std::pair{5, 4}, std::pair{4, 5}, std::pair{0, 2}, std::pair{2, -1}}) {
    auto out = scale_png_for_model(frame, w, h);
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.error().code, "image-scale-failed");
  }
  for (const std::string& junk : {std::string(), std::string("not a png"), frame.substr(0, frame.size() / 2)}) {
    auto out = scale_png_for_model(junk, 1, 1);
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.error().code, "image-scale-failed");
  }
}

TEST(Crop, CutsTheRegionAtNativePixels) {
  // 3x2: row 0 = 10 20 30, row 1 = 40 50 60 (grey levels); crop (1,0) 2x2 -> 20 30 / 50 60.
  std::vector<std::uint8_t> rgb;
  for (int v : {10, 20, 30, 40, 50, 60}) rgb.insert(rgb.end(), {static_cast<std::uint8_t>(v), static_cast<std::uint8_t>(v), static_cast<std::uint8_t>(v)});
  const std::string frame = encode(3, 2, rgb);
  auto out = crop_png(frame, 1, 0, 2, 2);
  ASSERT_TRUE(out.ok()) << out.error().message;
  Pixels p = decode(out->png);
  ASSERT_EQ(p.w, 2);
  ASSERT_EQ(p.h, 2);
  EXPECT_EQ(p.at(0, 0)[0], 20);
  EXPECT_EQ(p.at(1, 0)[0], 30);
  EXPECT_EQ(p.at(0, 1)[0], 50);
  EXPECT_EQ(p.at(1, 1)[0], 60);
  EXPECT_EQ(out->sha256, sha256_hex(out->png));
  for (auto [x, y, w, h] : {std::tuple{2, 0, 2, 1}, std::tuple{0, 1, 1, 2}, std::tuple{-1, 0, 1, 1}, std::tuple{0, 0, 0, 1}}) {
    auto bad = crop_png(frame, x, y, w, h);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code, "image-scale-failed");
  }
}

}  // namespace
}  // namespace evident::agents
