// The daemon's client: what every `evident` command but `daemon`, `verify` and `report` is.
// X-free (core only), so the `evident` front binary loads no X, D-Bus or engine library; the
// daemon itself is the `evident-daemon` program (docs/cli.md, docs/architecture.md).
//
// Wire format (docs/cli.md, daemon.h): one request per connection, write side shut down after
// the request, one JSON answer followed by "\n".
#pragma once

#include <string>
#include <string_view>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/protocol/protocol.h"

namespace evident {

// default_runtime_dir() + "/evident.sock" ($XDG_RUNTIME_DIR/evident/evident.sock or
// /tmp/evident-<uid>/evident.sock).
std::string default_socket_path();
// $EVIDENT_SOCKET if set, else default_socket_path().
std::string socket_path_from_env();

// Client: sends one request and returns the daemon's JSON answer.
// Errors: daemon-unavailable (nobody listens; the message says how to start it),
// daemon-protocol (a malformed or missing answer), daemon-timeout.
Result<Json> daemon_call(const std::string& socket_path, std::string_view request,
                         int timeout_ms = static_cast<int>(protocol::kClientTimeoutMs));

}  // namespace evident
