#include "session_backend.h"

#include "evident/actions/batch.h"
#include "evident/actions/executor.h"
#include "evident/browser/browser.h"
#include "executor_context.h"
#include "evident/core/random.h"
#include "evident/service/display_capture.h"

namespace evident {
namespace {

class DisplayLease final : public SessionLease {
 public:
  DisplayLease(DisplayManager& dm, BrowserManager* browsers, std::shared_ptr<OwnedDisplay> d,
               std::string owner, SessionTarget target)
      : dm_(dm), browsers_(browsers), d_(std::move(d)), owner_(std::move(owner)), target_(std::move(target)) {}

  ~DisplayLease() override {
    video_.reset();  // a recording never stopped ends with its session (its file stays, unbound)
    // The executor's destructor releases anything still held before the lock goes. If the
    // display was destroyed meanwhile, the connection it would use is gone (and the server with
    // it, so nothing is held): the executor is abandoned first, and freed without touching X.
    if (auto in_use = use()) {
      executor_.reset();
    } else if (executor_) {
      executor_->abandon();
      executor_.reset();
    }
    d_->release_session(owner_);
  }

  Status init() {
    auto ctx = executor_context_for(d_);
    if (!ctx.ok()) return ctx.error();
    auto ex = ActionExecutor::create(std::move(*ctx));
    if (!ex.ok()) return ex.error();
    executor_ = std::move(ex).value();
    return {};
  }

  const SessionTarget& target() const override { return target_; }

  Result<SessionFrame> capture() override {
    Result<PngFrame> frame = make_error("session-display-lost", "the session's display is gone");
    {
      std::lock_guard<std::mutex> lock(d_->x_mutex());
      Capturer* capturer = display_capturer(*d_);
      if (d_->dpy() && capturer && d_->alive()) frame = capturer->capture_png();
    }
    if (!frame.ok()) return frame.error();
    SessionFrame f;
    f.bytes = std::move(frame->bytes);
    f.sha256 = std::move(frame->sha256);
    f.width = frame->width;
    f.height = frame->height;
    return f;
  }

  SessionActionOutcome execute(const Action& action, int index) override {
    // Each call shares the display's lifetime (docs/reliability.md): a destroy that races it
    // cancels it and waits for it; a destroyed display runs nothing.
    auto in_use = use();
    if (!in_use) return SessionActionOutcome{"failed", "expected a live display, observed it destroyed", 0};
    ActionResult r = executor_->execute(action, index);
    return SessionActionOutcome{to_string(r.status), r.detail,
                                static_cast<std::int64_t>(r.input_events)};
  }

  std::string settle(std::int64_t quiet_ms, std::int64_t cap_ms) override {
    const std::int64_t anchor = executor_->last_input_us();
    if (anchor == 0 || anchor == settled_anchor_) return to_string(SettleOutcome::kFixed);
    settled_anchor_ = anchor;
    const ExecutorContext& ctx = executor_->context();
    if (!ctx.watcher) return to_string(SettleOutcome::kOff);
    auto in_use = use();  // the watcher lives as long as the display: hold it for the wait
    if (!in_use) return to_string(SettleOutcome::kOff);
    std::lock_guard<std::mutex> lock(d_->x_mutex());
    if (!d_->dpy() || !d_->alive()) return to_string(SettleOutcome::kOff);
    return to_string(ctx.watcher->wait_settled(anchor, quiet_ms, cap_ms));
  }


