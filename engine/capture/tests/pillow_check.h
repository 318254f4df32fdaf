// Decodes PNG bytes with Pillow (an independent decoder) through tests/png_pixels.py.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "evident/core/json.h"

namespace evident::testing {

// Returns {"mode","width","height","chunks","pixels_sha256"}, or null when the decode failed.
inline Json pillow_check(const std::string& png) {
  char dir_tmpl[] = "/tmp/evident-capture-test-XXXXXX";
  char* dir = mkdtemp(dir_tmpl);
  if (dir == nullptr) return nullptr;
  std::string path = std::string(dir) + "/frame.png";
  {
    std::ofstream f(path, std::ios::binary);
    f.write(png.data(), static_cast<std::streamsize>(png.size()));
  }
  std::string cmd = "/usr/bin/python3 " EVIDENT_SOURCE_DIR "/engine/capture/tests/png_pixels.py " +
                    path + " 2>&1";
  std::string text;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
    if (pclose(p) != 0) text.clear();
  }
  std::remove(path.c_str());
  rmdir(dir);
  Json out = Json::parse(text, nullptr, false);
  return out.is_discarded() ? Json(nullptr) : out;
}

}  // namespace evident::testing
