// Scaling a display frame for a provider that must be shown a smaller image (docs/agents.md
// "Image scaling"): libpng decode, pixman area-average scale, the engine's deterministic PNG.
#pragma once

#include <string>
#include <string_view>

#include "evident/core/status.h"

namespace evident::agents {

struct ModelImage {
  std::string png;     // the exact bytes the model is shown
  std::string sha256;  // lowercase hex of png
  int width = 0;
  int height = 0;
  bool scaled = false;  // false: png is the display frame itself
};

// Largest frame the scaler decodes (bounds memory before work starts): 8192x8192.
inline constexpr int kMaxScaleSide = 8192;

// Returns the frame itself when width x height equals its size; otherwise decodes it, scales it
// to width x height (each output pixel the mean of the display pixels it covers: pixman's
// separable box filter) and re-encodes it. width/height must be 1..the frame's size (no
// upscaling). Error "image-scale-failed" (not a PNG, too large, bad target size, library failure).
Result<ModelImage> scale_png_for_model(std::string_view frame_png, int width, int height);

// The region x, y, width x height of a frame at native pixels (a zoom), as its own PNG (the
// engine's deterministic encoder). The region must lie inside the frame. "image-scale-failed".
Result<ModelImage> crop_png(std::string_view frame_png, int x, int y, int width, int height);

}  // namespace evident::agents
