// Reading an app's AT-SPI2 tree over D-Bus (libdbus), pipelined level by level
// (docs/accessibility.md, "Reading the tree").
//
// Why not libatspi's own calls: libatspi keeps ONE process-wide connection to ONE accessibility
// bus (from AT_SPI_BUS_ADDRESS at first use) and its calls block on its own main loop without our
// deadlines; the engine serves many displays, each with its own bus. So the tree is read here with
// a private libdbus connection per read, speaking the AT-SPI D-Bus interfaces that libatspi
// speaks; libatspi's header supplies the role and state numbers.
#include "evident/accessibility/accessibility.h"

#include <atspi/atspi-constants.h>
#include <dbus/dbus.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string_view>

#include "evident/core/clock.h"
#include "evident/core/utf8.h"

namespace evident {

namespace {

constexpr const char* kAccessible = ATSPI_DBUS_INTERFACE_ACCESSIBLE;
constexpr const char* kComponent = ATSPI_DBUS_INTERFACE_COMPONENT;
constexpr const char* kText = ATSPI_DBUS_INTERFACE_TEXT;
constexpr const char* kValue = ATSPI_DBUS_INTERFACE_VALUE;
constexpr const char* kProperties = "org.freedesktop.DBus.Properties";

// AtspiStateType's names (the enum's nicks), index = the state's number.
struct StateName {
  int value;
  const char* name;
};
#define EVIDENT_AX_STATE(e, n) StateName{ATSPI_STATE_##e, n}
constexpr StateName kStates[] = {
    EVIDENT_AX_STATE(INVALID, "invalid"), EVIDENT_AX_STATE(ACTIVE, "active"),
    EVIDENT_AX_STATE(ARMED, "armed"), EVIDENT_AX_STATE(BUSY, "busy"),
    EVIDENT_AX_STATE(CHECKED, "checked"), EVIDENT_AX_STATE(COLLAPSED, "collapsed"),
    EVIDENT_AX_STATE(DEFUNCT, "defunct"), EVIDENT_AX_STATE(EDITABLE, "editable"),
    EVIDENT_AX_STATE(ENABLED, "enabled"), EVIDENT_AX_STATE(EXPANDABLE, "expandable"),
    EVIDENT_AX_STATE(EXPANDED, "expanded"), EVIDENT_AX_STATE(FOCUSABLE, "focusable"),
    EVIDENT_AX_STATE(FOCUSED, "focused"), EVIDENT_AX_STATE(HAS_TOOLTIP, "has-tooltip"),
    EVIDENT_AX_STATE(HORIZONTAL, "horizontal"), EVIDENT_AX_STATE(ICONIFIED, "iconified"),
    EVIDENT_AX_STATE(MODAL, "modal"), EVIDENT_AX_STATE(MULTI_LINE, "multi-line"),
    EVIDENT_AX_STATE(MULTISELECTABLE, "multiselectable"), EVIDENT_AX_STATE(OPAQUE, "opaque"),
    EVIDENT_AX_STATE(PRESSED, "pressed"), EVIDENT_AX_STATE(RESIZABLE, "resizable"),
    EVIDENT_AX_STATE(SELECTABLE, "selectable"), EVIDENT_AX_STATE(SELECTED, "selected"),
    EVIDENT_AX_STATE(SENSITIVE, "sensitive"), EVIDENT_AX_STATE(SHOWING, "showing"),
    EVIDENT_AX_STATE(SINGLE_LINE, "single-line"), EVIDENT_AX_STATE(STALE, "stale"),
    EVIDENT_AX_STATE(TRANSIENT, "transient"), EVIDENT_AX_STATE(VERTICAL, "vertical"),
    EVIDENT_AX_STATE(VISIBLE, "visible"),
    EVIDENT_AX_STATE(MANAGES_DESCENDANTS, "manages-descendants"),
    EVIDENT_AX_STATE(INDETERMINATE, "indeterminate"), EVIDENT_AX_STATE(REQUIRED, "required"),
    EVIDENT_AX_STATE(TRUNCATED, "truncated"), EVIDENT_AX_STATE(ANIMATED, "animated"),
    EVIDENT_AX_STATE(INVALID_ENTRY, "invalid-entry"),
    EVIDENT_AX_STATE(SUPPORTS_AUTOCOMPLETION, "supports-autocompletion"),
    EVIDENT_AX_STATE(SELECTABLE_TEXT, "selectable-text"),
    EVIDENT_AX_STATE(IS_DEFAULT, "is-default"), EVIDENT_AX_STATE(VISITED, "visited"),
    EVIDENT_AX_STATE(CHECKABLE, "checkable"), EVIDENT_AX_STATE(HAS_POPUP, "has-popup"),
    EVIDENT_AX_STATE(READ_ONLY, "read-only"),
};
#undef EVIDENT_AX_STATE
constexpr bool states_in_order() {
  for (int i = 0; i < static_cast<int>(sizeof kStates / sizeof kStates[0]); ++i) {
    if (kStates[i].value != i) return false;
  }
  return static_cast<int>(sizeof kStates / sizeof kStates[0]) == ATSPI_STATE_LAST_DEFINED;
}
static_assert(states_in_order(), "kStates must list AtspiStateType in order");

// AtspiRole's names, index = the role's number (libatspi's own names: gen_roles.py).
constexpr const char* kRoles[] = {
#include "roles.inc"
};
static_assert(sizeof kRoles / sizeof kRoles[0] == ATSPI_ROLE_LAST_DEFINED,
              "roles.inc must list every AtspiRole (rerun engine/accessibility/gen_roles.py)");
constexpr bool same(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}
static_assert(same(kRoles[ATSPI_ROLE_PASSWORD_TEXT], "password text") &&
                  same(kRoles[ATSPI_ROLE_APPLICATION], "application") &&
                  same(kRoles[ATSPI_ROLE_PUSH_BUTTON], "push button"),
              "roles.inc is out of order");

// A name or value cut to the limit at a character boundary (D-Bus strings are valid UTF-8).
std::string bounded_text(const char* s) {
  std::string out(s ? s : "");
  if (out.size() > static_cast<std::size_t>(protocol::kAxTextMaxBytes)) {
    std::size_t n = protocol::kAxTextMaxBytes;
    while (n > 0 && (static_cast<unsigned char>(out[n]) & 0xC0) == 0x80) --n;
    out.resize(n);
  }
  return utf8_sanitized(std::move(out));
}

struct Message {
  DBusMessage* m = nullptr;
  Message() = default;
  explicit Message(DBusMessage* p) : m(p) {}
  ~Message() {
    if (m) dbus_message_unref(m);
  }
  Message(Message&& o) noexcept : m(o.m) { o.m = nullptr; }
  Message& operator=(Message&& o) noexcept {
    std::swap(m, o.m);
    return *this;
  }
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;
  bool is_error() const { return !m || dbus_message_get_type(m) == DBUS_MESSAGE_TYPE_ERROR; }
  const char* error_name() const { return m ? dbus_message_get_error_name(m) : nullptr; }
};

Error bus_gone() {
  return make_error("accessibility-bus-gone",
                    "the display's accessibility bus is not reachable (its stack stopped, or the "
                    "display was destroyed)");
}

Error timed_out(std::int64_t ms) {
  return make_error("accessibility-timeout",
                    "the app did not answer its accessibility calls within " + std::to_string(ms) +
                        " ms");
}

// One private connection; calls are sent at once and their replies awaited later (pipelining).
class Bus {
 public:
  ~Bus() {
    for (auto* p : pending_) {
      if (p) {
        dbus_pending_call_cancel(p);
        dbus_pending_call_unref(p);
      }
    }
    if (c_) {
      dbus_connection_close(c_);
      dbus_connection_unref(c_);
    }
  }

