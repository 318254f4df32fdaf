// Proves on a private Xvfb that XTest typing arrives exactly in real clients (Tk Entry, xterm -u8,
// GTK via zenity) including characters outside the keymap, that the keymap is restored and
// verified afterwards, and that no key or button is left held.
#include <gtest/gtest.h>

#include "evident/core/json.h"

#include "evident/input/input.h"
#include "evident/input/restorer.h"
#include "evident/input/unicode.h"
#include "evident/testing/files.h"
#include "evident/testing/process.h"
#include "evident/testing/tk.h"
#include "evident/testing/xvfb.h"  // includes Xlib last
#define Status int  // Xlib's Status, which xvfb.h #undef'd for evident::Status
#include <X11/XKBlib.h>
#include <X11/extensions/XTest.h>
#undef Status


namespace evident {
namespace {

using testing::Child;
using testing::last_value;
using testing::submitted;
using testing::Xvfb;

// Every script the requirement names, plus an AltGr-level keymap character (U+00A6).
const std::string kUnicodeText =
    "h\u00e9llo \u2014 \u4e16\u754c \u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627 \u00a6";
const std::string kEmoji = "\U0001F600\U0001F44D";

std::vector<unsigned long> full_keymap(::Display* d) {
  int min = 0, max = 0, per = 0;
  XDisplayKeycodes(d, &min, &max);
  KeySym* s = XGetKeyboardMapping(d, static_cast<KeyCode>(min), max - min + 1, &per);
  std::vector<unsigned long> v(s, s + (max - min + 1) * per);
  XFree(s);
  return v;
}

bool all_keys_up(::Display* d) {
  char keys[32];
  XQueryKeymap(d, keys);
  for (char k : keys) {
    if (k) return false;
  }
  Window r, c;
  int a, b, e, f;
  unsigned mask = 0;
  XQueryPointer(d, DefaultRootWindow(d), &r, &c, &a, &b, &e, &f, &mask);
  return (mask & (Button1Mask | Button2Mask | Button3Mask | Button4Mask | Button5Mask | ShiftMask |
                  ControlMask | Mod1Mask | Mod5Mask)) == 0;
}

struct Session {
  Xvfb xvfb;
  ::Display* dpy = nullptr;
  std::unique_ptr<InputDevice> input;
  Session() {
    xvfb.export_env();  // the real clients (Tk, xterm, zenity) connect through DISPLAY
    dpy = xvfb.open();
    EXPECT_NE(dpy, nullptr);
    auto dev = InputDevice::create(dpy);
    EXPECT_TRUE(dev.ok()) << (dev.ok() ? "" : dev.error().message);
    if (dev.ok()) input = std::move(*dev);
  }
  ~Session() {
    input.reset();
    if (dpy) XCloseDisplay(dpy);
  }
};

// Starts the Tk client (shared harness helper) and fails the test if it never became ready.
Child start_tk(const std::string& mode = "entry") {
  Child tk = testing::start_tk(mode);
  EXPECT_NE(tk.buffer.find("\"ready\""), std::string::npos) << "Tk client never ready";
  return tk;
}

// Types `text` into a fresh Tk Entry and returns what the Entry holds once it has as many code
// points as were typed (or the deadline passed).
std::string type_into_tk(Session& s, const std::string& text, Child& tk) {
  auto cps = decode_utf8(text);
  EXPECT_TRUE(cps.ok());
  auto rep = s.input->type(*cps);
  EXPECT_TRUE(rep.ok()) << (rep.ok() ? "" : rep.error().message);
  if (rep.ok()) {
    std::fprintf(stderr, "typed %d chars, %d remapped, %d fetch waits, %d barriers, %d timeouts\n", rep->characters,
                 rep->remapped, rep->fetch_waits, rep->barriers, rep->barrier_timeouts);
  }
  tk.read_until([&](const std::string& b) { return last_value(b) == text; }, 5000);
  return last_value(tk.buffer);
}

TEST(InputX11, TkEntryReceivesAsciiAndShiftedExactlyAndKeymapIsUntouched) {
  Session s;
  ASSERT_TRUE(s.input);
  const auto before = full_keymap(s.dpy);
  Child tk = start_tk();
  std::string ascii;
  for (int i = 0; i < 100; ++i) ascii.push_back(static_cast<char>(0x20 + (i * 7) % 95));
  EXPECT_EQ(type_into_tk(s, ascii, tk), ascii);
  ASSERT_TRUE(s.input->release_all_checked().ok());
  EXPECT_EQ(full_keymap(s.dpy), before);
  EXPECT_TRUE(all_keys_up(s.dpy));
}

// Proves: the pointer answer that ends a click/move/drag is where the server put the pointer, an
// X error during the events is still reported when that answer is the round trip, and
// released_clean() says exactly whether a release check would repeat the last one.
TEST(InputX11, PointerAnswerEndsTheCallAndCleanReleaseIsTracked) {
  Session s;
  ASSERT_TRUE(s.input);
  EXPECT_FALSE(s.input->released_clean());  // no check yet
  std::pair<int, int> p{-1, -1};
  ASSERT_TRUE(s.input->click(37, 41, 1, 1, &p).ok());
  EXPECT_EQ(p, std::make_pair(37, 41));
  ASSERT_TRUE(s.input->move(5, 6, &p).ok());
  EXPECT_EQ(p, std::make_pair(5, 6));
  ASSERT_TRUE(s.input->drag(10, 10, 90, 70, 1, &p).ok());
  EXPECT_EQ(p, std::make_pair(90, 70));
  EXPECT_EQ(s.input->pointer().value(), std::make_pair(90, 70));
  EXPECT_FALSE(s.input->released_clean());
  ASSERT_TRUE(s.input->release_all_checked().ok());
  EXPECT_TRUE(s.input->released_clean());
  ASSERT_TRUE(s.input->move(1, 1).ok());
  EXPECT_FALSE(s.input->released_clean());  // input since the check
  ASSERT_TRUE(s.input->release_all_checked().ok());
  EXPECT_TRUE(s.input->released_clean());
  // Button 250 does not exist: the server answers the fake press with BadValue.
  Status bad = s.input->click(3, 3, 250, 1, &p);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, "input-dispatch-failed");
  Status bad_sync = s.input->click(3, 3, 250, 1);
  ASSERT_FALSE(bad_sync.ok());
  EXPECT_EQ(bad_sync.error().code, "input-dispatch-failed");
  EXPECT_TRUE(s.input->release_all_checked().ok());
  EXPECT_TRUE(all_keys_up(s.dpy));
}

// Proves: the keys and buttons observed in the click's own round trip are what the release check
// uses, so a key another client holds down then is still found and released, and a button held
// across the check (time passed: forget_down_state) is found by a fresh query.
TEST(InputX11, ReleaseCheckFromTheClicksRoundTripStillFindsWhatIsDown) {
  Session s;
  ASSERT_TRUE(s.input);
  ::Display* other = s.xvfb.open();
  ASSERT_NE(other, nullptr);
  const KeyCode kc = XKeysymToKeycode(other, XStringToKeysym("b"));
  ASSERT_NE(kc, 0);
  XTestFakeKeyEvent(other, kc, True, CurrentTime);  // held by another client
  XSync(other, False);
  std::pair<int, int> p;
  ASSERT_TRUE(s.input->click(20, 20, 1, 1, &p).ok());
  EXPECT_FALSE(all_keys_up(s.dpy));
  ASSERT_TRUE(s.input->release_all_checked().ok());  // found in the click's answer, released
  EXPECT_TRUE(all_keys_up(s.dpy));

  ASSERT_TRUE(s.input->click(30, 30, 1, 1, &p).ok());
  XTestFakeButtonEvent(other, 1, True, CurrentTime);  // pressed after the click's answer
  XSync(other, False);
  s.input->forget_down_state();                       // as the executor does after a wait
  ASSERT_TRUE(s.input->release_all_checked().ok());   // a fresh query finds and releases it
  Window root = 0, child = 0;
  int rx = 0, ry = 0, wx = 0, wy = 0;
  unsigned mask = 0;
  XQueryPointer(s.dpy, DefaultRootWindow(s.dpy), &root, &child, &rx, &ry, &wx, &wy, &mask);
  EXPECT_EQ(mask & (Button1Mask | Button2Mask | Button3Mask), 0u);
  XCloseDisplay(other);
}

// Latin-1 outside the keymap, a dash, CJK, Hebrew, Arabic, and U+00A6 (broken bar: level 4 of
// keycode 94 on the us map, Shift+AltGr) arrive exactly in a Tk Entry.
TEST(InputX11, TkEntryReceivesUnicodeExactly) {
  Session s;
  ASSERT_TRUE(s.input);
  const auto before = full_keymap(s.dpy);
  Child tk = start_tk();
  const std::string uni = kUnicodeText;
  EXPECT_EQ(type_into_tk(s, uni, tk), uni);
  ASSERT_TRUE(s.input->release_all_checked().ok());
  EXPECT_EQ(full_keymap(s.dpy), before);
  EXPECT_TRUE(all_keys_up(s.dpy));
}

// Proves that a text with a character that has no key is refused before anything is sent, even
// with Caps Lock locked (typing toggles it around the text): no XTest event, the lock unchanged.
TEST(InputX11, TextWithAKeylessCharacterInjectsNothing) {
  Session s;
  ASSERT_TRUE(s.input);
  ASSERT_TRUE(s.input->press_chord(KeyChord{{0xffe5}}).ok());  // Caps_Lock
  ASSERT_TRUE(s.input->release_chord(KeyChord{{0xffe5}}).ok());
  XkbStateRec st{};
  XkbGetState(s.dpy, XkbUseCoreKbd, &st);
  ASSERT_TRUE(st.locked_mods & LockMask);
  const std::uint64_t before = s.input->event_count();
  auto r = s.input->type(U"a\u0001b");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "input-dispatch-failed");
  EXPECT_EQ(s.input->event_count(), before);
  XkbGetState(s.dpy, XkbUseCoreKbd, &st);
  EXPECT_TRUE(st.locked_mods & LockMask);
}

