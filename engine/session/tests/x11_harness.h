// Helpers for the session integration tests: an in-process Engine with a real Xvfb display and
// the fixture app, the app's JSON-lines event log (waited on with inotify, never slept on),
// and Pillow as the independent PNG decoder.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "evident/core/fs.h"
#include "evident/core/json.h"
#include "evident/core/random.h"
#include "evident/service/engine.h"

namespace evident::testing {

namespace fs = std::filesystem;

inline std::string fixture_app_path() {
  return std::string(EVIDENT_BINARY_DIR) + "/fixtures/app/evident-fixture-app";
}

inline std::string code_of(const Json& r) {
  return r.value("ok", false) ? "ok" : r["error"]["code"].get<std::string>();
}

// The fixture app's event log.
class EventLog {
 public:
  explicit EventLog(std::string path) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }

  std::vector<Json> events() const {
    std::vector<Json> out;
    std::ifstream in(path_);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      try {
        out.push_back(Json::parse(line));
      } catch (...) {
        break;  // a line being written
      }
    }
    return out;
  }
  // Input events the app received (presses, releases, motion, scrolls).
  static bool is_input(const Json& e) {
    static const char* kInput[] = {"key_press", "key_release", "button_press", "button_release",
                                   "motion", "scroll", "im_commit"};
    std::string t = e["type"];
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

  // Waits (inotify on the file, bounded) until `pred` holds for the events.
  bool wait_for(const std::function<bool(const std::vector<Json>&)>& pred, int timeout_ms = 10000) const {
    int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (fd < 0) return false;
    inotify_add_watch(fd, path_.c_str(), IN_MODIFY | IN_CLOSE_WRITE);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    bool ok = false;
    while (true) {
      if (pred(events())) {
        ok = true;
        break;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) break;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) > 0) {
        char buf[4096];
        while (::read(fd, buf, sizeof buf) > 0) {
        }
      }
    }
    ::close(fd);
    return ok;
  }

 private:
  std::string path_;
};

// Waits until process `pid` (not necessarily our child) has exited, with pidfd.
inline bool wait_pid_gone(int pid, int timeout_ms = 10000) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return errno == ESRCH;
  pollfd p{fd, POLLIN, 0};
  int r = ::poll(&p, 1, timeout_ms);
  ::close(fd);
  return r > 0;
}

// Runs a command through /bin/sh, returns (exit status, stdout).
inline std::pair<int, std::string> run_capture(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {-1, ""};
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

// The RGB of pixel (x, y) of a PNG, decoded by Pillow under /usr/bin/python3.
inline std::string pixel_hex(const std::string& png_path, int x, int y) {
  auto [st, out] = run_capture(
      "/usr/bin/python3 -c \"import sys; from PIL import Image; "
      "im=Image.open(sys.argv[1]).convert('RGB'); r,g,b=im.getpixel((int(sys.argv[2]),int(sys.argv[3]))); "
      "print('%02X%02X%02X' % (r,g,b))\" " +
      shell_quote(png_path) + " " + std::to_string(x) + " " + std::to_string(y));
  if (st != 0) return "error";
  while (!out.empty() && (out.back() == '\n')) out.pop_back();
  return out;
}

// An in-process engine with one display and the fixture app on it.
class EngineHarness {
 public:
  explicit EngineHarness(int width = 800, int height = 600) {
    root_ = (fs::temp_directory_path() / ("evident-session-x11-" + random_hex(6))).string();
    EngineOptions o;
    o.state_dir = root_ + "/state";
    o.runtime_dir = root_ + "/run";
    (void)make_private_dir(root_);
    engine_ = std::make_unique<Engine>(o);
    actor_.kind = Actor::Kind::kInProcess;
    actor_.uid = ::getuid();
    actor_.pid = ::getpid();
    Json d = call("display.create", Json{{"width", width}, {"height", height}});
    if (code_of(d) != "ok") {
      ADD_FAILURE() << "display.create: " << d.dump();
      return;
    }
    display_ = d["display"];
  }
  ~EngineHarness() {
    engine_.reset();
    (void)remove_tree(root_);
  }

  Json call(const std::string& op, const Json& args) {
    return engine_->call(actor_, Json{{"op", op}, {"args", args}});
  }
  Json session(const Json& request) { return session_raw(request.dump()); }
  Json session_raw(const std::string& raw) { return session_as(actor_, raw); }
  Json session_as(const Actor& a, const std::string& raw) {
    return engine_->call(a, Json{{"op", "session"}, {"args", {{"request", raw}}}});
  }

  // Launches the fixture app at (0,0) and waits for its window.
  std::string launch_app(const std::string& name = "app") {
    std::string log = root_ + "/" + name + "-events.jsonl";
    Json r = call("app.launch", Json{{"display_id", display_id()},
                                     {"generation", generation()},
                                     {"argv", Json::array({fixture_app_path(), "--events", log})},
                                     {"wait_window_ms", 10000}});
    if (code_of(r) != "ok") {
      ADD_FAILURE() << "app.launch: " << r.dump();
      return "";
    }
    app_ = r["app"];
    log_ = std::make_unique<EventLog>(log);
    // The app logs `ready` once its first Expose is painted and synced.
    EXPECT_TRUE(log_->wait_for([](const std::vector<Json>& ev) {
      return !ev.empty() && ev[0]["type"] == "ready";
    }));
    return app_["app_id"];
  }

  Json begin(const std::string& attempt = "attempt-" + random_hex(4)) {
    return session(Json{{"op", "begin"},
                        {"display_id", display_id()},
                        {"generation", generation()},
                        {"app_id", app_["app_id"]},
                        {"attempt_id", attempt},
                        {"job_sha256", std::string(64, 'a')}});
  }

  int display_id() const { return display_["id"]; }
  std::string generation() const { return display_["generation"]; }
  int app_pid() const { return app_["pid"]; }
  EventLog& log() { return *log_; }
  Engine& engine() { return *engine_; }
  const Actor& actor() const { return actor_; }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
  std::unique_ptr<Engine> engine_;
  Actor actor_;
  Json display_;
  Json app_;
  std::unique_ptr<EventLog> log_;
};

}  // namespace evident::testing
