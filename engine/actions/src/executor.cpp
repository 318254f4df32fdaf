#include <X11/Xlib.h>
#undef Status

#include "evident/actions/executor.h"

#include <chrono>

#include "evident/core/clock.h"
#include "evident/core/fs.h"
#include "evident/input/app_ping.h"
#include "evident/input/input.h"
#include "evident/input/keys.h"
#include "evident/input/selection.h"
#include "evident/input/unicode.h"
#include "evident/protocol/protocol.h"

namespace evident {
namespace {

// How long paste waits for the target to fetch the clipboard.
constexpr std::int64_t kPasteFetchTimeoutMs = 2000;

std::string pos(int x, int y) { return "(" + std::to_string(x) + "," + std::to_string(y) + ")"; }

// Empty when the keys of a `type` reach some client window; otherwise why they reach none: the
// input focus is None (keys are discarded), or PointerRoot (keys go to the window under the
// pointer) while no top-level window is under the pointer (they reach the root window, which no
// app reads). Two round trips at most; nothing of the typed text is involved.
std::string focus_hint(::Display* dpy) {
  Window focus = None;
  int revert = 0;
  XGetInputFocus(dpy, &focus, &revert);
  if (focus == None) return "the input focus was None: no window received the keys";
  if (focus != PointerRoot) return "";
  Window root_ret = None, child = None;
  int rx = 0, ry = 0, wx = 0, wy = 0;
  unsigned mask = 0;
  if (!XQueryPointer(dpy, DefaultRootWindow(dpy), &root_ret, &child, &rx, &ry, &wx, &wy, &mask)) return "";
  if (child != None) return "";
  return "the input focus was PointerRoot and no window was under the pointer at " + pos(rx, ry) +
         ": the keys reached the root window, not an app (click the target or focus it first)";
}

}  // namespace

const char* to_string(ActionStatus status) {
  switch (status) {
    case ActionStatus::kOk: return "ok";
    case ActionStatus::kInjected: return "injected";
    case ActionStatus::kFailed: return "failed";
  }
  return "failed";
}

Json ActionResult::to_json() const {
  Json j{{"index", index}, {"type", evident::to_string(type)}, {"status", evident::to_string(status)},
         {"detail", detail}};
  if (frame) {
    j["png"] = Json{{"path", frame_path.empty() ? Json(nullptr) : Json(frame_path)},
                    {"sha256", frame->sha256},
                    {"byte_length", static_cast<std::int64_t>(frame->bytes.size())},
                    {"width", frame->width},
                    {"height", frame->height}};
  }
  return j;
}

ActionExecutor::ActionExecutor(ExecutorContext context) : ctx_(std::move(context)) {}

ActionExecutor::~ActionExecutor() {
  if (input_ && !abandoned_) {
    std::lock_guard<std::mutex> lock(*ctx_.dpy_mutex);
    // After a clean release check with no input since, a second check would only repeat it.
    if (!input_->released_clean()) (void)input_->release_all_checked();
    input_.reset();
  }
}

Result<std::unique_ptr<ActionExecutor>> ActionExecutor::create(ExecutorContext context) {
  if (!context.dpy || !context.dpy_mutex) return make_error("input-unavailable", "no display connection");
  std::unique_ptr<ActionExecutor> ex(new ActionExecutor(std::move(context)));
  if (ex->ctx_.input) {
    ex->input_ = ex->ctx_.input;
    return ex;
  }
  std::lock_guard<std::mutex> lock(*ex->ctx_.dpy_mutex);
  InputOptions opts;
  opts.open_aux = ex->ctx_.open_aux;
  auto dev = InputDevice::create(ex->ctx_.dpy, opts);
  if (!dev.ok()) return dev.error();
  ex->input_ = std::move(*dev);
  return ex;
}

AppPinger& ActionExecutor::pinger() {
  if (pinger_) return *pinger_;
  ::Display* own = nullptr;
  if (ctx_.open_aux) {
    own = ctx_.open_aux();
  } else {
    std::string name;
    {
      std::lock_guard<std::mutex> lock(*ctx_.dpy_mutex);
      name = DisplayString(ctx_.dpy);
    }
    own = XOpenDisplay(name.c_str());
  }
  pinger_ = std::make_unique<AppPinger>(own);
  return *pinger_;
}

std::uint64_t ActionExecutor::input_event_count() {
  std::lock_guard<std::mutex> lock(*ctx_.dpy_mutex);
  return input_->event_count();
}

void ActionExecutor::abandon() {
  cancel();
  if (pinger_) pinger_->abandon();
  if (input_) {
    std::lock_guard<std::mutex> lock(*ctx_.dpy_mutex);
    input_->abandon();
  }
  abandoned_ = true;
}

void ActionExecutor::cancel() {
  std::lock_guard<std::mutex> lock(cancel_mu_);
  cancelled_ = true;
  cancel_cv_.notify_all();
}

bool ActionExecutor::interruptible_wait(std::int64_t ms) {
  std::unique_lock<std::mutex> lock(cancel_mu_);
  return !cancel_cv_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return cancelled_; });
}

