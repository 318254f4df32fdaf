#include "evident/input/restorer.h"

#include <algorithm>
#include <chrono>

#include "evident/core/clock.h"
#include "evident/input/input.h"

namespace evident {

KeymapRestorer::KeymapRestorer(InputDevice& device, std::mutex& dpy_mutex, std::int64_t idle_ms)
    : device_(device), dpy_mutex_(dpy_mutex), idle_ms_(idle_ms), thread_([this] { run(); }) {}

KeymapRestorer::~KeymapRestorer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void KeymapRestorer::arm() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = true;
  }
  cv_.notify_all();
}

std::uint64_t KeymapRestorer::restores() const {
  std::lock_guard<std::mutex> lock(mu_);
  return restores_;
}

bool KeymapRestorer::wait_restores(std::uint64_t n, std::int64_t timeout_ms) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return restores_ >= n; });
}

std::optional<Status> KeymapRestorer::last_status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_;
}

void KeymapRestorer::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return armed_ || stopping_; });
    if (stopping_) return;
    // Due `idle_ms` after the last key; a key sent meanwhile moves the due time (checked under
    // the display mutex, which every key event is sent under).
    std::int64_t wait_us = idle_ms_ * 1000;
    for (;;) {
      cv_.wait_for(lock, std::chrono::microseconds(std::max<std::int64_t>(wait_us, 1000)),
                   [&] { return stopping_; });
      if (stopping_) return;
      lock.unlock();
      std::optional<Status> done;
      {
        std::lock_guard<std::mutex> dpy_lock(dpy_mutex_);
        if (!device_.keymap_dirty()) {
          wait_us = -1;  // restored by someone else (an explicit restore): disarm
        } else {
          const std::int64_t idle_for = steady_us() - device_.last_key_us();
          if (idle_for >= idle_ms_ * 1000) {
            done = device_.restore_keymap_checked();
            wait_us = -1;
          } else {
            wait_us = idle_ms_ * 1000 - idle_for;
          }
        }
      }
      lock.lock();
      if (wait_us < 0) {
        armed_ = false;
        if (done) {
          ++restores_;
          last_ = *done;
          cv_.notify_all();
        }
        break;
      }
    }
  }
}

}  // namespace evident
