// Strict JSON: the only parser evident uses on untrusted input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

// nlohmann::json checks its preconditions with JSON_ASSERT, which is assert() and so compiled out
// of release builds: there, a const operator[] of a missing key dereferences the object's end
// (undefined behaviour: fuzzing found two verifier reads of that kind, docs/reliability.md).
// Every evident build checks them instead, and a violation throws JsonPreconditionError (a
// std::logic_error, whose message names no input): the daemon answers that request `internal`
// and serves the next, the CLI prints an `internal` error, and a fuzzer reports it as a crash
// the first time an input reaches it rather than only when freed memory happens to be read.
// This header is the only place evident includes nlohmann/json.hpp from.
namespace evident {
class JsonPreconditionError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};
[[noreturn]] inline void json_precondition_failed(const char* condition) {
  throw JsonPreconditionError(std::string("a JSON value was used against its precondition (") +
                              condition + ")");
}
}  // namespace evident
#ifdef JSON_ASSERT
#error "evident/core/json.h must be the first include of nlohmann/json.hpp (it defines JSON_ASSERT)"
#endif
#define JSON_ASSERT(x) ((x) ? static_cast<void>(0) : ::evident::json_precondition_failed(#x))
#include <nlohmann/json.hpp>

#include "evident/core/status.h"
#include "evident/protocol/protocol.h"

namespace evident {

using Json = nlohmann::json;

inline constexpr std::int64_t kMaxSafeInteger = 9007199254740991;  // 2^53 - 1

// The nesting limit of every JSON document evident parses from outside: requests (the envelope,
// a session request, a `cu actions` request) and receipts. Depth counts open containers: a
// scalar is depth 0, `{}` and `[]` depth 1, `{"a":[1]}` depth 2. A claims object sits at level 2
// of the finish request, so claims have at most 63 levels of their own and the receipt that
// carries them (claims at level 2 again) stays within the same limit. docs/reliability.md.
// The value is protocol/evident.json's `json_depth_max`.
inline constexpr int kMaxJsonDepth = static_cast<int>(protocol::kJsonDepthMax);
// Responses the CLI reads from the daemon wrap a receipt one level deeper than the receipt.
inline constexpr int kMaxResponseJsonDepth = 2 * kMaxJsonDepth;

// Parses exactly one JSON value from `text`. Refuses, with `error_code` and a message
// naming the problem (never echoing the input): more than `max_bytes`, invalid UTF-8,
// syntax errors, trailing data, duplicate object keys at any depth, floats, integers
// outside ±(2^53−1), and nesting deeper than `max_depth` (checked as each container opens, so
// the parser never recurses past it).
Result<Json> parse_json_strict(std::string_view text, std::size_t max_bytes,
                               const std::string& error_code, int max_depth = kMaxJsonDepth);

// Depth of `value` as defined for kMaxJsonDepth, computed without recursion; stops counting at
// `stop_at` + 1 (so a caller that only compares against a limit does bounded work per level).
int json_depth(const Json& value, int stop_at = kMaxJsonDepth);

// Serialises compactly (UTF-8 kept as is). Never throws: a string that is not valid UTF-8 (which
// no parsed value holds) is written with U+FFFD in place of the bad bytes. Values are bounded by
// the parse depth, so the serializer's recursion is too.
std::string dump_json(const Json& value);

// Field checking for request objects. Every helper returns `error_code` with a message that
// names the field only when it is one of ours (the key the caller asked for, or the allowed set);
// a field name taken from the request is never echoed, nor is any value.
class JsonFields {
 public:
  JsonFields(const Json& object, std::string error_code, std::string context = "request");

  // Checks that `object` is an object and has no keys outside `allowed`.
  Status only(std::initializer_list<std::string_view> allowed) const;
  bool has(std::string_view key) const;

  Result<std::string> string(std::string_view key, std::size_t min_bytes = 0,
                             std::size_t max_bytes = SIZE_MAX) const;
  Result<std::int64_t> integer(std::string_view key, std::int64_t min, std::int64_t max) const;
  Result<bool> boolean(std::string_view key) const;
  Result<const Json*> object(std::string_view key) const;
  Result<const Json*> array(std::string_view key, std::size_t min_items = 0,
                            std::size_t max_items = SIZE_MAX) const;
  // 64 lowercase hex characters.
  Result<std::string> sha256_hex(std::string_view key) const;

  const std::string& error_code() const { return code_; }

 private:
  Error fail(std::string message) const;
  const Json* find(std::string_view key) const;

  const Json& obj_;
  std::string code_;
  std::string context_;
};

bool is_lower_hex(std::string_view s, std::size_t length);

}  // namespace evident
