#include "evident/browser/cdp.h"

#include <chrono>
#include <string_view>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

namespace evident {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using boost::system::error_code;
using Steady = std::chrono::steady_clock;

namespace {
constexpr const char* kFailed = "browser-cdp-failed";
constexpr const char* kTimeout = "browser-cdp-timeout";
}  // namespace

struct CdpClient::Impl {
  asio::io_context ioc{1};
  websocket::stream<beast::tcp_stream> ws{ioc};
  beast::flat_buffer buffer;
  bool reading = false;   // an async_read is outstanding (it survives a wait that timed out)
  bool read_done = false;
  error_code read_ec;
  bool broken = false;
  std::int64_t next_id = 0;
  std::function<void(const Json&)> sink;

  ~Impl() { shut(); }

  void shut() {
    error_code ec;
    beast::get_lowest_layer(ws).socket().close(ec);
    // Let aborted handlers run while *this is still alive.
    ioc.restart();
    ioc.poll();
  }

  Error fail(const char* code, const std::string& message) {
    broken = true;
    shut();
    return make_error(code, message);
  }

  // Runs the io_context until *done or the deadline; false on deadline.
  bool run_until(const bool* done, Steady::time_point deadline) {
    while (!*done) {
      const auto now = Steady::now();
      if (now >= deadline) return false;
      ioc.restart();
      ioc.run_for(deadline - now);
    }
    return true;
  }

  // One whole message into `out`. Returns 1 (message), 0 (deadline; the read stays
  // outstanding and the connection usable), or an error (connection broken).
  Result<int> read_message(Steady::time_point deadline, Json* out) {
    if (broken) return make_error(kFailed, "the DevTools connection is closed");
    if (!reading) {
      reading = true;
      read_done = false;
      ws.async_read(buffer, [this](error_code ec, std::size_t) {
        read_ec = ec;
        read_done = true;
      });
    }
    if (!run_until(&read_done, deadline)) return 0;
    reading = false;
    if (read_ec) {
      if (read_ec == websocket::error::message_too_big) {
        return fail(kFailed, "a DevTools message was larger than the bound");
      }
      return fail(kFailed, "the DevTools connection failed while reading");
    }
    const auto data = buffer.data();
    std::string_view text(static_cast<const char*>(data.data()), data.size());
    Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    buffer.consume(buffer.size());
    if (parsed.is_discarded() || !parsed.is_object()) {
      return fail(kFailed, "the browser sent a message that is not a JSON object");
    }
    // nlohmann's parser does not recurse, but copies and dumps of the value do: a message nested
    // deeper than a response may be (kMaxResponseJsonDepth) is refused before anything uses it.
    if (json_depth(parsed, kMaxResponseJsonDepth) > kMaxResponseJsonDepth) {
      return fail(kFailed, "the browser sent a message nested deeper than the bound");
    }
    *out = std::move(parsed);
    return 1;
  }