  Status connect(const std::string& address, std::int64_t deadline_us) {
    deadline_us_ = deadline_us;
    DBusError err;
    dbus_error_init(&err);
    c_ = dbus_connection_open_private(address.c_str(), &err);
    dbus_error_free(&err);
    if (!c_) return bus_gone();
    dbus_connection_set_exit_on_disconnect(c_, FALSE);
    const int id = call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                        "Hello", nullptr);
    Message r = take(id);
    const char* name = nullptr;
    if (r.is_error() || !dbus_message_get_args(r.m, nullptr, DBUS_TYPE_STRING, &name,
                                               DBUS_TYPE_INVALID)) {
      return late() ? Status(timed_out(timeout_ms_)) : Status(bus_gone());
    }
    dbus_bus_set_unique_name(c_, name);
    return {};
  }

  void set_timeout_ms(std::int64_t ms) { timeout_ms_ = ms; }
  // A new bound for the calls sent from now on (a read-back's second phase).
  void set_deadline_us(std::int64_t deadline_us) { deadline_us_ = deadline_us; }
  DBusConnection* connection() { return c_; }
  bool late() const { return steady_us() >= deadline_us_; }
  bool connected() const { return c_ && dbus_connection_get_is_connected(c_); }
  // Why a call that got no usable reply failed: the bus went away, or (still there) too late.
  Error why_failed() const { return connected() && late() ? timed_out(timeout_ms_) : bus_gone(); }

  // Sends a method call; `append` adds its arguments. Returns a handle for take().
  int call(const char* dest, const char* path, const char* iface, const char* method,
           const std::function<void(DBusMessageIter&)>& append) {
    pending_.push_back(nullptr);
    const int id = static_cast<int>(pending_.size()) - 1;
    DBusMessage* m = dbus_message_new_method_call(dest, path, iface, method);
    if (!m) return id;
    if (append) {
      DBusMessageIter it;
      dbus_message_iter_init_append(m, &it);
      append(it);
    }
    const std::int64_t left_ms = std::max<std::int64_t>(1, (deadline_us_ - steady_us()) / 1000);
    DBusPendingCall* p = nullptr;
    if (dbus_connection_send_with_reply(c_, m, &p, static_cast<int>(std::min<std::int64_t>(left_ms, 1 << 30))) && p) {
      pending_[id] = p;
    }
    dbus_message_unref(m);
    return id;
  }

  int get_property(const char* dest, const char* path, const char* iface, const char* prop) {
    return call(dest, path, kProperties, "Get", [&](DBusMessageIter& it) {
      dbus_message_iter_append_basic(&it, DBUS_TYPE_STRING, &iface);
      dbus_message_iter_append_basic(&it, DBUS_TYPE_STRING, &prop);
    });
  }

  // The reply (or error) of call `id`; blocks until it is there (each call has the read's
  // remaining time as its own timeout).
  Message take(int id) {
    DBusPendingCall* p = pending_[id];
    pending_[id] = nullptr;
    if (!p) return Message();
    dbus_pending_call_block(p);
    Message r(dbus_pending_call_steal_reply(p));
    dbus_pending_call_unref(p);
    return r;
  }

  // Routes an AT-SPI event to this connection: the registry is told someone listens for `event`
  // (a bridge emits no event nobody registered for), and the bus is asked to deliver the signals
  // that match `rule`. Both calls are pipelined; true when both were accepted.
  bool listen(const char* event, const std::string& rule) {
    const int reg = call(ATSPI_DBUS_NAME_REGISTRY, ATSPI_DBUS_PATH_REGISTRY,
                         ATSPI_DBUS_INTERFACE_REGISTRY, "RegisterEvent", [event](DBusMessageIter& it) {
                           dbus_message_iter_append_basic(&it, DBUS_TYPE_STRING, &event);
                         });
    const int match = call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                           "AddMatch", [&rule](DBusMessageIter& it) {
                             const char* r = rule.c_str();
                             dbus_message_iter_append_basic(&it, DBUS_TYPE_STRING, &r);
                           });
    Message reg_reply = take(reg);
    Message match_reply = take(match);
    return !reg_reply.is_error() && !match_reply.is_error();
  }

  void reset_pending() {
    for (auto* p : pending_) {
      if (p) {
        dbus_pending_call_cancel(p);
        dbus_pending_call_unref(p);
      }
    }
    pending_.clear();
  }

 private:
  DBusConnection* c_ = nullptr;
  std::int64_t deadline_us_ = 0;
  std::int64_t timeout_ms_ = 0;
  std::vector<DBusPendingCall*> pending_;
};

// Reply readers: false when the reply has another shape.
bool read_u32(Message& r, std::uint32_t& out) {
  return !r.is_error() &&
         dbus_message_get_args(r.m, nullptr, DBUS_TYPE_UINT32, &out, DBUS_TYPE_INVALID);
}

