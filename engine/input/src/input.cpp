#include <X11/XKBlib.h>
#include <X11/Xlib-xcb.h>
#include <X11/Xlib.h>
#include <X11/Xproto.h>
#include <X11/extensions/XTest.h>
#include <X11/keysym.h>

#include "record_watch.h"
#undef Status  // Xlib's macro; evident::Status is used below

#include "evident/input/input.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "evident/core/clock.h"
#include "evident/display/x11.h"
#include "evident/input/unicode.h"

namespace evident {

namespace {

// X errors are reported asynchronously to one process-wide handler, owned by the display layer
// (evident/display/x11.h), which records them per connection; sync_checked() turns them into
// `failed` results instead of Xlib's default exit(). One handler for the whole process: a second
// XSetErrorHandler here would silently replace the display layer's bookkeeping.
void install_error_handler() { ensure_xlib_initialized(); }

int take_x_error(::Display* dpy) {
  const XErrorRecord r = take_x_errors(dpy);
  return r.count ? r.last_error_code : 0;
}

constexpr unsigned kButtonMasks = Button1Mask | Button2Mask | Button3Mask | Button4Mask | Button5Mask;

Error display_gone() { return make_error("input-dispatch-failed", "the display is gone"); }

}  // namespace

struct InputDevice::Keymap {
  int min_kc = 8;
  int max_kc = 255;
  std::unordered_map<unsigned long, Stroke> index;  // keysym -> best (fewest modifiers) stroke
  unsigned mod_keycode[8] = {};                     // keycode that sets real modifier bit i
  unsigned caps_keycode = 0;
  // Spare keycodes (no keysyms at all in the original map), their original core keysyms, what
  // each is mapped to now (two levels: plain and Shift; 0 = empty, both 0 = original), least
  // recently used first, and the ones used since the last barrier (they must not be remapped
  // until the barrier passed).
  std::vector<unsigned> spare;
  std::map<unsigned, std::vector<KeySym>> original;
  std::map<unsigned, std::array<unsigned long, 2>> current;
  std::vector<unsigned> lru;
  std::set<unsigned> dirty;
  bool epoch_open = false;
};

InputDevice::InputDevice(::Display* dpy, InputOptions options)
    : dpy_(dpy), options_(std::move(options)), keymap_(std::make_unique<Keymap>()) {}

InputDevice::~InputDevice() {
  // Last exit path: never leave keys/buttons held or the keymap changed behind.
  if (dpy_ && !abandoned_) {
    (void)release_all_checked();
    (void)restore_keymap_checked();
  }
}

void InputDevice::abandon() {
  abandoned_ = true;
  watch_.reset();
}

Result<std::unique_ptr<InputDevice>> InputDevice::create(::Display* dpy, InputOptions options) {
  if (!dpy) return make_error("input-unavailable", "no X connection");
  int ev = 0, err = 0, major = 0, minor = 0;
  if (!XTestQueryExtension(dpy, &ev, &err, &major, &minor)) {
    return make_error("input-unavailable", "the display has no XTEST extension");
  }
  int opcode = 0, xkb_ev = 0, xkb_err = 0, xkb_major = XkbMajorVersion, xkb_minor = XkbMinorVersion;
  if (!XkbQueryExtension(dpy, &opcode, &xkb_ev, &xkb_err, &xkb_major, &xkb_minor)) {
    return make_error("input-unavailable", "the display has no XKEYBOARD extension");
  }
  install_error_handler();
  std::unique_ptr<InputDevice> dev(new InputDevice(dpy, std::move(options)));
  dev->xkb_event_base_ = xkb_ev;
  if (Status s = dev->init(); !s.ok()) {
    dev->dpy_ = nullptr;  // nothing to release
    return s.error();
  }
  return dev;
}

Status InputDevice::init() {
  Keymap& km = *keymap_;
  XDisplayKeycodes(dpy_, &km.min_kc, &km.max_kc);
  int per = 0;
  const int count = km.max_kc - km.min_kc + 1;
  KeySym* syms = XGetKeyboardMapping(dpy_, static_cast<KeyCode>(km.min_kc), count, &per);
  if (!syms) return make_error("input-unavailable", "cannot read the keyboard mapping");
  for (int i = 0; i < count; ++i) {
    const KeySym* row = syms + static_cast<std::ptrdiff_t>(i) * per;
    if (std::all_of(row, row + per, [](KeySym k) { return k == NoSymbol; })) {
      const auto kc = static_cast<unsigned>(km.min_kc + i);
      km.spare.push_back(kc);
      km.original[kc] = std::vector<KeySym>(row, row + per);
      km.current[kc] = {0, 0};
      km.lru.push_back(kc);
    }
  }
  XFree(syms);
  // Keymap changes by anyone (ours included) arrive as XkbMapNotify and core MappingNotify
  // events; take_mapping_events() reads them to know when the index is stale. Without this
  // selection an XKB-aware connection is told of nothing.
  constexpr unsigned kMapEvents = XkbMapNotifyMask | XkbNewKeyboardNotifyMask;
  if (!XkbSelectEvents(dpy_, XkbUseCoreKbd, kMapEvents, kMapEvents)) {
    return make_error("input-unavailable", "cannot select XKB keymap notifications");
  }
  return refresh_keymap();
}

Status InputDevice::refresh_keymap() {
  Keymap& km = *keymap_;
  XkbDescPtr xkb = XkbGetMap(dpy_, XkbKeyTypesMask | XkbKeySymsMask | XkbVirtualModsMask, XkbUseCoreKbd);
  if (!xkb) return make_error("input-dispatch-failed", "cannot read the XKB keymap");
  km.index.clear();
  const std::set<unsigned> spare(km.spare.begin(), km.spare.end());
  for (int kc = xkb->min_key_code; kc <= xkb->max_key_code; ++kc) {
    if (spare.count(static_cast<unsigned>(kc))) continue;
    if (XkbKeyNumGroups(xkb, kc) < 1) continue;
    const int width = XkbKeyGroupWidth(xkb, kc, 0);
    XkbKeyTypePtr type = XkbKeyKeyType(xkb, kc, 0);
    for (int level = 0; level < width; ++level) {
      const KeySym ks = XkbKeySymEntry(xkb, kc, level, 0);
      if (ks == NoSymbol) continue;
      // The fewest real modifiers that select this level (Caps Lock routes are skipped: the lock
      // state is handled separately).
      int best = -1;
      if (level == 0) best = 0;
      for (int m = 0; type && m < type->map_count; ++m) {
        const XkbKTMapEntryRec& e = type->map[m];
        if (!e.active || e.level != level) continue;
        const unsigned mask = e.mods.mask;
        if (mask & LockMask) continue;
        if (best < 0 || std::popcount(mask) < std::popcount(static_cast<unsigned>(best))) best = static_cast<int>(mask);
      }
      if (best < 0) continue;
      auto it = km.index.find(ks);
      if (it == km.index.end() ||
          std::popcount(static_cast<unsigned>(best)) < std::popcount(it->second.mods)) {
        km.index[ks] = Stroke{static_cast<unsigned>(kc), static_cast<unsigned>(best)};
      }
    }
  }
  XModifierKeymap* mm = XGetModifierMapping(dpy_);
  if (!mm) {
    XkbFreeKeyboard(xkb, XkbAllComponentsMask, True);
    return make_error("input-dispatch-failed", "cannot read the modifier mapping");
  }
  // A modifier key's level-1 keysym, from the map just fetched (not Xlib's own cache).
  auto base_keysym = [xkb](int kc) -> KeySym {
    if (kc < xkb->min_key_code || kc > xkb->max_key_code || XkbKeyNumGroups(xkb, kc) < 1) return NoSymbol;
    return XkbKeySymEntry(xkb, kc, 0, 0);
  };
  for (int i = 0; i < 8; ++i) {
    km.mod_keycode[i] = 0;
    for (int k = 0; k < mm->max_keypermod; ++k) {
      const KeyCode kc = mm->modifiermap[i * mm->max_keypermod + k];
      if (!kc) continue;
      const KeySym ks = base_keysym(kc);
      if (i == LockMapIndex && ks != XK_Caps_Lock) continue;
      // Level 3 (AltGr) must come from ISO_Level3_Shift, not Mode_switch (a group switch).
      if (i == Mod5MapIndex && ks == XK_Mode_switch) continue;
      km.mod_keycode[i] = kc;
      break;
    }
  }
  XFreeModifiermap(mm);
  XkbFreeKeyboard(xkb, XkbAllComponentsMask, True);
  auto caps = km.index.find(XK_Caps_Lock);
  km.caps_keycode = caps == km.index.end() ? 0 : caps->second.keycode;
  keymap_stale_ = false;
  return ok_status();
}

namespace {

struct MappingEventFilter {
  int xkb_event_base;
};

Bool is_mapping_event(::Display*, XEvent* ev, XPointer arg) {
  const int base = reinterpret_cast<const MappingEventFilter*>(arg)->xkb_event_base;
  if (ev->type == MappingNotify) return True;
  if (ev->type != base) return False;
  const int xkb_type = reinterpret_cast<const XkbAnyEvent*>(ev)->xkb_type;
  return xkb_type == XkbMapNotify || xkb_type == XkbNewKeyboardNotify;
}

}  // namespace

void InputDevice::take_mapping_events() {
  const Keymap& km = *keymap_;
  // Keycodes [first, first + count) include one that is not a spare keycode (our remaps and
  // restores touch only spare keycodes, which the index leaves out).
  auto touches_index = [&km](int first, int count) {
    for (int kc = first; kc < first + count; ++kc) {
      if (!km.original.count(static_cast<unsigned>(kc))) return true;
    }
    return false;
  };
  MappingEventFilter filter{xkb_event_base_};
  XEvent ev;
  // XCheckIfEvent also reads what has arrived on the socket; other events stay queued for their
  // readers (the display's change watcher shares this connection).
  while (XCheckIfEvent(dpy_, &ev, &is_mapping_event, reinterpret_cast<XPointer>(&filter))) {
    if (keymap_stale_) continue;  // keep draining
    if (ev.type == MappingNotify) {
      const XMappingEvent& m = ev.xmapping;
      if (m.request == MappingModifier ||
          (m.request == MappingKeyboard && touches_index(m.first_keycode, m.count))) {
        keymap_stale_ = true;
      }
      continue;
    }
    const auto& xkb = reinterpret_cast<const XkbEvent&>(ev);
    if (xkb.any.xkb_type == XkbNewKeyboardNotify) {
      keymap_stale_ = true;
      continue;
    }
    const XkbMapNotifyEvent& m = xkb.map;
    constexpr unsigned kIndexInputs = XkbKeyTypesMask | XkbModifierMapMask | XkbVirtualModsMask;
    if ((m.changed & kIndexInputs) ||
        ((m.changed & XkbKeySymsMask) && touches_index(m.first_key_sym, m.num_key_syms))) {
      keymap_stale_ = true;
    }
  }
}

Status InputDevice::ensure_keymap() {
  take_mapping_events();
  return keymap_stale_ ? refresh_keymap() : ok_status();
}

void InputDevice::fake_key(unsigned keycode, bool down) {
  XTestFakeKeyEvent(dpy_, keycode, down ? True : False, CurrentTime);
  ++events_;
  last_key_us_ = steady_us();
  if (down) held_keys_.insert(keycode); else held_keys_.erase(keycode);
}

void InputDevice::fake_button(int button, bool down) {
  XTestFakeButtonEvent(dpy_, static_cast<unsigned>(button), down ? True : False, CurrentTime);
  ++events_;
  if (down) held_buttons_.insert(button); else held_buttons_.erase(button);
}

void InputDevice::fake_motion(int x, int y) {
  XTestFakeMotionEvent(dpy_, DefaultScreen(dpy_), x, y, CurrentTime);
  ++events_;
}

Status InputDevice::take_error(const char* what) {
  if (const int code = take_x_error(dpy_)) {
    return make_error("input-dispatch-failed",
                      std::string("X error ") + std::to_string(code) + " during " + what);
  }
  return ok_status();
}

Status InputDevice::sync_checked(const char* what) {
  XSync(dpy_, False);
  return take_error(what);
}

Status InputDevice::finish_checked(const char* what, std::pair<int, int>* pointer_after) {
  down_after_.reset();
  if (!pointer_after) return sync_checked(what);
  // One round trip, as exact as XSync: both queries go to XCB on the Xlib connection, after
  // Xlib's buffered requests (the input events), in one flush; their replies come after the
  // server processed every earlier request. (An Xlib XQueryPointer here made a second round
  // trip: Xlib waited for the keymap reply before it sent its own request.) The errors of the
  // earlier requests arrived ahead of the replies; XEventsQueued hands them to the error
  // handler without another round trip, so take_error() sees them.
  xcb_connection_t* c = XGetXCBConnection(dpy_);
  const xcb_query_keymap_cookie_t kc = xcb_query_keymap(c);
  const xcb_query_pointer_cookie_t pc =
      xcb_query_pointer(c, static_cast<xcb_window_t>(DefaultRootWindow(dpy_)));
  std::unique_ptr<xcb_query_keymap_reply_t, decltype(&std::free)> kr(
      xcb_query_keymap_reply(c, kc, nullptr), &std::free);
  std::unique_ptr<xcb_query_pointer_reply_t, decltype(&std::free)> pr(
      xcb_query_pointer_reply(c, pc, nullptr), &std::free);
  (void)XEventsQueued(dpy_, QueuedAfterReading);
  EVIDENT_TRY(take_error(what));
  if (!pr) return display_gone();
  if (!pr->same_screen) {
    return make_error("input-dispatch-failed", "the pointer is not on the default screen");
  }
  *pointer_after = {pr->root_x, pr->root_y};
  if (kr) {
    DownState d;
    d.at_events = events_;
    std::copy(std::begin(kr->keys), std::end(kr->keys), d.keys.begin());
    d.mask = pr->mask;
    down_after_ = d;
  }
  return ok_status();
}

Status InputDevice::move(int x, int y, std::pair<int, int>* pointer_after) {
  if (abandoned_) return display_gone();
  fake_motion(x, y);
  return finish_checked("move", pointer_after);
}

Status InputDevice::button(int x, int y, int b, bool down) {
  if (abandoned_) return display_gone();
  fake_motion(x, y);
  fake_button(b, down);
  return sync_checked(down ? "button press" : "button release");
}

Status InputDevice::click(int x, int y, int b, int count, std::pair<int, int>* pointer_after) {
  if (abandoned_) return display_gone();
  fake_motion(x, y);
  // Back to back in one request batch: the server stamps them within the same few ms, which
  // toolkits see as a double/triple click.
  for (int i = 0; i < count; ++i) {
    fake_button(b, true);
    fake_button(b, false);
  }
  return finish_checked("click", pointer_after);
}

Status InputDevice::scroll(int x, int y, int b, int amount) {
  if (abandoned_) return display_gone();
  fake_motion(x, y);
  for (int i = 0; i < amount; ++i) {
    fake_button(b, true);
    fake_button(b, false);
  }
  return sync_checked("scroll");
}

Status InputDevice::drag(int x0, int y0, int x1, int y1, int b, std::pair<int, int>* pointer_after) {
  if (abandoned_) return display_gone();
  fake_motion(x0, y0);
  fake_button(b, true);
  const int dist = std::max(std::abs(x1 - x0), std::abs(y1 - y0));
  const int steps = std::clamp(dist / 16, 1, 32);
  for (int i = 1; i <= steps; ++i) {
    fake_motion(x0 + (x1 - x0) * i / steps, y0 + (y1 - y0) * i / steps);
  }
  fake_button(b, false);
  return finish_checked("drag", pointer_after);
}

Result<std::pair<int, int>> InputDevice::pointer() {
  if (abandoned_) return display_gone();
  Window root = 0, child = 0;
  int rx = 0, ry = 0, wx = 0, wy = 0;
  unsigned mask = 0;
  if (!XQueryPointer(dpy_, DefaultRootWindow(dpy_), &root, &child, &rx, &ry, &wx, &wy, &mask)) {
    return make_error("input-dispatch-failed", "the pointer is not on the default screen");
  }
  return std::make_pair(rx, ry);
}

Result<InputDevice::Stroke> InputDevice::stroke_for(unsigned long keysym, bool allow_remap,
                                                    std::vector<unsigned>* chunk_new,
                                                    bool* need_barrier) {
  Keymap& km = *keymap_;
  *need_barrier = false;
  if (auto it = km.index.find(keysym); it != km.index.end()) return it->second;
  const unsigned shift = km.mod_keycode[ShiftMapIndex] ? ShiftMask : 0u;
  for (unsigned kc : km.spare) {
    // Already mapped to this keysym (this chunk or an earlier one, kept mapped): no remap, so no
    // MappingNotify and no race with clients' keymap caches.
    const auto& cur = km.current[kc];
    if (cur[0] == keysym) {
      km.dirty.insert(kc);
      return Stroke{kc, 0};
    }
    if (cur[1] == keysym && shift) {
      km.dirty.insert(kc);
      return Stroke{kc, shift};
    }
  }
  if (!allow_remap) return make_error("keymap-no-spare-keycode", "key is not in the keymap");
  if (km.spare.empty()) {
    return make_error("keymap-no-spare-keycode", "the keymap has no spare keycode for a character outside it");
  }
  // Second level (Shift) of a keycode remapped in this chunk: its remap is still unsent, so it
  // can take a second keysym (two characters per spare keycode).
  if (shift) {
    for (unsigned kc : *chunk_new) {
      auto& cur = km.current[kc];
      if (cur[1] == 0) {
        cur[1] = keysym;
        return Stroke{kc, shift};
      }
    }
  }
  // Least recently used spare keycode that no event since the last barrier used.
  for (auto it = km.lru.begin(); it != km.lru.end(); ++it) {
    const unsigned kc = *it;
    if (km.dirty.count(kc)) continue;
    km.lru.erase(it);
    km.lru.push_back(kc);
    km.current[kc] = {keysym, 0};
    km.dirty.insert(kc);
    chunk_new->push_back(kc);
    return Stroke{kc, 0};
  }
  *need_barrier = true;
  return Stroke{0, 0};
}

void InputDevice::start_watch() {
  if (watch_tried_) return;
  watch_tried_ = true;
  std::function<::Display*()> open = options_.open_aux;
  if (!open) {
    const std::string name = DisplayString(dpy_);
    open = [name] { return XOpenDisplay(name.c_str()); };
  }
  // Our own client id base: any id this connection allocates carries it.
  watch_ = detail::RecordWatch::start(open, XAllocID(dpy_));
}

std::set<unsigned long> InputDevice::focus_windows() {
  std::set<unsigned long> out;
  Window focus = 0;
  int revert = 0;
  XGetInputFocus(dpy_, &focus, &revert);
  if (focus != None && focus != PointerRoot) out.insert(focus);
  // Focus follows the pointer (no window manager): the windows under the pointer receive keys.
  Window w = DefaultRootWindow(dpy_);
  for (int depth = 0; depth < 32; ++depth) {
    Window root = 0, child = 0;
    int rx = 0, ry = 0, wx = 0, wy = 0;
    unsigned mask = 0;
    if (!XQueryPointer(dpy_, w, &root, &child, &rx, &ry, &wx, &wy, &mask) || child == None) break;
    out.insert(child);
    w = child;
  }
  return out;
}

Status InputDevice::await_fetch(const std::vector<unsigned>& keycodes, TypeReport* report) {
  start_watch();
  if (!watch_) {
    XSync(dpy_, False);
    return ok_status();
  }
  std::set<XID> clients;
  for (unsigned long w : focus_windows()) clients.insert(watch_->client_of(w));
  // The marker, then a round trip: a reply makes the server flush its output, and with it the
  // RECORD buffer (a NoOp alone can sit there until another client's output is flushed).
  XNoOp(dpy_);
  XSync(dpy_, False);
  ++markers_;
  watch_->note("fetch-wait-begin", static_cast<int>(clients.size()));
  const bool passed = watch_->wait_fetched(markers_, clients, keycodes, options_.fetch_idle_ms,
                                           steady_us() + options_.barrier_timeout_ms * 1000);
  watch_->note("fetch-wait-end", passed ? 1 : 0);
  if (!passed) ++barrier_timeouts_;
  if (report) {
    ++report->fetch_waits;
    if (!passed) ++report->barrier_timeouts;
  }
  return ok_status();
}

Status InputDevice::barrier(TypeReport* report, std::int64_t settle_ms) {
  Keymap& km = *keymap_;
  if (km.dirty.empty()) return ok_status();
  XFlush(dpy_);
  start_watch();
  bool passed = false;
  if (watch_) {
    XNoOp(dpy_);
    XSync(dpy_, False);  // see await_fetch: the reply flushes the RECORD buffer
    ++markers_;
    int clients = 0;
    watch_->note("barrier-begin", 0);
    const std::vector<unsigned> used(km.dirty.begin(), km.dirty.end());
    passed = watch_->wait(markers_, used, options_.barrier_quiet_ms, options_.barrier_idle_ms, settle_ms,
                          steady_us() + (options_.barrier_timeout_ms + settle_ms) * 1000, &clients);
    watch_->note("barrier-end", passed ? clients : -1);
  } else {
    // No RECORD: no evidence is available; give clients a bounded time to read their queues.
    std::this_thread::sleep_for(std::chrono::milliseconds(options_.barrier_quiet_ms * 4));
  }
  if (!passed) ++barrier_timeouts_;
  if (report) {
    ++report->barriers;
    if (!passed) ++report->barrier_timeouts;
  }
  km.dirty.clear();
  km.epoch_open = false;
  return ok_status();
}

Result<TypeReport> InputDevice::type(const std::u32string& text) {
  if (abandoned_) return display_gone();
  TypeReport report;
  EVIDENT_TRY(ensure_keymap());
  Keymap& km = *keymap_;
  // Every character is checked before anything is sent: a refused text injects nothing.
  std::vector<unsigned long> keysyms;
  keysyms.reserve(text.size());
  for (char32_t cp : text) {
    const unsigned long ks = keysym_for_codepoint(cp);
    if (!ks) return make_error("input-dispatch-failed", "text contains a control character that has no key");
    keysyms.push_back(ks);
  }
  XkbStateRec state{};
  XkbGetState(dpy_, XkbUseCoreKbd, &state);
  const bool caps = (state.locked_mods & LockMask) && km.caps_keycode;
  if (caps) {  // typing needs the unlocked levels; the lock is put back afterwards
    fake_key(km.caps_keycode, true);
    fake_key(km.caps_keycode, false);
  }
  std::size_t i = 0;
  while (i < keysyms.size()) {
    // Plan a chunk: as many characters as fit without remapping a keycode used since the last
    // barrier; remaps of the chunk are sent before its key events.
    std::vector<unsigned> chunk_new;
    std::vector<Stroke> strokes;
    std::size_t j = i;
    bool need_barrier = false;
    for (; j < keysyms.size(); ++j) {
      auto st = stroke_for(keysyms[j], true, &chunk_new, &need_barrier);
      if (!st.ok()) return st.error();
      if (need_barrier) break;
      strokes.push_back(*st);
    }
    if (!chunk_new.empty() || !km.dirty.empty()) {
      start_watch();  // before the first remap, so this epoch's evidence is recorded
      if (!km.epoch_open && watch_) watch_->begin_epoch();
      km.epoch_open = true;
    }
    send_remaps(chunk_new);
    for (unsigned kc : chunk_new) report.remapped += km.current[kc][1] ? 2 : 1;
    if (!chunk_new.empty()) EVIDENT_TRY(await_fetch(chunk_new, &report));
    for (const Stroke& s : strokes) {
      std::vector<unsigned> mods;
      for (int b = 0; b < 8; ++b) {
        if ((s.mods & (1u << b)) && km.mod_keycode[b]) mods.push_back(km.mod_keycode[b]);
      }
      for (unsigned m : mods) fake_key(m, true);
      fake_key(s.keycode, true);
      fake_key(s.keycode, false);
      for (auto it = mods.rbegin(); it != mods.rend(); ++it) fake_key(*it, false);
    }
    report.characters += static_cast<int>(strokes.size());
    i = j;
    if (need_barrier) {
      EVIDENT_TRY(barrier(&report, options_.rotation_settle_ms));
    }
  }
  if (caps) {
    fake_key(km.caps_keycode, true);
    fake_key(km.caps_keycode, false);
  }
  EVIDENT_TRY(sync_checked("type"));
  return report;
}

Status InputDevice::press_chord(const KeyChord& chord) {
  if (abandoned_) return display_gone();
  EVIDENT_TRY(ensure_keymap());
  Keymap& km = *keymap_;
  std::vector<unsigned> chunk_new;
  std::vector<Stroke> strokes;
  for (unsigned long ks : chord.keysyms) {
    bool need_barrier = false;
    auto st = stroke_for(ks, true, &chunk_new, &need_barrier);
    if (!st.ok()) return st.error();
    if (need_barrier) {
      EVIDENT_TRY(barrier(nullptr, options_.rotation_settle_ms));
      st = stroke_for(ks, true, &chunk_new, &need_barrier);
      if (!st.ok()) return st.error();
    }
    strokes.push_back(*st);
  }
  if (!chunk_new.empty()) {
    start_watch();
    if (!km.epoch_open && watch_) watch_->begin_epoch();
    km.epoch_open = true;
  }
  send_remaps(chunk_new);
  if (!chunk_new.empty()) EVIDENT_TRY(await_fetch(chunk_new, nullptr));
  // The last key may need level modifiers (e.g. "ctrl+plus" needs Shift on a US map).
  const Stroke last = strokes.back();
  for (std::size_t k = 0; k + 1 < strokes.size(); ++k) fake_key(strokes[k].keycode, true);
  for (int b = 0; b < 8; ++b) {
    if ((last.mods & (1u << b)) && km.mod_keycode[b]) fake_key(km.mod_keycode[b], true);
  }
  fake_key(last.keycode, true);
  return sync_checked("key press");
}

Status InputDevice::release_chord(const KeyChord& chord) {
  if (abandoned_) return display_gone();
  (void)chord;
  // Release exactly what is held, most recent first (the chord's keys and level modifiers).
  std::vector<unsigned> held(held_keys_.begin(), held_keys_.end());
  for (auto it = held.rbegin(); it != held.rend(); ++it) fake_key(*it, false);
  return sync_checked("key release");
}

bool InputDevice::query_down(std::array<std::uint8_t, 32>* keys, unsigned* mask) {
  // Both requests in one flush and both replies after one round trip (XCB on the Xlib
  // connection; Xlib's buffered requests are flushed ahead of them, so the order holds).
  xcb_connection_t* c = XGetXCBConnection(dpy_);
  const xcb_query_keymap_cookie_t kc = xcb_query_keymap(c);
  const xcb_query_pointer_cookie_t pc =
      xcb_query_pointer(c, static_cast<xcb_window_t>(DefaultRootWindow(dpy_)));
  std::unique_ptr<xcb_query_keymap_reply_t, decltype(&std::free)> kr(
      xcb_query_keymap_reply(c, kc, nullptr), &std::free);
  std::unique_ptr<xcb_query_pointer_reply_t, decltype(&std::free)> pr(
      xcb_query_pointer_reply(c, pc, nullptr), &std::free);
  if (!kr || !pr) return false;
  std::copy(std::begin(kr->keys), std::end(kr->keys), keys->begin());
  *mask = pr->mask;
  return true;
}

Status InputDevice::release_all_checked() {
  if (abandoned_) return display_gone();
  const bool releasing = !held_keys_.empty() || !held_buttons_.empty();
  for (unsigned kc : std::vector<unsigned>(held_keys_.begin(), held_keys_.end())) fake_key(kc, false);
  for (int b : std::vector<int>(held_buttons_.begin(), held_buttons_.end())) fake_button(b, false);
  // Every earlier call ended with its own checked round trip, so only releases sent here can
  // still have an error to read.
  Status synced = releasing ? sync_checked("release") : ok_status();
  take_mapping_events();  // keeps the shared connection's queue bounded between calls
  int keys_down = 0;
  unsigned buttons = 0;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::array<std::uint8_t, 32> keys{};
    unsigned mask = 0;
    if (attempt == 0 && !releasing && down_after_ && down_after_->at_events == events_) {
      // Observed in the round trip that ended the last input call, with nothing sent since
      // (and nothing of ours held): what a query now would find of our input.
      keys = down_after_->keys;
      mask = down_after_->mask;
    } else if (!query_down(&keys, &mask)) {
      return display_gone();
    }
    down_after_.reset();
    keys_down = 0;
    std::vector<unsigned> down;
    for (int kc = 8; kc < 256; ++kc) {
      if (keys[kc / 8] & (1 << (kc % 8))) down.push_back(static_cast<unsigned>(kc));
    }
    keys_down = static_cast<int>(down.size());
    buttons = mask & kButtonMasks;
    if (keys_down == 0 && buttons == 0) break;
    // Something is still down (held through another path): release it through XTest too.
    for (unsigned kc : down) fake_key(kc, false);
    for (int b = 1; b <= 5; ++b) {
      if (buttons & (Button1Mask << (b - 1))) fake_button(b, false);
    }
    XSync(dpy_, False);
  }
  if (keys_down || buttons) {
    return make_error("input-release-failed",
                      "after release " + std::to_string(keys_down) + " key(s) and " +
                          std::to_string(std::popcount(buttons)) + " button(s) are still down");
  }
  if (!synced.ok()) return make_error("input-release-failed", synced.error().message);
  if (restore_error_) {  // a deferred restore failed since the last call: say so now
    Error e = *restore_error_;
    restore_error_.reset();
    return e;
  }
  if (!options_.defer_restore) {
    EVIDENT_TRY(restore_keymap_checked());
  } else if (keymap_dirty() && options_.on_keymap_left_dirty) {
    options_.on_keymap_left_dirty();
  }
  clean_at_events_ = events_;
  return ok_status();
}

