#include "evident/daemon/daemon.h"

#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "evident/core/clock.h"
#include "evident/core/fs.h"
#include "evident/service/engine.h"
#include "socket_io.h"

namespace evident {
namespace {

using namespace socket_io;

// epoll tags of the loop's own descriptors (connection ids start at 1 and never reach these).
constexpr std::uint64_t kTagListen = UINT64_MAX;
constexpr std::uint64_t kTagSignal = UINT64_MAX - 1;
constexpr std::uint64_t kTagWake = UINT64_MAX - 2;

std::string dir_of(const std::string& path) {
  std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : ".";
}

// The socket's directory must be ours and 0700; we create it if missing.
Status check_socket_dir(const std::string& dir) {
  struct stat st{};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return make_error("daemon-socket-dir-unsafe", "cannot stat " + dir + ": " + errno_text(errno));
    }
    auto made = make_private_dir(dir);
    if (!made.ok()) return make_error("daemon-socket-dir-unsafe", made.error().message);
    if (::lstat(dir.c_str(), &st) != 0) {
      return make_error("daemon-socket-dir-unsafe", "cannot stat " + dir);
    }
  }
  if (!S_ISDIR(st.st_mode)) {
    return make_error("daemon-socket-dir-unsafe", dir + " is not a directory");
  }
  if (st.st_uid != ::geteuid()) {
    return make_error("daemon-socket-dir-unsafe", dir + " is owned by another user");
  }
  if ((st.st_mode & 0777) != 0700) {
    return make_error("daemon-socket-dir-unsafe",
                      dir + " must have mode 0700 (run: chmod 700 " + dir + ")");
  }
  return {};
}

// The connection model (docs/reliability.md): one event loop (this thread) owns every socket. It
// accepts, checks the peer's uid, and accumulates each connection's request bytes with a
// per-connection byte bound and read deadline; only a complete request (EOF) is handed to the
// bounded worker pool, and answers are written back by the loop without blocking. An idle or
// slow client therefore holds a few kilobytes and a table slot, never a thread: it cannot delay
// anybody else. `daemon-busy` means that `max_executing` requests are already executing.
class Daemon {
 public:
  Daemon(const DaemonOptions& o, std::ostream& log) : options_(o), log_(log) {}
  Result<int> run();

 private:
  enum class ConnState { kReading, kExecuting, kWriting };
  struct Conn {
    int fd = -1;
    uid_t uid = 0;
    ConnState state = ConnState::kReading;
    std::string in;
    std::string out;
    std::size_t out_off = 0;
    std::int64_t deadline_ms = 0;  // read deadline, then write deadline
    std::int64_t t0_us = 0;
  };
  struct Job {
    std::uint64_t id;
    Actor actor;
    std::string request;
    std::int64_t t0_us;
  };
  struct Done {
    std::uint64_t id;
    std::string text;  // the answer line
    std::string log;   // what the log says about it
  };
  // One per worker: the job handed to it while it was idle, and the condition it waits on.
  struct WorkerSlot {
    std::condition_variable cv;
    std::optional<Job> job;
  };

  Status open_socket();
  void event_loop(int sfd);
  void accept_all();
  void on_readable(std::uint64_t id, Conn& c);
  void on_writable(std::uint64_t id, Conn& c);
  void complete_request(std::uint64_t id, Conn& c);
  void answer(std::uint64_t id, Conn& c, const Json& response);
  void answer_text(std::uint64_t id, Conn& c, std::string text);
  void close_conn(std::uint64_t id);
  void drain_done();
  void expire(std::int64_t now);
  void worker(std::size_t self);
  std::string handle(const Actor& actor, const std::string& request, std::string* log);
  void log_line(const std::string& line) {
    std::lock_guard lock(log_mu_);
    log_ << "evident daemon: " << format_rfc3339_ms(SystemClock::instance().wall_ms()) << " "
         << line << std::endl;
  }

