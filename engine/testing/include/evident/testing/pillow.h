// Test support: PNG checks through an independent decoder, Pillow under /usr/bin/python3.
#pragma once

#include <unistd.h>

#include <string>

#include "evident/core/json.h"
#include "evident/testing/files.h"
#include "evident/testing/process.h"

namespace evident::testing {

// The RGB of pixel (x, y) of a PNG file as "RRGGBB", or "error".
inline std::string pixel_hex(const std::string& png_path, int x, int y) {
  auto [st, out] = run_command(
      "/usr/bin/python3 -c \"import sys; from PIL import Image; "
      "im=Image.open(sys.argv[1]).convert('RGB'); r,g,b=im.getpixel((int(sys.argv[2]),int(sys.argv[3]))); "
      "print('%02X%02X%02X' % (r,g,b))\" " +
      shell_quote(png_path) + " " + std::to_string(x) + " " + std::to_string(y));
  if (st != 0) return "error";
  while (!out.empty() && (out.back() == '\n')) out.pop_back();
  return out;
}

#ifdef EVIDENT_SOURCE_DIR
// Decodes PNG bytes with engine/capture/tests/png_pixels.py: returns
// {"mode","width","height","chunks","pixels_sha256"}, or null when the decode failed.
inline Json pillow_check(const std::string& png) {
  TempDir dir;
  if (dir.path().empty()) return nullptr;
  const std::string path = dir / "frame.png";
  write_text(path, png);
  auto [st, text] = run_command("/usr/bin/python3 " +
                                shell_quote(std::string(EVIDENT_SOURCE_DIR) + "/engine/capture/tests/png_pixels.py") +
                                " " + shell_quote(path) + " 2>&1");
  if (st != 0) return nullptr;
  Json out = Json::parse(text, nullptr, false);
  return out.is_discarded() ? Json(nullptr) : out;
}
#endif

}  // namespace evident::testing
