// The CDP client against real loopback sockets with peers that misbehave on purpose: nothing
// listening, a listener that never answers, a WebSocket server that sends events, protocol
// errors and an oversized message. (The client against a real Chromium: browser_x11_test.)
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "evident/browser/cdp.h"

namespace evident {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;

// A loopback socket bound to a free port; listening or not.
struct Port {
  int fd = -1;
  int port = 0;
  explicit Port(bool listen) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    if (listen) ::listen(fd, 4);
  }
  ~Port() {
    if (fd >= 0) ::close(fd);
  }
};

TEST(CdpClient, NothingListeningIsAConnectionFailure) {
  int port;
  {
    Port p(false);
    port = p.port;
  }  // closed: nothing listens there now
  auto c = CdpClient::connect(port, "/devtools/browser/x", 2000);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, "browser-cdp-failed");
}

TEST(CdpClient, AListenerThatNeverAnswersTimesOutWithinTheBound) {
  Port p(true);  // the kernel completes the TCP handshake; nobody ever speaks WebSocket
  const auto t0 = std::chrono::steady_clock::now();
  auto c = CdpClient::connect(p.port, "/devtools/browser/x", 300);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, "browser-cdp-timeout");
  EXPECT_GE(ms, 290);
  EXPECT_LT(ms, 3000);
}

TEST(CdpClient, MalformedEndpointsAreRefusedBeforeDialling) {
  for (const char* path : {"/json", "devtools/x", "/devtools/a b", "/devtools/\x01"}) {
    auto c = CdpClient::connect(9, path, 100);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.error().code, "browser-cdp-failed") << path;
  }
  EXPECT_FALSE(CdpClient::connect(0, "/devtools/x", 100).ok());
  EXPECT_FALSE(CdpClient::connect(70000, "/devtools/x", 100).ok());
}

// A WebSocket server on loopback that answers each request according to a script.
class ScriptedServer {
 public:
  // For request n (0-based), `script(n, request)` returns the messages to send back in order.
  explicit ScriptedServer(std::function<std::vector<std::string>(int, const nlohmann::json&)> script)
      : acceptor_(ioc_, asio::ip::tcp::endpoint(asio::ip::address_v4::loopback(), 0)),
        script_(std::move(script)) {
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { serve(); });
  }
  ~ScriptedServer() { thread_.join(); }
  int port() const { return port_; }
  std::string host_header;

 private:
  void serve() {
    try {
      asio::ip::tcp::socket sock(ioc_);
      acceptor_.accept(sock);
      websocket::stream<asio::ip::tcp::socket> ws(std::move(sock));
      ws.read_message_max(64 * 1024 * 1024);
      ws.accept();
      for (int n = 0;; ++n) {
        beast::flat_buffer buf;
        ws.read(buf);
        auto req = nlohmann::json::parse(beast::buffers_to_string(buf.data()));
        for (const auto& m : script_(n, req)) ws.write(asio::buffer(m));
      }
    } catch (const std::exception&) {
      // the client closed (every test ends that way)
    }
  }
  asio::io_context ioc_;
  asio::ip::tcp::acceptor acceptor_;
  std::function<std::vector<std::string>(int, const nlohmann::json&)> script_;
  int port_ = 0;
  std::thread thread_;
};

