#include "evident/input/unicode.h"

#include <X11/keysym.h>

#include <algorithm>
#include <array>
#include <unordered_map>
#include <utility>

namespace evident {
namespace {

struct Pair {
  unsigned int keysym;
  unsigned int cp;
};

constexpr Pair kTable[] = {
#include "keysym_ucs_table.inc"
};

const std::unordered_map<char32_t, unsigned long>& ucs_to_legacy() {
  static const auto* map = [] {
    auto* m = new std::unordered_map<char32_t, unsigned long>();
    for (const Pair& p : kTable) m->emplace(p.cp, p.keysym);  // first (lowest) keysym wins
    return m;
  }();
  return *map;
}

}  // namespace

Result<std::u32string> decode_utf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  std::size_t i = 0;
  auto fail = [&](std::size_t at) {
    return make_error("text-invalid-utf8", "text is not valid UTF-8 at byte " + std::to_string(at));
  };
  while (i < text.size()) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    int len = 0;
    char32_t cp = 0;
    if (b0 < 0x80) { len = 1; cp = b0; }
    else if ((b0 & 0xE0) == 0xC0) { len = 2; cp = b0 & 0x1F; }
    else if ((b0 & 0xF0) == 0xE0) { len = 3; cp = b0 & 0x0F; }
    else if ((b0 & 0xF8) == 0xF0) { len = 4; cp = b0 & 0x07; }
    else return fail(i);
    if (i + static_cast<std::size_t>(len) > text.size()) return fail(i);
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(text[i + static_cast<std::size_t>(k)]);
      if ((b & 0xC0) != 0x80) return fail(i);
      cp = (cp << 6) | (b & 0x3F);
    }
    static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return fail(i);
    out.push_back(cp);
    i += static_cast<std::size_t>(len);
  }
  return out;
}

unsigned long keysym_for_codepoint(char32_t cp) {
  if (cp == U'\n' || cp == U'\r') return XK_Return;
  if (cp == U'\t') return XK_Tab;
  if (cp == U'\b') return XK_BackSpace;
  if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0)) return 0;
  if (cp < 0x100) return cp;
  const auto& m = ucs_to_legacy();
  if (auto it = m.find(cp); it != m.end()) return it->second;
  return 0x01000000UL + cp;
}

char32_t codepoint_for_keysym(unsigned long keysym) {
  if ((keysym >= 0x20 && keysym <= 0x7E) || (keysym >= 0xA0 && keysym <= 0xFF)) {
    return static_cast<char32_t>(keysym);
  }
  if (keysym >= 0x01000100UL && keysym <= 0x0110FFFFUL) return static_cast<char32_t>(keysym - 0x01000000UL);
  const auto* end = std::end(kTable);
  const auto* it = std::lower_bound(std::begin(kTable), end, keysym,
                                    [](const Pair& p, unsigned long k) { return p.keysym < k; });
  if (it != end && it->keysym == keysym) return it->cp;
  return 0;
}

}  // namespace evident