bool read_string(Message& r, std::string& out) {
  const char* s = nullptr;
  if (r.is_error() || !dbus_message_get_args(r.m, nullptr, DBUS_TYPE_STRING, &s, DBUS_TYPE_INVALID)) {
    return false;
  }
  out = bounded_text(s);
  return true;
}

// A Properties.Get reply: the variant's content iterator.
bool variant_of(Message& r, DBusMessageIter& inner) {
  if (r.is_error()) return false;
  DBusMessageIter it;
  if (!dbus_message_iter_init(r.m, &it) || dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_VARIANT) {
    return false;
  }
  dbus_message_iter_recurse(&it, &inner);
  return true;
}

bool read_variant_string(Message& r, std::string& out) {
  DBusMessageIter v;
  if (!variant_of(r, v) || dbus_message_iter_get_arg_type(&v) != DBUS_TYPE_STRING) return false;
  const char* s = nullptr;
  dbus_message_iter_get_basic(&v, &s);
  out = bounded_text(s);
  return true;
}

bool read_variant_int(Message& r, std::int32_t& out) {
  DBusMessageIter v;
  if (!variant_of(r, v) || dbus_message_iter_get_arg_type(&v) != DBUS_TYPE_INT32) return false;
  dbus_message_iter_get_basic(&v, &out);
  return true;
}

bool read_variant_double(Message& r, double& out) {
  DBusMessageIter v;
  if (!variant_of(r, v) || dbus_message_iter_get_arg_type(&v) != DBUS_TYPE_DOUBLE) return false;
  dbus_message_iter_get_basic(&v, &out);
  return true;
}

bool read_states(Message& r, std::vector<std::string>& out) {
  DBusMessageIter it, arr;
  if (r.is_error() || !dbus_message_iter_init(r.m, &it) ||
      dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_ARRAY) {
    return false;
  }
  dbus_message_iter_recurse(&it, &arr);
  int word = 0;
  while (dbus_message_iter_get_arg_type(&arr) == DBUS_TYPE_UINT32 && word < 2) {
    std::uint32_t bits = 0;
    dbus_message_iter_get_basic(&arr, &bits);
    for (int b = 0; b < 32; ++b) {
      const int s = word * 32 + b;
      if ((bits >> b) & 1U) {
        if (s < ATSPI_STATE_LAST_DEFINED) out.emplace_back(kStates[s].name);
      }
    }
    ++word;
    dbus_message_iter_next(&arr);
  }
  std::sort(out.begin(), out.end());
  return true;
}

bool read_strings(Message& r, std::set<std::string>& out) {
  DBusMessageIter it, arr;
  if (r.is_error() || !dbus_message_iter_init(r.m, &it) ||
      dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_ARRAY) {
    return false;
  }
  dbus_message_iter_recurse(&it, &arr);
  int n = 0;
  while (dbus_message_iter_get_arg_type(&arr) == DBUS_TYPE_STRING && n++ < 256) {
    const char* s = nullptr;
    dbus_message_iter_get_basic(&arr, &s);
    out.insert(s);
    dbus_message_iter_next(&arr);
  }
  return true;
}

struct Ref {
  std::string bus;
  std::string path;
  bool operator<(const Ref& o) const { return std::tie(bus, path) < std::tie(o.bus, o.path); }
};

// a(so), at most `cap` entries kept (the rest only counted).
bool read_refs(Message& r, std::vector<Ref>& out, std::size_t cap, int& count) {
  DBusMessageIter it, arr;
  if (r.is_error() || !dbus_message_iter_init(r.m, &it) ||
      dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_ARRAY) {
    return false;
  }
  dbus_message_iter_recurse(&it, &arr);
  count = 0;
  while (dbus_message_iter_get_arg_type(&arr) == DBUS_TYPE_STRUCT) {
    DBusMessageIter st;
    dbus_message_iter_recurse(&arr, &st);
    const char* bus = nullptr;
    const char* path = nullptr;
    if (dbus_message_iter_get_arg_type(&st) == DBUS_TYPE_STRING) {
      dbus_message_iter_get_basic(&st, &bus);
      dbus_message_iter_next(&st);
      if (dbus_message_iter_get_arg_type(&st) == DBUS_TYPE_OBJECT_PATH) {
        dbus_message_iter_get_basic(&st, &path);
      }
    }
    ++count;
    if (bus && path && out.size() < cap && std::strcmp(path, ATSPI_DBUS_PATH_NULL) != 0) {
      out.push_back(Ref{bus, path});
    }
    dbus_message_iter_next(&arr);
  }
  return true;
}

bool read_extents(Message& r, AxBounds& out) {
  DBusMessageIter it, st;
  if (r.is_error() || !dbus_message_iter_init(r.m, &it) ||
      dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_STRUCT) {
    return false;
  }
  dbus_message_iter_recurse(&it, &st);
  std::int32_t v[4] = {0, 0, 0, 0};
  for (int i = 0; i < 4; ++i) {
    if (dbus_message_iter_get_arg_type(&st) != DBUS_TYPE_INT32) return false;
    dbus_message_iter_get_basic(&st, &v[i]);
    dbus_message_iter_next(&st);
  }
  out = AxBounds{v[0], v[1], v[2], v[3]};
  return true;
}

// A reply that says the app (or the bus) did not answer in time.
bool is_timeout(const Message& r) {
  const char* e = r.error_name();
  return e && (std::strcmp(e, DBUS_ERROR_NO_REPLY) == 0 || std::strcmp(e, DBUS_ERROR_TIMEOUT) == 0);
}

