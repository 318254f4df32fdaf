// The text of an `observe: "ax"` observation (ax_tree_text, docs/accessibility.md): one line per
// node, depth first and indented, centre and box from the bounds, JSON-quoted and cut names and
// values, a password field's value never shown, only the states of interest, and the byte bound
// cutting whole lines with a closing line that says so.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "evident/accessibility/accessibility.h"

namespace evident {
namespace {

AxNode node(int index, int parent, int depth, std::string role, std::string name,
            std::vector<std::string> states = {}) {
  AxNode n;
  n.index = index;
  n.parent = parent;
  n.depth = depth;
  n.role = std::move(role);
  n.name = std::move(name);
  n.states = std::move(states);
  return n;
}

// desktop > app > frame > {button, entry, password}; a second app after the first's subtree.
AxTree sample() {
  AxTree t;
  t.nodes.push_back(node(0, -1, 0, "desktop frame", "main"));
  t.nodes.push_back(node(1, 0, 1, "application", "ax_app.py"));
  t.nodes.push_back(node(2, 0, 1, "application", "other"));
  t.nodes.push_back(node(3, 1, 2, "frame", "AX fixture", {"active", "enabled", "resizable", "showing"}));
  t.nodes.push_back(node(4, 3, 3, "push button", "Press \"me\"\n",
                         {"enabled", "focusable", "focused", "sensitive", "showing", "visible"}));
  t.nodes.push_back(node(5, 3, 3, "text", "name", {"editable", "enabled", "sensitive"}));
  t.nodes.push_back(node(6, 3, 3, "password text", "password", {"editable", "enabled", "sensitive"}));
  t.nodes.push_back(node(7, 3, 3, "check box", "off", {"checkable", "focusable", "showing"}));
  t.nodes[0].children = {1, 2};
  t.nodes[1].children = {3};
  t.nodes[3].children = {4, 5, 6, 7};
  t.nodes[3].bounds = AxBounds{0, 0, 361, 215};
  t.nodes[4].bounds = AxBounds{8, 40, 345, 27};
  t.nodes[5].value = "typed";
  t.nodes[6].value_withheld = true;
  return t;
}

TEST(AxText, OneLinePerNodeDepthFirstWithCentreValueAndStatesOfInterest) {
  AxText t = ax_tree_text(sample(), 65536, 256);
  EXPECT_FALSE(t.cut);
  EXPECT_EQ(t.lines, 8);
  EXPECT_EQ(t.text,
            "[0] desktop frame \"main\"\n"
            "  [1] application \"ax_app.py\"\n"
            "    [3] frame \"AX fixture\" center=180,107 box=0,0,361x215 {active}\n"
            "      [4] push button \"Press \\\"me\\\"\\n\" center=180,53 box=8,40,345x27 {focused}\n"
            "      [5] text \"name\" value=\"typed\" {editable}\n"
            "      [6] password text \"password\" value=withheld {editable}\n"
            "      [7] check box \"off\" {disabled}\n"
            "  [2] application \"other\"\n");
}

TEST(AxText, TruncatedTreeSaysSo) {
  AxTree t = sample();
  t.truncated = true;
  t.truncated_by = "max_depth";
  AxText out = ax_tree_text(t, 65536, 256);
  EXPECT_FALSE(out.cut);
  EXPECT_NE(out.text.find("\n(truncated by max_depth: 8 nodes shown; the rest of the tree was not read)\n"),
            std::string::npos)
      << out.text;
}

TEST(AxText, FieldsAreCutAtACharacterBoundary) {
  AxTree t;
  // "é" is two bytes: a cut at 5 bytes keeps "abé" (4 bytes), not half a character.
  t.nodes.push_back(node(0, -1, 0, "label", "ab\xC3\xA9\xC3\xA9"));
  t.nodes[0].value = std::string(300, 'v');
  AxText out = ax_tree_text(t, 65536, 5);
  EXPECT_EQ(out.text, "[0] label \"ab\xC3\xA9\" value=\"vvvvv\"\n");
}

TEST(AxText, ByteBoundKeepsWholeLinesAndSaysHowManyWereShown) {
  AxTree t;
  t.nodes.push_back(node(0, -1, 0, "desktop frame", "main"));
  for (int i = 1; i <= 100; ++i) {
    t.nodes.push_back(node(i, 0, 1, "label", std::string(40, 'x')));
    t.nodes[0].children.push_back(i);
  }
  const std::size_t max = 1024;
  AxText out = ax_tree_text(t, max, 256);
  EXPECT_TRUE(out.cut);
  EXPECT_LE(out.text.size(), max);
  EXPECT_GT(out.lines, 5);
  EXPECT_LT(out.lines, 101);
  // Every line but the closing one is a whole node line.
  std::size_t newlines = 0;
  for (char c : out.text) newlines += c == '\n' ? 1 : 0;
  EXPECT_EQ(newlines, static_cast<std::size_t>(out.lines) + 1);
  const std::string closing = "(truncated by max_bytes: " + std::to_string(out.lines) + " of 101 nodes shown)\n";
  ASSERT_GE(out.text.size(), closing.size());
  EXPECT_EQ(out.text.substr(out.text.size() - closing.size()), closing);
}

TEST(AxText, EmptyTreeIsEmptyText) {
  AxText out = ax_tree_text(AxTree{}, 65536, 256);
  EXPECT_EQ(out.text, "");
  EXPECT_EQ(out.lines, 0);
}

}  // namespace
}  // namespace evident