Status ActionExecutor::release_all_checked() {
  std::lock_guard<std::mutex> lock(*ctx_.dpy_mutex);
  return input_->release_all_checked();
}

ActionResult ActionExecutor::execute(const Action& action, int index) {
  ActionResult r;
  std::uint64_t before = 0;
  {
    std::lock_guard<std::mutex> lock(*ctx_.dpy_mutex);
    before = input_->event_count();
  }
  r = run(action, index);
  {
    std::lock_guard<std::mutex> lock(*ctx_.dpy_mutex);
    r.input_events = input_->event_count() - before;
  }
  r.index = index;
  r.type = action.type;
  r.input = action.input();
  if (!r.input) {
    // Time passed without input (wait, screenshot, ...): the release check asks the server.
    std::lock_guard<std::mutex> lock(*ctx_.dpy_mutex);
    input_->forget_down_state();
  }
  if (r.input) {
    // The settle anchor: changes seen before the end of the last input action do not count.
    last_input_us_ = steady_us();
    if (ctx_.watcher && track_settle_) {
      std::lock_guard<std::mutex> lock(*ctx_.dpy_mutex);
      ctx_.watcher->reset();
    }
  }
  return r;
}

ActionResult ActionExecutor::run(const Action& a, int /*index*/) {
  ActionResult r;
  auto fail = [&](const std::string& detail) {
    r.status = ActionStatus::kFailed;
    r.detail = detail;
    return r;
  };
  auto injected = [&](const std::string& detail) {
    r.status = ActionStatus::kInjected;
    r.detail = detail;
    return r;
  };
  const char* bname = a.button == 1 ? "left" : a.button == 2 ? "middle" : "right";
  switch (a.type) {
    case ActionType::kClick:
    case ActionType::kDoubleClick:
    case ActionType::kTripleClick: {
      const int count = a.type == ActionType::kClick ? 1 : a.type == ActionType::kDoubleClick ? 2 : 3;
      std::lock_guard<std::mutex> lock(*ctx_.dpy_mutex);
      std::pair<int, int> p;
      if (Status s = input_->click(a.x, a.y, a.button, count, &p); !s.ok()) {
        return fail("expected " + std::to_string(count) + " " + bname + " click(s) at " + pos(a.x, a.y) +
                    ", observed dispatch error: " + s.error().message);
      }
      if (p.first != a.x || p.second != a.y) {
        return fail("expected the pointer at " + pos(a.x, a.y) + ", observed " + pos(p.first, p.second));
      }
      return injected(std::to_string(count) + " " + bname + " click(s) at " + pos(a.x, a.y) +
                      "; pointer position verified, effect not verified");
    }
    case ActionType::kMouseDown:
    case ActionType::kMouseUp: {
      const bool down = a.type == ActionType::kMouseDown;
      std::lock_guard<std::mutex> lock(*ctx_.dpy_mutex);
      if (Status s = input_->button(a.x, a.y, a.button, down); !s.ok()) {
        return fail(std::string("expected ") + bname + (down ? " press" : " release") + " at " +
                    pos(a.x, a.y) + ", observed dispatch error: " + s.error().message);
      }
      return injected(std::string(bname) + (down ? " button pressed" : " button released") + " at " +
                      pos(a.x, a.y) + (down ? " (held until mouse_up or the end of the batch)" : ""));
    }
    case ActionType::kMoveMouse: {
      std::lock_guard<std::mutex> lock(*ctx_.dpy_mutex);
      std::pair<int, int> p;
      if (Status s = input_->move(a.x, a.y, &p); !s.ok()) {
        return fail("expected the pointer at " + pos(a.x, a.y) + ", observed dispatch error: " + s.error().message);
      }
      if (p.first != a.x || p.second != a.y) {
        return fail("expected the pointer at " + pos(a.x, a.y) + ", observed " + pos(p.first, p.second));
      }
      r.status = ActionStatus::kOk;
      r.detail = "pointer at " + pos(a.x, a.y) + " (verified with XQueryPointer)";
      return r;
    }
    case ActionType::kDrag: {
      std::lock_guard<std::mutex> lock(*ctx_.dpy_mutex);
      std::pair<int, int> p;
      if (Status s = input_->drag(a.x, a.y, a.end_x, a.end_y, a.button, &p); !s.ok()) {
        return fail("expected a drag " + pos(a.x, a.y) + " -> " + pos(a.end_x, a.end_y) +
                    ", observed dispatch error: " + s.error().message);
      }
      if (p.first != a.end_x || p.second != a.end_y) {
        return fail("expected the pointer at the drag end " + pos(a.end_x, a.end_y) + ", observed " +
                    pos(p.first, p.second));
      }
      return injected(std::string(bname) + " drag " + pos(a.x, a.y) + " -> " + pos(a.end_x, a.end_y) +
                      "; end position verified, effect not verified");
    }
    case ActionType::kScroll: {
      static const char* kDir[] = {"up", "down", "left", "right"};
      const char* dir = kDir[a.scroll_button - 4];
      std::lock_guard<std::mutex> lock(*ctx_.dpy_mutex);
      if (Status s = input_->scroll(a.x, a.y, a.scroll_button, a.amount); !s.ok()) {
        return fail(std::string("expected ") + std::to_string(a.amount) + " scroll step(s) " + dir +
                    ", observed dispatch error: " + s.error().message);
      }
      return injected(std::to_string(a.amount) + " scroll step(s) " + dir + " (button " +
                      std::to_string(a.scroll_button) + ") at " + pos(a.x, a.y));
    }
    case ActionType::kType: {
      auto cps = decode_utf8(a.text);
      if (!cps.ok()) return fail("expected valid UTF-8 text, observed invalid bytes");
      // Before the keys, without the display mutex (D-Bus only): what the focused text widget
      // holds, so that its text afterwards can be compared with what typing should make of it.
      TypeReadbackStart readback;
      if (ctx_.type_readback) {
        // A text no read-back can verify (a newline submits) is declined before anything is
        // sent or waited for.
        readback.reason = ctx_.type_readback_declines ? ctx_.type_readback_declines(a.text) : "";
      }
      if (ctx_.type_readback && readback.reason.empty()) {
        // First the app must have handled every event sent before (a click that moves its
        // focus, keys that move its caret): the _NET_WM_PING barrier (evident/input/app_ping.h).
        const AppPingOutcome barrier =
            pinger().ping_focused_app(steady_us() + protocol::kAxReadbackTimeoutMs * 1000);
        if (barrier == AppPingOutcome::kTimedOut) {
          readback.reason = "not verified: the app did not answer _NET_WM_PING within " +
                            std::to_string(protocol::kAxReadbackTimeoutMs) +
                            " ms, so what it held before the keys is unknown";
        } else {
          readback = ctx_.type_readback(a.text);
        }
      }
      std::unique_lock<std::mutex> lock(*ctx_.dpy_mutex);
      // Where the keys go, read before they are sent (the focus does not move while typing).
      const std::string nowhere = focus_hint(ctx_.dpy);
      auto rep = input_->type(*cps);
      lock.unlock();
      if (!rep.ok()) {
        return fail("expected " + std::to_string(cps->size()) + " character(s) typed, observed: " +
                    rep.error().message);
      }
      std::string d = std::to_string(rep->characters) + " character(s) typed";
      if (rep->remapped) d += ", " + std::to_string(rep->remapped) + " through spare keycodes";
      if (rep->barriers) d += ", " + std::to_string(rep->barriers) + " keymap barrier(s)";
      if (rep->barrier_timeouts) {
        d += " (" + std::to_string(rep->barrier_timeouts) +
             " passed on their time bound without full evidence)";
      }
      if (!ctx_.type_readback || !nowhere.empty()) {
        // No stack, or the keys reached no app: nothing to read back.
        d += "; delivery not read back";
        if (!nowhere.empty()) d += "; " + nowhere;
        return injected(d);
      }
      if (!readback.check) return injected(d + "; " + readback.reason);
      TypeReadbackVerdict v = readback.check->finish();
      d += "; " + v.detail;
      if (v.status == ActionStatus::kFailed) return fail(d);
      if (v.status == ActionStatus::kOk) {
        r.status = ActionStatus::kOk;
        r.detail = d;
        return r;
      }
      return injected(d);
    }
    case ActionType::kPaste: {
      std::function<::Display*()> open = ctx_.open_aux;
      if (!open) {
        std::string name;
        {
          std::lock_guard<std::mutex> lock(*ctx_.dpy_mutex);
          name = DisplayString(ctx_.dpy);
        }
        open = [name] { return XOpenDisplay(name.c_str()); };
      }
      auto server = SelectionServer::start(open, a.text);
      if (!server.ok()) return fail("expected to own the clipboard, observed: " + server.error().message);
      auto chord = parse_key_chord("ctrl+v", "action-invalid");
      {
        std::lock_guard<std::mutex> lock(*ctx_.dpy_mutex);
        Status s = input_->press_chord(*chord);
        Status s2 = input_->release_chord(*chord);
        if (!s.ok() || !s2.ok()) {
          const std::string how = (*server)->finish();
          return fail("expected ctrl+v sent, observed dispatch error; selection " + how);
        }
      }
      const bool fetched = (*server)->wait_fetched(steady_us() + kPasteFetchTimeoutMs * 1000);
      const std::string how = (*server)->finish();
      if (!fetched) {
        return fail("expected the focused client to fetch the clipboard within " +
                    std::to_string(kPasteFetchTimeoutMs) + " ms after ctrl+v, observed no request; selection " + how);
      }
      return injected("ctrl+v sent; the clipboard was fetched " + std::to_string((*server)->text_requests()) +
                      " time(s); CLIPBOARD and PRIMARY " + how);
    }
    case ActionType::kKey:
    case ActionType::kHoldKey: {
      auto chord = parse_key_chord(a.key, "action-invalid");
      if (!chord.ok()) return fail("expected a known key, observed an unknown one");
      {
        std::lock_guard<std::mutex> lock(*ctx_.dpy_mutex);
        if (Status s = input_->press_chord(*chord); !s.ok()) {
          (void)input_->release_chord(*chord);
          return fail("expected the key pressed, observed: " + s.error().message);
        }
        if (a.type == ActionType::kKey) {
          if (Status s = input_->release_chord(*chord); !s.ok()) {
            return fail("expected the key released, observed: " + s.error().message);
          }
          return injected("key chord of " + std::to_string(chord->keysyms.size()) + " key(s) pressed and released");
        }
      }
      const bool completed = interruptible_wait(a.ms);
      std::lock_guard<std::mutex> lock(*ctx_.dpy_mutex);
      if (Status s = input_->release_chord(*chord); !s.ok()) {
        return fail("expected the held key released, observed: " + s.error().message);
      }
      if (!completed) return fail("expected the key held " + std::to_string(a.ms) + " ms, observed cancellation (released)");
      return injected("key chord of " + std::to_string(chord->keysyms.size()) + " key(s) held " +
                      std::to_string(a.ms) + " ms, then released");
    }
    case ActionType::kWait: {
      if (!interruptible_wait(a.ms)) return fail("expected a wait of " + std::to_string(a.ms) + " ms, observed cancellation");
      r.status = ActionStatus::kOk;
      r.detail = "waited " + std::to_string(a.ms) + " ms";
      return r;
    }
    case ActionType::kScreenshot:
    case ActionType::kZoom: {
      if (!ctx_.capturer) return fail("expected a frame, observed no capturer for this display");
      Result<PngFrame> frame = make_error("capture-failed", "not captured", false);
      {
        std::lock_guard<std::mutex> lock(*ctx_.dpy_mutex);
        // XSync first: the frame is taken after every earlier request (including input) was processed.
        XSync(ctx_.dpy, False);
        if (a.type == ActionType::kScreenshot) {
          frame = ctx_.capturer->capture_png();
        } else {
          auto raw = ctx_.capturer->grab_region(a.x, a.y, a.width, a.height);
          if (raw.ok()) frame = encode_png(*raw); else frame = raw.error();
        }
      }
      if (!frame.ok()) return fail("expected a frame, observed: " + frame.error().message);
      r.frame = *frame;
      if (!ctx_.observation_dir.empty()) {
        r.frame_path = ctx_.observation_dir + "/" + frame->sha256 + ".png";
        if (Status s = write_file_atomic(r.frame_path, frame->bytes); !s.ok()) {
          return fail("expected the PNG written, observed: " + s.error().message);
        }
      }
      r.status = ActionStatus::kOk;
      r.detail = std::string(a.type == ActionType::kZoom ? "zoom " : "screenshot ") +
                 std::to_string(frame->width) + "x" + std::to_string(frame->height) + " sha256 " + frame->sha256;
      if (a.type == ActionType::kZoom) r.detail += " at " + pos(a.x, a.y) + " (clamped to the display)";
      return r;
    }
  }
  return fail("unknown action");
}

}  // namespace evident
