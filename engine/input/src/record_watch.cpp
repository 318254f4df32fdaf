#include "record_watch.h"

#include <X11/XKBlib.h>
#include <X11/Xproto.h>
#include <X11/extensions/record.h>
#include <poll.h>

#include <cstdlib>
#include <unistd.h>

#include "evident/core/clock.h"

namespace evident::detail {

namespace {
constexpr int kXkbGetMapMinor = 8;  // X_kbGetMap
}

std::unique_ptr<RecordWatch> RecordWatch::start(const std::function<::Display*()>& open, XID own_base) {
  std::unique_ptr<RecordWatch> w(new RecordWatch());
  w->own_base_ = own_base;
  w->ctrl_ = open();
  if (!w->ctrl_) return nullptr;
  int major = 0, minor = 0;
  if (!XRecordQueryVersion(w->ctrl_, &major, &minor)) return nullptr;
  int opcode = 0, ev = 0, err = 0;
  if (XQueryExtension(w->ctrl_, "XKEYBOARD", &opcode, &ev, &err)) w->xkb_major_ = opcode;
  if (XQueryExtension(w->ctrl_, "XInputExtension", &opcode, &ev, &err)) w->xi_major_ = opcode;
  w->data_ = open();
  if (!w->data_) return nullptr;
  w->base_mask_ = XRecordIdBaseMask(w->ctrl_);
  if (const char* path = std::getenv("EVIDENT_INPUT_TRACE"); path && *path) w->trace_ = std::fopen(path, "a");

  XRecordRange* range = XRecordAllocRange();
  if (!range) return nullptr;
  range->core_requests.first = 1;
  range->core_requests.last = 127;
  range->ext_requests.ext_major.first = 128;
  range->ext_requests.ext_major.last = 255;
  range->ext_requests.ext_minor.first = 0;
  range->ext_requests.ext_minor.last = 65535;
  range->delivered_events.first = KeyPress;
  // Up to GenericEvent: GTK 3 receives keys as XInput2 events (filtered in handle()).
  range->delivered_events.last = GenericEvent;
  range->client_died = True;  // a receiver that quit must not be waited for
  XRecordClientSpec clients = XRecordAllClients;
  w->context_ = XRecordCreateContext(w->ctrl_, 0, &clients, 1, &range, 1);
  XFree(range);
  if (!w->context_) return nullptr;
  XSync(w->ctrl_, False);
  if (pipe(w->wake_fd_) != 0) return nullptr;
  if (!XRecordEnableContextAsync(w->data_, w->context_, &RecordWatch::on_data,
                                 reinterpret_cast<XPointer>(w.get()))) {
    return nullptr;
  }
  XFlush(w->data_);
  w->thread_ = std::thread([p = w.get()] { p->pump(); });
  // Markers and changes count only once recording has started: wait for StartOfData.
  std::unique_lock<std::mutex> lock(w->mu_);
  if (!w->cv_.wait_for(lock, std::chrono::seconds(2), [&] { return w->started_; })) {
    lock.unlock();
    return nullptr;
  }
  lock.unlock();
  return w;
}

RecordWatch::~RecordWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  if (wake_fd_[1] >= 0) {
    const char c = 1;
    [[maybe_unused]] auto n = write(wake_fd_[1], &c, 1);
  }
  if (thread_.joinable()) thread_.join();
  if (ctrl_ && context_) {
    XRecordDisableContext(ctrl_, context_);
    XRecordFreeContext(ctrl_, context_);
    XSync(ctrl_, False);
  }
  if (data_) XCloseDisplay(data_);
  if (ctrl_) XCloseDisplay(ctrl_);
  for (int fd : wake_fd_) {
    if (fd >= 0) close(fd);
  }
  if (trace_) std::fclose(trace_);
}

void RecordWatch::trace(const char* kind, XID client, int a, int b) {
  if (!trace_) return;
  std::fprintf(trace_, "%lld %llu %lx %s %d %d\n", static_cast<long long>(steady_us()),
               static_cast<unsigned long long>(seq_), static_cast<unsigned long>(client), kind, a, b);
  std::fflush(trace_);
}

