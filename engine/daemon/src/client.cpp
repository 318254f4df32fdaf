#include "evident/daemon/client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "evident/core/fs.h"
#include "socket_io.h"

namespace evident {

using namespace socket_io;

std::string default_socket_path() { return default_runtime_dir() + "/evident.sock"; }

std::string socket_path_from_env() {
  const char* env = std::getenv("EVIDENT_SOCKET");
  if (env && *env) return env;
  return default_socket_path();
}

Result<Json> daemon_call(const std::string& socket_path, std::string_view request,
                         int timeout_ms) {
  auto unavailable = [&](const std::string& why) {
    std::string start = socket_path == default_socket_path()
                            ? "evident daemon &"
                            : "evident daemon --socket " + socket_path + " &";
    return make_error("daemon-unavailable", "no evident daemon is listening on " + socket_path +
                                                " (" + why + "); start one with: " + start);
  };
  sockaddr_un addr{};
  if (!make_addr(socket_path, &addr)) return unavailable("the socket path is too long");
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return unavailable(errno_text(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return unavailable(errno_text(errno));
  }
  // A too-large request may be cut off by the daemon (it answers request-too-large and closes):
  // keep going to read its answer.
  bool sent = send_all(fd, request);
  ::shutdown(fd, SHUT_WR);
  std::string answer;
  auto outcome = read_all(fd, 64 * 1024 * 1024, now_ms() + timeout_ms, &answer);
  if (outcome == ReadOutcome::kTimeout) {
    return make_error("daemon-timeout", "the daemon did not answer in time");
  }
  if (answer.empty()) {
    return make_error("daemon-protocol", sent ? "the daemon closed without answering"
                                              : "the daemon closed the connection");
  }
  // A response wraps a receipt (itself within kMaxJsonDepth) one level deeper.
  auto parsed = parse_json_strict(answer, 64 * 1024 * 1024, "daemon-protocol", kMaxResponseJsonDepth);
  if (!parsed.ok() || !parsed->is_object() || !parsed->contains("ok")) {
    return make_error("daemon-protocol", "the daemon's answer is not a JSON response object");
  }
  return *parsed;
}

}  // namespace evident