  DaemonOptions options_;
  std::ostream& log_;
  std::mutex log_mu_;
  int listen_fd_ = -1;
  int lock_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;     // eventfd: a worker finished a job
  int reserve_fd_ = -1;  // kept open to accept-and-refuse when the fd limit is reached
  ino_t socket_ino_ = 0;
  std::size_t max_held_ = 0;
  std::unique_ptr<Engine> engine_;
  std::unordered_map<std::uint64_t, Conn> conns_;
  std::uint64_t next_id_ = 1;
  int executing_ = 0;  // loop thread only: jobs handed to workers and not yet answered

  // The worker pool (q_mu_ guards all of it). A complete request goes to the worker that went
  // idle last (idle_ is a stack), so a daemon serving one client at a time runs every request on
  // the same thread instead of cycling through all of them: the others' stacks, malloc caches and
  // per-thread PNG encoders are never touched (docs/reliability.md, "The daemon's RSS over a
  // long soak"). jobs_ holds requests only while no worker is idle.
  std::mutex q_mu_;
  std::condition_variable idle_cv_;
  std::deque<Job> jobs_;
  std::vector<std::unique_ptr<WorkerSlot>> slots_;
  std::vector<std::size_t> idle_;
  std::deque<Done> done_;
  int busy_workers_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

Status Daemon::open_socket() {
  const std::string& path = options_.socket_path;
  sockaddr_un addr{};
  if (!make_addr(path, &addr)) {
    return make_error("daemon-socket-failed", "the socket path is too long");
  }
  EVIDENT_TRY(check_socket_dir(dir_of(path)));
  // One daemon per socket path: an flock'ed lock file beside the socket, held for life.
  std::string lock_path = path + ".lock";
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock_fd_ < 0) {
    return make_error("daemon-socket-failed", "cannot open " + lock_path + ": " + errno_text(errno));
  }
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return make_error("daemon-already-running",
                      "another evident daemon is running on " + path);
  }
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0) {
    int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int r = ::connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    int e = errno;
    ::close(probe);
    if (r == 0) {
      return make_error("daemon-already-running", "another evident daemon answers on " + path);
    }
    // Remove only a stale socket of ours: connect refused, a socket, owned by us.
    if (e == ECONNREFUSED && S_ISSOCK(st.st_mode) && st.st_uid == ::geteuid()) {
      ::unlink(path.c_str());
    } else {
      return make_error("daemon-socket-in-use",
                        path + " exists and is not a stale evident socket; remove it or choose "
                               "another --socket");
    }
  }
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return make_error("daemon-socket-failed", "socket: " + errno_text(errno));
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int e = errno;
    return make_error(e == EADDRINUSE ? "daemon-socket-in-use" : "daemon-socket-failed",
                      "cannot bind " + path + ": " + errno_text(e));
  }
  // The directory is 0700 already; the socket itself is 0600 as well.
  if (::chmod(path.c_str(), 0600) != 0 || ::lstat(path.c_str(), &st) != 0) {
    return make_error("daemon-socket-failed", "cannot chmod " + path + ": " + errno_text(errno));
  }
  socket_ino_ = st.st_ino;
  if (::listen(listen_fd_, 64) != 0) {
    return make_error("daemon-socket-failed", "listen: " + errno_text(errno));
  }
  return {};
}

// Raises the soft RLIMIT_NOFILE to the hard limit (held connections need descriptors) and returns
// the soft limit now in force.
rlim_t raise_fd_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit want = rl;
    want.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &want) == 0) rl = want;
  }
  return rl.rlim_cur;
}

// Best effort, never blocks (the socket is non-blocking): used only for one-line refusals to a
// connection that is closed right after.
void send_now(int fd, std::string_view data) { (void)::send(fd, data.data(), data.size(), MSG_NOSIGNAL); }

std::string answer_line(const Json& response) {
  try {
    return dump_json(response) + "\n";
  } catch (...) {
    return "{\"ok\":false,\"error\":{\"code\":\"internal\",\"message\":\"the answer could not be "
           "serialised\",\"retryable\":false}}\n";
  }
}

const char kInternalLine[] =
    "{\"ok\":false,\"error\":{\"code\":\"internal\",\"message\":\"internal error while serving "
    "the request\",\"retryable\":false}}\n";

