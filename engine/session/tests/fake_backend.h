// A scriptable SessionBackend for unit tests: counts executed actions and releases, and can be
// told to lose its display, kill its app, fail an action or fail the release check.
#pragma once

#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "evident/core/fs.h"
#include "evident/core/sha256.h"
#include "evident/session/backend.h"

namespace evident::testing {

// "app-" + 32 hex naming the fake app on display `d`.
inline std::string fake_app_id(std::int64_t d) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "app-%032llx", static_cast<unsigned long long>(d));
  return buf;
}

struct FakeWorld {
  std::map<std::int64_t, std::string> generations = {{1, "gen-" + std::string(32, 'a')},
                                                     {2, "gen-" + std::string(32, 'b')}};
  std::map<std::string, std::int64_t> app_display = {{fake_app_id(1), 1}, {fake_app_id(2), 2}};
  std::map<std::int64_t, bool> locked;
  std::map<std::string, bool> app_dead;
  bool display_dead = false;
  // The display still looks alive, but its server fails the confirming round trip (it is dying:
  // a killed Xvfb shuts its apps' sockets before the display's own).
  bool display_dying = false;
  bool fail_release = false;
  bool fail_capture = false;  // capture() fails while the display stays alive
  int fail_action_at = -1;    // global execution count at which execute() returns failed
  std::optional<int> exit_status;     // what app_exit_status() reports once the app is dead
  std::string settle_outcome = "fixed";  // what settle() answers
  std::vector<std::int64_t> settle_caps;  // the cap of every settle() call, in order
  std::function<void()> on_execute;  // runs inside execute() (e.g. blocks to simulate slow input)
  std::function<void()> on_capture;  // runs at the start of capture()
  std::function<void()> on_release;  // runs at the start of release_all_checked()
  std::vector<std::pair<std::int64_t, std::int64_t>> settles;  // (quiet_ms, cap_ms) of each settle()
  std::atomic<int> executed{0};
  std::atomic<int> captures{0};
  std::atomic<int> releases{0};
  std::atomic<int> leases_open{0};
  // The recorder (begin's record_video): absent unless video_available; start_video writes
  // `video_bytes` to its path; video_stop_error makes stop_video fail with that code.
  bool video_available = false;
  std::string video_bytes = "\x1a\x45\xdf\xa3 a fake webm";
  std::int64_t video_age_ms = 7;
  std::string video_stop_error;
  std::vector<std::string> video_paths;
  std::atomic<int> video_stops{0};
  // Browser workspaces (begin's "browser"): id -> display; a dead one fails its checks.
  std::map<std::string, std::int64_t> browser_display = {{"browser-" + std::string(32, '1'), 1},
                                                         {"browser-" + std::string(32, '2'), 2}};
  std::map<std::string, bool> browser_dead;
  std::atomic<int> browser_checks{0};
};

