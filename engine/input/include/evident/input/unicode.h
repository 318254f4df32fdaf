// Text <-> keysym conversions used to type arbitrary Unicode with XTest.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "evident/core/status.h"

namespace evident {

// Decodes UTF-8 into code points. "text-invalid-utf8" on malformed input (the message names the
// byte offset only, never the text).
Result<std::u32string> decode_utf8(std::string_view text);

// The keysym that produces `cp`: Latin-1 maps to itself, other characters with a legacy keysym
// (keysymdef.h) use it, everything else is the Unicode keysym 0x01000000 + cp.
// '\n' -> Return, '\t' -> Tab, '\b' -> BackSpace. Returns 0 for other control characters.
unsigned long keysym_for_codepoint(char32_t cp);

// The character a keysym produces, or 0 when it produces none (function keys, modifiers).
char32_t codepoint_for_keysym(unsigned long keysym);

}  // namespace evident
