#include "evident/agents/convert.h"

#include <array>
#include <cctype>
#include <utility>

#include "evident/agents/adapter.h"

namespace evident::agents {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Provider spellings (lower case) -> engine key syntax. Sources: xdotool/X keysym names
// (Anthropic), the OpenAI CUA sample app's key table, Google's computer-use reference
// (Playwright names); docs/agents.md "Key names".
constexpr std::pair<const char*, const char*> kKeys[] = {
    {"ctrl", "ctrl"}, {"control", "ctrl"}, {"controlormeta", "ctrl"}, {"control_l", "Control_L"},
    {"control_r", "Control_R"}, {"alt", "alt"}, {"option", "alt"}, {"alt_l", "Alt_L"},
    {"alt_r", "Alt_R"}, {"shift", "shift"}, {"shift_l", "Shift_L"}, {"shift_r", "Shift_R"},
    {"cmd", "super"}, {"command", "super"}, {"meta", "super"}, {"super", "super"},
    {"super_l", "Super_L"}, {"super_r", "Super_R"}, {"win", "super"}, {"windows", "super"},
    {"enter", "Return"}, {"return", "Return"}, {"kp_enter", "KP_Enter"}, {"esc", "Escape"},
    {"escape", "Escape"}, {"space", "space"}, {"backspace", "BackSpace"}, {"delete", "Delete"},
    {"del", "Delete"}, {"tab", "Tab"}, {"insert", "Insert"}, {"home", "Home"}, {"end", "End"},
    {"pageup", "Prior"}, {"page_up", "Prior"}, {"pgup", "Prior"}, {"prior", "Prior"},
    {"pagedown", "Next"}, {"page_down", "Next"}, {"pgdn", "Next"}, {"next", "Next"},
    {"arrowup", "Up"}, {"up", "Up"}, {"arrowdown", "Down"}, {"down", "Down"},
    {"arrowleft", "Left"}, {"left", "Left"}, {"arrowright", "Right"}, {"right", "Right"},
    {"capslock", "Caps_Lock"}, {"caps_lock", "Caps_Lock"}, {"menu", "Menu"},
    {"printscreen", "Print"}, {"print", "Print"}, {"numlock", "Num_Lock"},
    {"scrolllock", "Scroll_Lock"}, {"pause", "Pause"}, {"semicolon", "semicolon"},
    {"equals", "equal"}, {"slash", "slash"}, {"backslash", "backslash"}, {"minus", "minus"},
};

}  // namespace

std::optional<int> image_to_display(std::int64_t x, int image_size, int display_size) {
  if (image_size <= 0 || display_size <= 0 || x < 0 || x >= image_size) return std::nullopt;
  return static_cast<int>((2 * x + 1) * display_size / (2 * static_cast<std::int64_t>(image_size)));
}

std::optional<int> image_edge_to_display(std::int64_t e, int image_size, int display_size) {
  if (image_size <= 0 || display_size <= 0 || e < 0 || e > image_size) return std::nullopt;
  return static_cast<int>(e * display_size / image_size);
}

std::optional<int> normalized_to_display(std::int64_t v, int display_size) {
  if (display_size <= 0 || v < 0 || v > 999) return std::nullopt;
  return static_cast<int>(v * display_size / 1000);
}

std::int64_t pixels_to_wheel_clicks(std::int64_t d) {
  if (d == 0) return 0;
  const std::int64_t a = d < 0 ? -d : d;
  const std::int64_t clicks = (a + kScrollPixelsPerClick / 2) / kScrollPixelsPerClick;
  return clicks < 1 ? 1 : clicks;
}

std::optional<std::int64_t> seconds_to_ms(std::int64_t seconds) {
  if (seconds < 0 || seconds > (std::int64_t{1} << 31)) return std::nullopt;
  return seconds * 1000;
}

std::optional<std::string> provider_key_to_engine(std::string_view name) {
  if (name.empty() || name.size() > 64) return std::nullopt;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) return std::nullopt;
  }
  if (name == " ") return std::string("space");
  if (name.size() == 1) {
    const auto u = static_cast<unsigned char>(name[0]);
    if (name[0] == '+') return std::string("plus");
    if (name[0] == '/') return std::string("slash");
    if (name[0] == '\\') return std::string("backslash");
    if (u < 0x80) return std::string(1, static_cast<char>(std::tolower(u)));
  }
  if (name.find(' ') != std::string_view::npos || name.find('+') != std::string_view::npos) {
    return std::nullopt;
  }
  const std::string low = lower(name);
  for (const auto& [from, to] : kKeys) {
    if (low == from) return std::string(to);
  }
  if (low.size() >= 2 && low.size() <= 3 && low[0] == 'f') {
    bool digits = true;
    for (std::size_t i = 1; i < low.size(); ++i) digits = digits && std::isdigit(static_cast<unsigned char>(low[i]));
    if (digits) {
      const int n = std::stoi(low.substr(1));
      if (n >= 1 && n <= 24) return "F" + std::to_string(n);
    }
  }
  return std::string(name);  // an X keysym name, for the action parser to accept or refuse
}

std::optional<std::string> keys_to_chord(const std::vector<std::string>& keys) {
  if (keys.empty() || keys.size() > 8) return std::nullopt;
  std::string out;
  for (const std::string& k : keys) {
    auto e = provider_key_to_engine(k);
    if (!e) return std::nullopt;
    if (!out.empty()) out += '+';
    out += *e;
  }
  return out;
}

std::optional<std::string> combo_to_chord(std::string_view combo) {
  if (combo.empty() || combo.size() > 256) return std::nullopt;
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= combo.size()) {
    const std::size_t plus = combo.find('+', start);
    if (plus == std::string_view::npos) {
      parts.emplace_back(combo.substr(start));
      break;
    }
    if (plus == start) {
      // "+" at the start of a part: the plus key itself (a trailing "ctrl++" or a lone "+").
      if (plus + 1 == combo.size()) {
        parts.emplace_back("+");
        break;
      }
      return std::nullopt;  // an empty part in the middle ("ctrl++a")
    }
    parts.emplace_back(combo.substr(start, plus - start));
    start = plus + 1;
    if (start == combo.size()) return std::nullopt;  // "ctrl+" with nothing after
  }
  return keys_to_chord(parts);
}

std::optional<std::vector<std::string>> xdotool_keys_to_chords(std::string_view text) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    std::size_t j = text.find(' ', i);
    if (j == std::string_view::npos) j = text.size();
    auto chord = combo_to_chord(text.substr(i, j - i));
    if (!chord) return std::nullopt;
    out.push_back(std::move(*chord));
    if (out.size() > kMaxActionsPerTurn) return std::nullopt;
    i = j;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (; i + 3 <= bytes.size(); i += 3) {
    const unsigned v = (p[i] << 16) | (p[i + 1] << 8) | p[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest == 1) {
    const unsigned v = p[i] << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (rest == 2) {
    const unsigned v = (p[i] << 16) | (p[i + 1] << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

}  // namespace evident::agents
