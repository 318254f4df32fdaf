// Runs validated actions on one display through its persistent connection (XTest input via
// evident_input, frames via evident_capture) and reports honest statuses.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "evident/actions/action.h"
#include "evident/capture/capture.h"
#include "evident/core/json.h"
#include "evident/core/status.h"

namespace evident {

class AppPinger;
class InputDevice;

enum class ActionStatus { kOk, kInjected, kFailed };
const char* to_string(ActionStatus status);  // "ok" | "injected" | "failed"

struct ActionResult {
  int index = 0;
  ActionType type = ActionType::kWait;
  ActionStatus status = ActionStatus::kFailed;
  std::string detail;              // never contains typed text or key names
  std::uint64_t input_events = 0;  // XTest events this action injected
  bool input = false;              // an input action (docs/protocol.md §6 "input")
  std::optional<PngFrame> frame;   // screenshot/zoom: the PNG (also written under observation_dir)
  std::string frame_path;
  // {"index","type","status","detail"} (+ "png" for screenshot/zoom).
  Json to_json() const;
};

// The read-back of a `type` (docs/accessibility.md, "Verified type"), supplied by the layer that
// owns the display's accessibility stack (the service; this module knows no AT-SPI).
struct TypeReadbackVerdict {
  ActionStatus status = ActionStatus::kInjected;  // ok | failed | injected (not verified)
  std::string detail;                             // never the typed or the observed text
};
class TypeReadbackCheck {
 public:
  virtual ~TypeReadbackCheck() = default;
  // After the keys (outside the display mutex): waits, bounded, and judges.
  virtual TypeReadbackVerdict finish() = 0;
};
struct TypeReadbackStart {
  std::unique_ptr<TypeReadbackCheck> check;  // null: not verifiable, `reason` says why
  std::string reason;
};
// Called before the keys (outside the display mutex) with the text about to be typed.
using TypeReadback = std::function<TypeReadbackStart(const std::string& text)>;
// Called first, before the executor's barrier: why no read-back can verify `text` whatever the
// widget holds ("not verified: ..."), or "" when one can. Null: every text can be.
using TypeReadbackDeclines = std::function<std::string(const std::string& text)>;

// Everything the executor needs from its display, as plain parameters (no display module).
struct ExecutorContext {
  ::Display* dpy = nullptr;       // the display's one persistent connection
  std::mutex* dpy_mutex = nullptr;  // held by every user of `dpy`
  Capturer* capturer = nullptr;   // for screenshot/zoom/observation
  ChangeWatcher* watcher = nullptr;  // for settle (may be null: settle reports "off")
  int width = 0;
  int height = 0;
  std::string observation_dir;  // private 0700 dir for observation/zoom PNGs ("" = don't write)
  // Opens an extra connection to the same display (keymap barrier, clipboard). Null: XOpenDisplay
  // of DisplayString(dpy) with the process environment's XAUTHORITY.
  std::function<::Display*()> open_aux;
  // The display's long-lived input device (created with dpy, under dpy_mutex), shared by every
  // executor on that display so spare-keycode mappings and barrier evidence outlive one batch.
  // Null: the executor creates its own and restores the keymap when it ends.
  std::shared_ptr<InputDevice> input;
  // Read-back of `type` on a display with a live accessibility stack; null: `type` is `injected`
  // ("delivery not read back"), as on every display without the stack.
  TypeReadback type_readback;
  TypeReadbackDeclines type_readback_declines;  // asked before the barrier and type_readback
};

class ActionExecutor {
 public:
  // "input-unavailable" when the display lacks XTEST/XKB.
  static Result<std::unique_ptr<ActionExecutor>> create(ExecutorContext context);
  ~ActionExecutor();  // releases held keys/buttons (and restores the keymap of its own device)

  // Runs one action; never throws. Takes the display mutex only while talking to X.
  ActionResult execute(const Action& action, int index);
  // Releases every held key and button, then verifies (XQueryKeymap, XQueryPointer masks);
  // restores remapped keycodes and verifies them (XGetKeyboardMapping) unless the device defers
  // its restore (a shared device: docs/input.md, "Deferred restore").
  // "input-release-failed", "keymap-restore-failed".
  Status release_all_checked();
  // XTest input events injected by this executor so far.
  std::uint64_t input_event_count();
  // steady_us() of the end of the last input action (the settle anchor); 0 if none.
  std::int64_t last_input_us() const { return last_input_us_; }
  // Whether input actions reset the change watcher (the settle anchor: changes seen before the
  // end of the last input do not count). On by default; a batch without settle turns it off and
  // saves that round trip per input action.
  void set_settle_tracking(bool on) { track_settle_ = on; }
  // Interrupts wait/hold_key in progress (they end early, hold_key releases); for cancel paths.
  void cancel();
  // The display is gone (destroyed, or its server dead): from now on this executor sends
  // nothing, and its destructor touches no X. The input device is abandoned (held input went
  // with the server), and the executor's own connection (the ping barrier's) is closed without a
  // request. So a session whose display went away under it frees its executor, threads and fds
  // included, instead of leaking it (docs/reliability.md).
  void abandon();

  const ExecutorContext& context() const { return ctx_; }

 private:
  explicit ActionExecutor(ExecutorContext context);
  ActionResult run(const Action& action, int index);
  bool interruptible_wait(std::int64_t ms);  // false if cancelled
  // The _NET_WM_PING barrier before a read-back `type` (evident/input/app_ping.h), on a
  // connection opened on first use and closed with the executor.
  AppPinger& pinger();

  ExecutorContext ctx_;
  std::shared_ptr<InputDevice> input_;
  std::unique_ptr<AppPinger> pinger_;
  std::int64_t last_input_us_ = 0;
  bool track_settle_ = true;
  std::mutex cancel_mu_;
  std::condition_variable cancel_cv_;
  bool cancelled_ = false;
  bool abandoned_ = false;
};

}  // namespace evident
