// Template search (evident/capture/waits.h): exact copies are found where they were put (positions
// chosen by the test, never computed by the matcher), a brightened copy still scores high, the best
// of two candidates wins, an absent pattern scores low, and the bounds (flat, empty, oversized,
// larger than the image) are refused with wait-reference-invalid. The search runs in the module
// libevident-match.so: without it, image-search-unavailable (the test program is run a second
// time with EVIDENT_MATCH_MODULE pointing at nothing: capture_template_match_no_module).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

#include "evident/capture/waits.h"

namespace evident {
namespace {

RawImage filled(int w, int h, std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  RawImage img;
  img.width = w;
  img.height = h;
  img.rgb.resize(static_cast<std::size_t>(w) * h * 3);
  for (std::size_t i = 0; i < img.rgb.size(); i += 3) {
    img.rgb[i] = r;
    img.rgb[i + 1] = g;
    img.rgb[i + 2] = b;
  }
  return img;
}

// A pattern no flat background resembles: seeded noise.
RawImage noise(int w, int h, unsigned seed) {
  std::mt19937 gen(seed);
  RawImage img = filled(w, h, 0, 0, 0);
  for (auto& v : img.rgb) v = static_cast<std::uint8_t>(gen() & 0xFF);
  return img;
}

void paste(RawImage& dst, const RawImage& src, int x, int y, int add = 0) {
  for (int row = 0; row < src.height; ++row) {
    for (int col = 0; col < src.width * 3; ++col) {
      const int v = src.rgb[static_cast<std::size_t>(row) * src.width * 3 + col] + add;
      dst.rgb[(static_cast<std::size_t>(y + row) * dst.width + x) * 3 + col] =
          static_cast<std::uint8_t>(std::clamp(v, 0, 255));
    }
  }
}

TEST(TemplateMatch, FindsAnExactCopyWhereItWasPut) {
  RawImage screen = filled(320, 200, 40, 40, 40);
  const RawImage t = noise(30, 20, 1);
  paste(screen, t, 211, 137);
  auto m = match_template(screen, t);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->x, 211);
  EXPECT_EQ(m->y, 137);
  EXPECT_EQ(m->width, 30);
  EXPECT_EQ(m->height, 20);
  EXPECT_GE(m->score_permille, 999);
  EXPECT_EQ(m->to_json().dump(), R"({"height":20,"score_permille":)" +
                                     std::to_string(m->score_permille) +
                                     R"(,"width":30,"x":211,"y":137})");
}

TEST(TemplateMatch, AUniformlyBrighterCopyStillMatches) {
  RawImage screen = filled(200, 120, 10, 10, 10);
  RawImage t = noise(24, 24, 2);
  for (auto& v : t.rgb) v = static_cast<std::uint8_t>(v / 2);  // room to brighten
  paste(screen, t, 20, 30, /*add=*/40);  // uniformly brighter: the coefficient ignores that
  auto m = match_template(screen, t);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->x, 20);
  EXPECT_EQ(m->y, 30);
  EXPECT_GE(m->score_permille, 990);
}

TEST(TemplateMatch, TheBetterOfTwoCandidatesWins) {
  RawImage screen = filled(200, 120, 10, 10, 10);
  const RawImage t = noise(24, 24, 2);
  RawImage damaged = t;
  for (std::size_t i = 0; i < damaged.rgb.size(); i += 6) damaged.rgb[i] ^= 0x80;  // every other pixel
  paste(screen, damaged, 20, 30);
  paste(screen, t, 150, 80);
  auto m = match_template(screen, t);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->x, 150);
  EXPECT_EQ(m->y, 80);
  EXPECT_GE(m->score_permille, 999);
  // Without the exact copy, the damaged one is the best, with a visibly lower score.
  paste(screen, filled(24, 24, 10, 10, 10), 150, 80);
  m = match_template(screen, t);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->x, 20);
  EXPECT_EQ(m->y, 30);
  EXPECT_LT(m->score_permille, 990);
  EXPECT_GT(m->score_permille, 300);
}

TEST(TemplateMatch, AnAbsentPatternScoresLow) {
  RawImage screen = noise(160, 100, 3);
  const RawImage t = noise(20, 20, 4);  // independent noise: never on screen
  auto m = match_template(screen, t);
  ASSERT_TRUE(m.ok());
  EXPECT_LT(m->score_permille, 600);
  // On a flat screen the coefficient is 0 everywhere (no NaN).
  m = match_template(filled(100, 100, 7, 7, 7), t);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->score_permille, 0);
}

TEST(TemplateMatch, BoundsAreRefused) {
  const RawImage screen = noise(64, 64, 5);
  auto code = [](const Result<ImageMatch>& r) { return r.ok() ? std::string("ok") : r.error().code; };
  EXPECT_EQ(code(match_template(screen, filled(8, 8, 1, 2, 3))), "wait-reference-invalid");  // flat
  EXPECT_EQ(code(match_template(screen, RawImage{})), "wait-reference-invalid");  // empty
  EXPECT_EQ(code(match_template(screen, noise(65, 10, 6))), "wait-reference-invalid");  // wider
  EXPECT_EQ(code(match_template(screen, noise(10, 65, 6))), "wait-reference-invalid");  // taller
  EXPECT_EQ(validate_template(noise(1025, 1024, 7)).error().code, "wait-reference-invalid");
  EXPECT_TRUE(validate_template(noise(1024, 1024, 7)).ok());
  RawImage two = filled(2, 1, 0, 0, 0);
  two.rgb[5] = 1;  // one channel of one pixel differs: a pattern
  EXPECT_TRUE(validate_template(two).ok());
  EXPECT_EQ(code(match_template(filled(4097, 4096, 0, 0, 0), noise(8, 8, 9))),
            "wait-reference-invalid");  // more than kMaxSearchPixels searched
}

TEST(TemplateMatch, WithoutTheModuleTheSearchIsUnavailableAndTheChecksStillRun) {
  const char* forced = std::getenv("EVIDENT_MATCH_MODULE");
  if (forced == nullptr || std::string(forced) != "/nonexistent/libevident-match.so") {
    GTEST_SKIP() << "runs as capture_template_match_no_module (EVIDENT_MATCH_MODULE set)";
  }
  const RawImage screen = noise(64, 64, 5);
  auto m = match_template(screen, noise(8, 8, 6));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, "image-search-unavailable");
  EXPECT_NE(m.error().message.find("/nonexistent/libevident-match.so: not found"), std::string::npos)
      << m.error().message;
  // The checks before the search do not need the module: a bad template is still that.
  EXPECT_EQ(match_template(screen, filled(8, 8, 1, 2, 3)).error().code, "wait-reference-invalid");
}

}  // namespace
}  // namespace evident