// Runs one complete request. Whatever happens inside (an exception of any type included) is an
// answer: `internal` for this request, and the daemon serves the next one.
std::string Daemon::handle(const Actor& actor, const std::string& request, std::string* log) {
  std::string op = "-";
  try {
    Json response;
    auto parsed = parse_json_strict(request, Engine::kMaxEnvelopeBytes, "request-json");
    // Each op's own envelope bound; text that is not an envelope gets the bound of every op but
    // `task`.
    if (Status size = Engine::check_request_size(parsed.ok() ? *parsed : Json(), request.size()); !size) {
      response = error_response(size.error());
    } else if (!parsed.ok()) {
      response = error_response(parsed.error());
    } else {
      // Log the op name only if it looks like one of ours (never payloads).
      if (parsed->is_object() && parsed->contains("op") && (*parsed)["op"].is_string()) {
        const auto& s = (*parsed)["op"].get_ref<const std::string&>();
        bool clean = s.size() <= 32 && !s.empty();
        for (char c : s) clean = clean && ((c >= 'a' && c <= 'z') || c == '.' || c == '_');
        if (clean) op = s;
      }
      response = options_.call ? options_.call(actor, *parsed) : engine_->call(actor, *parsed);
    }
    std::string code = "?";
    if (response.is_object() && response.value("ok", false)) {
      code = "ok";
    } else if (response.is_object() && response.contains("error") && response["error"].is_object()) {
      code = response["error"].value("code", "?");
    } else {
      response = error_response(make_error("internal", "the engine returned no response object"));
      code = "internal";
    }
    *log = "op=" + op + " -> " + utf8_sanitized(code);
    return answer_line(response);
  } catch (const std::exception& e) {
    *log = "op=" + op + " -> internal (exception: " + utf8_sanitized(e.what()) + ")";
  } catch (...) {
    *log = "op=" + op + " -> internal (non-standard exception)";
  }
  return kInternalLine;
}

void Daemon::worker(std::size_t self) {
  WorkerSlot& slot = *slots_[self];
  bool listed = true;  // on the idle stack (run() lists every worker before starting them)
  for (;;) {
    Job job;
    {
      std::unique_lock lock(q_mu_);
      if (!listed && jobs_.empty() && !stopping_) {
        idle_.push_back(self);  // the top of the stack: the next request is ours
        listed = true;
      }
      if (listed) slot.cv.wait(lock, [&] { return stopping_ || slot.job.has_value(); });
      listed = false;
      if (slot.job) {
        job = std::move(*slot.job);
        slot.job.reset();
      } else if (!jobs_.empty()) {
        job = std::move(jobs_.front());
        jobs_.pop_front();
      } else {
        return;  // stopping and nothing left
      }
      ++busy_workers_;
    }
    Done d{job.id, {}, {}};
    d.text = handle(job.actor, job.request, &d.log);
    d.log = "uid=" + std::to_string(job.actor.uid) + " " + d.log + " (" +
            std::to_string((steady_us() - job.t0_us) / 1000) + " ms)";
    bool idle = false;
    {
      std::lock_guard lock(q_mu_);
      done_.push_back(std::move(d));
      --busy_workers_;
      idle = busy_workers_ == 0 && jobs_.empty();
      // Back on top of the idle stack before the answer goes out, so the client's next request
      // comes to this worker again (after the trim below, if it arrives during it) rather than
      // to another one.
      if (jobs_.empty() && !stopping_) {
        idle_.push_back(self);
        listed = true;
      }
    }
    idle_cv_.notify_all();
    const std::uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
    // The daemon went idle (the answer is already on its way): give the pages freed by the
    // request back to the kernel, so a long-lived daemon's RSS follows what it holds, not the
    // peak of each session (docs/reliability.md, the soak).
    if (idle) ::malloc_trim(0);
  }
}

void Daemon::close_conn(std::uint64_t id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second.fd, nullptr);
  ::close(it->second.fd);
  conns_.erase(it);
}

void Daemon::answer(std::uint64_t id, Conn& c, const Json& response) {
  answer_text(id, c, answer_line(response));
}

void Daemon::answer_text(std::uint64_t id, Conn& c, std::string text) {
  c.out = std::move(text);
  c.out_off = 0;
  c.in.clear();
  c.in.shrink_to_fit();
  c.state = ConnState::kWriting;
  c.deadline_ms = now_ms() + options_.write_timeout_ms;
  epoll_event ev{};
  ev.events = EPOLLOUT;
  ev.data.u64 = id;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev) != 0) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c.fd, &ev);
  }
  on_writable(id, c);
}

