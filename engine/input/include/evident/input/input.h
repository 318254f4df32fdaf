// The stateful native input layer: XTest only (XTestFakeMotionEvent / ButtonEvent / KeyEvent,
// never XWarpPointer or XSendEvent) over one display's persistent Xlib connection.
// It tracks what it holds (keys, buttons, remapped spare keycodes) so every exit path can release
// and restore, and it verifies the release (XQueryKeymap, XQueryPointer) and the keymap restore
// (XGetKeyboardMapping). See docs/input.md.
#pragma once

typedef struct _XDisplay Display;  // Xlib

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "evident/core/status.h"
#include "evident/input/keys.h"

namespace evident {

namespace detail {
class RecordWatch;
}

struct InputOptions {
  // Opens an extra connection to the same display (for the RECORD keymap barrier). Null: use
  // XOpenDisplay(DisplayString(dpy)) (needs XAUTHORITY in the environment).
  std::function<::Display*()> open_aux;
  // Keymap barrier: how long a receiving client must be quiet after fetching the keymap, and the
  // bound after which typing goes on anyway (reported in the type detail).
  std::int64_t barrier_quiet_ms = 15;
  // Decode barrier: a receiving client that issued no request at all after our key events
  // reached it (nothing to redraw) is taken as done after this much silence.
  std::int64_t barrier_idle_ms = 250;
  std::int64_t barrier_timeout_ms = 2000;
  // Fetch wait: a focused client that issued no request at all for this long after our keymap
  // change is taken not to fetch before its keys arrive (it fetches on the first key, which is
  // safe); an eager client (Tk, GTK, xterm, the fixture app: all fetch within ms) never waits
  // this long unless starved of CPU, and then it must not get the keys before it fetched.
  std::int64_t fetch_idle_ms = 1000;
  // The restore also waits until every receiver has had this long since our last key reached
  // it: under CPU starvation a toolkit can pause longer than barrier_quiet_ms inside its burst
  // of keymap fetches (measured: xterm, one core busy), and a restore inside that burst makes it
  // decode the remaining keys with the original map. Deferred restores (KeymapRestorer) start
  // later than this anyway.
  std::int64_t restore_settle_ms = 1000;
  // The same margin before a spare keycode used since the last barrier is remapped within one
  // type call (more distinct characters than spare keycodes hold): shorter, as it is paid inline.
  std::int64_t rotation_settle_ms = 100;
  // Deferred restore: release_all_checked() leaves spare keycodes mapped (they are reused by the
  // next type call at no cost) and calls `on_keymap_left_dirty` (with the display mutex held);
  // the owner restores later, once no key was sent for a while (KeymapRestorer). False: restore
  // at every release_all_checked().
  bool defer_restore = false;
  std::function<void()> on_keymap_left_dirty;
};

// What typing did, for honest action details (never contains the text).
struct TypeReport {
  int characters = 0;      // code points typed
  int remapped = 0;        // characters sent through spare keycodes
  int barriers = 0;        // keymap (decode) barriers passed
  int fetch_waits = 0;     // waits for receivers to fetch a changed keymap before typing
  int barrier_timeouts = 0;  // barriers that hit their bound without full evidence
};

// Not thread-safe: the caller holds the display's mutex around every call.
class InputDevice {
 public:
  // "input-unavailable": no XTEST or no XKB on the display.
  static Result<std::unique_ptr<InputDevice>> create(::Display* dpy, InputOptions options = {});
  ~InputDevice();
  InputDevice(const InputDevice&) = delete;
  InputDevice& operator=(const InputDevice&) = delete;

  // Each call below sends its events in one batch and ends with a round trip, so when it returns
  // the server has processed them. Errors: "input-dispatch-failed" (XTest refused or an X error).
  // With `pointer_after`, that round trip is an XQueryPointer whose answer (the pointer on the
  // root window after the events) is stored there: one round trip for input and its check.
  Status move(int x, int y, std::pair<int, int>* pointer_after = nullptr);
  Status button(int x, int y, int button, bool down);  // moves first, then press or release
  // count 1..3, back to back = multi-click
  Status click(int x, int y, int button, int count, std::pair<int, int>* pointer_after = nullptr);
  Status scroll(int x, int y, int button, int amount);  // button 4..7
  Status drag(int x0, int y0, int x1, int y1, int button,
              std::pair<int, int>* pointer_after = nullptr);
  // Types code points ('\n' Return, '\t' Tab). Keymap characters use their keycode and level
  // modifiers (Shift, ISO_Level3_Shift); others go through spare keycodes (see docs/input.md).
  // Modifier and Caps Lock state are restored before returning. "input-dispatch-failed",
  // "keymap-no-spare-keycode".
  Result<TypeReport> type(const std::u32string& text);
  // Presses the chord (modifiers first) and keeps it held; release_chord releases in reverse.
  Status press_chord(const KeyChord& chord);
  Status release_chord(const KeyChord& chord);

