// Internal entry of the band-parallel PNG encoder: rows come from a callback so the capture path
// can convert server pixels to RGB inside the band workers (one pass instead of two).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "evident/capture/capture.h"

namespace evident::detail {

// Returns row `y` as 3*width packed RGB bytes: either a pointer into caller-owned memory or
// `scratch` (3*width bytes) after filling it. Called concurrently from several threads.
using RowSource = std::function<const std::uint8_t*(int y, std::uint8_t* scratch)>;

// One band's share of the zlib stream, kept between frames by the capturer.
struct EncodedBand {
  std::string data;         // raw deflate bytes (band 0 starts with the zlib header)
  std::uint32_t adler = 1;  // adler32 of the band's filtered bytes
  std::size_t raw_len = 0;  // number of filtered bytes
  std::uint32_t crc = 0;    // crc32 of "IDAT" + data
  bool ok = false;
};

// Lets a caller reuse bands whose source rows did not change since they were encoded. The
// output is byte-identical to a full encode: a band's bytes depend only on its own rows (and,
// with the "up" filter, the row above, which `unchanged` must cover).
struct BandReuse {
  std::vector<EncodedBand>* cache = nullptr;  // one entry per band; resized (and cleared) on mismatch
  // Phase 1, all bands, in parallel: may cached band `i` (rows [y0, y1)) be reused?
  std::function<bool(int i, int y0, int y1)> unchanged;
  // Phase 2, after band `i` was encoded afresh (never concurrently with phase 1).
  std::function<void(int i, int y0, int y1)> encoded;
};

// Test hooks for the ISA-L path (docs/capture.md, "ISA-L"): whether this build has ISA-L, the
// size of its stream object, and one band (already filtered bytes) raw-deflated the way the
// encoder does it, with the stream constructed at `storage` (16-byte aligned,
// isal_stream_bytes() long). False when the build has no ISA-L or the deflate failed.
bool isal_available();
std::size_t isal_stream_bytes();
bool isal_deflate_band_at(void* storage, const std::uint8_t* filtered, std::size_t n, int level,
                          bool last, std::string* out);

Result<PngFrame> encode_png_rows(int width, int height, const RowSource& rows,
                                 const PngOptions& options, BandReuse* reuse = nullptr);

}  // namespace evident::detail