TEST(InputX11, RemappedKeymapIsRestoredAndVerified) {
  Session s;
  ASSERT_TRUE(s.input);
  const auto before = full_keymap(s.dpy);
  auto cps = decode_utf8("\u4e16\u754c\u2014\u00e9");
  auto rep = s.input->type(*cps);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->remapped, 4);
  EXPECT_NE(full_keymap(s.dpy), before);
  EXPECT_TRUE(s.input->keymap_dirty());
  ASSERT_TRUE(s.input->release_all_checked().ok());
  EXPECT_FALSE(s.input->keymap_dirty());
  EXPECT_EQ(full_keymap(s.dpy), before);
  EXPECT_TRUE(all_keys_up(s.dpy));
}

// The input connection lives as long as its display; the MappingNotify events every keymap
// change sends to all clients (ours included) must not pile up in its Xlib queue.
TEST(InputX11, EventQueueOfTheInputConnectionStaysBounded) {
  Session s;
  ASSERT_TRUE(s.input);
  auto cps = decode_utf8("\u4e16\u754c\u2014\u00e9");
  ASSERT_TRUE(cps.ok());
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(s.input->type(*cps).ok());
    ASSERT_TRUE(s.input->release_all_checked().ok());  // restores: more keymap changes
  }
  XSync(s.dpy, False);  // reads whatever the server sent into the queue
  EXPECT_LE(XQLength(s.dpy), 4) << "events queued on the input connection";
}

