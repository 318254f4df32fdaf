// Internal entry of the band-parallel PNG encoder: rows come from a callback so the capture path
// can convert server pixels to RGB inside the band workers (one pass instead of two).
#pragma once

#include <cstdint>
#include <functional>

#include "evident/capture/capture.h"

namespace evident::detail {

// Returns row `y` as 3*width packed RGB bytes: either a pointer into caller-owned memory or
// `scratch` (3*width bytes) after filling it. Called concurrently from several threads.
using RowSource = std::function<const std::uint8_t*(int y, std::uint8_t* scratch)>;

Result<PngFrame> encode_png_rows(int width, int height, const RowSource& rows,
                                 const PngOptions& options);

}  // namespace evident::detail
