// The display registry: create (start or lease), register, get, destroy, list, shut down.
#include "evident/display/display.h"

#include <map>
#include <thread>

#include "evident/core/random.h"
#include "evident/display/x11.h"
#include "app_logs.h"
#include "display_internal.h"

namespace evident {

using namespace display_detail;

// ----------------------------------------------------------------------------- DisplayManager

bool operator==(const DisplayOptions& a, const DisplayOptions& b) {
  return a.width == b.width && a.height == b.height && a.depth == b.depth && a.dpi == b.dpi;
}

DisplayManager::DisplayManager(DisplayManagerOptions options)
    : options_(std::move(options)),
      logs_(std::make_unique<AppLogs>(kAppLogMaxBytes, kAppLogsKept)) {
  ensure_xlib_initialized();
  for (const auto& o : options_.warm) {
    // An invalid entry could never be leased (create validates first): skip it.
    if (!validate_display_options(o).ok()) continue;
    if (std::any_of(warm_.begin(), warm_.end(), [&](const WarmSlot& w) { return w.options == o; })) {
      continue;
    }
    warm_.push_back(WarmSlot{o, nullptr, false});
  }
  if (!warm_.empty()) warm_thread_ = std::thread([this] { warm_loop(); });
}

DisplayManager::~DisplayManager() { destroy_all(); }

Result<std::shared_ptr<OwnedDisplay>> DisplayManager::create(const DisplayOptions& options) {
  EVIDENT_TRY(validate_display_options(options));
  const std::int64_t t0 = steady_us();
  std::shared_ptr<OwnedDisplay> leased;
  std::vector<std::shared_ptr<OwnedDisplay>> dead;
  bool at_limit = false;
  {
    std::lock_guard lock(mu_);
    if (shutting_down_) return shutting_down();
    leased = take_warm_locked(options, dead);
    if (!leased) {
      int idle = 0;
      for (const auto& w : warm_) idle += w.ready ? 1 : 0;
      at_limit =
          static_cast<int>(displays_.size()) + pending_creates_ + idle >= options_.max_displays;
      if (!at_limit) ++pending_creates_;
    }
  }
  for (auto& d : dead) d->teardown();  // died while idle in the pool: never leased
  if (at_limit) {
    return make_error("display-limit", "at most " + std::to_string(options_.max_displays) +
                                           " displays per engine; destroy one first");
  }
  if (leased) {
    // A fresh lifetime for the caller: the generation it had while idle was never handed out,
    // but a new one keeps "one generation per create" true without exception.
    leased->info_.generation = random_id("gen");
    if (Status st = apply_create_options(*leased, options); !st.ok()) {
      leased->teardown();
      return st.error();
    }
    if (options.accessibility) {
      if (Status st = start_accessibility(*leased); !st.ok()) {
        leased->teardown();
        return st.error();
      }
    }
    leased->info_.ready_us = steady_us() - t0;
    return register_display(std::move(leased));
  }
  auto started = start_display(options);
  {
    std::lock_guard lock(mu_);
    --pending_creates_;
    idle_cv_.notify_all();
    warm_cv_.notify_all();  // the refill thread may be waiting for room under max_displays
  }
  if (!started.ok()) return started.error();
  if (!options.keyboard_layout.empty() || options.manage_windows) {
    // Before the display is registered: nobody sees it with another layout or unmanaged, and a
    // failure leaves nothing behind.
    if (Status st = apply_create_options(**started, options); !st.ok()) {
      (*started)->teardown();
      return st.error();
    }
    (*started)->info_.ready_us = steady_us() - t0;
  }
  if (options.accessibility) {
    // Like the layout: before the display is registered, so a failure leaves nothing behind.
    if (Status st = start_accessibility(**started); !st.ok()) {
      (*started)->teardown();
      return st.error();
    }
    (*started)->info_.ready_us = steady_us() - t0;
  }
  return register_display(std::move(*started));
}

Status DisplayManager::apply_create_options(OwnedDisplay& d, const DisplayOptions& options) {
  if (!options.keyboard_layout.empty()) {
    EVIDENT_TRY(apply_keyboard_layout(d, options.keyboard_layout));
  }
  d.info_.manage_windows = options.manage_windows;
  if (options.manage_windows) {
    auto keeper = WindowKeeper::start(d.info_.name, d.cookie_, d.info_.width, d.info_.height);
    if (!keeper.ok()) return keeper.error();
    std::lock_guard lock(d.attachment_mu_);
    d.keeper_ = std::move(*keeper);
  }
  return {};
}

Result<std::shared_ptr<OwnedDisplay>> DisplayManager::register_display(
    std::shared_ptr<OwnedDisplay> d) {
  std::shared_ptr<OwnedDisplay> replaced;
  {
    std::lock_guard lock(mu_);
    if (shutting_down_) {
      replaced = d;  // torn down below, outside the lock
    } else {
      auto& slot = displays_[d->info().id];
      // The number can only be reused if our previous server on it died: retire that one.
      replaced = std::move(slot);
      slot = d;
    }
  }
  if (replaced) {
    if (replaced == d) {
      replaced->teardown();
      return shutting_down();
    }
    stop_apps_of(replaced->info().id, replaced->info().generation);
    replaced->teardown();
  }
  return d;
}

Status DisplayManager::destroy(int id, const std::string& generation) {
  std::shared_ptr<OwnedDisplay> d;
  {
    std::lock_guard lock(mu_);
    auto it = displays_.find(id);
    if (it == displays_.end()) return not_found(id);
    if (!is_generation_token(generation) || it->second->info().generation != generation) {
      return generation_mismatch(id);
    }
    d = std::move(it->second);
    displays_.erase(it);
    warm_cv_.notify_all();  // room under max_displays for a refill
  }
  stop_apps_of(id, generation);
  d->teardown();
  return {};
}

std::vector<DisplayInfo> DisplayManager::list() {
  std::lock_guard lock(mu_);
  std::vector<DisplayInfo> out;
  for (const auto& [id, d] : displays_) out.push_back(d->info());
  return out;
}

Result<std::shared_ptr<OwnedDisplay>> DisplayManager::get(int id, const std::string& generation) {
  std::lock_guard lock(mu_);
  auto it = displays_.find(id);
  if (it == displays_.end()) return not_found(id);
  if (!is_generation_token(generation) || it->second->info().generation != generation) {
    return generation_mismatch(id);
  }
  return it->second;
}

Result<std::shared_ptr<OwnedDisplay>> DisplayManager::get_live(int id,
                                                              const std::string& generation) {
  auto d = get(id, generation);
  if (!d.ok()) return d.error();
  if (!(*d)->alive()) return display_dead_error();
  return d;
}

void DisplayManager::destroy_all() {
  std::vector<std::shared_ptr<App>> apps;
  std::thread warm_thread;
  {
    std::lock_guard lock(mu_);
    shutting_down_ = true;
    for (auto& [id, a] : apps_) apps.push_back(a);
    apps_.clear();
    warm_thread = std::move(warm_thread_);
    warm_cv_.notify_all();
    warm_ready_cv_.notify_all();
  }
  // Stopping apps first also wakes launches that wait for a window.
  stop_all(apps, kAppStopBoundMs);
  // The refill thread finishes (and tears down) a start in progress, then exits.
  if (warm_thread.joinable()) warm_thread.join();
  std::map<int, std::shared_ptr<OwnedDisplay>> displays;
  std::vector<std::shared_ptr<OwnedDisplay>> idle;
  {
    std::unique_lock lock(mu_);
    idle_cv_.wait(lock, [this] { return pending_creates_ == 0; });
    displays.swap(displays_);
    for (auto& w : warm_) {
      if (w.ready) idle.push_back(std::move(w.ready));
      w.ready.reset();
    }
    for (auto& [id, a] : apps_) apps.push_back(a);
    apps_.clear();
  }
  stop_all(apps, kAppStopBoundMs);
  for (auto& d : idle) d->teardown();
  for (auto& [id, d] : displays) d->teardown();
}

}  // namespace evident
