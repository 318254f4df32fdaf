// Keymap barrier evidence from the RECORD extension (internal to evident_input).
//
// Why: a client translates keycodes with its own cached keymap, which Xlib refreshes lazily when
// it has *read* a MappingNotify/XkbMapNotify, not when it has processed the key events before it.
// So a spare keycode may only be remapped again once every client that received key events using
// its previous mapping has (1) fetched the keymap after our change (proof that its cache holds the
// mapping) and (2) gone quiet (no requests for a short window after that, i.e. it has worked
// through its queue: toolkits redraw after the events, then idle). The X server records requests
// and delivered events of all clients in server order, so this is observed, not guessed.
#pragma once

#include <X11/Xlib.h>
#include <X11/extensions/record.h>

#include <array>
#include <condition_variable>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace evident::detail {

class RecordWatch {
 public:
  // Opens two connections with `open` (control + data) and starts a pump thread.
  // Returns null when RECORD is unavailable; the caller then falls back to a bounded wait.
  static std::unique_ptr<RecordWatch> start(const std::function<::Display*()>& open, XID own_base);
  ~RecordWatch();
  RecordWatch(const RecordWatch&) = delete;
  RecordWatch& operator=(const RecordWatch&) = delete;

  // Starts a new epoch: forget this epoch's receivers and their deliveries (fetch evidence is per
  // keycode and change, so it needs no reset).
  void begin_epoch();
  // The fetch barrier, run after our keymap change and before the key events that need it. Tk
  // decodes KeyPress when it moves X events to its Tcl queue, but refreshes Xlib's core keysym
  // cache (used by input methods) only when it dispatches the MappingNotify from that queue; so key
  // events that arrive in the same read as the MappingNotify are decoded with the old mapping.
  // Dispatching it issues a keymap fetch (XkbGetMap / GetKeyboardMapping); GTK fetches on
  // XkbMapNotify too. True once `marker` NoOps were seen and every client in `clients` and every
  // client that ever received our key events issued a keymap fetch that the server handled after
  // our last change (its reply is the changed map), or was silent for `idle_ms` (a client that
  // fetches only when a key arrives, like a fresh xterm). False at `deadline_us`.
  // "Fetched" is per keycode: the request's key range (core GetKeyboardMapping firstKeyCode/count,
  // XkbGetMap full or partial key syms) must cover every keycode in `keycodes`, and the server
  // must have handled it after our last change of that keycode. A fetch of some other range (Xlib
  // refreshes lazily, only the keys named by the notifications it has read so far) proves nothing
  // about our keys.
  bool wait_fetched(std::uint64_t marker, const std::set<XID>& clients, const std::vector<unsigned>& keycodes,
                    std::int64_t idle_ms, std::int64_t deadline_us);
  // Adds a caller phase to the EVIDENT_INPUT_TRACE timeline (no-op without it).
  void note(const char* what, int a) {
    std::lock_guard<std::mutex> lock(mu_);
    trace(what, 0, a, 0);
  }
  // The client part of a resource id (window) of another client.
  XID client_of(XID resource) const { return resource & base_mask_; }

  // The decode barrier. True once `marker` NoOps (XNoOp on the main connection, counted since
  // start()) were seen, i.e. the stream has caught up with the caller's events, and every client
  // that was delivered our key events (core KeyPress/KeyRelease or XInput2 XI_KeyPress/Release,
  // which GTK 3 uses) since begin_epoch() has shown that it worked through them: it issued a
  // request after our last key event reached it (toolkits redraw only after they processed their
  // queued input) and was then quiet for `quiet_ms`; a client that reacts with no request at all
  // (xterm typing into a program that does not echo) passes after `idle_ms` of silence since the
  // delivery. False at `deadline_us` (steady_us clock). `clients_out`: receivers waited for.
  // `settle_ms`: besides, every receiver has had at least this long since our last key reached it
  // (the restore's margin for a client starved between two of its requests; 0 for a rotation).
  // `keycodes`: the spare keycodes used since the last barrier; every receiver must have fetched
  // each of them after its last change (same rule as wait_fetched) before anything else counts.
  bool wait(std::uint64_t marker, const std::vector<unsigned>& keycodes, std::int64_t quiet_ms,
            std::int64_t idle_ms, std::int64_t settle_ms, std::int64_t deadline_us, int* clients_out);

 private:
  RecordWatch() = default;
  static void on_data(XPointer closure, XRecordInterceptData* data);
  void handle(const unsigned char* data, unsigned long len4, int category, XID base, bool swapped);
  // True if `c` fetched every keycode of `keycodes` after our last change of it. Hold mu_.
  bool has_fetched(XID c, const std::vector<unsigned>& keycodes);
  void pump();
  void forget(XID base);

  ::Display* ctrl_ = nullptr;
  ::Display* data_ = nullptr;
  unsigned long context_ = 0;
  XID own_base_ = 0;
  XID base_mask_ = 0;
  int xkb_major_ = -1;
  int xi_major_ = -1;
  int wake_fd_[2] = {-1, -1};
  std::thread thread_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::uint64_t markers_seen_ = 0;
  bool started_ = false;
  std::set<XID> receivers_;
  std::map<XID, std::int64_t> last_request_us_;
  // Order of recorded items (server order): a request after a delivery has a larger sequence.
  std::uint64_t seq_ = 0;
  std::map<XID, std::uint64_t> last_request_seq_;
  std::map<XID, std::uint64_t> last_delivery_seq_;
  std::map<XID, std::int64_t> last_delivery_us_;
  std::set<XID> all_receivers_;
  std::int64_t change_us_ = 0;
  // Per keycode: the sequence of our last change of it, and of each client's last fetch of it.
  std::array<std::uint64_t, 256> changed_seq_{};
  std::map<XID, std::array<std::uint64_t, 256>> fetched_seq_;
  // EVIDENT_INPUT_TRACE=<file>: a timeline of opcodes, client ids and delivery kinds for
  // diagnosing barriers (never keycodes, keysyms or text).
  std::FILE* trace_ = nullptr;
  void trace(const char* kind, XID client, int a, int b);
};

}  // namespace evident::detail
