// The boundary between the template search (template_match.cpp, in evident_capture) and its
// OpenCV half (template_match_cv.cpp), which is built as a loadable module, libevident-match.so,
// and opened with dlopen on the first search. Linking OpenCV into the engine made every process
// that links evident_capture (the `evident` CLI, the daemon, `_core`) map and relocate OpenCV and
// its closure (LAPACK, BLAS, gfortran, TBB, GL: 20 more libraries) at start-up, ~25 ms per CLI
// call, for one op that few runs use (docs/windows.md "Finding an image").
// Plain C types only: nothing of C++ (no exception, no std type) crosses the boundary.
#pragma once

#include <cstdint>

extern "C" {

struct EvidentMatchRequest {
  const std::uint8_t* image;  // packed RGB, width * height * 3 bytes
  int width, height;
  const std::uint8_t* templ;  // packed RGB, templ_width * templ_height * 3 bytes
  int templ_width, templ_height;
};

struct EvidentMatchReply {
  int x, y;      // top-left of the best match in the image
  double score;  // its normalised correlation coefficient (TM_CCOEFF_NORMED)
};

// 0 on success; non-zero when OpenCV failed (nothing in `out` is then meaningful).
typedef int (*EvidentMatchFn)(const EvidentMatchRequest* request, EvidentMatchReply* out);
}

namespace evident::detail {
// The module's file name, and the versioned symbol it exports (a changed struct gets _v2).
inline constexpr const char* kMatchModuleName = "libevident-match.so";
inline constexpr const char* kMatchSymbol = "evident_match_template_v1";
}  // namespace evident::detail
