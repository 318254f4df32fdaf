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

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

namespace evident::detail {

class RecordWatch {
 public:
  // Opens two connections with `open` (control + data) and starts a pump thread.
  // Returns null when RECORD is unavailable; the caller then falls back to a bounded wait.
  static std::unique_ptr<RecordWatch> start(const std::function<::Display*()>& open, XID own_base);
  ~RecordWatch();
  RecordWatch(const RecordWatch&) = delete;
  RecordWatch& operator=(const RecordWatch&) = delete;

  // Starts a new epoch: forget receivers/fetches; fetches count only after our next keymap change
  // (X_ChangeKeyboardMapping from `own_base`) is seen in the stream.
  void begin_epoch();
  // The fetch barrier, run after our keymap change and before the key events that need it. Tk
  // decodes KeyPress when it moves X events to its Tcl queue, but refreshes Xlib's core keysym
  // cache (used by input methods) only when it dispatches the MappingNotify from that queue; so key
  // events that arrive in the same read as the MappingNotify are decoded with the old mapping.
  // Dispatching it issues a keymap fetch (XkbGetMap / GetKeyboardMapping); GTK fetches on
  // XkbMapNotify too. True once `marker` NoOps were seen and every client in `clients` and every
  // client that ever received our key events fetched the keymap after our last change and was then
  // quiet for `quiet_ms`, or was silent for `idle_ms` (a client that never fetches).
  bool wait_fetched(std::uint64_t marker, const std::set<XID>& clients, std::int64_t quiet_ms,
                    std::int64_t idle_ms, std::int64_t deadline_us);
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
  bool wait(std::uint64_t marker, std::int64_t quiet_ms, std::int64_t idle_ms, std::int64_t deadline_us,
            int* clients_out);

 private:
  RecordWatch() = default;
  static void on_data(XPointer closure, XRecordInterceptData* data);
  void handle(const unsigned char* data, unsigned long len4, int category, XID base);
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
  bool change_seen_ = false;
  std::uint64_t markers_seen_ = 0;
  bool started_ = false;
  std::set<XID> receivers_;
  std::set<XID> fetched_;
  std::map<XID, std::int64_t> last_request_us_;
  // Order of recorded items (server order): a request after a delivery has a larger sequence.
  std::uint64_t seq_ = 0;
  std::map<XID, std::uint64_t> last_request_seq_;
  std::map<XID, std::uint64_t> last_delivery_seq_;
  std::map<XID, std::int64_t> last_delivery_us_;
  std::set<XID> all_receivers_;
  std::uint64_t change_seq_ = 0;
  std::int64_t change_us_ = 0;
  std::map<XID, std::uint64_t> fetch_seq_;
};

}  // namespace evident::detail
