#include "evident/display/xauth.h"

#include <openssl/rand.h>

#include <cstdlib>
#include <cstring>

namespace evident {

Cookie new_cookie() {
  Cookie c{};
  if (RAND_bytes(c.data(), static_cast<int>(c.size())) != 1) std::abort();  // broken invariant
  return c;
}

namespace {

void put_u16(std::string& out, std::uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v & 0xFF));
}

void put_field(std::string& out, const void* data, std::size_t size) {
  put_u16(out, static_cast<std::uint16_t>(size));
  out.append(static_cast<const char*>(data), size);
}

}  // namespace

std::string encode_xauth_entry(std::uint16_t family, const std::string& address,
                               const std::string& number, const Cookie& cookie) {
  std::string out;
  put_u16(out, family);
  put_field(out, address.data(), address.size());
  put_field(out, number.data(), number.size());
  put_field(out, kMitMagicCookie, std::strlen(kMitMagicCookie));
  put_field(out, cookie.data(), cookie.size());
  return out;
}

std::optional<Cookie> decode_xauth_cookie(const std::string& bytes) {
  std::size_t pos = 0;
  auto u16 = [&](std::uint16_t* v) {
    if (pos + 2 > bytes.size()) return false;
    *v = static_cast<std::uint16_t>((static_cast<unsigned char>(bytes[pos]) << 8) |
                                    static_cast<unsigned char>(bytes[pos + 1]));
    pos += 2;
    return true;
  };
  auto field = [&](std::string* out) {
    std::uint16_t len = 0;
    if (!u16(&len) || pos + len > bytes.size()) return false;
    *out = bytes.substr(pos, len);
    pos += len;
    return true;
  };
  while (pos < bytes.size()) {
    std::uint16_t family = 0;
    std::string address, number, name, data;
    if (!u16(&family) || !field(&address) || !field(&number) || !field(&name) || !field(&data)) {
      return std::nullopt;  // truncated or malformed
    }
    if (name == kMitMagicCookie) {
      if (data.size() != 16) return std::nullopt;
      Cookie c{};
      std::memcpy(c.data(), data.data(), 16);
      return c;
    }
  }
  return std::nullopt;  // no MIT-MAGIC-COOKIE-1 entry
}

}  // namespace evident
