#include "display_input.h"

#include <mutex>

#include "evident/input/input.h"
#include "evident/input/restorer.h"
#include "executor_context.h"

namespace evident {
namespace {

class InputAttachment final : public DisplayAttachment {
 public:
  explicit InputAttachment(OwnedDisplay& d) : d_(d) {}

  // Under x_mutex(), the display found alive by the caller.
  Result<std::shared_ptr<InputDevice>> get_locked(const std::shared_ptr<OwnedDisplay>& display) {
    if (detached_ || !d_.dpy()) return display_dead_error();
    if (device_) return device_;
    InputOptions opts;
    opts.open_aux = aux_connection_opener(display);
    opts.defer_restore = true;
    opts.on_keymap_left_dirty = [this] {
      if (restorer_) restorer_->arm();
    };
    auto dev = InputDevice::create(d_.dpy(), opts);
    if (!dev.ok()) return dev.error();
    device_ = std::shared_ptr<InputDevice>(std::move(*dev));
    restorer_ = std::make_unique<KeymapRestorer>(*device_, d_.x_mutex(), kRestoreIdleMs);
    return device_;
  }

  void detach() override {
    std::unique_ptr<KeymapRestorer> restorer;
    {
      std::lock_guard<std::mutex> lock(d_.x_mutex());
      detached_ = true;
      restorer = std::move(restorer_);
    }
    restorer.reset();  // joins its thread, which may be waiting for x_mutex
    std::lock_guard<std::mutex> lock(d_.x_mutex());
    if (!device_) return;
    // Held keys and buttons are released and checked on this exit path too (daemon shutdown,
    // display destroy); the keymap restore is skipped: the server is about to stop. Executors
    // still holding the device get "input-dispatch-failed" from now on.
    if (d_.dpy() && d_.alive()) (void)device_->release_all_checked();
    device_->abandon();
  }

 private:
  OwnedDisplay& d_;
  bool detached_ = false;
  std::shared_ptr<InputDevice> device_;
  std::unique_ptr<KeymapRestorer> restorer_;
};

}  // namespace

Result<std::shared_ptr<InputDevice>> display_input_locked(const std::shared_ptr<OwnedDisplay>& display) {
  OwnedDisplay* raw = display.get();
  auto a = display->attachment([raw] { return std::make_shared<InputAttachment>(*raw); });
  if (!a) return display_dead_error();
  return static_cast<InputAttachment&>(*a).get_locked(display);
}

}  // namespace evident
