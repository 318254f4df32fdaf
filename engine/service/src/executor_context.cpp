#include "executor_context.h"

#include <mutex>

#include "display_input.h"
#include "evident/service/display_capture.h"

namespace evident {

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
  return ctx;
}

}  // namespace evident
