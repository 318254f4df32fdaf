#include <X11/Xatom.h>
#include <X11/Xlib.h>
#undef Status

#include "evident/input/selection.h"
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <vector>

#include "evident/core/clock.h"

namespace evident {

Result<std::unique_ptr<SelectionServer>> SelectionServer::start(const std::function<::Display*()>& open,
                                                                std::string text) {
  std::unique_ptr<SelectionServer> s(new SelectionServer());
  s->text_ = std::move(text);
  s->dpy_ = open();
  if (!s->dpy_) return make_error("paste-failed", "cannot open a connection for the clipboard");
  ::Display* d = s->dpy_;
  s->clipboard_ = XInternAtom(d, "CLIPBOARD", False);
  s->primary_ = XA_PRIMARY;
  s->utf8_ = XInternAtom(d, "UTF8_STRING", False);
  s->targets_ = XInternAtom(d, "TARGETS", False);
  s->text_atom_ = XInternAtom(d, "TEXT", False);
  s->window_ = XCreateSimpleWindow(d, DefaultRootWindow(d), -10, -10, 1, 1, 0, 0, 0);
  // A server timestamp for SetSelectionOwner (CurrentTime is discouraged by ICCCM): a zero-length
  // property append produces a PropertyNotify carrying the time.
  XSelectInput(d, s->window_, PropertyChangeMask);
  XChangeProperty(d, s->window_, XA_WM_NAME, XA_STRING, 8, PropModeAppend, nullptr, 0);
  XEvent ev;
  XWindowEvent(d, s->window_, PropertyChangeMask, &ev);
  const Time now = ev.xproperty.time;
  s->had_previous_owner_ = XGetSelectionOwner(d, s->clipboard_) != None ||
                           XGetSelectionOwner(d, s->primary_) != None;
  XSetSelectionOwner(d, s->clipboard_, s->window_, now);
  XSetSelectionOwner(d, s->primary_, s->window_, now);
  if (XGetSelectionOwner(d, s->clipboard_) != s->window_ || XGetSelectionOwner(d, s->primary_) != s->window_) {
    return make_error("paste-failed", "could not take ownership of CLIPBOARD and PRIMARY");
  }
  if (pipe(s->wake_fd_) != 0) return make_error("paste-failed", "cannot create a wake-up pipe");
  s->thread_ = std::thread([p = s.get()] { p->serve(); });
  return s;
}

SelectionServer::~SelectionServer() {
  (void)finish();
  for (int fd : wake_fd_) {
    if (fd >= 0) close(fd);
  }
  if (dpy_) XCloseDisplay(dpy_);
}

void SelectionServer::serve() {
  const int xfd = ConnectionNumber(dpy_);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    while (XPending(dpy_)) {
      XEvent ev;
      XNextEvent(dpy_, &ev);
      if (ev.type != SelectionRequest) continue;
      const XSelectionRequestEvent& req = ev.xselectionrequest;
      XSelectionEvent reply{};
      reply.type = SelectionNotify;
      reply.display = dpy_;
      reply.requestor = req.requestor;
      reply.selection = req.selection;
      reply.target = req.target;
      reply.time = req.time;
      // Obsolete clients send property None: use the target as the property (ICCCM).
      reply.property = req.property == None ? req.target : req.property;
      if (req.target == targets_) {
        const Atom list[] = {targets_, utf8_, XA_STRING, text_atom_};
        XChangeProperty(dpy_, req.requestor, reply.property, XA_ATOM, 32, PropModeReplace,
                        reinterpret_cast<const unsigned char*>(list), 4);
      } else if (req.target == utf8_ || req.target == XA_STRING || req.target == text_atom_) {
        const Atom type = req.target == XA_STRING ? XA_STRING : utf8_;
        XChangeProperty(dpy_, req.requestor, reply.property, type, 8, PropModeReplace,
                        reinterpret_cast<const unsigned char*>(text_.data()),
                        static_cast<int>(text_.size()));
        // Under mu_: wait_fetched checks the count and starts waiting under mu_, so the
        // notification below cannot fall between its check and its wait (a lost wake-up that
        // could make paste sit out its whole 2 s bound).
        std::lock_guard<std::mutex> lock(mu_);
        ++text_requests_;
      } else {
        reply.property = None;
      }
      // SelectionNotify must go to the requestor; this is the selection protocol, not input.
      XSendEvent(dpy_, req.requestor, False, NoEventMask, reinterpret_cast<XEvent*>(&reply));
      XFlush(dpy_);
      cv_.notify_all();
    }
    pollfd fds[2] = {{xfd, POLLIN, 0}, {wake_fd_[0], POLLIN, 0}};
    if (poll(fds, 2, 1000) < 0) continue;
    if (fds[1].revents) return;
    if (fds[0].revents & (POLLERR | POLLHUP)) return;
  }
}

bool SelectionServer::wait_fetched(std::int64_t deadline_us) {
  std::unique_lock<std::mutex> lock(mu_);
  while (text_requests_.load() == 0) {
    const std::int64_t now = steady_us();
    if (now >= deadline_us) return false;
    cv_.wait_for(lock, std::chrono::microseconds(deadline_us - now));
  }
  return true;
}

std::string SelectionServer::finish() {
  if (finished_) return "released";
  finished_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  if (wake_fd_[1] >= 0) {
    const char c = 1;
    [[maybe_unused]] auto n = write(wake_fd_[1], &c, 1);
  }
  if (thread_.joinable()) thread_.join();
  if (dpy_) {
    for (Atom sel : {clipboard_, primary_}) {
      if (XGetSelectionOwner(dpy_, sel) == window_) XSetSelectionOwner(dpy_, sel, None, CurrentTime);
    }
    XDestroyWindow(dpy_, window_);
    XSync(dpy_, False);
  }
  return had_previous_owner_ ? "released; previous owner not restored" : "released";
}

}  // namespace evident