  Status write_message(const std::string& text, Steady::time_point deadline) {
    if (broken) return make_error(kFailed, "the DevTools connection is closed");
    bool done = false;
    error_code wec;
    ws.async_write(asio::buffer(text), [&](error_code ec, std::size_t) {
      wec = ec;
      done = true;
    });
    if (!run_until(&done, deadline)) {
      return fail(kTimeout, "the browser did not accept a DevTools message in time");
    }
    if (wec) return fail(kFailed, "the DevTools connection failed while writing");
    return {};
  }
};

CdpClient::CdpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CdpClient::~CdpClient() = default;

Result<std::unique_ptr<CdpClient>> CdpClient::connect(int port, const std::string& path,
                                                      std::int64_t timeout_ms) {
  if (port <= 0 || port > 65535 || path.rfind("/devtools/", 0) != 0 || path.size() > 512) {
    return make_error(kFailed, "the DevTools endpoint is malformed");
  }
  for (char c : path) {
    if (c <= ' ' || c > '~') return make_error(kFailed, "the DevTools endpoint is malformed");
  }
  auto impl = std::make_unique<Impl>();
  const auto deadline = Steady::now() + std::chrono::milliseconds(timeout_ms);
  Impl* p = impl.get();
  bool done = false;
  error_code cec;
  const asio::ip::tcp::endpoint ep(asio::ip::address_v4::loopback(), static_cast<unsigned short>(port));
  beast::get_lowest_layer(p->ws).async_connect(ep, [&](error_code ec) {
    cec = ec;
    done = true;
  });
  if (!p->run_until(&done, deadline)) {
    return p->fail(kTimeout, "the DevTools port did not accept a connection in time");
  }
  if (cec) return p->fail(kFailed, "the DevTools port refused the connection");
  p->ws.read_message_max(kMaxMessageBytes);
  p->ws.auto_fragment(false);
  done = false;
  error_code hec;
  // No Origin header: Chromium refuses DevTools WebSockets from unexpected origins.
  p->ws.async_handshake("127.0.0.1:" + std::to_string(port), path, [&](error_code ec) {
    hec = ec;
    done = true;
  });
  if (!p->run_until(&done, deadline)) {
    return p->fail(kTimeout, "the DevTools WebSocket handshake did not finish in time");
  }
  if (hec) return p->fail(kFailed, "the DevTools WebSocket handshake failed");
  p->ws.text(true);
  return std::unique_ptr<CdpClient>(new CdpClient(std::move(impl)));
}

Result<Json> CdpClient::call(const std::string& method, const Json& params,
                             const std::string& session_id, std::int64_t timeout_ms) {
  Impl& m = *impl_;
  const auto deadline = Steady::now() + std::chrono::milliseconds(timeout_ms);
  const std::int64_t id = ++m.next_id;
  Json msg{{"id", id}, {"method", method}, {"params", params.is_null() ? Json::object() : params}};
  if (!session_id.empty()) msg["sessionId"] = session_id;
  EVIDENT_TRY(m.write_message(msg.dump(-1, ' ', false, Json::error_handler_t::replace), deadline));
  for (std::size_t skipped = 0; skipped <= kMaxSkippedMessages; ++skipped) {
    Json reply;
    auto r = m.read_message(deadline, &reply);
    if (!r.ok()) return r.error();
    if (*r == 0) return m.fail(kTimeout, "the browser did not answer a DevTools call in time");
    const auto it = reply.find("id");
    if (it == reply.end()) {
      if (m.sink) m.sink(reply);
      continue;
    }
    if (!it->is_number_integer() || it->get<std::int64_t>() != id) continue;  // a stale reply
    if (reply.contains("error")) {
      return make_error("browser-cdp-error", "the browser refused a DevTools call");
    }
    auto res = reply.find("result");
    if (res == reply.end() || !res->is_object()) return Json::object();
    return std::move(*res);
  }
  return m.fail(kFailed, "too many DevTools events while waiting for a reply");
}

Status CdpClient::wait_event(const std::function<bool(const Json&)>& match, std::int64_t timeout_ms) {
  Impl& m = *impl_;
  const auto deadline = Steady::now() + std::chrono::milliseconds(timeout_ms);
  for (std::size_t n = 0; n <= kMaxSkippedMessages; ++n) {
    Json msg;
    auto r = m.read_message(deadline, &msg);
    if (!r.ok()) return r.error();
    if (*r == 0) return make_error(kTimeout, "the awaited browser event did not arrive in time");
    if (msg.contains("id")) continue;
    if (m.sink) m.sink(msg);
    if (match(msg)) return {};
  }
  return m.fail(kFailed, "too many DevTools events while waiting for one");
}

void CdpClient::set_event_sink(std::function<void(const Json&)> sink) { impl_->sink = std::move(sink); }
bool CdpClient::broken() const { return impl_->broken; }
void CdpClient::close() {
  if (!impl_->broken) {
    impl_->broken = true;
    impl_->shut();
  }
}

}  // namespace evident