  // Pointer position on the root window. "input-dispatch-failed".
  Result<std::pair<int, int>> pointer();

  // Releases every key and button held (by us, or found down on the server), then verifies with
  // XQueryKeymap and XQueryPointer. "input-release-failed".
  Status release_all_checked();
  // Forgets the keys/buttons observed at the end of the last input call (see finish_checked):
  // after time passed without input, the release check queries the server again.
  void forget_down_state() { down_after_.reset(); }
  // True when the last release_all_checked() succeeded and no event was injected since: nothing
  // of ours is held, so another check would find what that one found.
  bool released_clean() const { return clean_at_events_ == events_; }
  // Waits for the keymap barrier, maps used spare keycodes back to their original keysyms and
  // verifies with XGetKeyboardMapping. "keymap-restore-failed".
  Status restore_keymap_checked();
  // True while some spare keycode is remapped.
  bool keymap_dirty() const;
  // steady_us() of the last key event sent (0: none yet).
  std::int64_t last_key_us() const { return last_key_us_; }
  // The display is going away: every later call fails with "input-dispatch-failed" and the
  // destructor touches nothing (no release, no restore on a dying server).
  void abandon();

  // XTest events injected so far.
  std::uint64_t event_count() const { return events_; }
  // Fetch waits and decode barriers (including the restore's) that ended on their time bound
  // instead of evidence, since creation.
  std::uint64_t barrier_timeouts() const { return barrier_timeouts_; }
  ::Display* display() const { return dpy_; }

 private:
  struct Keymap;
  InputDevice(::Display* dpy, InputOptions options);
  Status init();
  Status refresh_keymap();
  // Removes the keymap notifications (XkbMapNotify, XkbNewKeyboardNotify, core MappingNotify)
  // queued on the connection: every keymap change, ours included, sends several, and on a
  // connection that lives as long as its display they would pile up. Marks the index stale when
  // one names a non-spare keycode, the key types or the modifier map: a change we did not make.
  void take_mapping_events();
  // Refreshes the index (two round trips) only when it is stale.
  Status ensure_keymap();
  Status sync_checked(const char* what);
  // The round trip that ends an input call: XSync, or XQueryPointer into `pointer_after`.
  Status finish_checked(const char* what, std::pair<int, int>* pointer_after);
  // Turns an X error recorded on the connection since the last check into input-dispatch-failed.
  Status take_error(const char* what);
  // Keys down (XQueryKeymap) and the pointer's button mask (XQueryPointer) in one round trip;
  // false when the connection gave no answer.
  bool query_down(std::array<std::uint8_t, 32>* keys, unsigned* mask);
  void fake_key(unsigned keycode, bool down);
  void fake_button(int button, bool down);
  void fake_motion(int x, int y);
  Status barrier(TypeReport* report, std::int64_t settle_ms);
  void start_watch();
  void send_remaps(const std::vector<unsigned>& keycodes);
  std::set<unsigned long> focus_windows();
  Status await_fetch(const std::vector<unsigned>& keycodes, TypeReport* report);
  struct Stroke {
    unsigned keycode;
    unsigned mods;  // real modifier mask the level needs
  };
  Result<Stroke> stroke_for(unsigned long keysym, bool allow_remap, std::vector<unsigned>* chunk_new,
                            bool* need_barrier);

  ::Display* dpy_;
  InputOptions options_;
  std::unique_ptr<Keymap> keymap_;
  std::unique_ptr<detail::RecordWatch> watch_;
  bool watch_tried_ = false;
  std::uint64_t events_ = 0;
  std::uint64_t clean_at_events_ = ~std::uint64_t{0};  // events_ at the last clean release check
  // Keys down and the pointer's button mask observed in the round trip that ended the last input
  // call with a pointer check, and events_ then; used once by the next release check.
  struct DownState {
    std::uint64_t at_events = 0;
    std::array<std::uint8_t, 32> keys{};
    unsigned mask = 0;
  };
  std::optional<DownState> down_after_;
  std::uint64_t markers_ = 0;
  std::set<unsigned> held_keys_;
  std::set<int> held_buttons_;
  std::int64_t last_key_us_ = 0;
  std::uint64_t barrier_timeouts_ = 0;
  bool abandoned_ = false;
  bool keymap_stale_ = true;  // see take_mapping_events()
  int xkb_event_base_ = 0;
  // A deferred restore that failed: reported by the next release_all_checked().
  std::optional<Error> restore_error_;
};

}  // namespace evident
