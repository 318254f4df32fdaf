// The pure parts of verified `type` (docs/accessibility.md, "Verified type"): the expected text
// after typing (the selection replaced, else an insertion at the caret, in characters, offsets
// clamped) and the failed detail (lengths and the first differing position, never content).
// The expected values are written out by hand.
#include <gtest/gtest.h>

#include <string>

#include "evident/accessibility/accessibility.h"

namespace evident {
namespace {

std::u32string cp(const char* s) { return ax_code_points(s); }

TEST(AxReadback, CodePointsOfUtf8) {
  EXPECT_EQ(ax_code_points(""), U"");
  EXPECT_EQ(ax_code_points("abc"), U"abc");
  EXPECT_EQ(ax_code_points("Zo\xC3\xAB \xE4\xB8\x96 \xF0\x9F\x98\x80"), U"Zo\u00EB \u4E16 \U0001F600");
}

TEST(AxReadback, InsertsAtTheCaretWithoutSelection) {
  EXPECT_EQ(ax_expected_after_typing(U"", 0, 0, 0, U"hello"), U"hello");
  EXPECT_EQ(ax_expected_after_typing(U"hello", 5, 5, 5, U"!"), U"hello!");
  EXPECT_EQ(ax_expected_after_typing(U"hello", 2, 2, 2, U"XY"), U"heXYllo");
  EXPECT_EQ(ax_expected_after_typing(U"hello", 0, 0, 0, U"> "), U"> hello");
  // Offsets count characters, not bytes.
  EXPECT_EQ(ax_expected_after_typing(cp("Zo\xC3\xAB!"), 3, 3, 3, U"\u4E16"), U"Zo\u00EB\u4E16!");
}

TEST(AxReadback, ReplacesTheSelection) {
  EXPECT_EQ(ax_expected_after_typing(U"heXYllo", 4, 2, 4, U"Z"), U"heZllo");
  // A selection made backwards (caret at its start) is the same range.
  EXPECT_EQ(ax_expected_after_typing(U"heXYllo", 2, 4, 2, U"Z"), U"heZllo");
  EXPECT_EQ(ax_expected_after_typing(U"hello", 5, 0, 5, U"new"), U"new");
}

TEST(AxReadback, ClampsOffsetsToTheText) {
  EXPECT_EQ(ax_expected_after_typing(U"abc", 9, 9, 9, U"d"), U"abcd");
  EXPECT_EQ(ax_expected_after_typing(U"abc", -1, -1, -1, U"z"), U"zabc");
  EXPECT_EQ(ax_expected_after_typing(U"abc", 0, 1, 99, U"z"), U"az");
}

TEST(AxReadback, DifferenceSaysLengthsAndPositionOnly) {
  EXPECT_EQ(ax_text_difference(U"hello world", U"HELLO WORLD"),
            "expected 11 characters, observed 11; first difference at character 0");
  EXPECT_EQ(ax_text_difference(U"abcdefgh", U"abcd"),
            "expected 8 characters, observed 4; first difference at character 4");
  EXPECT_EQ(ax_text_difference(U"ab", U"abX"),
            "expected 2 characters, observed 3; first difference at character 2");
  EXPECT_EQ(ax_text_difference(U"Zo\u00EBx", U"Zo\u00EBy"),
            "expected 4 characters, observed 4; first difference at character 3");
  const std::string d = ax_text_difference(U"s3cret", U"s3cre");
  EXPECT_EQ(d.find("s3cre"), std::string::npos);
}

}  // namespace
}  // namespace evident
