// Exact conversions shared by the provider adapters (docs/agents.md "Conversions").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace evident::agents {

// A coordinate in the model's image (0..image_size-1) -> a display pixel: the display pixel under
// the centre of the model pixel, floor((2x+1)·display/(2·image)). The identity when the sizes are
// equal. nullopt when x is outside 0..image_size-1 or a size is not positive.
std::optional<int> image_to_display(std::int64_t x, int image_size, int display_size);

// A region edge in the model's image (0..image_size) -> a display edge, floor(e·display/image).
std::optional<int> image_edge_to_display(std::int64_t e, int image_size, int display_size);

// A Gemini normalized coordinate (0..999) -> a display pixel, floor(v·display/1000) (as Google's
// reference implementation and as §4 normalized_1000). nullopt outside 0..999.
std::optional<int> normalized_to_display(std::int64_t v, int display_size);

// A pixel distance -> X wheel clicks: max(1, round-half-up(|d| / kScrollPixelsPerClick)).
// 0 for d == 0.
std::int64_t pixels_to_wheel_clicks(std::int64_t d);

// Seconds (a non-negative integer) -> milliseconds; nullopt when negative or above 2^31 s.
std::optional<std::int64_t> seconds_to_ms(std::int64_t seconds);

// One provider key name -> the engine's key syntax (docs/input.md): modifiers and named keys
// from xdotool/X keysym, OpenAI CUA and Playwright spellings (case-insensitive) become engine
// aliases or X keysym names; a single printable ASCII character stays itself (a letter lower
// case; "+" -> "plus"); anything else passes through unchanged, for the action parser to accept
// as an X keysym name or refuse. nullopt for an empty name, a name over 64 bytes, or one with a
// control character, '+' inside a longer name, or a space.
std::optional<std::string> provider_key_to_engine(std::string_view name);

// A list of keys pressed together (OpenAI `keys`, Gemini 3.5 `keys`) -> one engine chord.
std::optional<std::string> keys_to_chord(const std::vector<std::string>& keys);

// A "+"-joined combination (Gemini `key_combination`, one xdotool chord) -> one engine chord.
// A trailing "+" part is the plus key ("ctrl++").
std::optional<std::string> combo_to_chord(std::string_view combo);

// An xdotool `key` argument (Anthropic `key.text`): chords separated by spaces, pressed one after
// the other -> one engine chord per element. nullopt when empty, more than 16 chords, or any
// chord does not convert.
std::optional<std::vector<std::string>> xdotool_keys_to_chords(std::string_view text);

// Standard base64 (RFC 4648, with padding).
std::string base64_encode(std::string_view bytes);

}  // namespace evident::agents
