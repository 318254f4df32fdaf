// Key and chord names ("ctrl+shift+t", "Return", "F5", "KP_Enter", "pgup") -> X keysyms.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "evident/core/status.h"

namespace evident {

// A chord: keysyms pressed in order and released in reverse (modifiers first, the key last).
struct KeyChord {
  std::vector<unsigned long> keysyms;
};

// Parses a key or chord. Rules (docs/input.md): parts are joined by '+'; a trailing "+" part
// ("ctrl++") is the plus key. Each part is tried as (1) a case-insensitive alias (ctrl, control,
// shift, alt, option, cmd, super, meta, win, enter, return, esc, escape, pgup, pageup, pgdn,
// pagedown, del, delete, bksp, backspace, up, down, left, right, home, end, insert, tab, space,
// f1..f24, kp_*), (2) an exact X keysym name (XStringToKeysym), (3) a single character (its
// keysym; a single ASCII letter is case-insensitive, lower case). Anything else fails with
// `error_code` and a message naming only the part's position, never the key.
Result<KeyChord> parse_key_chord(std::string_view spec, const std::string& error_code);

}  // namespace evident
