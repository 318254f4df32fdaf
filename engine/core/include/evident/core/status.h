// Expected failures as values: Error carries a stable kebab-case id (docs/errors.md),
// a message for people, and whether retrying the same request can succeed.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "evident/core/utf8.h"

namespace evident {

struct Error {
  std::string code;     // stable kebab-case id, e.g. "display-generation-mismatch"
  std::string message;  // for people; never contains typed text or key names
  bool retryable = false;
};

// Whether an error with this code is retryable. protocol/evident.json decides for every code it
// declares "retryable": true or false (the one place that says so); `depends` is the answer only
// for a code declared "depends" (the caller knows which case it is in) and for an undeclared code
// (which the guard protocol/tests/check_codes.py refuses in engine sources).
bool declared_retryable(std::string_view code, bool depends);

// Every Error is made here. The message is made valid UTF-8 (utf8_sanitized), so every Error
// message is valid UTF-8 by construction, whatever pieces it was assembled from (a cut at a byte
// limit, OS text); `retryable` is declared_retryable(code, depends). The guard
// protocol/tests/check_codes.py requires `depends` for a "depends" code and refuses it for others.
inline Error make_error(std::string code, std::string message, bool depends = false) {
  const bool retryable = declared_retryable(code, depends);
  return Error{std::move(code), utf8_sanitized(std::move(message)), retryable};
}

// Result<T>: either a T or an Error. Result<void>: success or an Error.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}            // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}        // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(v_); }
  const T& value() const& { assert(ok()); return std::get<0>(v_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { assert(!ok()); return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : e_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return !e_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { assert(!ok()); return *e_; }

 private:
  std::optional<Error> e_;
};

using Status = Result<void>;

inline Status ok_status() { return {}; }

}  // namespace evident

// Early return on error: EVIDENT_TRY(expr) for Status-returning expressions.
#define EVIDENT_TRY(expr)                               \
  do {                                                  \
    auto evident_try_status_ = (expr);                  \
    if (!evident_try_status_.ok()) return evident_try_status_.error(); \
  } while (0)
