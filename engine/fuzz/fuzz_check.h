// Invariants shared by the fuzz harnesses (docs/reliability.md "Fuzzing and sanitizers").
// A violated invariant aborts with a one-line reason, which libFuzzer reports as a crash and the
// corpus replay test (replay_main.cpp) as a failure. Header-only; harnesses include it once.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/core/utf8.h"
#include "evident/protocol/protocol.h"

namespace evident::fuzz {

[[noreturn]] inline void fail(const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "fuzz invariant violated: %s", what);
  if (!detail.empty()) {
    // The detail is engine output (a code or message), shown escaped so a bad byte is visible.
    std::fputs(": ", stderr);
    for (unsigned char c : detail) {
      if (c >= 0x20 && c < 0x7f) std::fputc(c, stderr);
      else std::fprintf(stderr, "\\x%02x", c);
    }
  }
  std::fputc('\n', stderr);
  std::abort();
}

// With EVIDENT_FUZZ_TRACE set, harnesses print each input's outcome (which path it took), to
// audit what a seed corpus reaches: `EVIDENT_FUZZ_TRACE=1 build/engine/fuzz/fuzz_replay_X corpus/X`.
inline void trace(std::string_view outcome, std::string_view detail = "") {
  static const bool on = std::getenv("EVIDENT_FUZZ_TRACE") != nullptr;
  if (on) std::fprintf(stderr, "  -> %.*s %.*s\n", static_cast<int>(outcome.size()), outcome.data(),
                       static_cast<int>(detail.size()), detail.data());
}

inline void require(bool ok, const char* what, std::string_view detail = {}) {
  if (!ok) fail(what, detail);
}

// The checks below compare input bytes with engine output. Under libFuzzer every comparison in
// instrumented code (and every memcmp/strstr) feeds the fuzzer's dictionary, which would teach it
// to copy the messages into its inputs and then "find" an echo. So they are written as plain
// loops over rolling hashes, with coverage instrumentation off (no-op outside clang).
#if defined(__clang__)
#define EVIDENT_FUZZ_UNTRACED __attribute__((no_sanitize("coverage"), noinline))
#else
#define EVIDENT_FUZZ_UNTRACED __attribute__((noinline))
#endif

// Bytes of an echo window: a run of this many input bytes found in a message is an echo.
inline constexpr std::size_t kEchoWindow = 16;

EVIDENT_FUZZ_UNTRACED inline bool same_bytes_fwd(const unsigned char* a, const unsigned char* b, std::size_t n) {
  unsigned diff = 0;
  for (std::size_t i = 0; i < n; ++i) diff |= static_cast<unsigned>(a[i] ^ b[i]);
  return diff == 0;
}

// The snake_case words in the engine's own string literals (generated: vocabulary.py).
inline constexpr std::string_view kVocabulary[] = {
#include "fuzz_vocabulary.inc"
};

EVIDENT_FUZZ_UNTRACED inline bool is_word_byte(unsigned c) {
  return (c - 'a' < 26u) | (c - '0' < 10u) | (c == '_');
}

// True when the message bytes [p, p+n) are all the engine's own naming: inside a vocabulary word
// (a field name it checks, "coordinate_space"; a number), or the quote, dot, bracket, hyphen,
// slash, comma or space around one ("actions[3].x", "\"observe\"", "anthropic-computer-20250124",
// "evident.disclosure/v1", the list "(allowed: actions, observe, settle, coordinate_space)").
// Such a run also found in the input is not an echo: the engine names a field it knows, which
// the request also holds (" coordinate_space" in the request, ", coordinate_space" in the list).
EVIDENT_FUZZ_UNTRACED inline bool own_naming(std::string_view message, std::size_t p, std::size_t n) {
  const auto* m = reinterpret_cast<const unsigned char*>(message.data());
  const std::size_t size = message.size();
  std::size_t i = p;
  while (i < p + n) {
    const unsigned c = m[i];
    if (c == '"' || c == '.' || c == '[' || c == ']' || c == '-' || c == '/' || c == ',' || c == ' ') {
      ++i;
      continue;
    }
    if (!is_word_byte(c)) return false;
    std::size_t a = i, b = i;
    while (a > 0 && is_word_byte(m[a - 1])) --a;
    while (b < size && is_word_byte(m[b])) ++b;
    bool digits = true;
    for (std::size_t k = a; k < b; ++k) digits = digits && (static_cast<unsigned>(m[k] - '0') < 10u);
    bool known = digits;
    for (std::string_view w : kVocabulary) {
      if (known) break;
      known = w.size() == b - a && same_bytes_fwd(reinterpret_cast<const unsigned char*>(w.data()), m + a, b - a);
    }
    if (!known) return false;
    i = b;
  }
  return true;
}

EVIDENT_FUZZ_UNTRACED inline bool same_bytes(const unsigned char* a, const unsigned char* b, std::size_t n) {
  return same_bytes_fwd(a, b, n);
}

