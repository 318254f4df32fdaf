#include "evident/core/utf8.h"

#include <cstdint>
#include <cstring>

namespace evident {
namespace {

// Length of the well-formed sequence starting at p[i], or 0 when it is ill-formed.
std::size_t sequence_length(const unsigned char* p, std::size_t i, std::size_t size) {
  const unsigned char c = p[i];
  if (c < 0x80) return 1;
  std::size_t n;
  std::uint32_t cp;
  if ((c & 0xE0) == 0xC0) { n = 1; cp = c & 0x1F; }
  else if ((c & 0xF0) == 0xE0) { n = 2; cp = c & 0x0F; }
  else if ((c & 0xF8) == 0xF0) { n = 3; cp = c & 0x07; }
  else return 0;
  if (i + n >= size) return 0;
  for (std::size_t k = 1; k <= n; ++k) {
    const unsigned char cc = p[i + k];
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000)) return 0;
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n + 1;
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::size_t i = 0;
  while (i < s.size()) {
    if (p[i] < 0x80) {
      ++i;
      // ASCII runs 8 bytes at a time.
      while (i + 8 <= s.size()) {
        std::uint64_t x;
        std::memcpy(&x, p + i, 8);
        if (x & 0x8080808080808080ULL) break;
        i += 8;
      }
      continue;
    }
    const std::size_t n = sequence_length(p, i, s.size());
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string utf8_sanitized(std::string s) {
  if (is_valid_utf8(s)) return s;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::string out;
  out.reserve(s.size() + 8);
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t n = sequence_length(p, i, s.size());
    if (n == 0) {
      out.append("\xEF\xBF\xBD");  // U+FFFD; resynchronise at the next byte
      ++i;
      // Skip the continuation bytes of the broken sequence, so one cut character is one U+FFFD.
      while (i < s.size() && (p[i] & 0xC0) == 0x80) ++i;
      continue;
    }
    out.append(s, i, n);
    i += n;
  }
  return out;
}

}  // namespace evident