// The device refreshes its keymap index only after a change it did not make; such a change (by
// another client, on a non-spare keycode) is seen before the next type.
TEST(InputX11, AnotherClientsKeymapChangeIsSeenByTheNextType) {
  Session s;
  ASSERT_TRUE(s.input);
  auto a = decode_utf8("a");
  ASSERT_TRUE(a.ok());
  auto rep = s.input->type(*a);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->remapped, 0);  // 'a' is on the keymap

  ::Display* other = s.xvfb.open();
  ASSERT_NE(other, nullptr);
  const KeyCode kc = XKeysymToKeycode(other, XStringToKeysym("a"));
  ASSERT_NE(kc, 0);
  int per = 0;
  KeySym* orig = XGetKeyboardMapping(other, kc, 1, &per);
  ASSERT_NE(orig, nullptr);
  std::vector<KeySym> none(static_cast<std::size_t>(per), NoSymbol);
  XChangeKeyboardMapping(other, kc, per, none.data(), 1);  // 'a' leaves the keymap
  XSync(other, False);
  // Our connection must have read the notification; a change racing with typing is racy in
  // any design, so the test orders it explicitly.
  XSync(s.dpy, False);

  rep = s.input->type(*a);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->remapped, 1) << "the stale index still had 'a' on its old keycode";
  ASSERT_TRUE(s.input->release_all_checked().ok());

  XChangeKeyboardMapping(other, kc, per, orig, 1);
  XSync(other, False);
  XFree(orig);
  XCloseDisplay(other);
  XSync(s.dpy, False);
  rep = s.input->type(*a);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->remapped, 0) << "the restored 'a' was not seen";
  ASSERT_TRUE(s.input->release_all_checked().ok());
}

