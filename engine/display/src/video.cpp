// Display recordings (video.h): ffmpeg's x11grab, started and owned like an app of the display.
#include "evident/display/video.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include <cstdio>

#include "display_internal.h"
#include "evident/core/sha256.h"
#include "evident/display/display.h"

namespace evident {

using namespace display_detail;

namespace {

Error video_failed(const std::string& why) { return make_error("video-failed", "the session's video " + why); }

std::int64_t wall_us() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

}  // namespace

std::vector<std::string> video_argv(const std::string& name, int width, int height,
                                    const VideoOptions& o) {
  const std::string fps = std::to_string(o.fps);
  // info level: x11grab's "start:" line is the first frame's wall-clock time; -nostats keeps the
  // log to a few lines. stdin stays open: "q" on it ends the file cleanly. -y: the file is the
  // empty 0600 one start() created (exclusively), so ffmpeg's umask never decides its mode.
  return {"ffmpeg", "-hide_banner", "-nostats", "-loglevel", "info", "-y",
          "-f", "x11grab", "-framerate", fps,
          "-video_size", std::to_string(width) + "x" + std::to_string(height),
          "-draw_mouse", "1", "-i", name,
          "-an", "-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-threads", "1",
          "-b:v", "1M", "-g", fps, "-pix_fmt", "yuv420p", "-r", fps,
          "-fs", std::to_string(o.max_bytes), "-f", "webm", o.path};
}

std::int64_t parse_x11grab_start_us(const std::string& line) {
  const std::string key = "start: ";
  auto at = line.find(key);
  if (at == std::string::npos) return -1;
  std::size_t i = at + key.size();
  std::int64_t sec = 0;
  std::size_t digits = 0;
  while (i < line.size() && line[i] >= '0' && line[i] <= '9' && digits < 12) {
    sec = sec * 10 + (line[i++] - '0');
    ++digits;
  }
  if (digits == 0) return -1;
  std::int64_t us = 0;
  if (i < line.size() && line[i] == '.') {
    ++i;
    std::int64_t scale = 100000;
    while (i < line.size() && line[i] >= '0' && line[i] <= '9') {
      if (scale > 0) us += (line[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
  }
  return sec * 1000000 + us;
}

Result<std::unique_ptr<VideoRecording>> VideoRecording::start(Spawner& spawner, SpawnSpec spec,
                                                              const VideoOptions& options) {
  std::unique_ptr<VideoRecording> v(new VideoRecording());
  v->path_ = options.path;
  v->fps_ = options.fps;
  v->max_bytes_ = options.max_bytes;
  {
    Fd out(::open(options.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (out.fd < 0) return video_failed(std::string("file could not be created: ") + std::strerror(errno));
  }
  int control[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, control) != 0) {
    return video_failed(std::string("could not start: socketpair: ") + std::strerror(errno));
  }
  v->control_fd_ = control[0];
  Fd child_stdin(control[1]);
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) {
    return video_failed(std::string("could not start: pipe: ") + std::strerror(errno));
  }
  v->stderr_fd_ = err[0];
  Fd child_stderr(err[1]);
  Fd devnull(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  if (devnull.fd < 0) return video_failed(std::string("could not start: /dev/null: ") + std::strerror(errno));
  spec.stdin_fd = child_stdin.fd;
  spec.stdout_fd = devnull.fd;
  spec.stderr_fd = child_stderr.fd;
  auto child = spawner.spawn(spec);
  if (!child.ok()) return video_failed("could not start ffmpeg: " + child.error().message);
  v->child_ = std::move(*child);
  child_stdin.reset();
  child_stderr.reset();

  // Read ffmpeg's log until x11grab names its first frame's time, bounded in time and bytes.
  const std::int64_t deadline = now_ms() + options.start_bound_ms;
  std::string pending;
  std::size_t seen = 0;
  for (;;) {
    const std::int64_t left = deadline - now_ms();
    if (left <= 0) {
      v->child_->stop(1000);
      return video_failed("recorder grabbed no frame within " + std::to_string(options.start_bound_ms) + " ms");
    }
    pollfd p{v->stderr_fd_, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left, 1000)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buf[4096];
    ssize_t got = ::read(v->stderr_fd_, buf, sizeof buf);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) {  // ffmpeg closed its log: it exited
      int status = v->child_->reap();
      return video_failed("recorder (ffmpeg) exited with status " + std::to_string(status) +
                          " before its first frame");
    }
    seen += static_cast<std::size_t>(got);
    pending.append(buf, static_cast<std::size_t>(got));
    std::size_t eol;
    bool found = false;
    while ((eol = pending.find('\n')) != std::string::npos) {
      const std::string line = pending.substr(0, eol);
      pending.erase(0, eol + 1);
      if (line.find("Duration:") == std::string::npos) continue;
      std::int64_t start_us = parse_x11grab_start_us(line);
      if (start_us < 0) continue;
      v->first_frame_age_ms_ = std::max<std::int64_t>(0, (wall_us() - start_us) / 1000);
      found = true;
      break;
    }
    if (found) break;
    if (seen > (1u << 20)) {  // a log that never names the start is not an x11grab we know
      v->child_->stop(1000);
      return video_failed("recorder's log did not name its first frame");
    }
  }
  VideoRecording* raw = v.get();
  v->drainer_ = std::thread([raw] { raw->drain(); });
  return v;
}

void VideoRecording::drain() {
  char buf[4096];
  for (;;) {
    ssize_t got = ::read(stderr_fd_, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return;
  }
}

Result<VideoFile> VideoRecording::stop(std::int64_t bound_ms) {
  std::lock_guard lock(mu_);
  if (stopped_) return result_;
  stopped_ = true;
  (void)::send(control_fd_, "q", 1, MSG_NOSIGNAL);
  (void)::shutdown(control_fd_, SHUT_WR);
  if (!child_->wait_exit(bound_ms)) {
    child_->stop(1000);
    result_ = video_failed("recorder did not finish its file within " + std::to_string(bound_ms) + " ms");
    return result_;
  }
  const int status = child_->reap();
  if (drainer_.joinable()) drainer_.join();
  if (status != 0) {
    result_ = video_failed("recorder (ffmpeg) exited with status " + std::to_string(status));
    return result_;
  }
  Fd in(::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  struct stat st {};
  if (in.fd < 0 || ::fstat(in.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    result_ = video_failed("file is missing");
    return result_;
  }
  if (st.st_size <= 0) {
    result_ = video_failed("file is empty");
    return result_;
  }
  if (st.st_size >= max_bytes_) {
    result_ = video_failed("reached its size bound of " + std::to_string(max_bytes_) + " bytes and was cut");
    return result_;
  }
  Sha256 h;
  std::int64_t total = 0;
  char buf[1 << 16];
  for (;;) {
    ssize_t got = ::read(in.fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      result_ = video_failed(std::string("file could not be read: ") + std::strerror(errno));
      return result_;
    }
    if (got == 0) break;
    total += got;
    if (total > max_bytes_) break;
    h.update(buf, static_cast<std::size_t>(got));
  }
  if (total != st.st_size) {
    result_ = video_failed("file changed while it was hashed");
    return result_;
  }
  result_ = VideoFile{h.finish_hex(), total, fps_};
  return result_;
}

VideoRecording::~VideoRecording() {
  if (child_ && !child_->exit_status().has_value()) child_->stop(1000);
  if (child_) child_->reap();
  if (drainer_.joinable()) drainer_.join();
  if (control_fd_ >= 0) ::close(control_fd_);
  if (stderr_fd_ >= 0) ::close(stderr_fd_);
}

Result<std::unique_ptr<VideoRecording>> DisplayManager::record_video(int id, const std::string& generation,
                                                                     const VideoOptions& options) {
  if (options.fps < 1 || options.fps > 60 || options.max_bytes < 1 || options.path.empty()) {
    return video_failed("options are out of range");
  }
  auto got = get_live(id, generation);
  if (!got.ok()) return got.error();
  std::shared_ptr<OwnedDisplay> d = *got;
  {
    std::lock_guard lock(mu_);
    if (shutting_down_) return shutting_down();
  }
  auto exe = resolve_executable("ffmpeg", path_env());
  if (!exe.ok()) {
    return make_error("video-unavailable",
                      "the video recorder needs ffmpeg on the engine's PATH (Debian package ffmpeg)");
  }
  SpawnSpec spec;
  spec.path = *exe;
  spec.argv = video_argv(d->info().name, d->info().width, d->info().height, options);
  spec.env = environment_with({"DISPLAY=" + d->info().name, "XAUTHORITY=" + d->auth_file()});
  return VideoRecording::start(spawner_, std::move(spec), options);
}

}  // namespace evident