// The tree below `root`, breadth first, one pipelined round per level; then one round for
// text and values (docs/accessibility.md, "Reading the tree"). Appends to tree.nodes and
// sets tree.truncated(_by); leaves tree.nodes empty when the root did not answer.
// With read_values false the last round is skipped (a search for the focused widget needs no
// values); refs, when given, receives each node's reference (parallel to tree.nodes).
Status walk_tree(Bus& bus, const Ref& root, const AxLimits& limits, AxTree& tree,
                 bool read_values = true, std::vector<Ref>* refs = nullptr) {
  struct Pending {
    Ref ref;
    int parent;
    int depth;
    int role, name, state, ifaces, children, extents;
  };
  std::set<Ref> seen;
  std::vector<std::pair<Ref, int>> level;  // (ref, parent index)
  level.push_back({root, -1});
  seen.insert(level.back().first);
  int queued = 1;  // refs accepted into the tree so far (each becomes at most one node)
  struct Later {
    int node;
    Ref ref;
    bool text;
    bool value;
  };
  std::vector<Later> later;
  // At most this many nodes' calls (6 each) are in flight at once.
  constexpr std::size_t kWindow = 256;
  for (int depth = 0; !level.empty(); ++depth) {
    std::vector<std::pair<Ref, int>> next;
    for (std::size_t from = 0; from < level.size(); from += kWindow) {
      std::vector<Pending> sent;
      const std::size_t to = std::min(level.size(), from + kWindow);
      for (std::size_t li = from; li < to; ++li) {
        auto& [ref, parent] = level[li];
        const char* d = ref.bus.c_str();
        const char* p = ref.path.c_str();
        Pending q{ref, parent, depth, 0, 0, 0, 0, 0, 0};
        q.role = bus.call(d, p, kAccessible, "GetRole", nullptr);
        q.name = bus.get_property(d, p, kAccessible, "Name");
        q.state = bus.call(d, p, kAccessible, "GetState", nullptr);
        q.ifaces = bus.call(d, p, kAccessible, "GetInterfaces", nullptr);
        q.children = bus.call(d, p, kAccessible, "GetChildren", nullptr);
        q.extents = bus.call(d, p, kComponent, "GetExtents", [](DBusMessageIter& it) {
          const std::uint32_t screen = ATSPI_COORD_TYPE_SCREEN;
          dbus_message_iter_append_basic(&it, DBUS_TYPE_UINT32, &screen);
        });
        sent.push_back(q);
      }
      for (auto& q : sent) {
        Message role = bus.take(q.role);
        std::uint32_t role_number = 0;
        if (!read_u32(role, role_number)) {
          if (is_timeout(role) || !bus.connected()) {
            if (!bus.connected()) return bus_gone();
            return timed_out(limits.timeout_ms);
          }
          continue;  // gone meanwhile (a transient widget): not part of the tree
        }
        AxNode n;
        n.index = static_cast<int>(tree.nodes.size());
        n.parent = q.parent;
        n.depth = q.depth;
        n.role = role_number < ATSPI_ROLE_LAST_DEFINED ? kRoles[role_number] : "unknown";
        Message name = bus.take(q.name);
        (void)read_variant_string(name, n.name);
        Message st = bus.take(q.state);
        (void)read_states(st, n.states);
        Message ifs = bus.take(q.ifaces);
        std::set<std::string> interfaces;
        (void)read_strings(ifs, interfaces);
        Message ext = bus.take(q.extents);
        AxBounds b;
        if (read_extents(ext, b) && b.width > 0 && b.height > 0) n.bounds = b;
        Message ch = bus.take(q.children);
        std::vector<Ref> kids;
        const std::size_t room = static_cast<std::size_t>(std::max(0, limits.max_nodes - queued));
        (void)read_refs(ch, kids, room, n.child_count);
        if (n.child_count > 0 && depth + 1 > limits.max_depth) {
          tree.truncated = true;
          if (tree.truncated_by.empty()) tree.truncated_by = "max_depth";
        } else {
          if (static_cast<int>(kids.size()) < n.child_count) {
            tree.truncated = true;
            if (tree.truncated_by.empty()) tree.truncated_by = "max_nodes";
          }
          for (auto& k : kids) {
            if (seen.insert(k).second) {
              next.push_back({k, n.index});
              ++queued;
            }
          }
        }
        const bool password = role_number == ATSPI_ROLE_PASSWORD_TEXT;
        const bool editable = std::find(n.states.begin(), n.states.end(), "editable") != n.states.end();
        if (password) {
          n.value_withheld = true;  // never read: no Text or Value call goes to a password field
        } else if (interfaces.count(kValue)) {
          later.push_back({n.index, q.ref, false, true});
        } else if (interfaces.count(kText) && editable) {
          later.push_back({n.index, q.ref, true, false});
        }
        if (q.parent >= 0) tree.nodes[q.parent].children.push_back(n.index);
        tree.nodes.push_back(std::move(n));
        if (refs) refs->push_back(q.ref);
      }
      bus.reset_pending();
      if (bus.late()) return timed_out(limits.timeout_ms);
    }
    level = std::move(next);
  }
  if (tree.nodes.empty() || !read_values) return {};

  std::vector<int> ids;
  for (auto& l : later) {
    const char* d = l.ref.bus.c_str();
    const char* p = l.ref.path.c_str();
    if (l.value) {
      ids.push_back(bus.get_property(d, p, kValue, "CurrentValue"));
    } else {
      ids.push_back(bus.call(d, p, kText, "GetText", [](DBusMessageIter& it) {
        const std::int32_t start = 0;
        const std::int32_t end = protocol::kAxTextMaxBytes;  // characters; cut to bytes below
        dbus_message_iter_append_basic(&it, DBUS_TYPE_INT32, &start);
        dbus_message_iter_append_basic(&it, DBUS_TYPE_INT32, &end);
      }));
    }
  }
  for (std::size_t i = 0; i < later.size(); ++i) {
    Message r = bus.take(ids[i]);
    AxNode& n = tree.nodes[later[i].node];
    if (later[i].value) {
      double v = 0;
      if (read_variant_double(r, v) && std::isfinite(v)) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.15g", v);
        n.value = buf;
      }
    } else {
      std::string text;
      if (read_string(r, text)) n.value = std::move(text);
    }
  }
  bus.reset_pending();
  if (bus.late()) return timed_out(limits.timeout_ms);
  return {};
}

}  // namespace

Status validate_ax_limits(const AxLimits& l) {
  if (l.max_nodes < 1 || l.max_nodes > protocol::kAxNodesMax) {
    return make_error("accessibility-args",
                      "max_nodes must be in 1.." + std::to_string(protocol::kAxNodesMax));
  }
  if (l.max_depth < 1 || l.max_depth > protocol::kAxDepthMax) {
    return make_error("accessibility-args",
                      "max_depth must be in 1.." + std::to_string(protocol::kAxDepthMax));
  }
  if (l.timeout_ms < 1 || l.timeout_ms > protocol::kAxTimeoutMs) {
    return make_error("accessibility-args",
                      "timeout_ms must be in 1.." + std::to_string(protocol::kAxTimeoutMs));
  }
  return {};
}

