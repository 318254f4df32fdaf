// Key-name parsing and Unicode<->keysym conversions (pure logic, no X server).
#include <X11/keysym.h>
#include <gtest/gtest.h>

#include "evident/input/keys.h"
#include "evident/input/unicode.h"

namespace evident {
namespace {

std::vector<unsigned long> syms(const std::string& spec) {
  auto r = parse_key_chord(spec, "action-invalid");
  EXPECT_TRUE(r.ok()) << spec;
  return r.ok() ? r->keysyms : std::vector<unsigned long>{};
}

TEST(Keys, ChordsAndAliases) {
  EXPECT_EQ(syms("ctrl+shift+t"), (std::vector<unsigned long>{XK_Control_L, XK_Shift_L, XK_t}));
  EXPECT_EQ(syms("Return"), (std::vector<unsigned long>{XK_Return}));
  EXPECT_EQ(syms("enter"), (std::vector<unsigned long>{XK_Return}));
  EXPECT_EQ(syms("ESC"), (std::vector<unsigned long>{XK_Escape}));
  EXPECT_EQ(syms("cmd+a"), (std::vector<unsigned long>{XK_Super_L, XK_a}));
  EXPECT_EQ(syms("win"), (std::vector<unsigned long>{XK_Super_L}));
  EXPECT_EQ(syms("option+F4"), (std::vector<unsigned long>{XK_Alt_L, XK_F4}));
  EXPECT_EQ(syms("f24"), (std::vector<unsigned long>{XK_F24}));
  EXPECT_EQ(syms("pgup"), (std::vector<unsigned long>{XK_Prior}));
  EXPECT_EQ(syms("PageDown"), (std::vector<unsigned long>{XK_Next}));
  EXPECT_EQ(syms("del"), (std::vector<unsigned long>{XK_Delete}));
  EXPECT_EQ(syms("bksp"), (std::vector<unsigned long>{XK_BackSpace}));
  EXPECT_EQ(syms("up"), (std::vector<unsigned long>{XK_Up}));
  EXPECT_EQ(syms("KP_Enter"), (std::vector<unsigned long>{XK_KP_Enter}));
  EXPECT_EQ(syms("kp_add"), (std::vector<unsigned long>{XK_KP_Add}));
  EXPECT_EQ(syms("ctrl+A"), (std::vector<unsigned long>{XK_Control_L, XK_a}));
  // A single letter alone is that character: "G" is the keysym G (typed with Shift), "g" is g.
  EXPECT_EQ(syms("G"), (std::vector<unsigned long>{XK_G}));
  EXPECT_EQ(syms("g"), (std::vector<unsigned long>{XK_g}));
  EXPECT_EQ(syms("shift+g"), (std::vector<unsigned long>{XK_Shift_L, XK_g}));
  EXPECT_EQ(syms("ctrl++"), (std::vector<unsigned long>{XK_Control_L, XK_plus}));
  EXPECT_EQ(syms("+"), (std::vector<unsigned long>{XK_plus}));
  EXPECT_EQ(syms("ISO_Level3_Shift"), (std::vector<unsigned long>{XK_ISO_Level3_Shift}));
  EXPECT_EQ(syms("é"), (std::vector<unsigned long>{XK_eacute}));
}

TEST(Keys, UnknownKeysFailWithoutEchoingTheName) {
  for (const char* bad : {"", "ctrl+", "hyperdrive", "ctrl+secretword", "F25", "a+b+c+d+e+f+g+h+i"}) {
    auto r = parse_key_chord(bad, "session-action");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, "session-action");
    EXPECT_EQ(r.error().message.find("secretword"), std::string::npos);
    EXPECT_EQ(r.error().message.find("hyperdrive"), std::string::npos);
  }
}

TEST(Unicode, DecodeAndKeysyms) {
  auto t = decode_utf8("h\xC3\xA9\xE2\x80\x94\xE4\xB8\x96\xF0\x9F\x98\x80");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, (std::u32string{U'h', 0xE9, 0x2014, 0x4E16, 0x1F600}));
  EXPECT_FALSE(decode_utf8("\xC3").ok());
  EXPECT_FALSE(decode_utf8("\xED\xA0\x80").ok());  // surrogate
  EXPECT_FALSE(decode_utf8("\xC0\xAF").ok());      // overlong
  EXPECT_EQ(keysym_for_codepoint(U'a'), static_cast<unsigned long>(XK_a));
  EXPECT_EQ(keysym_for_codepoint(0xE9), static_cast<unsigned long>(XK_eacute));
  EXPECT_EQ(keysym_for_codepoint(0x2014), 0xaa9UL);  // legacy keysym
  EXPECT_EQ(keysym_for_codepoint(0x4E16), 0x01004E16UL);
  EXPECT_EQ(keysym_for_codepoint(U'\n'), static_cast<unsigned long>(XK_Return));
  EXPECT_EQ(keysym_for_codepoint(U'\t'), static_cast<unsigned long>(XK_Tab));
  EXPECT_EQ(keysym_for_codepoint(0x07), 0UL);
  EXPECT_EQ(codepoint_for_keysym(0xaa9UL), 0x2014U);
  EXPECT_EQ(codepoint_for_keysym(0x01004E16UL), 0x4E16U);
  EXPECT_EQ(codepoint_for_keysym(0xce0UL), 0x05D0U);
  EXPECT_EQ(codepoint_for_keysym(XK_F1), 0U);
}

}  // namespace
}  // namespace evident