  Status release_all_checked() override {
    auto in_use = use();
    if (!in_use) return make_error("session-display-lost", "the session's display was destroyed");
    return executor_->release_all_checked();
  }
  bool display_alive() override { return d_->alive(); }
  bool display_confirmed_alive() override { return d_->confirm_alive(); }
  bool app_alive() override { return dm_.app_alive(target_.app_id); }
  std::optional<int> app_exit_status() override {
    auto a = dm_.app(target_.app_id);
    if (!a.ok() || a->alive) return std::nullopt;
    return a->exit_status;
  }
  Result<std::int64_t> start_video(const std::string& path) override {
    if (video_) return make_error("video-failed", "the session's video is already recording");
    VideoOptions o;
    o.path = path;
    auto v = dm_.record_video(static_cast<int>(target_.display_id), target_.generation, o);
    if (!v.ok()) return v.error();
    video_ = std::move(*v);
    return video_->first_frame_age_ms();
  }
  Result<SessionVideo> stop_video() override {
    if (!video_) return make_error("video-failed", "the session's video was never started");
    auto f = video_->stop(protocol::kVideoStopTimeoutMs);
    if (!f.ok()) return f.error();
    return SessionVideo{f->sha256, f->byte_length, f->fps};
  }
  Result<SessionBrowser> bind_browser(const std::string& browser_id) override {
    if (!browsers_) return SessionLease::bind_browser(browser_id);
    auto info = browsers_->bind_check(browser_id, static_cast<int>(target_.display_id), target_.generation);
    if (!info.ok()) return info.error();
    bound_browser_ = info->browser_id;
    bound_target_ = info->target_id;
    return SessionBrowser{info->browser_id, info->version, info->target_id, info->profile_sha256,
                          info->width, info->height};
  }
  Status check_browser() override {
    if (!browsers_ || bound_browser_.empty()) return SessionLease::check_browser();
    return browsers_->check_live(bound_browser_, bound_target_);
  }

 private:
  std::shared_ptr<void> use() {
    ActionExecutor* ex = executor_.get();
    return d_->begin_batch([ex] {
      if (ex) ex->cancel();
    });
  }

  DisplayManager& dm_;
  BrowserManager* browsers_;  // the engine's; outlives every lease
  std::string bound_browser_, bound_target_;  // begin's "browser", once bound
  std::shared_ptr<OwnedDisplay> d_;
  std::string owner_;
  SessionTarget target_;
  std::unique_ptr<ActionExecutor> executor_;
  std::int64_t settled_anchor_ = 0;  // the last input already settled (nothing new since)
  std::unique_ptr<VideoRecording> video_;  // begin's record_video; killed with the lease
};

}  // namespace

Result<std::unique_ptr<SessionLease>> DisplaySessionBackend::acquire(std::int64_t display_id,
                                                                     const std::string& generation,
                                                                     const std::string& app_id) {
  if (display_id < 0 || display_id > 65535) {
    return make_error("display-generation-mismatch", "no owned display with that id and generation");
  }
  auto d = displays_.get(static_cast<int>(display_id), generation);
  if (!d.ok()) {
    // An unknown display is a mismatch too: the caller's (id, generation) names no live display.
    if (d.error().code == "display-not-found") {
      return make_error("display-generation-mismatch", "no owned display with that id and generation");
    }
    return d.error();
  }
  if (!(*d)->alive()) return display_dead_error();
  auto app = displays_.app(app_id);
  if (!app.ok() || !app->alive) return make_error("app-not-live", "no live app with that id");
  if (app->display_id != display_id || app->generation != generation) {
    return make_error("session-binding", "the app is bound to another display generation");
  }
  std::string owner = random_id("session-lease");
  if (!(*d)->try_acquire_session(owner)) {
    return make_error("session-busy", "the display is held by another session or action batch", true);
  }
  SessionTarget t;
  t.display_id = display_id;
  t.display_name = (*d)->info().name;
  t.generation = (*d)->info().generation;
  t.width = (*d)->info().width;
  t.height = (*d)->info().height;
  t.app_id = app->app_id;
  t.app_pid = app->pid;
  t.app_argv_sha256 = app->argv_sha256;
  auto lease = std::make_unique<DisplayLease>(displays_, browsers_, *d, owner, t);
  if (auto st = lease->init(); !st.ok()) return st.error();  // the destructor releases the lock
  return std::unique_ptr<SessionLease>(std::move(lease));
}

}  // namespace evident
