// The warm pool (opt-in): one thread keeps one ready display per entry; create() leases them.
#include "evident/display/display.h"

#include <chrono>
#include "display_internal.h"

namespace evident {

using namespace display_detail;

std::shared_ptr<OwnedDisplay> DisplayManager::take_warm_locked(
    const DisplayOptions& options, std::vector<std::shared_ptr<OwnedDisplay>>& dead) {
  for (auto& w : warm_) {
    if (!(w.options == options) || !w.ready) continue;
    std::shared_ptr<OwnedDisplay> d = std::move(w.ready);
    w.ready.reset();
    warm_cv_.notify_all();  // start a replacement
    if (d->alive()) return d;
    dead.push_back(std::move(d));
    return nullptr;
  }
  return nullptr;
}

void DisplayManager::warm_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    WarmSlot* slot = nullptr;
    warm_cv_.wait(lock, [&] {
      if (shutting_down_) return true;
      int idle = 0;
      for (const auto& w : warm_) idle += w.ready ? 1 : 0;
      if (static_cast<int>(displays_.size()) + pending_creates_ + idle >= options_.max_displays) {
        return false;
      }
      for (auto& w : warm_) {
        if (!w.ready && !w.starting) {
          slot = &w;
          return true;
        }
      }
      return false;
    });
    if (shutting_down_) return;
    slot->starting = true;
    ++pending_creates_;
    const DisplayOptions o = slot->options;
    lock.unlock();
    auto started = start_display(o);
    lock.lock();
    --pending_creates_;
    slot->starting = false;
    idle_cv_.notify_all();
    if (shutting_down_) {
      lock.unlock();
      if (started.ok()) (*started)->teardown();
      return;
    }
    if (started.ok()) {
      const std::string name = (*started)->info().name;
      slot->ready = std::move(*started);
      warm_ready_cv_.notify_all();
      if (options_.on_warm_ready) {
        lock.unlock();
        options_.on_warm_ready(name, o);
        lock.lock();
      }
    } else {
      // A failing start (e.g. Xvfb missing) must not spin: retry later; normal creates still
      // work (and report the error themselves).
      warm_cv_.wait_for(lock, std::chrono::milliseconds(kWarmRetryMs),
                        [this] { return shutting_down_; });
      if (shutting_down_) return;
    }
  }
}

bool DisplayManager::wait_warm(std::int64_t timeout_ms) {
  std::unique_lock lock(mu_);
  return warm_ready_cv_.wait_for(lock, std::chrono::milliseconds(std::max<std::int64_t>(0, timeout_ms)),
                                 [this] {
                                   if (shutting_down_) return true;
                                   for (const auto& w : warm_) {
                                     if (!w.ready) return false;
                                   }
                                   return true;
                                 }) &&
         !shutting_down_;
}

int DisplayManager::warm_ready() {
  std::lock_guard lock(mu_);
  int n = 0;
  for (const auto& w : warm_) n += w.ready ? 1 : 0;
  return n;
}

}  // namespace evident