// More distinct characters than one chunk (2 per spare keycode) reuse keycodes after the decode
// barrier, and Tk still decodes every chunk with its own mapping.
TEST(InputX11, MoreDistinctCharactersThanSpareKeycodesPassTheBarrierExactly) {
  Session s;
  ASSERT_TRUE(s.input);
  Child tk = start_tk();
  // 100 distinct CJK characters: more than two per spare keycode of Xvfb's default map (2 x 19),
  // so keycodes are reused after the RECORD barrier.
  std::string text;
  for (char32_t cp = 0x4E00; cp < 0x4E00 + 100; ++cp) {
    text += static_cast<char>(0xE0 | (cp >> 12));
    text += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    text += static_cast<char>(0x80 | (cp & 0x3F));
  }
  EXPECT_EQ(type_into_tk(s, text, tk), text);
  ASSERT_TRUE(s.input->release_all_checked().ok());
  EXPECT_TRUE(all_keys_up(s.dpy));
}

// Emoji (beyond the BMP) typed into Tk 8.6: what the Entry holds is read back and must be exact.
TEST(InputX11, TkEntryReceivesEmojiExactly) {
  Session s;
  ASSERT_TRUE(s.input);
  Child tk = start_tk();
  const std::string text = "a" + kEmoji + "b";
  EXPECT_EQ(type_into_tk(s, text, tk), text);
  ASSERT_TRUE(s.input->release_all_checked().ok());
  EXPECT_TRUE(all_keys_up(s.dpy));
}

// A long-lived device with a deferred restore keeps spare keycodes mapped after the batch, so a
// second type call of the same characters sends no remap and waits for no client, both arrive
// exactly; once no key was sent for the idle time the restorer puts the original keymap back and
// verifies it.
TEST(InputX11, DeferredRestoreReusesMappingsThenRestoresOnceIdle) {
  Xvfb xvfb;
  xvfb.export_env();
  ::Display* dpy = xvfb.open();
  ASSERT_NE(dpy, nullptr);
  const auto before = full_keymap(dpy);
  std::mutex mu;
  std::unique_ptr<KeymapRestorer> restorer;
  InputOptions opts;
  opts.defer_restore = true;
  opts.on_keymap_left_dirty = [&] { restorer->arm(); };
  auto dev = InputDevice::create(dpy, opts);
  ASSERT_TRUE(dev.ok());
  std::unique_ptr<InputDevice> input = std::move(*dev);
  restorer = std::make_unique<KeymapRestorer>(*input, mu, 300);
  Child tk = start_tk();
  const std::string text = "h\u00e9llo \u2014 \u4e16\u754c";
  auto cps = decode_utf8(text);
  ASSERT_TRUE(cps.ok());
  for (int round = 0; round < 2; ++round) {
    TypeReport rep;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto r = input->type(*cps);
      ASSERT_TRUE(r.ok()) << r.error().message;
      rep = *r;
      KeyChord enter{{0xff0d}};  // the Tk client reports and clears its value on Return
      ASSERT_TRUE(input->press_chord(enter).ok());
      ASSERT_TRUE(input->release_chord(enter).ok());
      ASSERT_TRUE(input->release_all_checked().ok());
      EXPECT_TRUE(input->keymap_dirty()) << "the mapping is kept after the batch";
    }
    if (round == 0) {
      EXPECT_EQ(rep.remapped, 4);
      EXPECT_EQ(rep.fetch_waits, 1);
    } else {
      EXPECT_EQ(rep.remapped, 0) << "characters still mapped need no remap";
      EXPECT_EQ(rep.fetch_waits, 0);
    }
    tk.read_until([&](const std::string& b) { return submitted(b).size() > static_cast<std::size_t>(round); },
                  5000);
    const auto got = submitted(tk.buffer);
    ASSERT_GT(got.size(), static_cast<std::size_t>(round));
    EXPECT_EQ(got[static_cast<std::size_t>(round)], text) << "round " << round;
  }
  ASSERT_TRUE(restorer->wait_restores(1, 10000));
  ASSERT_TRUE(restorer->last_status().has_value());
  EXPECT_TRUE(restorer->last_status()->ok());
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_FALSE(input->keymap_dirty());
  }
  EXPECT_EQ(full_keymap(dpy), before);
  // After the restore (and the RECORD watch closed with it), typing remaps again with full
  // evidence: no wait ends on its time bound.
  {
    std::lock_guard<std::mutex> lock(mu);
    auto r = input->type(*cps);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->remapped, 4);
    EXPECT_EQ(r->fetch_waits, 1);
    EXPECT_EQ(r->barrier_timeouts, 0);
    KeyChord enter{{0xff0d}};
    ASSERT_TRUE(input->press_chord(enter).ok());
    ASSERT_TRUE(input->release_chord(enter).ok());
    ASSERT_TRUE(input->release_all_checked().ok());
  }
  tk.read_until([&](const std::string& b) { return submitted(b).size() > 2; }, 5000);
  const auto got = submitted(tk.buffer);
  ASSERT_GT(got.size(), 2u);
  EXPECT_EQ(got[2], text) << "after the restore";
  ASSERT_TRUE(restorer->wait_restores(2, 10000));
  EXPECT_TRUE(restorer->last_status()->ok());
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(input->barrier_timeouts(), 0u) << "every wait and restore barrier passed on evidence";
  }
  EXPECT_EQ(full_keymap(dpy), before);
  restorer.reset();
  input.reset();
  XCloseDisplay(dpy);
}

