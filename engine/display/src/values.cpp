// Display and app value types: option checks, generation tokens, JSON shapes, argv digests.
#include "evident/display/display.h"

#include "evident/core/sha256.h"
#include "display_internal.h"

namespace evident {

using namespace display_detail;

// ------------------------------------------------------------------------------- small values

Status validate_display_options(const DisplayOptions& o) {
  // The ranges of protocol/evident.json (display_width_min ... display_dpi_max).
  using namespace protocol;
  auto range = [](const char* what, std::int64_t lo, std::int64_t hi) {
    return make_error("display-args", std::string(what) + " must be in " + std::to_string(lo) + ".." +
                                          std::to_string(hi));
  };
  if (o.width < kDisplayWidthMin || o.width > kDisplayWidthMax) return range("width", kDisplayWidthMin, kDisplayWidthMax);
  if (o.height < kDisplayHeightMin || o.height > kDisplayHeightMax) {
    return range("height", kDisplayHeightMin, kDisplayHeightMax);
  }
  if (o.depth != 16 && o.depth != 24) return make_error("display-args", "depth must be 16 or 24");
  if (o.dpi < kDisplayDpiMin || o.dpi > kDisplayDpiMax) return range("dpi", kDisplayDpiMin, kDisplayDpiMax);
  if (!o.keyboard_layout.empty()) {
    const std::string& k = o.keyboard_layout;
    bool ok = k.size() <= 32 && k[0] >= 'a' && k[0] <= 'z';
    for (char c : k) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
    if (!ok) return make_error("display-args", "keyboard_layout must be an XKB layout name: [a-z][a-z0-9_]{0,31}");
  }
  return {};
}

Error display_dead_error() {
  return make_error("display-dead", "the display's X server is no longer running (or its "
                                    "connection broke); destroy the display and create a new one");
}

bool is_generation_token(const std::string& s) {
  return s.size() == 36 && s.compare(0, 4, "gen-") == 0 && is_lower_hex(s.substr(4), 32);
}

Json DisplayInfo::to_json() const {
  return Json{{"id", id}, {"name", name}, {"generation", generation}, {"width", width},
              {"height", height}};
}

Json StatusLayer::to_json() const {
  return Json{{"name", name}, {"state", state}, {"detail", detail}, {"fix", fix}};
}

Json AppInfo::to_json() const {
  return Json{{"app_id", app_id}, {"display_id", display_id}, {"generation", generation},
              {"pid", pid}, {"argv_sha256", argv_sha256}};
}

Json AppInfo::to_list_json() const {
  Json j = to_json();
  j["alive"] = alive;
  j["exit_status"] = exit_status ? Json(*exit_status) : Json(nullptr);
  return j;
}

std::string argv_sha256(const std::vector<std::string>& argv) {
  Json arr = Json::array();
  for (const auto& a : argv) arr.push_back(a);
  return sha256_hex(dump_json(arr));
}

}  // namespace evident