// True when `hay` contains `needle` (untraced; Rabin-Karp, verified bytewise).
EVIDENT_FUZZ_UNTRACED inline bool contains_bytes(std::string_view hay, std::string_view needle) {
  const auto* h = reinterpret_cast<const unsigned char*>(hay.data());
  const auto* n = reinterpret_cast<const unsigned char*>(needle.data());
  const std::size_t m = needle.size();
  if (m == 0) return true;
  if (hay.size() < m) return false;
  constexpr std::uint64_t kBase = 1099511628211ULL;
  std::uint64_t top = 1, hn = 0, hh = 0;
  for (std::size_t i = 0; i < m; ++i) {
    hn = hn * kBase + n[i];
    hh = hh * kBase + h[i];
    if (i + 1 < m) top *= kBase;
  }
  for (std::size_t i = 0;; ++i) {
    if (hh == hn && same_bytes(h + i, n, m)) return true;
    if (i + m >= hay.size()) return false;
    hh = (hh - h[i] * top) * kBase + h[i + m];
  }
}

// True when the message carries a kEchoWindow-byte run of the input that is not the engine's own
// naming (see above). Linear in the input: the message's window hashes go into a small table.
EVIDENT_FUZZ_UNTRACED inline bool find_echo(std::string_view input, std::string_view message) {
  constexpr std::size_t W = kEchoWindow;
  if (message.size() < W || input.size() < W) return false;
  const auto* in = reinterpret_cast<const unsigned char*>(input.data());
  const auto* msg = reinterpret_cast<const unsigned char*>(message.data());
  constexpr std::uint64_t kBase = 1099511628211ULL;
  std::uint64_t top = 1;
  for (std::size_t i = 0; i + 1 < W; ++i) top *= kBase;
  auto first = [&](const unsigned char* p) {
    std::uint64_t h = 0;
    for (std::size_t i = 0; i < W; ++i) h = h * kBase + p[i];
    return h;
  };
  // Open addressing over the message's windows (messages are short; larger ones are cut to
  // the first 4 KiB, far beyond any message evident writes).
  constexpr std::size_t kSlots = 8192;
  static std::uint64_t hashes[kSlots];
  static std::uint32_t where[kSlots];  // window offset + 1; 0 = empty
  for (std::size_t i = 0; i < kSlots; ++i) where[i] = 0;
  const std::size_t windows = std::min<std::size_t>(message.size() - W + 1, 4096);
  std::uint64_t h = first(msg);
  for (std::size_t i = 0; i < windows; ++i) {
    if (i > 0) h = (h - msg[i - 1] * top) * kBase + msg[i - 1 + W];
    std::size_t s = h % kSlots;
    while (where[s] != 0) s = (s + 1) % kSlots;
    hashes[s] = h;
    where[s] = static_cast<std::uint32_t>(i + 1);
  }
  h = first(in);
  for (std::size_t i = 0; i + W <= input.size(); ++i) {
    if (i > 0) h = (h - in[i - 1] * top) * kBase + in[i - 1 + W];
    for (std::size_t s = h % kSlots; where[s] != 0; s = (s + 1) % kSlots) {
      if (hashes[s] == h && same_bytes(msg + where[s] - 1, in + i, W) && !own_naming(message, where[s] - 1, W)) {
        return true;
      }
    }
  }
  return false;
}

inline void require_no_echo(std::string_view input, std::string_view message) {
  if (find_echo(input, message)) fail("message echoes input bytes", message);
}

// Every error a parser returns for outside input: a declared, kebab-case code, a valid UTF-8
// message with no echo of the input, and a code among `allowed` when the caller lists them.
inline void require_good_error(const Error& e, std::string_view input,
                               std::initializer_list<std::string_view> allowed = {}) {
  trace("refused", e.code);
  require(protocol::find_error_code(e.code) != nullptr, "error code not declared in protocol/evident.json", e.code);
  if (allowed.size() != 0) {
    bool found = false;
    for (auto a : allowed) found = found || a == e.code;
    require(found, "error code not one this parser documents", e.code);
  }
  require(!e.message.empty(), "empty error message", e.code);
  require(is_valid_utf8(e.message), "error message is not valid UTF-8", e.message);
  require_no_echo(input, e.message);
}

// A JSON value evident emits: dumps without throwing, to valid UTF-8, and parses back strictly
// to the same value (within `max_depth`).
inline void require_round_trip(const Json& value, int max_depth = kMaxJsonDepth) {
  const std::string text = dump_json(value);
  require(is_valid_utf8(text), "dump_json wrote invalid UTF-8");
  auto back = parse_json_strict(text, text.size() + 1, "internal", max_depth);
  require(back.ok(), "dump_json output does not parse back", back.ok() ? "" : back.error().message);
  require(*back == value, "parse(dump(v)) != v");
}

}  // namespace evident::fuzz
