// The daemon: the control socket in front of one Engine (its client: client.h).
//
// Wire format (docs/cli.md): one request per connection. The client connects to the Unix
// stream socket, writes one JSON envelope {"op","args"} (≤ Engine::max_request_bytes(op)), shuts
// down its write side; the daemon reads to EOF (bounded size, read deadline), answers with one
// JSON object followed by "\n", and closes. The actor is taken from SO_PEERCRED only.
// Connection model (docs/reliability.md): one event loop holds every connection and reads
// without blocking; only complete requests reach the bounded worker pool.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/daemon/client.h"
#include "evident/service/engine.h"
#include "evident/protocol/protocol.h"

namespace evident {

struct DaemonOptions {
  std::string socket_path;  // default socket_path_from_env()
  std::string state_dir;    // default default_state_dir()
  // Requests executing at once (the worker pool); one more complete request is `daemon-busy`.
  int max_connections = static_cast<int>(protocol::kDaemonMaxInFlight);
  // Connections held at once (each costs a descriptor and its buffered bytes); also bounded by
  // half the RLIMIT_NOFILE soft limit, which the daemon raises to the hard limit at start. When
  // full, the connection that has waited longest for its own request is answered
  // request-timeout to make room.
  int max_held_connections = 4096;
  int read_timeout_ms = static_cast<int>(protocol::kDaemonReadTimeoutMs);  // accept to EOF
  int write_timeout_ms = 10000;  // for the client to take the answer
  // Test seam: when set, replaces Engine::call for parsed requests (the serve loop's own
  // robustness tests use it to make a request throw). Never set by the CLI.
  std::function<Json(const Actor&, const Json&)> call;
  // Warm display pool (EngineOptions::warm): one pre-started display per size, leased by a
  // display create of exactly that size. Each ready pooled display is logged
  // ("warm display :N WxH ready").
  std::vector<WarmDisplaySize> warm;
};

// Runs in the foreground until SIGTERM/SIGINT, then destroys everything the engine owns and
// returns 0. Must be called before the process starts other threads (it blocks TERM/INT for its
// signalfd). Start-up errors are returned: daemon-already-running, daemon-socket-dir-unsafe,
// daemon-socket-in-use, daemon-socket-failed.
Result<int> run_daemon(const DaemonOptions& options, std::ostream& log);

}  // namespace evident
