// The AT-SPI2 tree of one app, read over a display's private accessibility bus
// (docs/accessibility.md). Above core and protocol only: the service passes the bus address and
// which processes belong to the app.
// Error ids (docs/errors.md): accessibility-off, accessibility-bus-gone,
// accessibility-app-not-found, accessibility-timeout, accessibility-args.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
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

}  // namespace evident
