#include "executor_context.h"

#include <mutex>
#include <optional>
#include <string>

#include "display_input.h"
#include "evident/accessibility/accessibility.h"
#include "evident/service/display_capture.h"

namespace evident {

namespace {

// One `type`'s read-back through the accessibility module (docs/accessibility.md, "Verified type").
class AxTypeCheck final : public TypeReadbackCheck {
 public:
  explicit AxTypeCheck(std::unique_ptr<AxTypeReadback> r) : r_(std::move(r)) {}
  TypeReadbackVerdict finish() override {
    const AxReadbackOutcome o = r_->finish(protocol::kAxReadbackTimeoutMs);
    const ActionStatus status = o.verdict == AxReadbackVerdict::kVerified       ? ActionStatus::kOk
                                : o.verdict == AxReadbackVerdict::kContradicted ? ActionStatus::kFailed
                                                                                : ActionStatus::kInjected;
    return TypeReadbackVerdict{status, o.detail};
  }

 private:
  std::unique_ptr<AxTypeReadback> r_;
};

}  // namespace

TypeReadback type_readback_for(const std::shared_ptr<OwnedDisplay>& display) {
  if (!display->accessibility_bus()) return nullptr;
  std::weak_ptr<OwnedDisplay> weak = display;
  return [weak](const std::string& text) -> TypeReadbackStart {
    auto d = weak.lock();
    std::optional<AccessibilityBus> bus;
    if (d) bus = d->accessibility_bus();
    if (!bus || !d->accessibility_alive()) {
      return TypeReadbackStart{nullptr,
                               "not verified: the display's accessibility stack is no longer "
                               "running (accessibility-bus-gone)"};
    }
    AxReadbackOutcome why;
    auto r = AxTypeReadback::begin(bus->a11y_address, text, protocol::kAxReadbackTimeoutMs, why);
    if (!r) return TypeReadbackStart{nullptr, why.detail};
    return TypeReadbackStart{std::make_unique<AxTypeCheck>(std::move(r)), ""};
  };
}

std::function<::Display*()> aux_connection_opener(const std::shared_ptr<OwnedDisplay>& display) {
  std::weak_ptr<OwnedDisplay> weak = display;
  return [weak]() -> ::Display* {
    auto d = weak.lock();
    if (!d) return nullptr;
    auto c = d->open_connection();
    return c.ok() ? *c : nullptr;
  };
}

Result<ExecutorContext> executor_context_for(const std::shared_ptr<OwnedDisplay>& display) {
  ExecutorContext ctx;
  {
    // One liveness check (a waitid on the server) for the connection and the input device.
    std::lock_guard<std::mutex> lock(display->x_mutex());
    if (!display->dpy() || !display->alive()) return display_dead_error();
    ctx.dpy = display->dpy();
    ctx.capturer = display_capturer(*display);
    ctx.watcher = display_change_watcher(*display);
    auto input = display_input_locked(display);
    if (!input.ok()) return input.error();
    ctx.input = std::move(*input);
  }
  ctx.dpy_mutex = &display->x_mutex();
  ctx.width = display->info().width;
  ctx.height = display->info().height;
  ctx.open_aux = aux_connection_opener(display);
  ctx.type_readback = type_readback_for(display);
  if (ctx.type_readback) {
    ctx.type_readback_declines = [](const std::string& text) {
      auto no = AxTypeReadback::declines(text);
      return no ? no->detail : std::string();
    };
  }
  return ctx;
}

}  // namespace evident