void RecordWatch::pump() {
  const int xfd = ConnectionNumber(data_);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    pollfd fds[2] = {{xfd, POLLIN, 0}, {wake_fd_[0], POLLIN, 0}};
    const int n = poll(fds, 2, 1000);
    if (n < 0) continue;
    if (fds[1].revents) return;
    if (fds[0].revents & (POLLERR | POLLHUP)) return;
    XRecordProcessReplies(data_);
  }
}

void RecordWatch::on_data(XPointer closure, XRecordInterceptData* raw) {
  auto* self = reinterpret_cast<RecordWatch*>(closure);
  XRecordInterceptData* d = raw;
  if (d->category == XRecordStartOfData) {
    std::lock_guard<std::mutex> lock(self->mu_);
    self->started_ = true;
    self->cv_.notify_all();
  }
  if (d->category == XRecordClientDied) self->forget(d->id_base);
  if (d->data && d->data_len > 0) self->handle(d->data, d->data_len, d->category, d->id_base, d->client_swapped);
  XRecordFreeData(d);
}

void RecordWatch::handle(const unsigned char* data, unsigned long len4, int category, XID base, bool swapped) {
  const XID client = base & base_mask_;
  const bool own = client == (own_base_ & base_mask_);
  const unsigned long bytes = len4 * 4;
  // Request fields are in the client's byte order.
  auto card16 = [&](int at) {
    return swapped ? static_cast<unsigned>((data[at] << 8) | data[at + 1])
                   : static_cast<unsigned>(data[at] | (data[at + 1] << 8));
  };
  std::lock_guard<std::mutex> lock(mu_);
  if (category == XRecordFromClient) {
    const int major = data[0];
    if (own) {
      if (major == X_ChangeKeyboardMapping && bytes >= 8) {
        const std::uint64_t change_seq = ++seq_;
        change_us_ = steady_us();
        // xChangeKeyboardMappingReq: keyCodes (count) at 1, firstKeyCode at 4.
        const unsigned first = data[4], count = data[1];
        for (unsigned kc = first; kc < first + count && kc < 256; ++kc) changed_seq_[kc] = change_seq;
        trace("change", client, static_cast<int>(count), 0);
      }
      if (major == X_NoOperation) {
        ++markers_seen_;
        trace("marker", client, static_cast<int>(markers_seen_), 0);
        cv_.notify_all();
      }
      return;
    }
    last_request_us_[client] = steady_us();
    last_request_seq_[client] = ++seq_;
    const bool fetch = major == X_GetKeyboardMapping ||
                       (major == xkb_major_ && data[1] == kXkbGetMapMinor);
    // The key range the fetch returns syms for.
    unsigned first = 0, count = 0;
    if (major == X_GetKeyboardMapping && bytes >= 8) {  // xGetKeyboardMappingReq: first 4, count 5
      first = data[4];
      count = data[5];
    } else if (fetch && bytes >= 14) {  // xkbGetMapReq: full 6, partial 8, firstKeySym 12, nKeySyms 13
      if (card16(6) & XkbKeySymsMask) {
        first = 0;
        count = 256;
      } else if (card16(8) & XkbKeySymsMask) {
        first = data[12];
        count = data[13];
      }
    }
    if (count) {
      auto& mine = fetched_seq_[client];
      for (unsigned kc = first; kc < first + count && kc < 256; ++kc) mine[kc] = seq_;
    }
    trace(fetch ? "fetch" : "req", client, major, fetch ? static_cast<int>((first << 16) | count)
                                                        : (major >= 128 ? data[1] : 0));
    cv_.notify_all();
  } else if (category == XRecordFromServer) {
    const int type = data[0] & 0x7F;
    bool key = type == KeyPress || type == KeyRelease;
    if (type == GenericEvent && xi_major_ >= 0 && data[1] == xi_major_) {
      const int evtype = data[8] | (data[9] << 8);  // xGenericEvent.evtype (little-endian server)
      key = evtype == 2 || evtype == 3;             // XI_KeyPress, XI_KeyRelease
    }
    if (!own && key) {
      receivers_.insert(client);
      all_receivers_.insert(client);
      last_delivery_seq_[client] = ++seq_;
      last_delivery_us_[client] = steady_us();
      trace(type == GenericEvent ? "xi-key" : "key", client, 0, 0);
      cv_.notify_all();
    }
  }
}