bool InputDevice::keymap_dirty() const {
  for (const auto& [kc, ks] : keymap_->current) {
    if (ks[0] || ks[1]) return true;
  }
  return false;
}

void InputDevice::send_remaps(const std::vector<unsigned>& keycodes) {
  Keymap& km = *keymap_;
  for (unsigned kc : keycodes) {
    const auto& cur = km.current[kc];
    // Level 2 empty: [ks, ks] so the key type is one the server derives for identical levels and
    // Shift (e.g. held for a chord) still yields the character.
    KeySym pair[2] = {cur[0], cur[1] ? cur[1] : cur[0]};
    XChangeKeyboardMapping(dpy_, static_cast<int>(kc), 2, pair, 1);
  }
}

Status InputDevice::restore_keymap_checked() {
  if (abandoned_) return display_gone();
  Keymap& km = *keymap_;
  if (!keymap_dirty()) return ok_status();
  // Clients must have decoded every event that used a spare keycode before it changes back.
  EVIDENT_TRY(barrier(nullptr, options_.restore_settle_ms));
  std::vector<unsigned> changed;
  for (auto& [kc, ks] : km.current) {
    if (!ks[0] && !ks[1]) continue;
    std::vector<KeySym> orig = km.original[kc];
    XChangeKeyboardMapping(dpy_, static_cast<int>(kc), static_cast<int>(orig.size()), orig.data(), 1);
    ks = {0, 0};
    changed.push_back(kc);
  }
  XSync(dpy_, False);
  take_x_error(dpy_);
  take_mapping_events();  // the restore's own notifications (read by that XSync)
  for (unsigned kc : changed) {
    int per = 0;
    KeySym* now = XGetKeyboardMapping(dpy_, static_cast<KeyCode>(kc), 1, &per);
    bool same = now != nullptr;
    const std::vector<KeySym>& orig = km.original[kc];
    for (int k = 0; same && k < per; ++k) {
      const KeySym want = k < static_cast<int>(orig.size()) ? orig[static_cast<std::size_t>(k)] : NoSymbol;
      if (now[k] != want) same = false;
    }
    if (now) XFree(now);
    if (!same) {
      Error e = make_error("keymap-restore-failed", "keycode " + std::to_string(kc) +
                                                        " does not have its original keysyms after restore");
      if (options_.defer_restore) restore_error_ = e;
      return e;
    }
  }
  // Nothing remapped any more: stop recording every client's requests until the next remap.
  watch_.reset();
  watch_tried_ = false;
  markers_ = 0;  // a new watch counts its markers from zero
  return ok_status();
}

}  // namespace evident
