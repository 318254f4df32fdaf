// The cu.actions op: one action batch outside a session (docs/actions.md).
#include "ops_common.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "evident/accessibility/accessibility.h"
#include "evident/actions/batch.h"
#include "evident/core/fs.h"
#include "evident/display/display.h"
#include "executor_context.h"

namespace evident {

namespace {

// The display lock's owner name for one batch: unique in this process, which is all the lock
// compares (sessions hold it under their own ids). A counter, not a CSPRNG draw per call.
std::string next_batch_owner() {
  static std::atomic<std::uint64_t> next{0};
  return "cu-actions-" + std::to_string(next.fetch_add(1, std::memory_order_relaxed) + 1);
}

// True unless the request asks for "observe":"none" or "ax" (the default is "pixels"); the
// parser refuses any other value before a frame could be written.
bool observes(const Json& request) {
  auto o = request.find("observe");
  if (o == request.end() || !o->is_string()) return true;
  const std::string& kind = o->get_ref<const std::string&>();
  return kind != "none" && kind != "ax";
}

// observe:"ax" (docs/accessibility.md, "observe: ax"): refused before anything runs on a display
// without a live accessibility stack; after the batch, the desktop of the display's AT-SPI bus
// as text within the ax_observe_* bounds.
AxObserver ax_observer_for(const std::shared_ptr<OwnedDisplay>& disp) {
  AxObserver ax;
  ax.check = [disp]() -> Status {
    if (!disp->accessibility_bus()) {
      return make_error("accessibility-off",
                        "observe \"ax\": the display was created without accessibility (display "
                        "create --accessibility); nothing ran");
    }
    if (!disp->accessibility_alive()) {
      return make_error("accessibility-bus-gone",
                        "observe \"ax\": the display's accessibility stack is no longer running; "
                        "nothing ran");
    }
    return {};
  };
  ax.observe = [disp]() -> Result<Json> {
    auto bus = disp->accessibility_bus();
    if (!bus || !disp->accessibility_alive()) {
      return make_error("accessibility-bus-gone",
                        "the display's accessibility stack is no longer running");
    }
    AxLimits limits;
    limits.max_nodes = static_cast<int>(protocol::kAxObserveMaxNodes);
    limits.max_depth = static_cast<int>(protocol::kAxObserveMaxDepth);
    auto tree = read_ax_desktop(bus->a11y_address, limits);
    if (!tree.ok()) return tree.error();
    const AxText text = ax_tree_text(*tree, static_cast<std::size_t>(protocol::kAxObserveMaxBytes),
                                     static_cast<std::size_t>(protocol::kAxObserveFieldMaxBytes));
    int apps = 0;
    for (const AxNode& n : tree->nodes) apps += n.depth == 1 ? 1 : 0;
    const bool truncated = tree->truncated || text.cut;
    std::string by = text.cut ? "max_bytes" : tree->truncated_by;
    return Json{{"text", text.text},
                {"node_count", static_cast<int>(tree->nodes.size())},
                {"line_count", text.lines},
                {"app_count", apps},
                {"truncated", truncated},
                {"truncated_by", truncated ? Json(by) : Json(nullptr)},
                {"max_nodes", limits.max_nodes},
                {"max_depth", limits.max_depth},
                {"elapsed_us", tree->elapsed_us}};
  };
  return ax;
}

}  // namespace

void register_action_ops(OpTable& ops, DisplayManager& displays, std::string runtime_dir) {
  // One §4 action batch outside a session (actions module, docs/actions.md). Refused with
  // display-busy while a session (or another batch) holds the display.
  ops["cu.actions"] = [&displays, runtime_dir](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"display_id", "generation", "request"}));
    auto ref = display_ref_arg(f);
    if (!ref.ok()) return ref.error();
    auto req = f.object("request");
    if (!req.ok()) return req.error();
    auto d = displays.get(ref->id, ref->generation);
    if (!d.ok()) return d.error();
    std::shared_ptr<OwnedDisplay> disp = *d;
    const std::string owner = next_batch_owner();
    if (!disp->try_acquire_session(owner)) {
      return make_error("display-busy", "a session or another action batch holds this display");
    }
    struct Release {
      std::shared_ptr<OwnedDisplay> d;
      std::string owner;
      ~Release() { d->release_session(owner); }
    } release{disp, owner};
    // Frames are written only when the batch observes: no directory work per observe:none batch.
    std::string frames;
    if (observes(**req)) {
      frames = runtime_dir + "/cu-frames";
      (void)make_private_dir(frames);
    }
    // Shares the display's lifetime with this batch: a destroy that races it cancels the batch
    // and waits for it (bounded) before freeing what the executor uses (docs/reliability.md).
    // Declared before the executor, so it is dropped after the executor released held input.
    struct CancelTarget {
      std::mutex mu;
      ActionExecutor* executor = nullptr;  // set while the batch runs; cancel() under mu
      void set(ActionExecutor* e) {
        std::lock_guard lock(mu);
        executor = e;
      }
    };
    auto cancel_target = std::make_shared<CancelTarget>();
    std::shared_ptr<void> in_use = disp->begin_batch([cancel_target] {
      std::lock_guard lock(cancel_target->mu);
      if (cancel_target->executor) cancel_target->executor->cancel();
    });
    if (!in_use) return make_error("display-destroyed", "the display was destroyed; nothing ran");
    // From here a destroy may begin at any step, and whatever step then fails (the liveness
    // check of the executor's context sees a display that is no longer alive) failed because of
    // it: a destroyed display answers display-destroyed, never display-dead.
    auto result = [&]() -> Result<Json> {
      auto ctx = executor_context_for(disp);
      if (!ctx.ok()) return ctx.error();
      ctx->observation_dir = frames;
      auto ex = ActionExecutor::create(std::move(*ctx));
      if (!ex.ok()) return ex.error();
      // The batch releases (and checks) held input before `release`; the keymap restore is
      // deferred to the display's restorer (docs/input.md).
      cancel_target->set(ex->get());
      if (disp->destroyed()) (*ex)->cancel();  // a destroy that began before the store
      const AxObserver ax = ax_observer_for(disp);
      auto ran = run_action_batch(**ex, **req, &ax);
      cancel_target->set(nullptr);
      return ran;
    }();
    if (disp->destroyed()) {
      return make_error("display-destroyed",
                        "the display was destroyed while the batch ran; the batch was cut short "
                        "and its held input released");
    }
    return result;
  };
}

}  // namespace evident
