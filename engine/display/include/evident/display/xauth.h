// The Xauthority file format (what libXau reads), written without xauth(1).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "evident/core/status.h"

namespace evident {

inline constexpr std::uint16_t kFamilyWild = 0xFFFF;
inline constexpr std::uint16_t kFamilyLocal = 256;
inline constexpr const char* kMitMagicCookie = "MIT-MAGIC-COOKIE-1";

using Cookie = std::array<std::uint8_t, 16>;

// A fresh cookie from OpenSSL's CSPRNG.
Cookie new_cookie();

// One entry: big-endian u16 family, then four u16-length-prefixed fields: address, display
// number, auth name ("MIT-MAGIC-COOKIE-1"), auth data (the 16 cookie bytes).
std::string encode_xauth_entry(std::uint16_t family, const std::string& address,
                               const std::string& number, const Cookie& cookie);

// Reads the first MIT-MAGIC-COOKIE-1 entry of an Xauthority file's bytes; nullopt when the bytes
// are truncated or malformed, or hold no 16-byte MIT-MAGIC-COOKIE-1 entry. Only `display status`
// reads auth files back (its "authority" layer is then blocked), so this is no error code.
std::optional<Cookie> decode_xauth_cookie(const std::string& bytes);

}  // namespace evident
