// The apps' output logs (docs/displays.md "App output"): an app's stdout and stderr go to a pipe
// that one engine thread copies into <runtime>/apps/<app_id>.log (0600), rotated to
// <app_id>.log.1 when it reaches DisplayManager::kAppLogMaxBytes, so an app's output costs at most
// twice that however much it writes. The logs of ended apps are kept up to
// DisplayManager::kAppLogsKept (the newest); an older one is removed when another app ends.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "evident/core/status.h"

namespace evident {

class AppLogs {
 public:
  explicit AppLogs(std::uint64_t max_bytes, std::size_t kept);
  ~AppLogs();  // stops the thread; what is still readable is copied first
  AppLogs(const AppLogs&) = delete;
  AppLogs& operator=(const AppLogs&) = delete;

  // Creates `path` (0600, exclusive) and a pipe; returns the pipe's write end for the app's
  // stdout and stderr (the caller closes its copy after the spawn). "app-launch-failed".
  Result<int> open(const std::string& path);
  // Copies what the app has written so far (the pipe's readable bytes) into its log now.
  void flush(const std::string& path);
  // The app ended (stopped, exited, or its launch failed): its log is kept among the newest
  // `kept`; the oldest beyond that is removed (its pipe closed, both files unlinked).
  void ended(const std::string& path);

  // The log of an app that writes more than max_bytes: the current file and path + ".1".
  static std::string rotated_path(const std::string& path) { return path + ".1"; }

 private:
  struct Log;
  void loop();
  // Reads what the pipe holds into the file (rotating). Caller holds mu_. False at EOF.
  bool pump(Log& log);
  void close_locked(const std::string& path);

  const std::uint64_t max_bytes_;
  const std::size_t kept_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Log>> logs_;  // by path; pumped while open
  std::deque<std::string> ended_;                     // oldest first
  int epoll_ = -1;
  int wake_ = -1;  // eventfd: stop
  std::thread thread_;
};

}  // namespace evident
