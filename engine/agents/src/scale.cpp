#include "evident/agents/scale.h"

#include <png.h>
#include <pixman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "evident/capture/capture.h"
#include "evident/core/sha256.h"

namespace evident::agents {
namespace {

constexpr const char* kCode = "image-scale-failed";

struct Decoded {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> rgb;
};

Result<Decoded> decode_rgb(std::string_view png) {
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, png.data(), png.size())) {
    png_image_free(&img);
    return make_error(kCode, "the frame is not a PNG libpng can read");
  }
  if (img.width == 0 || img.height == 0 || img.width > static_cast<unsigned>(kMaxScaleSide) ||
      img.height > static_cast<unsigned>(kMaxScaleSide)) {
    png_image_free(&img);
    return make_error(kCode, "the frame's size is outside 1.." + std::to_string(kMaxScaleSide));
  }
  img.format = PNG_FORMAT_RGB;
  Decoded d;
  d.width = static_cast<int>(img.width);
  d.height = static_cast<int>(img.height);
  d.rgb.resize(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, d.rgb.data(), 0, nullptr)) {
    png_image_free(&img);
    return make_error(kCode, "libpng could not decode the frame");
  }
  return d;
}

struct PixmanImageDeleter {
  void operator()(pixman_image_t* p) const { pixman_image_unref(p); }
};
using PixmanImage = std::unique_ptr<pixman_image_t, PixmanImageDeleter>;

}  // namespace

Result<ModelImage> scale_png_for_model(std::string_view frame_png, int width, int height) {
  auto decoded = decode_rgb(frame_png);
  if (!decoded) return decoded.error();
  const Decoded& d = *decoded;
  if (width < 1 || height < 1 || width > d.width || height > d.height) {
    return make_error(kCode, "the target size must be 1.." + std::to_string(d.width) + " x 1.." +
                                 std::to_string(d.height) + " (no upscaling)");
  }
  if (width == d.width && height == d.height) {
    ModelImage same;
    same.png = std::string(frame_png);
    same.sha256 = sha256_hex(frame_png);
    same.width = width;
    same.height = height;
    return same;
  }
  // RGB -> x8r8g8b8 for pixman.
  std::vector<std::uint32_t> src(static_cast<std::size_t>(d.width) * d.height);
  for (std::size_t i = 0; i < src.size(); ++i) {
    const std::uint8_t* p = &d.rgb[i * 3];
    src[i] = (std::uint32_t{p[0]} << 16) | (std::uint32_t{p[1]} << 8) | p[2];
  }
  std::vector<std::uint32_t> dst(static_cast<std::size_t>(width) * height);
  PixmanImage s(pixman_image_create_bits(PIXMAN_x8r8g8b8, d.width, d.height, src.data(), d.width * 4));
  PixmanImage t(pixman_image_create_bits(PIXMAN_x8r8g8b8, width, height, dst.data(), width * 4));
  if (!s || !t) return make_error(kCode, "pixman could not create the images");
  // Destination -> source transform: scale by source/destination (16.16 fixed point).
  const pixman_fixed_t sx = static_cast<pixman_fixed_t>((static_cast<std::int64_t>(d.width) << 16) / width);
  const pixman_fixed_t sy = static_cast<pixman_fixed_t>((static_cast<std::int64_t>(d.height) << 16) / height);
  pixman_transform_t tr;
  pixman_transform_init_scale(&tr, sx, sy);
  if (!pixman_image_set_transform(s.get(), &tr)) return make_error(kCode, "pixman refused the transform");
  // Impulse reconstruction and a box sample as wide as the scale: each output pixel is the mean of
  // the source area it covers.
  int n_params = 0;
  pixman_fixed_t* params = pixman_filter_create_separable_convolution(
      &n_params, sx, sy, PIXMAN_KERNEL_IMPULSE, PIXMAN_KERNEL_IMPULSE, PIXMAN_KERNEL_BOX, PIXMAN_KERNEL_BOX, 4, 4);
  if (!params) return make_error(kCode, "pixman could not build the filter");
  const bool filter_ok = pixman_image_set_filter(s.get(), PIXMAN_FILTER_SEPARABLE_CONVOLUTION, params, n_params);
  std::free(params);
  if (!filter_ok) return make_error(kCode, "pixman refused the filter");
  pixman_image_set_repeat(s.get(), PIXMAN_REPEAT_PAD);
  pixman_image_composite32(PIXMAN_OP_SRC, s.get(), nullptr, t.get(), 0, 0, 0, 0, 0, 0, width, height);
  RawImage raw;
  raw.width = width;
  raw.height = height;
  raw.rgb.resize(dst.size() * 3);
  for (std::size_t i = 0; i < dst.size(); ++i) {
    raw.rgb[i * 3] = static_cast<std::uint8_t>(dst[i] >> 16);
    raw.rgb[i * 3 + 1] = static_cast<std::uint8_t>(dst[i] >> 8);
    raw.rgb[i * 3 + 2] = static_cast<std::uint8_t>(dst[i]);
  }
  auto encoded = encode_png(raw);
  if (!encoded) return make_error(kCode, "the scaled image could not be encoded: " + encoded.error().message);
  ModelImage out;
  out.png = std::move(encoded->bytes);
  out.sha256 = std::move(encoded->sha256);
  out.width = width;
  out.height = height;
  out.scaled = true;
  return out;
}

Result<ModelImage> crop_png(std::string_view frame_png, int x, int y, int width, int height) {
  auto decoded = decode_rgb(frame_png);
  if (!decoded) return decoded.error();
  const Decoded& d = *decoded;
  if (x < 0 || y < 0 || width < 1 || height < 1 || x > d.width - width || y > d.height - height) {
    return make_error(kCode, "the region is not inside the " + std::to_string(d.width) + "x" +
                                 std::to_string(d.height) + " frame");
  }
  RawImage raw;
  raw.width = width;
  raw.height = height;
  raw.rgb.resize(static_cast<std::size_t>(width) * height * 3);
  for (int row = 0; row < height; ++row) {
    const std::uint8_t* src = &d.rgb[(static_cast<std::size_t>(y + row) * d.width + x) * 3];
    std::copy(src, src + static_cast<std::size_t>(width) * 3, &raw.rgb[static_cast<std::size_t>(row) * width * 3]);
  }
  auto encoded = encode_png(raw);
  if (!encoded) return make_error(kCode, "the region could not be encoded: " + encoded.error().message);
  ModelImage out;
  out.png = std::move(encoded->bytes);
  out.sha256 = std::move(encoded->sha256);
  out.width = width;
  out.height = height;
  out.scaled = true;
  return out;
}

}  // namespace evident::agents
