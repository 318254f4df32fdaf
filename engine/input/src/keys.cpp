#include <X11/Xlib.h>
#include <X11/keysym.h>
#undef Status

#include "evident/input/keys.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "evident/input/unicode.h"
#include "evident/protocol/protocol.h"

namespace evident {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

const std::map<std::string, unsigned long>& aliases() {
  static const std::map<std::string, unsigned long> kAliases = {
      {"ctrl", XK_Control_L},   {"control", XK_Control_L}, {"shift", XK_Shift_L},
      {"alt", XK_Alt_L},        {"option", XK_Alt_L},      {"cmd", XK_Super_L},
      {"super", XK_Super_L},    {"meta", XK_Super_L},      {"win", XK_Super_L},
      {"enter", XK_Return},     {"return", XK_Return},     {"esc", XK_Escape},
      {"escape", XK_Escape},    {"pgup", XK_Prior},        {"pageup", XK_Prior},
      {"prior", XK_Prior},      {"pgdn", XK_Next},         {"pagedown", XK_Next},
      {"next", XK_Next},        {"del", XK_Delete},        {"delete", XK_Delete},
      {"bksp", XK_BackSpace},   {"backspace", XK_BackSpace}, {"up", XK_Up},
      {"down", XK_Down},        {"left", XK_Left},         {"right", XK_Right},
      {"home", XK_Home},        {"end", XK_End},           {"insert", XK_Insert},
      {"ins", XK_Insert},       {"tab", XK_Tab},           {"space", XK_space},
      {"altgr", XK_ISO_Level3_Shift}, {"capslock", XK_Caps_Lock}, {"menu", XK_Menu},
      {"print", XK_Print},      {"plus", XK_plus},         {"minus", XK_minus},
  };
  return kAliases;
}

unsigned long keysym_for_part(std::string_view part, bool in_chord) {
  const std::string low = lower(part);
  if (auto it = aliases().find(low); it != aliases().end()) return it->second;
  // F1..F24, any case.
  if (low.size() >= 2 && low.size() <= 3 && low[0] == 'f' &&
      std::all_of(low.begin() + 1, low.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    const int n = std::stoi(low.substr(1));
    if (n >= 1 && n <= 24) return XK_F1 + static_cast<unsigned long>(n - 1);
    return NoSymbol;
  }
  const std::string name(part);
  // KP_* with any case of the prefix: the rest is matched exactly, then with a capital first letter.
  if (low.size() > 3 && low.rfind("kp_", 0) == 0) {
    std::string rest = name.substr(3);
    KeySym ks = XStringToKeysym(("KP_" + rest).c_str());
    if (ks == NoSymbol && !rest.empty()) {
      rest[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(rest[0])));
      ks = XStringToKeysym(("KP_" + rest).c_str());
    }
    return ks;
  }
  if (part.size() > 1) {
    // Multi-byte UTF-8 single characters ("é") first, then X keysym names.
    auto cps = decode_utf8(part);
    if (cps.ok() && cps->size() == 1 && (*cps)[0] >= 0x80) return keysym_for_codepoint((*cps)[0]);
    return XStringToKeysym(name.c_str());
  }
  const auto c = static_cast<unsigned char>(part[0]);
  // In a chord ("ctrl+A"), a letter names the key: shortcut notation, case-insensitive.
  if (std::isalpha(c) && in_chord) return static_cast<unsigned long>(std::tolower(c));
  // Alone ("G"), it is that character: the upper-case keysym, typed with Shift.
  if (c >= 0x20 && c < 0x7F) return c;
  return NoSymbol;
}

}  // namespace

Result<KeyChord> parse_key_chord(std::string_view spec, const std::string& error_code) {
  if (spec.empty()) return make_error(error_code, "key is empty");
  if (spec == "+") return KeyChord{{XK_plus}};
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start <= spec.size()) {
    std::size_t plus = spec.find('+', start);
    if (plus == std::string_view::npos) {
      parts.push_back(spec.substr(start));
      break;
    }
    if (plus == start && plus + 1 == spec.size() && !parts.empty()) {
      parts.push_back("+");  // "ctrl++": the last part is the plus key itself
      break;
    }
    parts.push_back(spec.substr(start, plus - start));
    start = plus + 1;
  }
  if (parts.size() > static_cast<std::size_t>(protocol::kKeyChordMaxParts)) {
    return make_error(error_code, "key chord has more than " +
                                      std::to_string(protocol::kKeyChordMaxParts) + " parts");
  }
  KeyChord chord;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].empty()) {
      return make_error(error_code, "key chord part " + std::to_string(i + 1) + " is empty");
    }
    const unsigned long ks = keysym_for_part(parts[i], parts.size() > 1);
    if (ks == NoSymbol) {
      return make_error(error_code, "key chord part " + std::to_string(i + 1) +
                                        " is not a known key name or alias");
    }
    chord.keysyms.push_back(ks);
  }
  return chord;
}

}  // namespace evident