TEST(InputX11, XtermU8ReceivesUnicodeExactly) {
  Session s;
  ASSERT_TRUE(s.input);
  const std::string out = s.xvfb.dir() + "/xterm.out";
  const std::string ready = s.xvfb.dir() + "/xterm.ready";
  setenv("LC_ALL", "C.UTF-8", 1);
  Child xt = testing::spawn({"xterm", "-u8", "-T", "evident-xterm", "-geometry", "80x10+0+0", "-e", "/bin/sh", "-c",
                          "stty -icanon; : > '" + ready + "'; exec cat > '" + out + "'"},
                         false);
  testing::wait_file(ready, [&](const std::string&) { return testing::path_exists(ready); }, 15000);
  ASSERT_EQ(access(ready.c_str(), F_OK), 0);
  // The shell can be running before xterm's window is mapped (seen under load: every key went to
  // the root window): wait until it is viewable, then put the pointer on it.
  ::Display* probe = s.xvfb.open();
  const Window w = testing::wait_window(probe, "evident-xterm", 15000);
  XCloseDisplay(probe);
  ASSERT_NE(w, 0u);
  ASSERT_TRUE(s.input->move(100, 50).ok());  // focus follows the pointer without a window manager
  const std::string text = kUnicodeText + kEmoji + "\tA\n";
  auto cps = decode_utf8(text);
  ASSERT_TRUE(s.input->type(*cps).ok());
  ASSERT_TRUE(s.input->release_all_checked().ok());
  testing::wait_file(out, [&](const std::string& got) { return got.size() >= text.size(); }, 20000);
  EXPECT_EQ(testing::slurp(out), text);
}

// GTK 3 (zenity --entry, keys arrive as XInput2 events) receives every script and emoji exactly,
// and the keymap restore right after Return does not change what it decoded.
TEST(InputX11, ZenityGtkEntryReceivesUnicodeExactly) {
  Session s;
  ASSERT_TRUE(s.input);
  Child z = testing::spawn({"zenity", "--entry", "--title", "evident-zenity", "--text", "t"}, true);
  ::Display* probe = s.xvfb.open();
  Window w = testing::wait_window(probe, "evident-zenity", 20000);
  ASSERT_NE(w, 0u);
  XWindowAttributes a;
  XGetWindowAttributes(probe, w, &a);
  int rx = 0, ry = 0;
  Window child;
  XTranslateCoordinates(probe, w, DefaultRootWindow(probe), a.width / 2, a.height / 2, &rx, &ry, &child);
  XCloseDisplay(probe);
  ASSERT_TRUE(s.input->move(rx, ry).ok());
  const auto before = full_keymap(s.dpy);
  const std::string text = kUnicodeText + " " + kEmoji;
  auto cps = decode_utf8(text);
  // GTK maps its window and only then focuses the entry: type once the pointer is in and GTK
  // reported its focus (the window exists and is viewable; GTK takes focus on EnterNotify).
  ASSERT_TRUE(s.input->type(*cps).ok());
  KeyChord enter{{0xff0d}};
  ASSERT_TRUE(s.input->press_chord(enter).ok());
  ASSERT_TRUE(s.input->release_chord(enter).ok());
  ASSERT_TRUE(s.input->release_all_checked().ok());
  z.read_until([](const std::string& b) { return b.find('\n') != std::string::npos; }, 10000);
  std::string line = z.buffer.substr(0, z.buffer.find('\n'));
  EXPECT_EQ(line, text);
  EXPECT_EQ(full_keymap(s.dpy), before);
  EXPECT_TRUE(all_keys_up(s.dpy));
}

}  // namespace
}  // namespace evident
