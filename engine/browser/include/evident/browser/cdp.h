// A Chrome DevTools Protocol client: one WebSocket (Boost.Beast) to a browser's DevTools endpoint
// on loopback, request/response by id, flattened target sessions. Every read, write, connect and
// handshake has a deadline; a message larger than kMaxMessageBytes is refused. Not thread-safe:
// one caller at a time (the Browser that owns it serialises calls).
// Error ids (docs/errors.md): browser-cdp-failed, browser-cdp-timeout, browser-cdp-error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "evident/core/json.h"
#include "evident/core/status.h"

namespace evident {

class CdpClient {
 public:
  // Bounds on what the browser may send us and on how long any one step may take.
  static constexpr std::size_t kMaxMessageBytes = 4 * 1024 * 1024;
  static constexpr std::size_t kMaxSkippedMessages = 100000;  // events read while awaiting a reply

  // Connects to ws://127.0.0.1:<port><path> (path starts with "/devtools/"). Only loopback is
  // ever dialled. Errors: browser-cdp-failed (refused, reset, bad handshake),
  // browser-cdp-timeout.
  static Result<std::unique_ptr<CdpClient>> connect(int port, const std::string& path,
                                                    std::int64_t timeout_ms);
  ~CdpClient();
  CdpClient(const CdpClient&) = delete;
  CdpClient& operator=(const CdpClient&) = delete;

  // Sends {"id","method","params"[,"sessionId"]} and returns the reply's "result" object.
  // Events read meanwhile go to the event sink (if any). A protocol error reply is
  // browser-cdp-error (its text is not echoed: it may quote request content). Transport
  // failures and timeouts break the connection for good (browser-cdp-failed / -timeout).
  Result<Json> call(const std::string& method, const Json& params, const std::string& session_id,
                    std::int64_t timeout_ms);
  // Reads until an event satisfies `match` (true) or the deadline passes (browser-cdp-timeout;
  // the connection stays usable).
  Status wait_event(const std::function<bool(const Json&)>& match, std::int64_t timeout_ms);
  // Every event read by call()/wait_event() is shown to the sink first (may be empty).
  void set_event_sink(std::function<void(const Json&)> sink);

  bool broken() const;
  void close();

 private:
  struct Impl;
  explicit CdpClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace evident