Json AxNode::to_json() const {
  Json j{{"index", index},
         {"parent", parent < 0 ? Json(nullptr) : Json(parent)},
         {"depth", depth},
         {"role", role},
         {"name", name},
         {"states", states},
         {"bounds", nullptr},
         {"value", value ? Json(*value) : Json(nullptr)},
         {"value_withheld", value_withheld},
         {"child_count", child_count},
         {"children", children}};
  if (bounds) {
    j["bounds"] = Json{{"x", bounds->x}, {"y", bounds->y}, {"width", bounds->width},
                       {"height", bounds->height}};
  }
  return j;
}

Json AxTree::to_json() const {
  Json nodes_json = Json::array();
  for (const auto& n : nodes) nodes_json.push_back(n.to_json());
  return Json{{"pid", pid},
              {"bus_name", bus_name},
              {"node_count", static_cast<int>(nodes.size())},
              {"truncated", truncated},
              {"truncated_by", truncated_by.empty() ? Json(nullptr) : Json(truncated_by)},
              {"elapsed_us", elapsed_us},
              {"nodes", std::move(nodes_json)}};
}

Result<AxTree> read_ax_tree(const std::string& a11y_address,
                            const std::function<bool(long pid)>& belongs, const AxLimits& limits) {
  EVIDENT_TRY(validate_ax_limits(limits));
  const std::int64_t t0 = steady_us();
  Bus bus;
  bus.set_timeout_ms(limits.timeout_ms);
  EVIDENT_TRY(bus.connect(a11y_address, t0 + limits.timeout_ms * 1000));
  auto fail_late = [&](Error otherwise) -> Error {
    if (!bus.connected()) return bus_gone();
    return bus.late() ? timed_out(limits.timeout_ms) : otherwise;
  };

  // 1. The app's connection(s): every unique name whose process belongs to the app.
  Message names = bus.take(bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus",
                                    "org.freedesktop.DBus", "ListNames", nullptr));
  std::set<std::string> all;
  if (!read_strings(names, all)) return fail_late(bus_gone());
  std::vector<std::pair<std::string, int>> asked;
  for (const auto& n : all) {
    if (n.empty() || n[0] != ':') continue;
    const char* s = n.c_str();
    asked.emplace_back(n, bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus",
                                   "org.freedesktop.DBus", "GetConnectionUnixProcessID",
                                   [&](DBusMessageIter& it) {
                                     dbus_message_iter_append_basic(&it, DBUS_TYPE_STRING, &s);
                                   }));
    if (asked.size() >= 4096) break;
  }
  std::vector<std::pair<std::string, long>> candidates;
  for (auto& [n, id] : asked) {
    Message r = bus.take(id);
    std::uint32_t pid = 0;
    if (read_u32(r, pid) && belongs(static_cast<long>(pid))) candidates.emplace_back(n, pid);
  }
  bus.reset_pending();
  // 2. The one that serves an accessible root of role "application" (the most children wins:
  // a toolkit may open a second, empty connection).
  std::vector<std::pair<int, int>> probes;
  for (auto& [n, pid] : candidates) {
    probes.emplace_back(bus.call(n.c_str(), ATSPI_DBUS_PATH_ROOT, kAccessible, "GetRole", nullptr),
                        bus.get_property(n.c_str(), ATSPI_DBUS_PATH_ROOT, kAccessible, "ChildCount"));
  }
  int best = -1;
  std::int32_t best_children = -1;
  for (std::size_t i = 0; i < probes.size(); ++i) {
    Message role = bus.take(probes[i].first);
    Message count = bus.take(probes[i].second);
    std::uint32_t r = 0;
    std::int32_t c = 0;
    if (!read_u32(role, r) || r != ATSPI_ROLE_APPLICATION) continue;
    if (!read_variant_int(count, c)) c = 0;
    if (c > best_children) {
      best = static_cast<int>(i);
      best_children = c;
    }
  }
  bus.reset_pending();
  if (best < 0) {
    if (bus.late()) return timed_out(limits.timeout_ms);
    if (!bus.connected()) return bus_gone();
    return make_error("accessibility-app-not-found",
                      candidates.empty()
                          ? "no process of the app is connected to the display's accessibility bus "
                            "(not started with accessibility, not a toolkit with AT-SPI support, or "
                            "not initialised yet)"
                          : "the app's processes are connected to the accessibility bus but serve no "
                            "accessible application root");
  }

  AxTree tree;
  tree.bus_name = candidates[best].first;
  tree.pid = candidates[best].second;
  EVIDENT_TRY(walk_tree(bus, Ref{tree.bus_name, ATSPI_DBUS_PATH_ROOT}, limits, tree));
  if (tree.nodes.empty()) return fail_late(make_error("accessibility-app-not-found",
                                                      "the app's accessible root vanished"));
  tree.elapsed_us = steady_us() - t0;
  return tree;
}

Result<AxTree> read_ax_desktop(const std::string& a11y_address, const AxLimits& limits) {
  EVIDENT_TRY(validate_ax_limits(limits));
  const std::int64_t t0 = steady_us();
  Bus bus;
  bus.set_timeout_ms(limits.timeout_ms);
  EVIDENT_TRY(bus.connect(a11y_address, t0 + limits.timeout_ms * 1000));
  AxTree tree;
  tree.bus_name = ATSPI_DBUS_NAME_REGISTRY;
  EVIDENT_TRY(walk_tree(bus, Ref{tree.bus_name, ATSPI_DBUS_PATH_ROOT}, limits, tree));
  if (tree.nodes.empty()) {
    if (!bus.connected()) return bus_gone();
    if (bus.late()) return timed_out(limits.timeout_ms);
    return make_error("accessibility-bus-gone",
                      "the display's AT-SPI registry did not answer for its desktop");
  }
  tree.elapsed_us = steady_us() - t0;
  return tree;
}

