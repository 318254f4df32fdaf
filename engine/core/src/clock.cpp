#include "evident/core/clock.h"

#include <cstdio>
#include <ctime>

namespace evident {

std::int64_t SystemClock::monotonic_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::int64_t SystemClock::wall_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

const SystemClock& SystemClock::instance() {
  // Never destroyed: threads of an Engine that outlives main() (one held in a static, or by
  // Python until interpreter exit), such as the session reaper, may still read the clock while
  // static destructors run. A destroyed function-local static here was a use after destruction
  // (UBSan "invalid vptr" in SessionManager::now_ms, found by the ASan + UBSan unit run of
  // fuzz_replay_envelope_fuzz, docs/reliability.md). Stateless, so nothing is lost by keeping it.
  static const SystemClock* const clock = new SystemClock();
  return *clock;
}

std::string format_rfc3339_ms(std::int64_t wall_ms) {
  std::time_t secs = static_cast<std::time_t>(wall_ms / 1000);
  int ms = static_cast<int>(wall_ms % 1000);
  if (ms < 0) { ms += 1000; --secs; }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return buf;
}

bool parse_rfc3339_ms(const std::string& text, std::int64_t* wall_ms) {
  if (text.size() != 24) return false;
  int y, mo, d, h, mi, s, ms;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c", &y, &mo, &d, &h, &mi, &s, &ms,
                  &tail) != 8 || tail != 'Z') {
    return false;
  }
  std::tm tm{};
  tm.tm_year = y - 1900; tm.tm_mon = mo - 1; tm.tm_mday = d;
  tm.tm_hour = h; tm.tm_min = mi; tm.tm_sec = s;
  std::time_t t = timegm(&tm);
  if (t == static_cast<std::time_t>(-1)) return false;
  *wall_ms = static_cast<std::int64_t>(t) * 1000 + ms;
  return format_rfc3339_ms(*wall_ms) == text;
}

}  // namespace evident