void Daemon::on_writable(std::uint64_t id, Conn& c) {
  while (c.out_off < c.out.size()) {
    ssize_t n = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // the loop waits for EPOLLOUT
      close_conn(id);  // the client went away: work it asked for was not cancelled
      return;
    }
    c.out_off += static_cast<std::size_t>(n);
  }
  close_conn(id);
}

void Daemon::complete_request(std::uint64_t id, Conn& c) {
  if (executing_ >= options_.max_connections) {
    answer(id, c, error_response(make_error(
                      "daemon-busy",
                      std::to_string(options_.max_connections) +
                          " requests are executing; retry")));
    return;
  }
  // The loop stops watching the socket while the request executes (a hang-up would otherwise be
  // reported on every wait); the answer re-arms it for writing.
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  c.state = ConnState::kExecuting;
  Actor actor;
  actor.kind = Actor::Kind::kLocalUser;
  actor.uid = c.uid;
  ++executing_;
  WorkerSlot* wake = nullptr;
  {
    std::lock_guard lock(q_mu_);
    Job job{id, actor, std::move(c.in), c.t0_us};
    if (!idle_.empty()) {
      wake = slots_[idle_.back()].get();
      idle_.pop_back();
      wake->job = std::move(job);
    } else {
      jobs_.push_back(std::move(job));
    }
  }
  c.in = std::string();
  if (wake != nullptr) wake->cv.notify_one();
}

void Daemon::on_readable(std::uint64_t id, Conn& c) {
  char buf[16384];
  for (;;) {
    ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      close_conn(id);
      return;
    }
    if (n == 0) {
      complete_request(id, c);
      return;
    }
    c.in.append(buf, static_cast<std::size_t>(n));
    // The largest envelope of any op (a task turn's); each op's own bound is checked once the
    // envelope is parsed (Engine::check_request_size).
    if (c.in.size() > Engine::kMaxEnvelopeBytes) {
      answer(id, c, error_response(make_error(
                        "request-too-large", "the request is larger than " +
                                                 std::to_string(Engine::kMaxEnvelopeBytes) +
                                                 " bytes")));
      return;
    }
  }
}

void Daemon::accept_all() {
  for (;;) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if ((errno == EMFILE || errno == ENFILE) && reserve_fd_ >= 0) {
        // Out of descriptors: take the connection on the reserved one only to refuse it, or the
        // listening socket would stay readable and spin the loop.
        ::close(reserve_fd_);
        int refused = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (refused >= 0) {
          send_now(refused, answer_line(error_response(make_error(
                                "daemon-busy", "the daemon is out of file descriptors; retry"))));
          ::close(refused);
        }
        reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        continue;
      }
      return;  // EAGAIN: all accepted
    }
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != ::geteuid()) {
      send_now(fd, answer_line(error_response(make_error(
                       "daemon-peer-refused",
                       "this daemon admits only its owner's uid " + std::to_string(::geteuid())))));
      ::close(fd);
      log_line("refused a connection from uid " + std::to_string(cred.uid));
      continue;
    }
    if (conns_.size() >= max_held_) {
      // The table is full: the connection that has waited longest for its own request bytes
      // makes room (it is answered request-timeout), so idle sockets never lock others out.
      std::uint64_t oldest = 0;
      std::int64_t oldest_deadline = INT64_MAX;
      for (const auto& [cid, cc] : conns_) {
        if (cc.state == ConnState::kReading && cc.deadline_ms < oldest_deadline) {
          oldest = cid;
          oldest_deadline = cc.deadline_ms;
        }
      }
      if (oldest == 0) {
        send_now(fd, answer_line(error_response(make_error(
                         "daemon-busy", "too many connections are open; retry"))));
        ::close(fd);
        continue;
      }
      Conn& victim = conns_[oldest];
      send_now(victim.fd, answer_line(error_response(make_error(
                              "request-timeout",
                              "the request was not complete (EOF) before newer clients needed "
                              "its slot"))));
      close_conn(oldest);
    }
    const std::uint64_t id = next_id_++;
    Conn c;
    c.fd = fd;
    c.uid = cred.uid;
    c.t0_us = steady_us();
    c.deadline_ms = now_ms() + options_.read_timeout_ms;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = id;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      ::close(fd);
      continue;
    }
    conns_.emplace(id, std::move(c));
  }
}