namespace {

// s cut to at most n bytes at a character boundary (s is valid UTF-8).
std::string cut_utf8(const std::string& s, std::size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

bool has_state(const std::vector<std::string>& states, std::string_view state) {
  return std::find(states.begin(), states.end(), state) != states.end();
}

std::string node_line(const AxNode& n, std::size_t field_max_bytes) {
  std::string line(static_cast<std::size_t>(n.depth) * 2, ' ');
  line += "[" + std::to_string(n.index) + "] " + n.role + " " +
          dump_json(Json(cut_utf8(n.name, field_max_bytes)));
  if (n.bounds) {
    const AxBounds& b = *n.bounds;
    line += " center=" + std::to_string(b.x + b.width / 2) + "," +
            std::to_string(b.y + b.height / 2) + " box=" + std::to_string(b.x) + "," +
            std::to_string(b.y) + "," + std::to_string(b.width) + "x" + std::to_string(b.height);
  }
  if (n.value_withheld) {
    line += " value=withheld";
  } else if (n.value) {
    line += " value=" + dump_json(Json(cut_utf8(*n.value, field_max_bytes)));
  }
  std::string states;
  for (const char* s : kAxObserveStates) {
    if (has_state(n.states, s)) states += std::string(states.empty() ? "" : ",") + s;
  }
  if (!n.states.empty() && !has_state(n.states, "enabled") && !has_state(n.states, "sensitive")) {
    states += std::string(states.empty() ? "" : ",") + "disabled";
  }
  if (!states.empty()) line += " {" + states + "}";
  return line + "\n";
}

}  // namespace

AxText ax_tree_text(const AxTree& tree, std::size_t max_bytes, std::size_t field_max_bytes) {
  AxText out;
  // Room for the closing line, which is always written when something was left out.
  constexpr std::size_t kNoteRoom = 160;
  const std::size_t budget = max_bytes > kNoteRoom ? max_bytes - kNoteRoom : 0;
  // Depth first from the root (index 0), children in the order read.
  std::vector<int> stack;
  if (!tree.nodes.empty()) stack.push_back(0);
  while (!stack.empty()) {
    const AxNode& n = tree.nodes[static_cast<std::size_t>(stack.back())];
    stack.pop_back();
    std::string line = node_line(n, field_max_bytes);
    if (out.text.size() + line.size() > budget) {
      out.cut = true;
      break;
    }
    out.text += line;
    ++out.lines;
    for (auto it = n.children.rbegin(); it != n.children.rend(); ++it) stack.push_back(*it);
  }
  const std::string total = std::to_string(tree.nodes.size());
  if (out.cut) {
    out.text += "(truncated by max_bytes: " + std::to_string(out.lines) + " of " + total +
                " nodes shown)\n";
  } else if (tree.truncated) {
    out.text += "(truncated by " + tree.truncated_by + ": " + total +
                " nodes shown; the rest of the tree was not read)\n";
  }
  return out;
}


// ---- Verified `type` (docs/accessibility.md, "Verified type") ----

std::u32string ax_code_points(const std::string& utf8) {
  std::u32string out;
  out.reserve(utf8.size());
  for (std::size_t i = 0; i < utf8.size();) {
    const auto b = static_cast<unsigned char>(utf8[i]);
    int len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 1;
    if (i + static_cast<std::size_t>(len) > utf8.size()) len = 1;
    char32_t cp = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(utf8[i + k]) & 0x3F);
    out.push_back(len == 1 && b >= 0x80 ? U'\uFFFD' : cp);
    i += static_cast<std::size_t>(len);
  }
  return out;
}

std::u32string ax_expected_after_typing(const std::u32string& before, int caret, int sel_start,
                                        int sel_end, const std::u32string& typed) {
  const int n = static_cast<int>(before.size());
  auto clamp = [n](int v) { return std::min(std::max(v, 0), n); };
  int s = clamp(sel_start);
  int e = clamp(sel_end);
  if (s > e) std::swap(s, e);
  if (s == e) s = e = clamp(caret);
  return before.substr(0, static_cast<std::size_t>(s)) + typed +
         before.substr(static_cast<std::size_t>(e));
}

std::string ax_text_difference(const std::u32string& expected, const std::u32string& observed) {
  std::size_t k = 0;
  while (k < expected.size() && k < observed.size() && expected[k] == observed[k]) ++k;
  return "expected " + std::to_string(expected.size()) + " characters, observed " +
         std::to_string(observed.size()) + "; first difference at character " + std::to_string(k);
}

namespace {

AxReadbackOutcome not_verified(std::string why) {
  return AxReadbackOutcome{AxReadbackVerdict::kNotVerified, "not verified: " + std::move(why)};
}

// A D-Bus string reply, whole (no cut): false when the reply has another shape.
bool read_raw_string(Message& r, std::string& out) {
  const char* s = nullptr;
  if (r.is_error() || !dbus_message_get_args(r.m, nullptr, DBUS_TYPE_STRING, &s, DBUS_TYPE_INVALID)) {
    return false;
  }
  out = s ? s : "";
  return true;
}

bool read_int(Message& r, std::int32_t& out) {
  return !r.is_error() &&
         dbus_message_get_args(r.m, nullptr, DBUS_TYPE_INT32, &out, DBUS_TYPE_INVALID);
}

bool read_two_ints(Message& r, std::int32_t& a, std::int32_t& b) {
  return !r.is_error() && dbus_message_get_args(r.m, nullptr, DBUS_TYPE_INT32, &a, DBUS_TYPE_INT32,
                                                &b, DBUS_TYPE_INVALID);
}

std::function<void(DBusMessageIter&)> text_range(std::int32_t start, std::int32_t end) {
  return [start, end](DBusMessageIter& it) {
    dbus_message_iter_append_basic(&it, DBUS_TYPE_INT32, &start);
    dbus_message_iter_append_basic(&it, DBUS_TYPE_INT32, &end);
  };
}

}  // namespace

struct AxTypeReadback::Impl {
  Bus bus;
  Ref widget;
  std::u32string expected;
};

