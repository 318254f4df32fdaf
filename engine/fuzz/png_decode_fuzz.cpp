// Fuzz target: the PNG decoder the engine runs on outside PNGs (engine/capture decode_png_rgb:
// the reference image of wait.pixels), with the pixel bound the op uses, and crop_png (the agents
// module's zoom) on what decodes.
// Invariants: a refusal is wait-reference-invalid with a good message; a decoded image is within
// the pixel bound and its buffer is exactly width x height x 3 bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "evident/agents/scale.h"
#include "evident/capture/waits.h"
#include "fuzz_check.h"

using namespace evident;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  // A small bound keeps the fuzzer fast; the bound logic is the same at any value.
  constexpr std::int64_t kMaxPixels = 1 << 20;
  auto img = decode_png_rgb(bytes, kMaxPixels);
  if (!img.ok()) {
    fuzz::require(img.error().code == "wait-reference-invalid", "decoder returned another code", img.error().code);
    fuzz::require(!img.error().message.empty() && is_valid_utf8(img.error().message), "bad decoder message");
    return 0;
  }
  fuzz::require(img->width > 0 && img->height > 0, "decoded an empty image");
  fuzz::require(static_cast<std::int64_t>(img->width) * img->height <= kMaxPixels, "decoded past the pixel bound");
  fuzz::require(img->rgb.size() == static_cast<std::size_t>(img->width) * img->height * 3, "RGB buffer size wrong");
  fuzz::trace("decoded");
  auto crop = agents::crop_png(bytes, 0, 0, img->width, img->height);
  if (!crop.ok()) {
    fuzz::require(crop.error().code == "image-scale-failed", "crop returned another code", crop.error().code);
  } else {
    fuzz::require(crop->width == img->width && crop->height == img->height, "crop changed the size");
  }
  return 0;
}
