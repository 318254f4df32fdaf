// Time as a seam: production uses the system clocks; tests inject FakeClock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace evident {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic milliseconds (arbitrary origin).
  virtual std::int64_t monotonic_ms() const = 0;
  // Wall clock, milliseconds since the Unix epoch.
  virtual std::int64_t wall_ms() const = 0;
};

class SystemClock final : public Clock {
 public:
  std::int64_t monotonic_ms() const override;
  std::int64_t wall_ms() const override;
  static const SystemClock& instance();
};

class FakeClock final : public Clock {
 public:
  explicit FakeClock(std::int64_t mono = 1000, std::int64_t wall = 1767225600000)
      : mono_(mono), wall_(wall) {}
  std::int64_t monotonic_ms() const override { return mono_.load(); }
  std::int64_t wall_ms() const override { return wall_.load(); }
  void advance_ms(std::int64_t ms) { mono_ += ms; wall_ += ms; }
  // A wall-clock step (NTP, a manual change): the monotonic clock does not move.
  void step_wall_ms(std::int64_t ms) { wall_ += ms; }

 private:
  std::atomic<std::int64_t> mono_;
  std::atomic<std::int64_t> wall_;
};

// RFC 3339 UTC with milliseconds and Z, e.g. "2026-11-30T17:05:01.123Z".
std::string format_rfc3339_ms(std::int64_t wall_ms);
// Inverse of format_rfc3339_ms; returns false on anything not in exactly that form.
bool parse_rfc3339_ms(const std::string& text, std::int64_t* wall_ms);

// Microseconds from a steady clock, for measurements.
inline std::int64_t steady_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace evident
