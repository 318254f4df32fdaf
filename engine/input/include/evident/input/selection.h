// Paste support: owns CLIPBOARD and PRIMARY from a dedicated connection and thread and serves
// SelectionRequest (UTF8_STRING, STRING, TEXT, TARGETS) until the target fetched the text.
#pragma once

typedef struct _XDisplay Display;  // Xlib

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "evident/core/status.h"

namespace evident {

class SelectionServer {
 public:
  // Opens a connection with `open`, creates a hidden window, takes CLIPBOARD and PRIMARY and
  // verifies the ownership. "paste-failed".
  static Result<std::unique_ptr<SelectionServer>> start(const std::function<::Display*()>& open,
                                                        std::string text);
  ~SelectionServer();
  SelectionServer(const SelectionServer&) = delete;
  SelectionServer& operator=(const SelectionServer&) = delete;

  // Waits until some client converted the text (not just TARGETS) or `deadline_us` (steady_us).
  bool wait_fetched(std::int64_t deadline_us);
  int text_requests() const { return text_requests_.load(); }
  // Gives the selections up (only if still ours) and stops serving. Returns what happened, for the
  // action detail: "released" (nobody owned them before) or "released; previous owner not
  // restored" (X cannot hand ownership back to another client).
  std::string finish();

 private:
  SelectionServer() = default;
  void serve();

  ::Display* dpy_ = nullptr;
  unsigned long window_ = 0;  // Window
  std::string text_;
  bool had_previous_owner_ = false;
  unsigned long clipboard_ = 0, primary_ = 0, utf8_ = 0, targets_ = 0, text_atom_ = 0;  // Atoms
  int wake_fd_[2] = {-1, -1};
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<int> text_requests_{0};
  bool stop_ = false;
  bool finished_ = false;
};

}  // namespace evident
