// Conversions: expected values worked out by hand from the rules in docs/agents.md.
#include <gtest/gtest.h>

#include "evident/agents/convert.h"

namespace evident::agents {
namespace {

TEST(Convert, ImageToDisplayIsIdentityAtEqualSizes) {
  for (int x : {0, 1, 639, 1279}) EXPECT_EQ(image_to_display(x, 1280, 1280), x);
  EXPECT_FALSE(image_to_display(1280, 1280, 1280));
  EXPECT_FALSE(image_to_display(-1, 1280, 1280));
  EXPECT_FALSE(image_to_display(0, 0, 1280));
}

TEST(Convert, ImageToDisplayTakesThePixelCentre) {
  // 1429 image px over 1920 display px: floor((2x+1)*1920/2858).
  EXPECT_EQ(image_to_display(0, 1429, 1920), 0);
  EXPECT_EQ(image_to_display(714, 1429, 1920), 960);
  EXPECT_EQ(image_to_display(1428, 1429, 1920), 1919);
  // Half size: image px 10 covers display 20..21; centre 21 -> floor(21*2/2)=21.
  EXPECT_EQ(image_to_display(10, 640, 1280), 21);
}

TEST(Convert, EdgesAndNormalizedGrid) {
  EXPECT_EQ(image_edge_to_display(0, 640, 1280), 0);
  EXPECT_EQ(image_edge_to_display(640, 640, 1280), 1280);
  EXPECT_EQ(image_edge_to_display(333, 1000, 1920), 639);  // 333*1920/1000 = 639.36
  EXPECT_FALSE(image_edge_to_display(641, 640, 1280));
  EXPECT_EQ(normalized_to_display(0, 1280), 0);
  EXPECT_EQ(normalized_to_display(500, 1280), 640);
  EXPECT_EQ(normalized_to_display(999, 1280), 1278);  // 1278.72
  EXPECT_EQ(normalized_to_display(999, 800), 799);    // 799.2
  EXPECT_FALSE(normalized_to_display(1000, 1280));
  EXPECT_FALSE(normalized_to_display(-1, 1280));
}

TEST(Convert, WheelClicksAndSeconds) {
  EXPECT_EQ(pixels_to_wheel_clicks(0), 0);
  EXPECT_EQ(pixels_to_wheel_clicks(1), 1);
  EXPECT_EQ(pixels_to_wheel_clicks(149), 1);
  EXPECT_EQ(pixels_to_wheel_clicks(150), 2);
  EXPECT_EQ(pixels_to_wheel_clicks(-300), 3);
  EXPECT_EQ(pixels_to_wheel_clicks(640), 6);
  EXPECT_EQ(seconds_to_ms(0), 0);
  EXPECT_EQ(seconds_to_ms(5), 5000);
  EXPECT_FALSE(seconds_to_ms(-1));
}

TEST(Convert, KeyNames) {
  EXPECT_EQ(provider_key_to_engine("CTRL"), "ctrl");
  EXPECT_EQ(provider_key_to_engine("Control"), "ctrl");
  EXPECT_EQ(provider_key_to_engine("ControlOrMeta"), "ctrl");
  EXPECT_EQ(provider_key_to_engine("cmd"), "super");
  EXPECT_EQ(provider_key_to_engine("Meta"), "super");
  EXPECT_EQ(provider_key_to_engine("ENTER"), "Return");
  EXPECT_EQ(provider_key_to_engine("Return"), "Return");
  EXPECT_EQ(provider_key_to_engine("ArrowLeft"), "Left");
  EXPECT_EQ(provider_key_to_engine("PAGEDOWN"), "Next");
  EXPECT_EQ(provider_key_to_engine("Page_Up"), "Prior");
  EXPECT_EQ(provider_key_to_engine("ESC"), "Escape");
  EXPECT_EQ(provider_key_to_engine(" "), "space");
  EXPECT_EQ(provider_key_to_engine("A"), "a");
  EXPECT_EQ(provider_key_to_engine("+"), "plus");
  EXPECT_EQ(provider_key_to_engine("/"), "slash");
  EXPECT_EQ(provider_key_to_engine("f5"), "F5");
  EXPECT_EQ(provider_key_to_engine("F24"), "F24");
  EXPECT_EQ(provider_key_to_engine("KP_Enter"), "KP_Enter");
  EXPECT_EQ(provider_key_to_engine("XF86AudioMute"), "XF86AudioMute");  // X keysym, passed through
  EXPECT_FALSE(provider_key_to_engine(""));
  EXPECT_FALSE(provider_key_to_engine("a b"));
  EXPECT_FALSE(provider_key_to_engine("ctrl+a"));
  EXPECT_FALSE(provider_key_to_engine("\x01"));
  EXPECT_FALSE(provider_key_to_engine(std::string(65, 'a')));
}

TEST(Convert, ChordsAndCombos) {
  EXPECT_EQ(keys_to_chord({"CTRL", "SHIFT", "T"}), "ctrl+shift+t");
  EXPECT_EQ(keys_to_chord({"ctrl", "+"}), "ctrl+plus");
  EXPECT_FALSE(keys_to_chord({}));
  EXPECT_EQ(combo_to_chord("control+a"), "ctrl+a");
  EXPECT_EQ(combo_to_chord("Control+Shift+ArrowLeft"), "ctrl+shift+Left");
  EXPECT_EQ(combo_to_chord("ctrl++"), "ctrl+plus");
  EXPECT_EQ(combo_to_chord("Return"), "Return");
  EXPECT_FALSE(combo_to_chord("ctrl+"));
  EXPECT_FALSE(combo_to_chord("ctrl++a"));
  EXPECT_FALSE(combo_to_chord(""));
  auto seq = xdotool_keys_to_chords("ctrl+a Delete");
  ASSERT_TRUE(seq);
  EXPECT_EQ(*seq, (std::vector<std::string>{"ctrl+a", "Delete"}));
  EXPECT_FALSE(xdotool_keys_to_chords("   "));
  std::string many;
  for (int i = 0; i < 17; ++i) many += "a ";
  EXPECT_FALSE(xdotool_keys_to_chords(many));
}

TEST(Convert, Base64MatchesRfc4648Vectors) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode(std::string("\xff\x00\x80", 3)), "/wCA");
}

}  // namespace
}  // namespace evident::agents