void RecordWatch::forget(XID base) {
  const XID client = base & base_mask_;
  std::lock_guard<std::mutex> lock(mu_);
  trace("died", client, 0, 0);
  receivers_.erase(client);
  all_receivers_.erase(client);
  fetched_seq_.erase(client);
  cv_.notify_all();
}

void RecordWatch::begin_epoch() {
  std::lock_guard<std::mutex> lock(mu_);
  receivers_.clear();
  last_delivery_seq_.clear();
  last_delivery_us_.clear();
}

bool RecordWatch::has_fetched(XID c, const std::vector<unsigned>& keycodes) {
  auto it = fetched_seq_.find(c);
  for (unsigned kc : keycodes) {
    if (kc >= 256 || !changed_seq_[kc]) continue;
    if (it == fetched_seq_.end() || it->second[kc] <= changed_seq_[kc]) return false;
  }
  return true;
}

bool RecordWatch::wait_fetched(std::uint64_t marker, const std::set<XID>& clients,
                               const std::vector<unsigned>& keycodes, std::int64_t idle_ms,
                               std::int64_t deadline_us) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    const std::int64_t now = steady_us();
    bool ready = markers_seen_ >= marker;
    std::int64_t next_check_us = deadline_us;
    if (ready) {
      std::set<XID> all = all_receivers_;
      for (XID c : clients) all.insert(c & base_mask_);
      all.erase(own_base_ & base_mask_);
      for (XID c : all) {
        // A fetch the server handled after our last change returns the changed map: from then
        // on the client's cache holds it, whatever notifications it still has queued.
        if (has_fetched(c, keycodes)) continue;
        const std::int64_t last = std::max(last_request_us_[c], change_us_);
        const std::int64_t done_at = last + idle_ms * 1000;
        if (done_at > now) {
          ready = false;
          next_check_us = std::min(next_check_us, done_at);
        }
      }
    }
    if (ready) return true;
    if (now >= deadline_us || stopping_) {
      if (markers_seen_ < marker) trace("timeout-no-marker", 0, 0, 0);
      for (XID c : clients) {
        if (!has_fetched(c & base_mask_, keycodes)) trace("timeout-unfetched", c & base_mask_, 0, 0);
      }
      return false;
    }
    cv_.wait_for(lock, std::chrono::microseconds(std::max<std::int64_t>(100, next_check_us - now)));
  }
}

bool RecordWatch::wait(std::uint64_t marker, const std::vector<unsigned>& keycodes, std::int64_t quiet_ms,
                       std::int64_t idle_ms, std::int64_t settle_ms, std::int64_t deadline_us,
                       int* clients_out) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    const std::int64_t now = steady_us();
    bool ready = markers_seen_ >= marker;
    std::int64_t next_check_us = deadline_us;
    if (ready) {
      for (XID c : receivers_) {
        // Proof part: the receiver fetched the keymap after the change its keys needed (a lazy
        // client fetches on its first key; an eager one on the notify). Without it, nothing it
        // did says its cache holds the mapping, so only the deadline ends the wait.
        if (!has_fetched(c, keycodes)) {
          ready = false;
          continue;
        }
        // Evidence part: it worked through its queue (a request after our last key, then quiet;
        // or silence when the key makes it draw nothing).
        const bool answered = last_request_seq_[c] > last_delivery_seq_[c];
        const std::int64_t quiet_at = std::max(
            answered ? last_request_us_[c] + quiet_ms * 1000
                     : std::max(last_request_us_[c], last_delivery_us_[c]) + idle_ms * 1000,
            last_delivery_us_[c] + settle_ms * 1000);
        if (quiet_at > now) {
          ready = false;
          next_check_us = std::min(next_check_us, quiet_at);
        }
      }
    }
    if (clients_out) *clients_out = static_cast<int>(receivers_.size());
    if (ready) return true;
    if (now >= deadline_us || stopping_) {
      if (markers_seen_ < marker) trace("timeout-no-marker", 0, 0, 0);
      for (XID c : receivers_) {
        if (!has_fetched(c, keycodes)) trace("timeout-unfetched", c, 0, 0);
      }
      return false;
    }
    cv_.wait_for(lock, std::chrono::microseconds(std::max<std::int64_t>(100, next_check_us - now)));
  }
}

}  // namespace evident::detail
