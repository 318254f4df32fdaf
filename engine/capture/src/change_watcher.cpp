// Settle detection. DAMAGE on the root window in "non-empty" mode: the server sends one
// DamageNotify when the damage region turns non-empty and stays silent until we subtract, so at
// most one event per change burst sits in the queue of the shared connection however long
// nobody reads it. We remove only our own DamageNotify events (XCheckIfEvent on the damage id)
// and leave every other event queued for its owner. Before declaring "settled" the accumulated
// damage region is fetched once (a roundtrip), so an event that another reader of the shared
// connection swallowed cannot make us settle early.
#include <X11/Xlib-xcb.h>
#include <X11/Xlib.h>
#include <X11/extensions/Xdamage.h>
#include <X11/extensions/Xfixes.h>
#include <poll.h>
#undef Status  // Xlib's macro would shadow evident::Status

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "evident/capture/capture.h"
#include "evident/core/clock.h"

namespace evident {

const char* to_string(SettleOutcome o) {
  switch (o) {
    case SettleOutcome::kSettled: return "settled";
    case SettleOutcome::kStillLoading: return "still_loading";
    case SettleOutcome::kFixed: return "fixed";
    case SettleOutcome::kOff: return "off";
  }
  return "off";
}

namespace {

bool env_forces_no_damage() {
  const char* v = std::getenv("EVIDENT_SETTLE_NO_DAMAGE");
  return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
}

class DamageWatcher final : public ChangeWatcher {
 public:
  DamageWatcher(::Display* dpy, int event_base) : dpy_(dpy), event_base_(event_base) {
    damage_ = XDamageCreate(dpy_, DefaultRootWindow(dpy_), XDamageReportNonEmpty);
    parts_ = XFixesCreateRegion(dpy_, nullptr, 0);
    XFlush(dpy_);
  }
  ~DamageWatcher() override {
    // On a broken connection (the server died) no Xlib call may be made: after an I/O error
    // libX11 can block forever in the next request (issue #9: SIGTERM hung here). The server's
    // objects died with it.
    xcb_connection_t* c = XGetXCBConnection(dpy_);
    if (c == nullptr || xcb_connection_has_error(c) != 0) return;
    XDamageDestroy(dpy_, damage_);
    XFixesDestroyRegion(dpy_, parts_);
    XFlush(dpy_);
    drain();  // nothing of ours stays in the shared queue
  }

  bool using_damage() const override { return true; }

  // The roundtrip makes the reset exact: the server has emptied the damage region before we
  // return (other clients' drawing is ordered against ours only by a roundtrip), and events
  // generated before that point are dropped with the drain.
  void reset() override {
    XDamageSubtract(dpy_, damage_, None, None);
    XSync(dpy_, False);
    drain();
    last_change_us_ = 0;
  }

  SettleOutcome wait_settled(std::int64_t anchor_us, std::int64_t quiet_ms,
                             std::int64_t cap_ms) override {
    const std::int64_t cap_at = anchor_us + cap_ms * 1000;
    const int fd = ConnectionNumber(dpy_);
    for (;;) {
      std::int64_t now = steady_us();
      if (drain() > 0) note_change(now);
      const std::int64_t quiet_at = std::max(anchor_us, last_change_us_) + quiet_ms * 1000;
      if (now >= quiet_at) {
        if (damage_pending()) {
          note_change(steady_us());
          continue;
        }
        return SettleOutcome::kSettled;
      }
      if (now >= cap_at) return SettleOutcome::kStillLoading;
      const std::int64_t wake_at = std::min(quiet_at, cap_at);
      const int timeout_ms = static_cast<int>((wake_at - now + 999) / 1000);
      pollfd p{fd, POLLIN, 0};
      poll(&p, 1, timeout_ms);
    }
  }

 private:
  static Bool is_ours(::Display*, XEvent* ev, XPointer arg) {
    auto* self = reinterpret_cast<DamageWatcher*>(arg);
    return ev->type == self->event_base_ + XDamageNotify &&
           reinterpret_cast<XDamageNotifyEvent*>(ev)->damage == self->damage_;
  }

