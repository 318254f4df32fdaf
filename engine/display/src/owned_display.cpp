// One owned display: liveness, the session lock, attachments, batches in flight, teardown.
#include "evident/display/display.h"

#include <X11/Xlib-xcb.h>
#include <X11/Xlib.h>
#include <poll.h>
#include <sys/socket.h>
#include <xcb/xcb.h>
#include <xcb/xcbext.h>  // xcb_poll_for_reply

// Xlib defines Status as a macro (int); ours is evident::Status.
#undef Status

#include <chrono>
#include <cstdlib>

#include "evident/display/x11.h"
#include "display_internal.h"

namespace evident {

using namespace display_detail;

// ------------------------------------------------------------------------------- OwnedDisplay

OwnedDisplay::~OwnedDisplay() { teardown(); }

bool OwnedDisplay::alive() { return !destroyed_.load() && server_running(); }

bool OwnedDisplay::server_running() {
  if (!xvfb_ || xvfb_->gone()) return false;
  ::Display* dpy = dpy_.load();
  if (dpy == nullptr || x_connection_dead(dpy)) return false;
  // An exiting server closes its clients' sockets before its exit is waitable or its pidfd
  // readable, so the hang-up is seen earlier than the exit. It is not seen before every app's:
  // the sockets are released newest first, so an app can die of its display's death first;
  // confirm_alive() is for judging that case (docs/reliability.md).
  pollfd p{ConnectionNumber(dpy), POLLRDHUP, 0};
  return !(::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0);
}

bool OwnedDisplay::confirm_alive() {
  if (!alive()) return false;
  std::lock_guard lock(x_mutex_);
  ::Display* dpy = dpy_.load();
  if (dpy == nullptr || x_connection_dead(dpy)) return false;
  xcb_connection_t* c = XGetXCBConnection(dpy);
  XFlush(dpy);  // Xlib's own requests first, so that the reply below is the server's last word
  if (x_connection_dead(dpy)) return false;
  const xcb_get_input_focus_cookie_t cookie = xcb_get_input_focus(c);
  xcb_flush(c);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kConfirmBoundMs);
  for (;;) {
    void* reply = nullptr;
    xcb_generic_error_t* error = nullptr;
    const int done = xcb_poll_for_reply(c, cookie.sequence, &reply, &error);
    std::free(reply);
    std::free(error);
    if (xcb_connection_has_error(c) != 0) return false;
    if (done != 0) return true;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return true;
    pollfd p{xcb_get_file_descriptor(c), POLLIN, 0};
    (void)::poll(&p, 1, static_cast<int>(left));
  }
}

bool OwnedDisplay::try_acquire_session(const std::string& owner) {
  std::lock_guard lock(session_mu_);
  if (session_holder_ && *session_holder_ != owner) return false;
  session_holder_ = owner;
  return true;
}

bool OwnedDisplay::release_session(const std::string& owner) {
  std::lock_guard lock(session_mu_);
  if (!session_holder_ || *session_holder_ != owner) return false;
  session_holder_.reset();
  return true;
}

std::optional<std::string> OwnedDisplay::session_holder() {
  std::lock_guard lock(session_mu_);
  return session_holder_;
}

Result<::Display*> OwnedDisplay::open_connection() const {
  return open_x_connection(info_.name, cookie_);
}

std::shared_ptr<DisplayAttachment> OwnedDisplay::attachment(
    const std::function<std::shared_ptr<DisplayAttachment>()>& make) {
  std::lock_guard lock(attachment_mu_);
  if (destroyed_) return nullptr;
  if (!attachment_) attachment_ = make();
  return attachment_;
}

std::shared_ptr<WindowKeeper> OwnedDisplay::keeper() {
  std::lock_guard lock(attachment_mu_);
  if (destroyed_) return nullptr;
  return keeper_;
}

std::shared_ptr<void> OwnedDisplay::begin_batch(std::function<void()> cancel) {
  std::lock_guard lock(batch_mu_);
  if (destroyed_.load()) return nullptr;
  const std::uint64_t id = next_batch_++;
  batches_.emplace(id, std::move(cancel));
  // The guard only names the batch; its deleter runs when the batch is done with the display.
  return std::shared_ptr<void>(reinterpret_cast<void*>(static_cast<std::uintptr_t>(id)),
                               [this, id](void*) {
                                 std::lock_guard l(batch_mu_);
                                 batches_.erase(id);
                                 batch_cv_.notify_all();
                               });
}

std::size_t OwnedDisplay::batches_in_flight() {
  std::lock_guard lock(batch_mu_);
  return batches_.size();
}

void OwnedDisplay::teardown() {
  {
    // Batches in flight are told to stop and waited for (bounded) before anything they use is
    // freed; a batch that outlives the bound keeps the objects (leaked, never freed under it).
    std::unique_lock lock(batch_mu_);
    destroyed_ = true;
    for (auto& [id, cancel] : batches_) {
      if (cancel) cancel();
    }
    if (!batch_cv_.wait_for(lock, std::chrono::milliseconds(kBatchDrainBoundMs),
                            [this] { return batches_.empty(); })) {
      (void)extension_.release();
      dpy_.store(nullptr);
    }
  }
  destroyed_ = true;
  std::shared_ptr<DisplayAttachment> attached;
  std::shared_ptr<WindowKeeper> keeper;
  {
    std::lock_guard lock(attachment_mu_);
    attached = std::move(attachment_);
    keeper = std::move(keeper_);
  }
  // Its thread and connections end before the server does (a holder of the pointer only gets
  // sync() == false from now on).
  if (keeper) keeper->stop();
  // A server that exited or shut this connection (server_running(), the test alive() uses):
  // force the connection into its error state without Xlib (shut the socket, let XCB see EOF),
  // so that nothing below makes an Xlib call on it.
  if (::Display* dead = dpy_.load(); dead && !server_running() && !x_connection_dead(dead)) {
    ::shutdown(ConnectionNumber(dead), SHUT_RDWR);
    if (xcb_connection_t* c = XGetXCBConnection(dead)) {
      std::free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), nullptr));
    }
  }
  // Before the connection closes: the attachment may still need it (and x_mutex).
  if (attached) attached->detach();
  {
    std::lock_guard lock(x_mutex_);
    extension_.reset();
    ::Display* dpy = dpy_.exchange(nullptr);
    if (dpy) close_x_connection(dpy);
  }
  // The accessibility stack (registryd, the AT-SPI bus, the session bus): TERM together, one
  // bound, then KILL and reap (docs/accessibility.md, "The stack").
  std::vector<std::unique_ptr<Child>> a11y;
  {
    std::lock_guard lock(a11y_mu_);
    a11y = std::move(a11y_children_);
    a11y_children_.clear();
    a11y_.reset();
  }
  if (!a11y.empty()) {
    for (auto& c : a11y) c->signal_group(SIGTERM);
    const std::int64_t until = now_ms() + DisplayManager::kAccessibilityStopBoundMs;
    for (auto& c : a11y) c->wait_exit(std::max<std::int64_t>(0, until - now_ms()));
    for (auto& c : a11y) c->reap();
  }
  // Xvfb removes its own lock file and socket on TERM; we never touch them.
  if (xvfb_) xvfb_->stop(DisplayManager::kXvfbStopBoundMs);
  if (!dir_.empty()) {
    (void)remove_tree(dir_);
    dir_.clear();
  }
}

}  // namespace evident
