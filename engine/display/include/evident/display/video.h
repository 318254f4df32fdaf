// A recording of an owned display: ffmpeg's x11grab into a VP8 WebM file (docs/evidence.md
// "Video"). ffmpeg runs like an app of the display (its DISPLAY and private XAUTHORITY, its own
// process group, killed with the engine), but it is not an app: it is never listed and never
// bound by a session.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "evident/core/status.h"
#include "evident/process/process.h"
#include "evident/protocol/protocol.h"

namespace evident {

struct VideoOptions {
  std::string path;  // the file to write; must not exist (start() creates it 0600, exclusively)
  int fps = static_cast<int>(protocol::kVideoFps);
  std::int64_t max_bytes = protocol::kVideoMaxBytes;
  std::int64_t start_bound_ms = protocol::kVideoStartTimeoutMs;
};

// The finished file.
struct VideoFile {
  std::string sha256;  // of the file's bytes, lowercase hex
  std::int64_t byte_length = 0;
  int fps = 0;
};

class VideoRecording {
 public:
  ~VideoRecording();  // a recording never stopped is killed (its group), and its file left as is
  VideoRecording(const VideoRecording&) = delete;
  VideoRecording& operator=(const VideoRecording&) = delete;

  // How long before start() returned ffmpeg grabbed its first frame (x11grab's input start, on
  // the wall clock), in ms, >= 0: the video's time 0 is that long before the caller's "now".
  std::int64_t first_frame_age_ms() const { return first_frame_age_ms_; }
  const std::string& path() const { return path_; }
  int fps() const { return fps_; }

  // Asks ffmpeg to end the file ("q" on its stdin), waits at most `bound_ms` for a clean exit,
  // then hashes the file. Idempotent: a second call answers the first one's result.
  // Errors: "video-failed" (no clean exit in time: ffmpeg is killed; an exit status other than
  // 0; the file missing, empty, or at the size bound).
  Result<VideoFile> stop(std::int64_t bound_ms);

  // Starts ffmpeg with `spec` (prepared by the display manager: argv, env, no stdio) and waits
  // until it reports its first grabbed frame, at most `options.start_bound_ms`.
  // Errors: "video-failed".
  static Result<std::unique_ptr<VideoRecording>> start(Spawner& spawner, SpawnSpec spec,
                                                       const VideoOptions& options);

 private:
  VideoRecording() = default;
  void drain();  // reads ffmpeg's stderr to its end (so ffmpeg never blocks on it)

  std::string path_;
  int fps_ = 0;
  std::int64_t max_bytes_ = 0;
  std::int64_t first_frame_age_ms_ = 0;
  std::unique_ptr<Child> child_;
  int control_fd_ = -1;  // our end of ffmpeg's stdin (a socket: a send never raises SIGPIPE)
  int stderr_fd_ = -1;   // our end of ffmpeg's stderr
  std::thread drainer_;
  std::mutex mu_;
  bool stopped_ = false;
  Result<VideoFile> result_ = make_error("video-failed", "not stopped");
};

// The ffmpeg command line of a recording of display `name` (":N") of `width`x`height`
// (docs/evidence.md "Video"): x11grab at `fps`, the pointer drawn, VP8 in WebM, realtime
// encoding on one thread, a keyframe every second, cut at `max_bytes`, into the file start()
// created.
std::vector<std::string> video_argv(const std::string& name, int width, int height,
                                    const VideoOptions& options);

// Parses x11grab's input start ("start: 1796472226.538823", seconds on the wall clock) out of one
// line of ffmpeg's log; the start in microseconds, or -1 when the line holds none.
std::int64_t parse_x11grab_start_us(const std::string& line);

}  // namespace evident
