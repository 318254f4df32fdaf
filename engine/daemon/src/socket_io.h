// Socket helpers shared by the daemon's serve loop (daemon.cpp) and its client (client.cpp).
// Internal to engine/daemon.
#pragma once

#include <sys/un.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace evident::socket_io {

std::int64_t now_ms();
std::string errno_text(int e);
// False when `path` does not fit sun_path.
bool make_addr(const std::string& path, sockaddr_un* addr);
// Writes everything (MSG_NOSIGNAL: a vanished peer must not kill us with SIGPIPE).
bool send_all(int fd, std::string_view data);

enum class ReadOutcome { kOk, kTooLarge, kTimeout, kError };

// Reads until EOF, at most max_bytes (one more byte means too large), before the deadline.
ReadOutcome read_all(int fd, std::size_t max_bytes, std::int64_t deadline_ms, std::string* out);

}  // namespace evident::socket_io
