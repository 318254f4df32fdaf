// The fuzz harnesses' echo check (fuzz_check.h) is itself tested: it must find a run of request
// bytes that a message repeats, and must not count the engine naming fields it knows.
#include <gtest/gtest.h>

#include "fuzz_check.h"

namespace evident::fuzz {
namespace {

TEST(FuzzEchoCheck, FindsRequestBytesRepeatedInAMessage) {
  const std::string input = R"({"actions":[],"qwzxvbnmplkjhgf_secret":1})";
  EXPECT_TRUE(find_echo(input, "request: unknown field qwzxvbnmplkjhgf_secret"));
  // Bytes that are not a word the engine uses, even between known words, are an echo.
  EXPECT_TRUE(find_echo("xx actions, q9w8e7r6t5y4u3i2 yy", "allowed: actions, q9w8e7r6t5y4u3i2"));
}

TEST(FuzzEchoCheck, OwnNamingIsNotAnEcho) {
  // The engine lists the fields it allows; a request holding one of them after a space is not
  // echoed by that list (regressions/actions_fuzz/space-before-listed-field-name).
  const std::string input = R"({"actions":[]," coordinate_space":"x","observe]":"none"})";
  EXPECT_FALSE(find_echo(input, "request: has an unknown field (allowed: actions, observe, settle, coordinate_space)"));
  EXPECT_FALSE(find_echo(R"({"actions":[{"type":"click"}]})", "actions[0].type: \"click\" needs x"));
}

TEST(FuzzEchoCheck, ShortRunsAreNotEchoes) {
  EXPECT_FALSE(find_echo("zq9zq9zq9", "zq9zq9zq9"));  // shorter than the window
}

}  // namespace
}  // namespace evident::fuzz