void Daemon::drain_done() {
  std::uint64_t count = 0;
  (void)!::read(wake_fd_, &count, sizeof count);
  std::deque<Done> done;
  {
    std::lock_guard lock(q_mu_);
    done.swap(done_);
  }
  for (auto& d : done) {
    --executing_;
    log_line(d.log);
    auto it = conns_.find(d.id);
    if (it == conns_.end()) continue;
    answer_text(d.id, it->second, std::move(d.text));
  }
}

void Daemon::expire(std::int64_t now) {
  std::vector<std::uint64_t> late;
  for (const auto& [id, c] : conns_) {
    if (c.state != ConnState::kExecuting && c.deadline_ms <= now) late.push_back(id);
  }
  for (std::uint64_t id : late) {
    Conn& c = conns_[id];
    if (c.state == ConnState::kReading) {
      answer(id, c, error_response(make_error(
                        "request-timeout",
                        "the request was not complete (EOF) within the read deadline")));
    } else {
      close_conn(id);  // a client that does not read its answer
    }
  }
}

void Daemon::event_loop(int sfd) {
  int signo = 0;
  std::vector<epoll_event> events(256);
  for (;;) {
    // Every step is guarded: an exception here (e.g. allocation) costs at most the connection
    // being handled, never the daemon.
    try {
      const std::int64_t now = now_ms();
      std::int64_t next = now + 60000;
      for (const auto& [id, c] : conns_) {
        if (c.state != ConnState::kExecuting) next = std::min(next, c.deadline_ms);
      }
      const int timeout = static_cast<int>(std::max<std::int64_t>(0, next - now));
      int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), timeout);
      if (n < 0) {
        if (errno == EINTR) continue;
        log_line(std::string("epoll_wait failed: ") + errno_text(errno));
        break;
      }
      bool stop = false;
      for (int i = 0; i < n; ++i) {
        const std::uint64_t tag = events[i].data.u64;
        if (tag == kTagSignal) {
          signalfd_siginfo si{};
          if (::read(sfd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
            signo = static_cast<int>(si.ssi_signo);
          }
          stop = true;
        } else if (tag == kTagListen) {
          accept_all();
        } else if (tag == kTagWake) {
          drain_done();
        } else {
          auto it = conns_.find(tag);
          if (it == conns_.end()) continue;
          try {
            if (it->second.state == ConnState::kReading) {
              on_readable(tag, it->second);
            } else if (it->second.state == ConnState::kWriting) {
              on_writable(tag, it->second);
            }
          } catch (...) {
            auto again = conns_.find(tag);
            if (again != conns_.end() && again->second.state != ConnState::kExecuting) {
              send_now(again->second.fd, kInternalLine);
              close_conn(tag);
            }
          }
        }
      }
      if (stop) break;
      expire(now_ms());
    } catch (const std::exception& e) {
      log_line(std::string("serve loop: unexpected exception: ") + utf8_sanitized(e.what()));
    } catch (...) {
      log_line("serve loop: unexpected non-standard exception");
    }
  }
  log_line(std::string("stopping (") + (signo ? ::strsignal(signo) : "event loop error") + ")");
}

