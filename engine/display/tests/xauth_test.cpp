// Unit tests for the Xauthority encoder/decoder, generation tokens, argv digests and options.
#include <gtest/gtest.h>

#include "evident/display/display.h"
#include "evident/display/xauth.h"

namespace evident {
namespace {

TEST(XauthTest, EncodesTheLibXauLayoutByteForByte) {
  Cookie c{};
  for (int i = 0; i < 16; ++i) c[i] = static_cast<std::uint8_t>(i + 1);
  std::string e = encode_xauth_entry(kFamilyWild, "", "", c);
  // family 0xffff, empty address, empty number, 18-byte name, 16-byte data.
  std::string expected("\xff\xff\x00\x00\x00\x00\x00\x12", 8);
  expected += "MIT-MAGIC-COOKIE-1";
  expected += std::string("\x00\x10", 2);
  for (int i = 0; i < 16; ++i) expected.push_back(static_cast<char>(i + 1));
  EXPECT_EQ(e, expected);
  auto back = decode_xauth_cookie(e);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, c);
}

TEST(XauthTest, DecodeSkipsOtherEntriesAndRejectsTruncation) {
  Cookie c = new_cookie();
  std::string other;
  other += std::string("\x01\x00\x00\x01", 4) + "h" + std::string("\x00\x01", 2) + "7" +
           std::string("\x00\x03", 2) + "XYZ" + std::string("\x00\x01", 2) + "q";
  std::string file = other + encode_xauth_entry(kFamilyLocal, "host", "3", c);
  auto got = decode_xauth_cookie(file);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, c);
  EXPECT_FALSE(decode_xauth_cookie(file.substr(0, file.size() - 3)).has_value());
  EXPECT_FALSE(decode_xauth_cookie("").has_value());
}

TEST(XauthTest, CookiesAreFresh) { EXPECT_NE(new_cookie(), new_cookie()); }

TEST(DisplayValuesTest, GenerationTokens) {
  EXPECT_TRUE(is_generation_token("gen-0123456789abcdef0123456789abcdef"));
  EXPECT_FALSE(is_generation_token("gen-0123456789ABCDEF0123456789abcdef"));
  EXPECT_FALSE(is_generation_token("gen-0123456789abcdef0123456789abcde"));
  EXPECT_FALSE(is_generation_token("ses-0123456789abcdef0123456789abcdef"));
  EXPECT_FALSE(is_generation_token(""));
}

TEST(DisplayValuesTest, ArgvDigestIsShaOfCompactJsonArray) {
  // Expected digest of the literal bytes ["xterm","-e","a \"b\""], computed independently
  // (printf '["xterm","-e","a \\"b\\""]' | sha256sum).
  EXPECT_EQ(argv_sha256({"xterm", "-e", "a \"b\""}),
            "57d937e852909bfbcd915805c607f87c306b9eea155b4a8a2064ec7febe69948");
  // printf '["true"]' | sha256sum
  EXPECT_EQ(argv_sha256({"true"}),
            "8894cdad26ef749f311249c169d54f2f48118502d7fdacfad532d5d190fb98ff");
}

TEST(DisplayValuesTest, OptionRanges) {
  EXPECT_TRUE(validate_display_options({}).ok());
  EXPECT_EQ(validate_display_options(DisplayOptions::of(10, 800, 24, 96)).error().code, "display-args");
  EXPECT_EQ(validate_display_options(DisplayOptions::of(1280, 800, 8, 96)).error().code, "display-args");
  EXPECT_EQ(validate_display_options(DisplayOptions::of(1280, 800, 24, 5000)).error().code, "display-args");
}

}  // namespace
}  // namespace evident
