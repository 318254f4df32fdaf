// Files for the harnesses that read from disk: one private scratch directory per run (under
// $TMPDIR, removed at exit) and whole-file writes. Header-only, like fuzz_check.h.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include "fuzz_check.h"

namespace evident::fuzz {

// Creates $TMPDIR/evident-fuzz-<name>-XXXXXX (once per process) and removes it at exit, after
// `before_removal` (e.g. shutting down an engine that writes into it).
inline const std::string& scratch_dir(const char* name, void (*before_removal)() = nullptr) {
  static std::string dir;
  static void (*hook)() = nullptr;
  if (!dir.empty()) return dir;
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/evident-fuzz-" + name + "-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) fail("mkdtemp failed");
  dir = templ;
  hook = before_removal;
  std::atexit([] {
    if (hook) hook();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  });
  return dir;
}

inline void write_bytes(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace evident::fuzz