Result<int> Daemon::run() {
  // Block TERM/INT before any thread exists (the engine starts threads), then take them from a
  // signalfd. Children get an empty mask back (see process.cpp).
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  // Before any thread exists: one malloc arena instead of one per thread (the daemon runs dozens
  // of threads; each arena keeps its own freed memory, and a request's work moving to a thread of
  // another arena grew one arena without shrinking the other as much), docs/reliability.md.
  ::mallopt(M_ARENA_MAX, 1);
  int sfd = ::signalfd(-1, &sigs, SFD_CLOEXEC);
  if (sfd < 0) return make_error("daemon-socket-failed", "signalfd: " + errno_text(errno));

  const rlim_t fd_limit = raise_fd_limit();
  // Half the descriptors for held connections, the rest for displays, apps, logs and frames.
  max_held_ = std::max<std::size_t>(
      16, std::min<std::size_t>(static_cast<std::size_t>(options_.max_held_connections),
                                static_cast<std::size_t>(fd_limit / 2)));

  auto fail = [&](const Error& e) -> Result<int> {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (lock_fd_ >= 0) ::close(lock_fd_);
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
    ::close(sfd);
    return e;
  };
  if (auto st = open_socket(); !st.ok()) return fail(st.error());
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0 ||
      ::fcntl(listen_fd_, F_SETFL, ::fcntl(listen_fd_, F_GETFL) | O_NONBLOCK) != 0) {
    return fail(make_error("daemon-socket-failed", "epoll/eventfd: " + errno_text(errno)));
  }
  for (auto [fd, tag] : {std::pair{listen_fd_, kTagListen}, std::pair{sfd, kTagSignal},
                         std::pair{wake_fd_, kTagWake}}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      return fail(make_error("daemon-socket-failed", "epoll_ctl: " + errno_text(errno)));
    }
  }
  EngineOptions eo;
  eo.state_dir = options_.state_dir;
  eo.warm = options_.warm;
  if (!eo.warm.empty()) {
    eo.on_warm_ready = [this](const std::string& name, const WarmDisplaySize& s) {
      log_line("warm display " + name + " " + std::to_string(s.width) + "x" +
               std::to_string(s.height) + " ready");
    };
  }
  engine_ = std::make_unique<Engine>(eo);
  // Every worker is on the idle stack before any starts (worker 0 on top), so the order does not
  // depend on when each thread first runs.
  for (int i = 0; i < options_.max_connections; ++i) {
    slots_.push_back(std::make_unique<WorkerSlot>());
    idle_.push_back(static_cast<std::size_t>(options_.max_connections - 1 - i));
  }
  for (std::size_t i = 0; i < slots_.size(); ++i) workers_.emplace_back([this, i] { worker(i); });
  log_line("listening on " + options_.socket_path + " (pid " + std::to_string(::getpid()) +
           ", up to " + std::to_string(max_held_) + " connections held, " +
           std::to_string(options_.max_connections) + " executing)");

  event_loop(sfd);

  ::close(listen_fd_);
  struct stat st{};
  if (::lstat(options_.socket_path.c_str(), &st) == 0 && st.st_ino == socket_ino_) {
    ::unlink(options_.socket_path.c_str());
  }
  // Connections still sending a request are dropped; requests in flight finish (the engine
  // refuses new work), each bounded.
  engine_->shutdown();
  bool idle = false;
  {
    std::unique_lock lock(q_mu_);
    stopping_ = true;
    jobs_.clear();  // queued or handed to a worker, not started: never run
    for (auto& slot : slots_) {
      slot->job.reset();
      slot->cv.notify_all();
    }
    idle = idle_cv_.wait_for(lock, std::chrono::seconds(60), [this] { return busy_workers_ == 0; });
  }
  if (idle) {
    for (auto& t : workers_) t.join();
  } else {
    log_line("requests still executing after 60 s; exiting without waiting for them");
    for (auto& t : workers_) t.detach();
  }
  drain_done();  // best-effort answers to what finished
  std::vector<std::uint64_t> ids;
  for (const auto& [id, c] : conns_) ids.push_back(id);
  for (std::uint64_t id : ids) close_conn(id);
  if (idle) engine_.reset();  // a worker still inside the engine keeps it
  else (void)engine_.release();
  ::close(epoll_fd_);
  ::close(wake_fd_);
  if (reserve_fd_ >= 0) ::close(reserve_fd_);
  ::close(lock_fd_);
  ::close(sfd);
  log_line("stopped");
  return 0;
}

}  // namespace

Result<int> run_daemon(const DaemonOptions& options, std::ostream& log) {
  DaemonOptions o = options;
  if (o.socket_path.empty()) o.socket_path = socket_path_from_env();
  if (o.state_dir.empty()) o.state_dir = default_state_dir();
  Daemon d(o, log);
  return d.run();
}

}  // namespace evident
