// Deferred keymap restore for a long-lived InputDevice (InputOptions::defer_restore): a spare
// keycode mapped for one type call stays mapped, so the next call that needs the same character
// sends no remap and waits for no client; once no key was sent for `idle_ms`, one thread puts the
// original keymap back (after the decode barrier) and verifies it. The longer the keymap stays,
// the longer every client has had to decode the keys that used it. See docs/input.md.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>

#include "evident/core/status.h"

namespace evident {

class InputDevice;

class KeymapRestorer {
 public:
  // `device` and `dpy_mutex` (the mutex every call on `device` holds) must outlive the restorer.
  KeymapRestorer(InputDevice& device, std::mutex& dpy_mutex, std::int64_t idle_ms);
  // Stops the thread; does not restore (the owner decides: restore now, or abandon the device).
  ~KeymapRestorer();
  KeymapRestorer(const KeymapRestorer&) = delete;
  KeymapRestorer& operator=(const KeymapRestorer&) = delete;

  // A batch left the keymap remapped (InputOptions::on_keymap_left_dirty). Cheap; any thread.
  void arm();
  // Restores completed (passed or failed) since construction.
  std::uint64_t restores() const;
  // Waits until at least `n` restores completed; false at the timeout. For tests and shutdown.
  bool wait_restores(std::uint64_t n, std::int64_t timeout_ms) const;
  // The outcome of the last restore (nullopt: none yet). Errors: "keymap-restore-failed".
  std::optional<Status> last_status() const;

 private:
  void run();

  InputDevice& device_;
  std::mutex& dpy_mutex_;
  const std::int64_t idle_ms_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool armed_ = false;
  bool stopping_ = false;
  std::uint64_t restores_ = 0;
  std::optional<Status> last_;
  std::thread thread_;
};

}  // namespace evident