AxTypeReadback::AxTypeReadback(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AxTypeReadback::~AxTypeReadback() = default;

std::optional<AxReadbackOutcome> AxTypeReadback::declines(const std::string& typed) {
  // A newline or tab submits or moves the focus: what the widget then holds says nothing about
  // delivery. Nothing is read.
  if (typed.find_first_of("\n\t") != std::string::npos) {
    return not_verified("the text has a newline or tab");
  }
  return std::nullopt;
}

std::unique_ptr<AxTypeReadback> AxTypeReadback::begin(const std::string& a11y_address,
                                                      const std::string& typed,
                                                      std::int64_t timeout_ms,
                                                      AxReadbackOutcome& out) {
  if (auto no = declines(typed)) {
    out = std::move(*no);
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  Bus& bus = impl->bus;
  const std::int64_t t0 = steady_us();
  bus.set_timeout_ms(timeout_ms);
  auto failed_read = [&](const Error& e) {
    out = not_verified("the accessibility read before the keys failed (" + e.code + ")");
    return nullptr;
  };
  if (Status st = bus.connect(a11y_address, t0 + timeout_ms * 1000); !st.ok()) return failed_read(st.error());

  // 1. The focused widget: AT-SPI has no "get focus" call, so the desktop is walked (the observe
  // bounds, no values) for the nodes with the `focused` state. A toolkit can answer the X
  // barrier before it has handled the input that focuses a widget (GTK 3 keeps reading X events,
  // and answers _NET_WM_PING, while it holds their delivery for a frame), and answers AT-SPI
  // meanwhile: so a walk that finds no focused widget routes focus changes to this connection,
  // walks again (a focus gained before the routing is in that walk), and if there is still none
  // waits (bounded) for the next focus gained and walks once more.
  // The routing is asked for only then. A listener registered with the registry makes every
  // app's bridge emit that event, and Chromium 156 crashed (SIGSEGV, its browser process) when
  // keys went into a focused password field while one was registered or being withdrawn: in
  // every run when it stayed registered through the keys, in about one in five when the
  // connection closed as the keys were sent (docs/accessibility.md, "Verified type").
  DBusConnection* c = bus.connection();
  // Pops what arrived; true when one of them is a widget gaining focus (StateChanged "focused", 1).
  auto focus_gained = [c]() {
    bool gained = false;
    while (DBusMessage* m = dbus_connection_pop_message(c)) {
      DBusMessageIter it;
      const char* kind = nullptr;
      dbus_int32_t detail1 = 0;
      if (dbus_message_is_signal(m, "org.a11y.atspi.Event.Object", "StateChanged") &&
          dbus_message_iter_init(m, &it) && dbus_message_iter_get_arg_type(&it) == DBUS_TYPE_STRING) {
        dbus_message_iter_get_basic(&it, &kind);
        if (dbus_message_iter_next(&it) && dbus_message_iter_get_arg_type(&it) == DBUS_TYPE_INT32) {
          dbus_message_iter_get_basic(&it, &detail1);
          gained = gained || (kind && std::string_view(kind) == "focused" && detail1 == 1);
        }
      }
      dbus_message_unref(m);
    }
    return gained;
  };
  AxLimits limits;
  limits.max_nodes = static_cast<int>(protocol::kAxObserveMaxNodes);
  limits.max_depth = static_cast<int>(protocol::kAxObserveMaxDepth);
  limits.timeout_ms = timeout_ms;
  AxTree tree;
  std::vector<Ref> refs;
  std::vector<std::size_t> focused;
  bool routed = false;
  int waits = 0;
  for (;;) {
    tree = AxTree{};
    refs.clear();
    if (Status st = walk_tree(bus, Ref{ATSPI_DBUS_NAME_REGISTRY, ATSPI_DBUS_PATH_ROOT}, limits, tree,
                              false, &refs);
        !st.ok()) {
      return failed_read(st.error());
    }
    if (tree.nodes.empty()) {
      return failed_read(bus.why_failed());
    }
    focused.clear();
    for (std::size_t i = 0; i < tree.nodes.size(); ++i) {
      if (has_state(tree.nodes[i].states, "focused")) focused.push_back(i);
    }
    if (!focused.empty() || tree.truncated) break;
    if (!routed) {
      // No focus yet: route focus changes here, then walk again.
      if (!bus.listen("object:state-changed:focused",
                      "type='signal',interface='org.a11y.atspi.Event.Object',member='StateChanged',"
                      "arg0='focused'")) {
        return failed_read(bus.why_failed());
      }
      routed = true;
      continue;
    }
    // Still none: the next focus gained (or one that arrived during the walk), until the bound;
    // then one last walk.
    if (++waits > 1) break;
    bool gained = false;
    while (!(gained = focus_gained())) {
      const std::int64_t left_ms = (t0 + timeout_ms * 1000 - steady_us()) / 1000;
      if (left_ms <= 0 || !dbus_connection_read_write(c, static_cast<int>(std::min<std::int64_t>(left_ms, 1 << 30)))) {
        break;
      }
    }
    if (!gained) break;
  }
  if (focused.empty()) {
    out = not_verified(tree.truncated ? "no focused widget among the accessibility nodes read (the "
                                        "desktop was cut at its bounds)"
                                      : "no widget on the display reports focus");
    return nullptr;
  }
  if (focused.size() > 1) {
    out = not_verified("more than one widget reports focus (" + std::to_string(focused.size()) + ")");
    return nullptr;
  }
  const AxNode& node = tree.nodes[focused[0]];
  impl->widget = refs[focused[0]];
  if (node.role == "password text") {
    out = not_verified("a password field is never read");
    return nullptr;
  }
  if (!has_state(node.states, "editable")) {
    out = not_verified("the focused widget exposes no editable text");
    return nullptr;
  }

  // 2. Text-changed signals: the registry tells the apps' bridges that someone listens (they
  // emit no event nobody registered for), and the bus routes the widget's to this connection.
  // The registry announces the listener to the apps before it answers, so the reads below reach
  // the app after that announcement.
  const char* dest = impl->widget.bus.c_str();
  const char* path = impl->widget.path.c_str();
  const std::string rule = "type='signal',interface='org.a11y.atspi.Event.Object',member='TextChanged',"
                           "sender='" + impl->widget.bus + "',path='" + impl->widget.path + "'";
  if (!bus.listen("object:text-changed", rule)) {
    return failed_read(bus.why_failed());
  }

  // 3. What the widget holds now, its caret and its first selection.
  const int ifaces = bus.call(dest, path, kAccessible, "GetInterfaces", nullptr);
  const int text = bus.call(dest, path, kText, "GetText", text_range(0, -1));
  const int caret = bus.get_property(dest, path, kText, "CaretOffset");
  const int nsel = bus.call(dest, path, kText, "GetNSelections", nullptr);
  const int sel = bus.call(dest, path, kText, "GetSelection", [](DBusMessageIter& it) {
    const std::int32_t first = 0;
    dbus_message_iter_append_basic(&it, DBUS_TYPE_INT32, &first);
  });
  Message ifaces_reply = bus.take(ifaces);
  Message text_reply = bus.take(text);
  Message caret_reply = bus.take(caret);
  Message nsel_reply = bus.take(nsel);
  Message sel_reply = bus.take(sel);
  bus.reset_pending();
  std::set<std::string> interfaces;
  if (!read_strings(ifaces_reply, interfaces)) {
    if (bus.late() || !bus.connected()) return failed_read(bus.late() ? timed_out(timeout_ms) : bus_gone());
    out = not_verified("the focused widget vanished before the keys");
    return nullptr;
  }
  if (!interfaces.count(kText)) {
    out = not_verified("the focused widget exposes no editable text");
    return nullptr;
  }
  std::string before;
  std::int32_t caret_at = 0, selections = 0, s = 0, e = 0;
  if (!read_raw_string(text_reply, before) || !read_variant_int(caret_reply, caret_at)) {
    if (bus.late() || !bus.connected()) return failed_read(bus.late() ? timed_out(timeout_ms) : bus_gone());
    out = not_verified("the focused widget did not answer for its text and caret");
    return nullptr;
  }
  if (before.size() > static_cast<std::size_t>(protocol::kAxTextMaxBytes)) {
    out = not_verified("the focused widget holds more than ax_text_max_bytes (" +
                       std::to_string(protocol::kAxTextMaxBytes) + ") bytes");
    return nullptr;
  }
  if (!read_int(nsel_reply, selections)) selections = 0;
  if (selections <= 0 || !read_two_ints(sel_reply, s, e)) s = e = caret_at;
  const std::u32string before_cp = ax_code_points(before);
  const int n = static_cast<int>(before_cp.size());
  if (caret_at < 0 || caret_at > n || s < 0 || e < 0 || s > n || e > n) {
    out = not_verified("the focused widget reported a caret or selection outside its text");
    return nullptr;
  }
  impl->expected = ax_expected_after_typing(before_cp, caret_at, s, e, ax_code_points(typed));
  return std::unique_ptr<AxTypeReadback>(new AxTypeReadback(std::move(impl)));
}

AxReadbackOutcome AxTypeReadback::finish(std::int64_t timeout_ms) {
  Bus& bus = impl_->bus;
  DBusConnection* c = bus.connection();
  // The wait ends timeout_ms after the keys or after the widget's last text-changed signal,
  // whichever is later (an app still working through the keys is not contradicting them), and
  // never later than ax_timeout_ms after the keys (a widget whose text keeps changing).
  const std::int64_t start = steady_us();
  const std::int64_t cap = start + std::max<std::int64_t>(timeout_ms, protocol::kAxTimeoutMs) * 1000;
  std::int64_t deadline = std::min(cap, start + timeout_ms * 1000);
  const char* dest = impl_->widget.bus.c_str();
  const char* path = impl_->widget.path.c_str();
  // Pops what arrived; true when one of them is the widget's TextChanged.
  auto drain = [&]() {
    bool changed = false;
    while (DBusMessage* m = dbus_connection_pop_message(c)) {
      changed = changed || (dbus_message_is_signal(m, "org.a11y.atspi.Event.Object", "TextChanged") &&
                            dbus_message_has_path(m, path));
      dbus_message_unref(m);
    }
    return changed;
  };
  std::u32string observed;
  std::vector<std::string> states;
  bool read_ok = false;
  bool at_bound = false;
  for (;;) {
    (void)drain();  // changes before this read are in it
    bus.set_deadline_us(steady_us() + timeout_ms * 1000);  // each read has its own bound
    const int text = bus.call(dest, path, kText, "GetText", text_range(0, -1));
    const int state = bus.call(dest, path, kAccessible, "GetState", nullptr);
    Message text_reply = bus.take(text);
    Message state_reply = bus.take(state);
    bus.reset_pending();
    std::string now;
    states.clear();
    read_ok = read_raw_string(text_reply, now) && read_states(state_reply, states);
    if (!read_ok) break;
    observed = ax_code_points(now);
    if (observed == impl_->expected) {
      return AxReadbackOutcome{AxReadbackVerdict::kVerified,
                               "read back: the focused widget holds exactly the expected text (" +
                                   std::to_string(observed.size()) + " characters)"};
    }
    if (at_bound) break;
    // Event-driven: the next read follows the widget's next text-changed signal, or the bound.
    bool changed = false;
    while (!changed) {
      changed = drain();
      if (changed) {
        deadline = std::min(cap, steady_us() + timeout_ms * 1000);
        break;
      }
      const std::int64_t left_ms = (deadline - steady_us()) / 1000;
      if (left_ms <= 0 || !dbus_connection_read_write(c, static_cast<int>(std::min<std::int64_t>(left_ms, 1 << 30)))) {
        break;
      }
    }
    if (!changed) {
      // The bound passed without a signal (or the bus went away): one last read, at the bound,
      // judges (a toolkit that sends no text-changed signal is judged by it too).
      at_bound = true;
    }
  }
  if (!read_ok) {
    if (!bus.connected()) {
      return not_verified("the accessibility bus went away after the keys (accessibility-bus-gone)");
    }
    if (bus.late()) {
      return not_verified("the focused widget did not answer within " + std::to_string(timeout_ms) +
                          " ms (accessibility-timeout)");
    }
    return not_verified("the focused widget vanished after the keys");
  }
  if (!has_state(states, "focused")) {
    return not_verified("the widget lost focus while the keys were typed (they may have gone elsewhere)");
  }
  const std::string when =
      steady_us() >= cap ? "read back " + std::to_string((cap - start) / 1000) +
                               " ms after the keys, the widget still changing: "
                         : "read back after " + std::to_string(timeout_ms) +
                               " ms without a text change: ";
  return AxReadbackOutcome{AxReadbackVerdict::kContradicted,
                           when + ax_text_difference(impl_->expected, observed)};
}

}  // namespace evident
