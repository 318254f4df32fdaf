// The AT-SPI2 tree of one app, read over a display's private accessibility bus
// (docs/accessibility.md). Above core and protocol only: the service passes the bus address and
// which processes belong to the app.
// Error ids (docs/errors.md): accessibility-off, accessibility-bus-gone,
// accessibility-app-not-found, accessibility-timeout, accessibility-args.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/protocol/protocol.h"

namespace evident {

// Bounds of one read (protocol/evident.json: ax_*).
struct AxLimits {
  int max_nodes = protocol::kAxNodesDefault;  // 1..kAxNodesMax
  int max_depth = protocol::kAxDepthDefault;  // 1..kAxDepthMax (the app node is depth 0)
  std::int64_t timeout_ms = protocol::kAxTimeoutMs;
};

// "accessibility-args".
Status validate_ax_limits(const AxLimits& limits);

struct AxBounds {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
};

struct AxNode {
  int index = 0;
  int parent = -1;  // -1: the app node
  int depth = 0;
  std::string role;  // AT-SPI's role name ("push button", "password text", "label", ...)
  std::string name;  // at most protocol::kAxTextMaxBytes (cut at a character boundary)
  std::vector<std::string> states;  // AT-SPI state names ("focused", "sensitive", ...), sorted
  std::optional<AxBounds> bounds;   // screen coordinates; absent when not on screen / no size
  // The node's value: the text of an editable text widget, or a Value widget's number. Never
  // read for a password field (value_withheld then).
  std::optional<std::string> value;
  bool value_withheld = false;
  int child_count = 0;               // as the app reports it
  std::vector<int> children;         // indices of the children read
  Json to_json() const;
};

struct AxTree {
  long pid = 0;           // the process whose bus connection serves the tree
  std::string bus_name;   // its unique name on the display's AT-SPI bus
  std::vector<AxNode> nodes;  // breadth first; nodes[0] is the app (role "application")
  bool truncated = false;     // a bound (nodes or depth) left part of the tree unread
  std::string truncated_by;   // "max_nodes" | "max_depth" | ""
  std::int64_t elapsed_us = 0;
  Json to_json() const;
};

// Reads the tree of the app whose process satisfies `belongs` (its pid or a descendant), from
// the AT-SPI bus at `a11y_address`. Every call is pipelined level by level and bounded by
// limits.timeout_ms. Password fields' text is never requested.
// Errors: accessibility-args, accessibility-bus-gone, accessibility-app-not-found (retryable:
// the app may not have registered yet), accessibility-timeout.
Result<AxTree> read_ax_tree(const std::string& a11y_address,
                            const std::function<bool(long pid)>& belongs, const AxLimits& limits);

// Every application registered on the display's AT-SPI bus, read as one tree from the
// registry's desktop (`org.a11y.atspi.Registry`, its root of role "desktop frame" at depth 0,
// the applications at depth 1): what `observe: "ax"` of a cu.actions batch shows. Same calls,
// bounds and password rule as read_ax_tree; `pid` is 0.
// Errors: accessibility-args, accessibility-bus-gone (also: the registry does not answer),
// accessibility-timeout.
Result<AxTree> read_ax_desktop(const std::string& a11y_address, const AxLimits& limits);

// The text observation of a tree (docs/accessibility.md, "observe: ax"): one line per node,
// depth first, indented two spaces per level:
//   [INDEX] ROLE "NAME" center=CX,CY box=X,Y,WxH value="VALUE" {STATE,...}
// name and value are JSON strings cut to field_max_bytes (at a character boundary); box and
// center only when the node has bounds; value only when read (`value=withheld` for a password
// field); only the states of interest (kAxObserveStates, plus "disabled" for a node with states
// but neither "enabled" nor "sensitive"). At most max_bytes in all: whole lines, then a last line
// saying what was left out (also when the tree itself was truncated).
struct AxText {
  std::string text;
  int lines = 0;  // node lines written
  bool cut = false;
};
AxText ax_tree_text(const AxTree& tree, std::size_t max_bytes, std::size_t field_max_bytes);

// ---- Verified `type` (docs/accessibility.md, "Verified type", contract §11) ----

// What a read-back says of one `type`.
enum class AxReadbackVerdict {
  kVerified,      // the focused widget holds exactly the expected text
  kContradicted,  // it still had focus at the bound and held something else
  kNotVerified,   // no read-back was possible (password field, no editable text, newline, ...)
};
struct AxReadbackOutcome {
  AxReadbackVerdict verdict = AxReadbackVerdict::kNotVerified;
  // Lengths, a position and reasons only: never the typed or the observed text, nor a digest.
  std::string detail;
};

// The text an editable widget holds after `typed` is typed into `before` (code points): the
// selection [sel_start, sel_end) replaced, or, with no selection (sel_start == sel_end), the
// typed text inserted at the caret. Offsets are clamped to the text. Pure.
std::u32string ax_expected_after_typing(const std::u32string& before, int caret, int sel_start,
                                        int sel_end, const std::u32string& typed);

// "expected N characters, observed M; first difference at character K" (K counts from 0; K is
// the shorter length when one text is a prefix of the other). Pure; never any content.
std::string ax_text_difference(const std::u32string& expected, const std::u32string& observed);

// Code points of valid UTF-8 (D-Bus strings and typed text are both validated before).
std::u32string ax_code_points(const std::string& utf8);

// One `type`'s read-back over the display's AT-SPI bus: begin() before the keys, finish() after.
class AxTypeReadback {
 public:
  // Why no read-back can verify `typed`, whatever the widget holds, or nullopt when one can: a
  // newline or tab submits or moves the focus. Pure; begin() declines on the same condition, and
  // a caller asks first so that it does no work (a barrier, a bus connection) for such a text.
  static std::optional<AxReadbackOutcome> declines(const std::string& typed);

  // Before the keys, within timeout_ms: a text with a newline or tab is not verified (nothing is
  // read); otherwise the registry's desktop is walked (the ax_observe_* bounds) for the one
  // widget with the `focused` state; a password field, a widget without the Text interface or
  // not `editable`, no focused widget or several are not verified. Else the engine registers for
  // `object:text-changed` with the registry and matches the widget's TextChanged signals, then
  // reads its text, caret and first selection and computes the expected text.
  // Returns null with `not_verified` set (verdict kNotVerified, its reason in detail) when the
  // read-back cannot be done.
  static std::unique_ptr<AxTypeReadback> begin(const std::string& a11y_address,
                                               const std::string& typed, std::int64_t timeout_ms,
                                               AxReadbackOutcome& not_verified);
  ~AxTypeReadback();
  AxTypeReadback(const AxTypeReadback&) = delete;
  AxTypeReadback& operator=(const AxTypeReadback&) = delete;

  // After the keys: reads the widget's text again each time it signals a text change (no
  // polling) until it equals the expected text (kVerified) or timeout_ms pass without a change
  // (each change restarts the bound; never past protocol::kAxTimeoutMs after the keys); one last
  // read then judges: a widget that vanished or lost focus is kNotVerified, else kContradicted
  // with ax_text_difference.
  AxReadbackOutcome finish(std::int64_t timeout_ms);

  struct Impl;

 private:
  explicit AxTypeReadback(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The states a text observation shows (the rest are left out as noise).
inline constexpr const char* kAxObserveStates[] = {
    "active",   "checked",   "collapsed", "editable",      "expanded", "focused",
    "indeterminate", "invalid-entry", "modal", "multi-line", "pressed", "read-only",
    "required", "selected"};

}  // namespace evident