TEST(CdpClient, RepliesAreMatchedByIdEventsGoToTheSinkErrorsAreValues) {
  ScriptedServer server([](int n, const nlohmann::json& req) -> std::vector<std::string> {
    const auto id = req["id"].get<int>();
    if (n == 0) {
      EXPECT_EQ(req["method"], "Browser.getVersion");
      EXPECT_FALSE(req.contains("sessionId"));
      return {R"({"method":"Target.targetCreated","params":{}})",
              R"({"id":)" + std::to_string(id + 100) + R"(,"result":{"stale":true}})",
              R"({"id":)" + std::to_string(id) + R"(,"result":{"product":"Chrome/1"}})"};
    }
    if (n == 1) {
      EXPECT_EQ(req["sessionId"], "S1");
      return {R"({"id":)" + std::to_string(id) + R"(,"error":{"code":-32000,"message":"secret-ish detail"}})"};
    }
    return {R"({"method":"Page.loadEventFired","sessionId":"S1","params":{}})"};
  });
  auto c = CdpClient::connect(server.port(), "/devtools/browser/abc", 2000);
  ASSERT_TRUE(c.ok()) << c.error().message;
  std::vector<std::string> events;
  (*c)->set_event_sink([&](const Json& m) { events.push_back(m.value("method", "")); });

  auto v = (*c)->call("Browser.getVersion", Json::object(), "", 2000);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ((*v)["product"], "Chrome/1");
  EXPECT_EQ(events, std::vector<std::string>{"Target.targetCreated"});

  auto e = (*c)->call("Runtime.evaluate", Json{{"expression", "1"}}, "S1", 2000);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code, "browser-cdp-error");
  EXPECT_EQ(e.error().message.find("secret"), std::string::npos);
  EXPECT_FALSE((*c)->broken());

  // An event read while a call waits for its reply reaches the sink. This request gets no reply:
  // the call times out, which breaks the connection for good.
  auto t = (*c)->call("Page.navigate", Json::object(), "S1", 300);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, "browser-cdp-timeout");
  EXPECT_TRUE((*c)->broken());
  EXPECT_EQ(events.back(), "Page.loadEventFired");
  auto after = (*c)->call("Browser.getVersion", Json::object(), "", 300);
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().code, "browser-cdp-failed");
}

TEST(CdpClient, AnOversizedMessageBreaksTheConnectionWithAStableCode) {
  ScriptedServer server([](int, const nlohmann::json&) -> std::vector<std::string> {
    return {std::string(CdpClient::kMaxMessageBytes + 16, ' ')};
  });
  auto c = CdpClient::connect(server.port(), "/devtools/browser/abc", 2000);
  ASSERT_TRUE(c.ok());
  auto r = (*c)->call("Browser.getVersion", Json::object(), "", 5000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "browser-cdp-failed");
  EXPECT_TRUE((*c)->broken());
}

TEST(CdpClient, AMessageNestedPastTheBoundBreaksTheConnectionWithAStableCode) {
  // 129 levels: one past kMaxResponseJsonDepth (the reply object itself is level 1).
  ScriptedServer server([](int, const nlohmann::json& req) -> std::vector<std::string> {
    const std::string id = std::to_string(req["id"].get<int>());
    if (id == "1") return {R"({"id":1,"result":)" + std::string(127, '[') + std::string(127, ']') + "}"};
    return {R"({"id":)" + id + R"(,"result":)" + std::string(128, '[') + std::string(128, ']') + "}"};
  });
  auto c = CdpClient::connect(server.port(), "/devtools/browser/abc", 2000);
  ASSERT_TRUE(c.ok());
  auto within = (*c)->call("Runtime.evaluate", Json::object(), "", 5000);  // 128 levels: taken
  ASSERT_TRUE(within.ok()) << within.error().message;
  auto r = (*c)->call("Runtime.evaluate", Json::object(), "", 5000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "browser-cdp-failed");
  EXPECT_NE(r.error().message.find("nested deeper"), std::string::npos);
  EXPECT_TRUE((*c)->broken());
}

TEST(CdpClient, WaitEventTimesOutWithoutBreakingTheConnection) {
  ScriptedServer server([](int, const nlohmann::json& req) -> std::vector<std::string> {
    return {R"({"id":)" + std::to_string(req["id"].get<int>()) + R"(,"result":{"ok":1}})"};
  });
  auto c = CdpClient::connect(server.port(), "/devtools/browser/abc", 2000);
  ASSERT_TRUE(c.ok());
  // Nothing arrives: the wait ends at its bound, its read stays pending, the connection lives
  // and the next reply is read by that same pending read.
  auto w = (*c)->wait_event([](const Json&) { return true; }, 200);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().code, "browser-cdp-timeout");
  EXPECT_FALSE((*c)->broken());
  auto r = (*c)->call("X.after", Json::object(), "", 2000);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["ok"], 1);
}

}  // namespace
}  // namespace evident
