// Template search (evident/capture/waits.h, docs/windows.md "Finding an image"): the checks here,
// the search itself in OpenCV through the module libevident-match.so, loaded on the first search
// (template_match_module.h).
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "evident/capture/waits.h"
#include "template_match_module.h"

namespace evident {

namespace {

// The directory of the binary this code is linked into (the `evident` executable, `_core`'s
// shared object, a test program), resolved through symlinks; empty when unknown.
std::string own_directory() {
  Dl_info info{};
  std::string path;
  if (::dladdr(reinterpret_cast<void*>(&own_directory), &info) != 0 && info.dli_fname != nullptr) {
    path = info.dli_fname;
  }
  char real[PATH_MAX];
  if (path.find('/') == std::string::npos || ::realpath(path.c_str(), real) == nullptr) {
    const ssize_t n = ::readlink("/proc/self/exe", real, sizeof real - 1);  // the main program
    if (n <= 0) return {};
    real[n] = '\0';
  }
  std::string dir = real;
  const auto slash = dir.rfind('/');
  return slash == std::string::npos ? std::string() : dir.substr(0, slash);
}

struct MatchModule {
  EvidentMatchFn fn = nullptr;
  std::string why;  // when fn is null: every place tried, and what dlopen said
};

// Looked for, in order: $EVIDENT_MATCH_MODULE (a path; then nothing else), beside the binary
// (a pip install puts it next to _core), ../lib/evident/ from the binary (`cmake --install`),
// and where this build wrote it. Loaded once per process; never unloaded.
const MatchModule& match_module() {
  static const MatchModule loaded = [] {
    MatchModule m;
    std::vector<std::string> candidates;
    const char* forced = std::getenv("EVIDENT_MATCH_MODULE");
    if (forced != nullptr && *forced != '\0') {
      candidates.emplace_back(forced);
    } else {
      const std::string dir = own_directory();
      if (!dir.empty()) {
        candidates.push_back(dir + "/" + detail::kMatchModuleName);
        candidates.push_back(dir + "/../lib/evident/" + detail::kMatchModuleName);
      }
#ifdef EVIDENT_MATCH_MODULE_BUILD_PATH
      candidates.emplace_back(EVIDENT_MATCH_MODULE_BUILD_PATH);
#endif
    }
    for (const auto& path : candidates) {
      if (::access(path.c_str(), F_OK) != 0) {
        m.why += (m.why.empty() ? "" : "; ") + path + ": not found";
        continue;
      }
      void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        const char* e = ::dlerror();
        m.why += (m.why.empty() ? "" : "; ") + std::string(e != nullptr ? e : path + ": cannot load");
        continue;
      }
      m.fn = reinterpret_cast<EvidentMatchFn>(::dlsym(handle, detail::kMatchSymbol));
      if (m.fn != nullptr) return m;
      m.why += (m.why.empty() ? "" : "; ") + path + ": no symbol " + detail::kMatchSymbol;
    }
    return m;
  }();
  return loaded;
}

}  // namespace

Json ImageMatch::to_json() const {
  return Json{{"x", x}, {"y", y}, {"width", width}, {"height", height},
              {"score_permille", score_permille}};
}

Status validate_template(const RawImage& t) {
  const std::int64_t pixels = static_cast<std::int64_t>(t.width) * t.height;
  if (t.width <= 0 || t.height <= 0 || t.rgb.size() != static_cast<std::size_t>(pixels) * 3) {
    return make_error("wait-reference-invalid", "the template image is empty");
  }
  if (pixels > kMaxTemplatePixels) {
    return make_error("wait-reference-invalid",
                      "the template image has more than " + std::to_string(kMaxTemplatePixels) +
                          " pixels");
  }
  bool flat = true;
  for (std::size_t i = 3; i < t.rgb.size() && flat; i += 3) {
    flat = std::memcmp(&t.rgb[i], &t.rgb[0], 3) == 0;
  }
  if (flat) {
    return make_error("wait-reference-invalid",
                      "the template image is of one colour: it has no pattern to search for "
                      "(wait for the colour with wait pixels --color instead)");
  }
  return {};
}

Result<ImageMatch> match_template(const RawImage& image, const RawImage& templ) {
  EVIDENT_TRY(validate_template(templ));
  if (templ.width > image.width || templ.height > image.height) {
    return make_error("wait-reference-invalid",
                      "the template image is larger than the region searched");
  }
  if (static_cast<std::int64_t>(image.width) * image.height > kMaxSearchPixels ||
      image.rgb.size() != static_cast<std::size_t>(image.width) * image.height * 3) {
    return make_error("wait-reference-invalid", "the region searched is too large");
  }
  const MatchModule& module = match_module();
  if (module.fn == nullptr) {
    return make_error("image-search-unavailable",
                      "the template search module (" + std::string(detail::kMatchModuleName) +
                          ", OpenCV) could not be loaded: " + module.why);
  }
  const EvidentMatchRequest rq{image.rgb.data(), image.width, image.height,
                               templ.rgb.data(), templ.width, templ.height};
  EvidentMatchReply out{};
  if (module.fn(&rq, &out) != 0) return make_error("internal", "the template search failed (OpenCV)");
  const double score = std::isfinite(out.score) ? out.score : 0.0;
  ImageMatch m;
  m.x = out.x;
  m.y = out.y;
  m.width = templ.width;
  m.height = templ.height;
  // Rounding noise of the sums can put an exact copy a hair above 1 (or below -1).
  m.score_permille = static_cast<int>(std::clamp(std::floor(score * 1000.0 + 1e-6), -1000.0, 1000.0));
  return m;
}

}  // namespace evident
