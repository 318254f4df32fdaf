// accessibility.tree (docs/accessibility.md): the AT-SPI2 tree of an app, read over its
// display's private accessibility bus.
#include "ops_common.h"

#include "evident/accessibility/accessibility.h"
#include "evident/display/display.h"
#include "evident/display/windows.h"

namespace evident {

void register_accessibility_ops(OpTable& ops, DisplayManager& displays) {
  ops["accessibility.tree"] = [&displays](const Actor&, const Json& args) -> Result<Json> {
    JsonFields f(args, kArgs, "args");
    EVIDENT_TRY(f.only({"app_id", "max_nodes", "max_depth", "timeout_ms"}));
    auto app_id = f.string("app_id", 1, 256);
    if (!app_id.ok()) return app_id.error();
    AxLimits limits;
    if (f.has("max_nodes")) {
      auto v = f.integer("max_nodes", 1, protocol::kAxNodesMax);
      if (!v.ok()) return v.error();
      limits.max_nodes = static_cast<int>(*v);
    }
    if (f.has("max_depth")) {
      auto v = f.integer("max_depth", 1, protocol::kAxDepthMax);
      if (!v.ok()) return v.error();
      limits.max_depth = static_cast<int>(*v);
    }
    if (f.has("timeout_ms")) {
      auto v = f.integer("timeout_ms", 1, protocol::kAxTimeoutMs);
      if (!v.ok()) return v.error();
      limits.timeout_ms = *v;
    }
    auto app = displays.app(*app_id);
    if (!app.ok()) return app.error();
    if (!app->alive) return make_error("app-not-live", "the app is no longer running");
    auto d = displays.get_live(app->display_id, app->generation);
    if (!d.ok()) return d.error();
    auto bus = (*d)->accessibility_bus();
    if (!bus) {
      return make_error("accessibility-off",
                        "the app's display was created without accessibility (display create "
                        "--accessibility)");
    }
    if (!(*d)->accessibility_alive()) {
      return make_error("accessibility-bus-gone",
                        "the display's accessibility stack is no longer running");
    }
    const pid_t root = app->pid;
    auto tree = read_ax_tree(
        bus->a11y_address, [root](long pid) { return pid_in_tree(static_cast<pid_t>(pid), root); },
        limits);
    if (!tree.ok()) return tree.error();
    Json out = tree->to_json();
    out["app_id"] = *app_id;
    out["display_id"] = app->display_id;
    out["generation"] = app->generation;
    return out;
  };
}

}  // namespace evident
