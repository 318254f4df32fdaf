// UTF-8 validity: one validator for the strict JSON parser and for every message evident emits.
#pragma once

#include <string>
#include <string_view>

namespace evident {

// True when `s` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view s);

// `s` with every maximal ill-formed subsequence replaced by U+FFFD (valid input is returned
// unchanged, without copying work beyond the check).
std::string utf8_sanitized(std::string s);

}  // namespace evident