class FakeLease final : public SessionLease {
 public:
  FakeLease(FakeWorld& w, SessionTarget t) : w_(w), t_(std::move(t)) { ++w_.leases_open; }
  ~FakeLease() override {
    w_.locked[t_.display_id] = false;
    --w_.leases_open;
  }
  const SessionTarget& target() const override { return t_; }
  Result<SessionFrame> capture() override {
    if (w_.on_capture) w_.on_capture();
    if (w_.fail_capture) return make_error("capture-failed", "the capture failed");
    if (w_.display_dead) return make_error("capture-failed", "display gone");
    int n = ++w_.captures;
    SessionFrame f;
    // A PNG signature and IHDR (what the verifier reads), then bytes distinct per capture;
    // the state machine itself never decodes frames.
    auto be32 = [](std::uint32_t v) {
      return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                         static_cast<char>(v >> 8), static_cast<char>(v)};
    };
    f.bytes = std::string("\x89PNG\r\n\x1a\n", 8) + be32(13) + "IHDR" + be32(t_.width) +
              be32(t_.height) + std::string("\x08\x02\x00\x00\x00", 5) + be32(0) +
              "fake frame " + std::to_string(n) + " after " + std::to_string(w_.executed.load());
    f.sha256 = sha256_hex(f.bytes);
    f.width = t_.width;
    f.height = t_.height;
    return f;
  }
  SessionActionOutcome execute(const Action&, int) override {
    if (w_.on_execute) w_.on_execute();
    int n = w_.executed++;
    if (n == w_.fail_action_at) return {"failed", "expected X, observed Y", 1};
    return {"injected", "", 2};
  }
  std::string settle(std::int64_t quiet_ms, std::int64_t cap_ms) override {
    w_.settle_caps.push_back(cap_ms);
    w_.settles.emplace_back(quiet_ms, cap_ms);
    return w_.settle_outcome;
  }
  Status release_all_checked() override {
    if (w_.on_release) w_.on_release();
    ++w_.releases;
    if (w_.fail_release) return make_error("input-release-failed", "a key is still down");
    return {};
  }
  bool display_alive() override { return !w_.display_dead; }
  bool display_confirmed_alive() override { return !w_.display_dead && !w_.display_dying; }
  bool app_alive() override { return !w_.app_dead[t_.app_id]; }
  std::optional<int> app_exit_status() override {
    return w_.app_dead[t_.app_id] ? w_.exit_status : std::nullopt;
  }
  Result<std::int64_t> start_video(const std::string& path) override {
    if (!w_.video_available) return SessionLease::start_video(path);
    w_.video_paths.push_back(path);
    if (auto st = write_file_atomic(path, w_.video_bytes, 0600); !st) return st.error();
    return w_.video_age_ms;
  }
  Result<SessionVideo> stop_video() override {
    ++w_.video_stops;
    if (!w_.video_stop_error.empty()) return make_error(w_.video_stop_error, "the fake recorder failed");
    return SessionVideo{sha256_hex(w_.video_bytes), static_cast<std::int64_t>(w_.video_bytes.size()), 10};
  }
  Result<SessionBrowser> bind_browser(const std::string& id) override {
    auto it = w_.browser_display.find(id);
    if (it == w_.browser_display.end()) return make_error("browser-not-found", "no such browser");
    if (it->second != t_.display_id) return make_error("browser-binding-mismatch", "another display");
    if (w_.browser_dead[id]) return make_error("browser-not-live", "browser dead");
    bound_ = id;
    return SessionBrowser{id, "Chrome/140.0.0.0", std::string(32, 'A'), std::string(64, 'd'), 320, 240};
  }
  Status check_browser() override {
    ++w_.browser_checks;
    if (bound_.empty() || w_.browser_dead[bound_]) return make_error("browser-not-live", "browser dead");
    return {};
  }

 private:
  FakeWorld& w_;
  SessionTarget t_;
  std::string bound_;
};

class FakeBackend final : public SessionBackend {
 public:
  explicit FakeBackend(FakeWorld& w) : w_(w) {}
  Result<std::unique_ptr<SessionLease>> acquire(std::int64_t display_id,
                                                const std::string& generation,
                                                const std::string& app_id) override {
    auto it = w_.generations.find(display_id);
    if (it == w_.generations.end() || it->second != generation) {
      return make_error("display-generation-mismatch", "no such display generation");
    }
    auto a = w_.app_display.find(app_id);
    if (a == w_.app_display.end() || w_.app_dead[app_id]) return make_error("app-not-live", "no live app");
    if (a->second != display_id) return make_error("session-binding", "app on another display");
    if (w_.locked[display_id]) return make_error("session-busy", "display locked", true);
    w_.locked[display_id] = true;
    SessionTarget t;
    t.display_id = display_id;
    t.display_name = ":" + std::to_string(display_id);
    t.generation = generation;
    t.width = 640;
    t.height = 480;
    t.app_id = app_id;
    t.app_pid = 4242;
    t.app_argv_sha256 = std::string(64, 'c');
    return std::unique_ptr<SessionLease>(new FakeLease(w_, t));
  }

 private:
  FakeWorld& w_;
};

}  // namespace evident::testing
