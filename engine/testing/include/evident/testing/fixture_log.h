// Test support: the fixture app (fixtures/app) and its JSON-lines event log, waited on with
// inotify (never slept on).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "evident/core/json.h"
#include "evident/testing/files.h"

namespace evident::testing {

#ifdef EVIDENT_BINARY_DIR
inline std::string fixture_app_path() {
  return std::string(EVIDENT_BINARY_DIR) + "/fixtures/app/evident-fixture-app";
}
#endif

// The JSON objects of the complete lines of a JSON-lines text (a line still being written, or
// one that is not an object, is skipped).
inline std::vector<Json> json_lines(const std::string& text) {
  std::vector<Json> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) break;
    Json j = Json::parse(text.substr(start, nl - start), nullptr, false);
    if (j.is_object()) out.push_back(std::move(j));
    start = nl + 1;
  }
  return out;
}

inline std::vector<Json> of_type(const std::vector<Json>& events, const std::string& type) {
  std::vector<Json> out;
  for (const auto& e : events) {
    if (e.value("type", "") == type) out.push_back(e);
  }
  return out;
}

// The fixture app's event log (`--events PATH`).
class EventLog {
 public:
  explicit EventLog(std::string path) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }

  std::vector<Json> events() const { return json_lines(slurp(path_)); }
  std::vector<Json> events_of(const std::string& type) const { return of_type(events(), type); }

  // Input events the app received (presses, releases, motion, scrolls).
  static bool is_input(const Json& e) {
    static const char* kInput[] = {"key_press", "key_release", "button_press", "button_release",
                                   "motion", "scroll", "im_commit"};
    const std::string t = e.value("type", "");
    for (const char* k : kInput) {
      if (t == k) return true;
    }
    return false;
  }
  std::size_t count(const std::function<bool(const Json&)>& pred) const {
    std::size_t n = 0;
    for (const auto& e : events()) n += pred(e) ? 1 : 0;
    return n;
  }
  std::size_t input_count() const { return count(is_input); }

  // Waits (inotify, bounded) until `pred` holds for the events; the log need not exist yet.
  bool wait_for(const std::function<bool(const std::vector<Json>&)>& pred, int timeout_ms = 10000) const {
    return wait_file(path_, [&](const std::string& text) { return pred(json_lines(text)); }, timeout_ms);
  }
  // Waits until the app logged `ready` (its first Expose is painted and synced).
  bool wait_ready(int timeout_ms = 10000) const {
    return wait_for([](const std::vector<Json>& ev) { return !of_type(ev, "ready").empty(); }, timeout_ms);
  }
  // Waits until at least `n` events of `type` are logged; returns those logged by then.
  std::vector<Json> wait_events(const std::string& type, std::size_t n, int timeout_ms = 5000) const {
    wait_for([&](const std::vector<Json>& ev) { return of_type(ev, type).size() >= n; }, timeout_ms);
    return events_of(type);
  }

 private:
  std::string path_;
};

}  // namespace evident::testing
