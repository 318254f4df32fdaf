// A deterministic screenshot-like RGB image (fixed PRNG seed): desktop gradient, panel, windows
// with flat backgrounds, title-bar gradients, anti-aliased "text" built from a small glyph set
// (repetition like a real font), and a photo-like noisy region. Used by the benchmark and tests.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "evident/capture/capture.h"

namespace evident::synthetic {

inline void fill(RawImage& im, int x0, int y0, int w, int h, std::uint8_t r, std::uint8_t g,
                 std::uint8_t b) {
  for (int y = std::max(0, y0); y < std::min(im.height, y0 + h); ++y) {
    for (int x = std::max(0, x0); x < std::min(im.width, x0 + w); ++x) {
      std::uint8_t* p = &im.rgb[(static_cast<std::size_t>(y) * im.width + x) * 3];
      p[0] = r;
      p[1] = g;
      p[2] = b;
    }
  }
}

inline RawImage screenshot_like(int width = 1920, int height = 1080, std::uint32_t seed = 20240601) {
  std::mt19937 rng(seed);
  auto uni = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<unsigned>(hi - lo + 1)); };
  RawImage im;
  im.width = width;
  im.height = height;
  im.rgb.resize(static_cast<std::size_t>(width) * height * 3);
  // Desktop: vertical gradient.
  for (int y = 0; y < height; ++y) {
    auto r = static_cast<std::uint8_t>(30 + 40 * y / height);
    auto g = static_cast<std::uint8_t>(60 + 60 * y / height);
    auto b = static_cast<std::uint8_t>(110 + 90 * y / height);
    fill(im, 0, y, width, 1, r, g, b);
  }
  // Glyph set: 48 glyphs of 7x11 with anti-aliased (grey) edges.
  constexpr int kGw = 7, kGh = 11;
  std::vector<std::array<std::uint8_t, kGw * kGh>> glyphs(48);
  for (auto& gl : glyphs) {
    for (auto& v : gl) {
      int t = uni(0, 9);
      v = t < 6 ? 0 : (t < 8 ? static_cast<std::uint8_t>(uni(60, 200)) : 255);
    }
  }
  auto draw_text = [&](int x0, int y0, int w, int h, std::uint8_t fg, std::uint8_t bg) {
    for (int line = y0 + 4; line + kGh < y0 + h; line += 18) {
      int x = x0 + 6;
      int line_end = x0 + w - 10 - uni(0, w / 3);
      while (x + kGw < line_end) {
        int word = uni(2, 9);
        for (int c = 0; c < word && x + kGw < line_end; ++c, x += kGw + 1) {
          const auto& gl = glyphs[uni(0, 47)];
          for (int gy = 0; gy < kGh; ++gy) {
            for (int gx = 0; gx < kGw; ++gx) {
              int a = gl[gy * kGw + gx];
              auto v = static_cast<std::uint8_t>((fg * a + bg * (255 - a)) / 255);
              fill(im, x + gx, line + gy, 1, 1, v, v, v);
            }
          }
        }
        x += kGw;
      }
    }
  };
  // Top panel.
  fill(im, 0, 0, width, 28, 40, 40, 44);
  draw_text(0, 2, width / 3, 26, 230, 40);
  // Windows.
  for (int i = 0; i < 4; ++i) {
    int w = uni(width / 4, width / 2), h = uni(height / 4, height / 2);
    int x = uni(0, width - w), y = uni(40, height - h);
    fill(im, x - 1, y - 1, w + 2, h + 2, 90, 90, 90);  // border
    for (int ty = 0; ty < 30; ++ty) {                 // title bar gradient
      auto v = static_cast<std::uint8_t>(220 - ty * 2);
      fill(im, x, y + ty, w, 1, v, v, static_cast<std::uint8_t>(v + 10 > 255 ? 255 : v + 10));
    }
    draw_text(x, y + 4, w / 2, 24, 20, 220);
    fill(im, x, y + 30, w, h - 30, 250, 250, 250);
    draw_text(x, y + 34, w, h - 40, 25, 250);
    // A toolbar of coloured buttons.
    for (int k = 0; k < 6; ++k) {
      fill(im, x + 8 + k * 36, y + h - 34, 30, 24, static_cast<std::uint8_t>(uni(0, 255)),
           static_cast<std::uint8_t>(uni(0, 255)), static_cast<std::uint8_t>(uni(0, 255)));
    }
  }
  // A photo-like region: smooth field plus noise.
  int px = width * 5 / 8, py = height * 5 / 8, pw = width / 6, ph = height / 6;
  for (int y = py; y < py + ph && y < height; ++y) {
    for (int x = px; x < px + pw && x < width; ++x) {
      int n = uni(-6, 6);
      auto c = [&](int base) { return static_cast<std::uint8_t>(std::clamp(base + n, 0, 255)); };
      std::uint8_t* p = &im.rgb[(static_cast<std::size_t>(y) * width + x) * 3];
      p[0] = c(120 + (x - px) * 100 / pw);
      p[1] = c(80 + (y - py) * 120 / ph);
      p[2] = c(60 + ((x - px) + (y - py)) * 60 / (pw + ph));
    }
  }
  return im;
}

}  // namespace evident::synthetic
