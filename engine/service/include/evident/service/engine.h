// The engine: one object that owns displays, apps and sessions, and answers requests.
// The daemon, the CLI (through the daemon) and Python (in-process) all go through Engine::call,
// so every surface has the same operations, limits and error codes.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evident/core/clock.h"
#include "evident/core/error_json.h"  // error_response, for the service's callers
#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/protocol/protocol.h"

namespace evident {

class DisplayManager;
class SessionManager;

// Who made a request, resolved by the control surface — never taken from request fields.
struct Actor {
  enum class Kind { kLocalUser, kInProcess };
  Kind kind = Kind::kLocalUser;
  unsigned uid = 0;
  int pid = 0;  // in_process only
  Json to_json() const;  // {"kind":"local_user","uid":N} or {"kind":"in_process","uid":N,"pid":P}
  bool operator==(const Actor&) const = default;
};

// One warm-pool entry (the DisplayOptions of display.create; kept apart so this header needs no
// display headers).
struct WarmDisplaySize {
  int width = protocol::kDisplayWidthDefault;
  int height = protocol::kDisplayHeightDefault;
  int depth = protocol::kDisplayDepthDefault;
  int dpi = protocol::kDisplayDpiDefault;
};

// Parses "WIDTHxHEIGHT" (decimal, e.g. "1920x1080"; depth 24, dpi 96) into a warm-pool entry,
// checked like display.create. Errors: "display-args".
Result<WarmDisplaySize> parse_warm_size(std::string_view text);

struct EngineOptions {
  std::string state_dir;    // evidence (persists); default default_state_dir()
  std::string runtime_dir;  // private scratch: auth cookies, app logs (0700); default default_runtime_dir()/engine-<pid>-<rand>
  const Clock* clock = nullptr;  // default SystemClock
  // Warm display pool (DisplayManagerOptions::warm): sizes to keep one ready display each for.
  // Default empty: nothing is pre-started. See docs/displays.md.
  std::vector<WarmDisplaySize> warm;
  // Told each time a pooled display became ready: its name (":N") and size. For logs.
  std::function<void(const std::string& name, const WarmDisplaySize& size)> on_warm_ready;
};

// Request envelope (internal wire format, also used by the daemon socket):
//   {"op":"<name>","args":{...}}
// Ops and their args (results are exactly the protocol's JSON, including "ok"):
//   display.create   {width?,height?,depth?,dpi?}
//   display.destroy  {display_id,generation}
//   display.list     {}
//   display.status   {display_id,generation}
//   display.screenshot {display_id,generation,out}
//   app.launch       {display_id,generation,argv:[...],wait_window_ms?}
//   app.stop         {app_id}
//   app.list         {}
//   cu.actions       {display_id,generation,request:{...docs/protocol.md §4 batch...}}
//   session          {request:"<raw JSON text of one §5 request>"}  (parsed strictly by the session layer)
//   task             {request:"<raw JSON text of one task request>"} (parsed strictly by the task layer;
//                    the envelope may be up to kMaxEnvelopeBytes)
//   browser.create|close|list|status|evaluate|navigate|element_box  (ops_browser.cpp, docs/browsers.md)
//   ping             {}  -> {"ok":true,"version":"…","pid":P}
// Errors: {"ok":false,"error":{"code","message","retryable"}}. Envelope errors: request-json,
// request-too-large, request-unknown-op, request-args (docs/errors.md); none changes state.
class Engine {
 public:
  explicit Engine(EngineOptions options);
  ~Engine();  // destroys everything it owns (sessions aborted, apps stopped, displays destroyed)
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Parses `request_json` strictly (≤ kMaxRequestBytes) and dispatches. Thread-safe; never throws.
  Json call(const Actor& actor, std::string_view request_json);
  // Same, with an already-parsed envelope.
  Json call(const Actor& actor, const Json& request);
  // Answers the request like call() when it is one that takes a short, bounded time: an op the
  // protocol file marks `inline` (ping; cu.actions when batch_is_bounded), or an envelope error.
  // Otherwise runs nothing and returns nullopt. For callers that would otherwise hand every call
  // to another thread to stay interruptible (the Python binding, docs/python.md "The GIL and
  // Ctrl-C"): the short ones can run on the calling thread. Thread-safe; never throws.
  std::optional<Json> call_inline(const Actor& actor, std::string_view request_json);
  // The same for an envelope the caller built as a value instead of text (the Python binding's
  // object path, docs/python.md "The GIL and Ctrl-C"). The caller vouches for everything the
  // text overload's strict parse and size bound check: the value is exactly what
  // parse_json_strict would build from a text of at most kMaxRequestBytes (nesting within
  // kMaxJsonDepth, integers within ±(2^53−1), no floats, valid UTF-8); anything else it sends
  // as text, so limits and refusals stay those of the text envelope.
  std::optional<Json> call_inline_value(const Actor& actor, const Json& envelope);

  // Stops everything owned; idempotent. Called by the destructor and on daemon shutdown.
  void shutdown();

  // The envelope bound of every op (256 KiB), but the `task` op's, which admits a 1 MiB provider
  // response embedded as a JSON string (kMaxEnvelopeBytes, the largest of all: what a reader
  // reads before it knows the op). One place: max_request_bytes(op).
  static constexpr std::size_t kMaxRequestBytes = protocol::kRequestMaxBytes;
  static constexpr std::size_t kMaxEnvelopeBytes = protocol::kTaskEnvelopeMaxBytes;
  static std::size_t max_request_bytes(std::string_view op);
  // request-too-large when the envelope's `bytes` exceed its op's bound (an envelope that is not
  // an object or names no op gets the 256 KiB bound).
  static Status check_request_size(const Json& envelope, std::size_t bytes);

  // The displays and apps this engine owns (for in-process users: sessions, bindings, tests).
  DisplayManager& displays();
  // The session state machine (e.g. SessionManager::wait_ended for tests waiting on the reaper).
  SessionManager& sessions();
  const EngineOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace evident