  // Reads what the socket holds (never blocks) and removes our DamageNotify events only.
  int drain() {
    XEventsQueued(dpy_, QueuedAfterFlush);
    int n = 0;
    XEvent ev;
    while (XCheckIfEvent(dpy_, &ev, &DamageWatcher::is_ours, reinterpret_cast<XPointer>(this))) ++n;
    return n;
  }

  void note_change(std::int64_t now) {
    last_change_us_ = now;
    // Re-arm: the next drawing produces a fresh DamageNotify.
    XDamageSubtract(dpy_, damage_, None, None);
    XFlush(dpy_);
  }

  // Moves the accumulated damage into `parts_` and reports whether it was non-empty.
  bool damage_pending() {
    XDamageSubtract(dpy_, damage_, None, parts_);
    int count = 0;
    XRectangle* rects = XFixesFetchRegion(dpy_, parts_, &count);
    if (rects != nullptr) XFree(rects);
    return count > 0;
  }

  ::Display* dpy_;
  int event_base_;
  Damage damage_ = 0;
  XserverRegion parts_ = 0;
  std::int64_t last_change_us_ = 0;
};

// Without DAMAGE: compare full frames sampled every kSampleMs. Sampling is the only way to see
// change here, so this is a timed loop by necessity; it only runs where DAMAGE is missing.
class FingerprintWatcher final : public ChangeWatcher {
 public:
  static constexpr std::int64_t kSampleMs = 25;

  explicit FingerprintWatcher(std::unique_ptr<Capturer> capturer)
      : capturer_(std::move(capturer)) {}

  bool using_damage() const override { return false; }

  void reset() override {
    auto frame = capturer_->grab();
    if (frame.ok()) last_ = std::move(frame->rgb);
    last_change_us_ = 0;
  }

  SettleOutcome wait_settled(std::int64_t anchor_us, std::int64_t quiet_ms,
                             std::int64_t cap_ms) override {
    const std::int64_t cap_at = anchor_us + cap_ms * 1000;
    for (;;) {
      std::int64_t now = steady_us();
      auto frame = capturer_->grab();
      if (frame.ok() && frame->rgb != last_) {
        last_ = std::move(frame->rgb);
        last_change_us_ = now;
      }
      const std::int64_t quiet_at = std::max(anchor_us, last_change_us_) + quiet_ms * 1000;
      if (now >= quiet_at) return SettleOutcome::kSettled;
      if (now >= cap_at) return SettleOutcome::kStillLoading;
      const std::int64_t wake_at = std::min({quiet_at, cap_at, now + kSampleMs * 1000});
      std::this_thread::sleep_for(std::chrono::microseconds(wake_at - now));
    }
  }

 private:
  std::unique_ptr<Capturer> capturer_;
  std::vector<std::uint8_t> last_;
  std::int64_t last_change_us_ = 0;
};

}  // namespace

Result<std::unique_ptr<ChangeWatcher>> ChangeWatcher::create(::Display* dpy) {
  return create(dpy, WatchOptions{});
}

Result<std::unique_ptr<ChangeWatcher>> ChangeWatcher::create(::Display* dpy,
                                                             const WatchOptions& options) {
  if (dpy == nullptr) return make_error("capture-unavailable", "no display connection");
  int damage_event = 0, damage_error = 0, fixes_event = 0, fixes_error = 0;
  if (options.allow_damage && !env_forces_no_damage() &&
      XDamageQueryExtension(dpy, &damage_event, &damage_error) &&
      XFixesQueryExtension(dpy, &fixes_event, &fixes_error)) {
    int major = 0, minor = 0;
    const bool fixes_ok = XFixesQueryVersion(dpy, &major, &minor) && major >= 2;  // regions
    if (fixes_ok && XDamageQueryVersion(dpy, &major, &minor) && major >= 1) {
      auto watcher = std::make_unique<DamageWatcher>(dpy, damage_event);
      watcher->reset();
      return std::unique_ptr<ChangeWatcher>(std::move(watcher));
    }
  }
  auto capturer = Capturer::create(dpy);
  if (!capturer.ok()) return capturer.error();
  auto watcher = std::make_unique<FingerprintWatcher>(std::move(*capturer));
  watcher->reset();
  return std::unique_ptr<ChangeWatcher>(std::move(watcher));
}

}  // namespace evident
