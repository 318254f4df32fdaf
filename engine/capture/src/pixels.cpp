// Server pixel rows -> packed RGB. The common case (32 bpp, little-endian, 8-8-8 masks) has its
// own loop; everything else goes through the masks of the visual.
#include <bit>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <cstring>

#include "evident/capture/capture.h"

namespace evident {
namespace {

struct Channel {
  int shift = 0;
  int bits = 0;
  std::uint32_t mask = 0;
};

Channel channel(std::uint32_t mask) {
  Channel c;
  c.mask = mask;
  if (mask == 0) return c;
  c.shift = std::countr_zero(mask);
  c.bits = std::popcount(mask);
  return c;
}

// Scales an n-bit channel to 8 bits by bit replication (exact for 0 and full scale).
inline std::uint8_t expand(std::uint32_t pixel, const Channel& c) {
  if (c.bits == 0) return 0;
  std::uint32_t v = (pixel & c.mask) >> c.shift;
  if (c.bits >= 8) return static_cast<std::uint8_t>(v >> (c.bits - 8));
  std::uint32_t out = 0;
  int filled = 0;
  while (filled < 8) {
    out = (out << c.bits) | v;
    filled += c.bits;
  }
  return static_cast<std::uint8_t>(out >> (filled - 8));
}

void convert_bgrx_scalar(const std::uint8_t* src, int width, std::uint8_t* dst) {
  int i = 0;
  for (; i + 4 <= width; i += 4) {
    std::uint32_t p[4];
    std::memcpy(p, src + 4 * i, 16);
    std::uint8_t* d = dst + 3 * i;
    for (int k = 0; k < 4; ++k) {
      d[3 * k + 0] = static_cast<std::uint8_t>(p[k] >> 16);
      d[3 * k + 1] = static_cast<std::uint8_t>(p[k] >> 8);
      d[3 * k + 2] = static_cast<std::uint8_t>(p[k]);
    }
  }
  for (; i < width; ++i) {
    dst[3 * i + 0] = src[4 * i + 2];
    dst[3 * i + 1] = src[4 * i + 1];
    dst[3 * i + 2] = src[4 * i + 0];
  }
}

#if defined(__x86_64__)
// One byte shuffle turns 4 BGRX pixels into 12 RGB bytes; each 16-byte store overlaps the next
// group's, so the loop stops while a full store still fits in the row.
__attribute__((target("ssse3"))) void convert_bgrx_ssse3(const std::uint8_t* src, int width,
                                                         std::uint8_t* dst) {
  const __m128i shuffle = _mm_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
  int i = 0;
  for (; i + 6 <= width; i += 4) {
    __m128i px = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 4 * i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 3 * i), _mm_shuffle_epi8(px, shuffle));
  }
  convert_bgrx_scalar(src + 4 * i, width - i, dst + 3 * i);
}

const bool kHaveSsse3 = __builtin_cpu_supports("ssse3");
#endif

void convert_bgrx(const std::uint8_t* src, int width, std::uint8_t* dst) {
#if defined(__x86_64__)
  if (kHaveSsse3) {
    convert_bgrx_ssse3(src, width, dst);
    return;
  }
#endif
  convert_bgrx_scalar(src, width, dst);
}

}  // namespace

void convert_row_to_rgb(const PixelFormat& format, const std::uint8_t* src, int width,
                        std::uint8_t* dst) {
  if (format.bits_per_pixel == 32 && !format.msb_first && format.red_mask == 0xff0000 &&
      format.green_mask == 0xff00 && format.blue_mask == 0xff) {
    convert_bgrx(src, width, dst);
    return;
  }
  const Channel r = channel(format.red_mask), g = channel(format.green_mask),
                b = channel(format.blue_mask);
  const int bytes = format.bits_per_pixel / 8;
  for (int i = 0; i < width; ++i) {
    const std::uint8_t* s = src + bytes * i;
    std::uint32_t p = 0;
    if (format.msb_first) {
      for (int k = 0; k < bytes; ++k) p = (p << 8) | s[k];
    } else {
      for (int k = bytes - 1; k >= 0; --k) p = (p << 8) | s[k];
    }
    dst[3 * i + 0] = expand(p, r);
    dst[3 * i + 1] = expand(p, g);
    dst[3 * i + 2] = expand(p, b);
  }
}

}  // namespace evident
