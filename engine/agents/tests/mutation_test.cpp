// Robustness: thousands of deterministic mutations of valid provider responses (a node replaced
// by another type or an extreme value, a member removed) never crash or throw; each either maps
// to actions the §4 parser accepted or is refused with a task-* code, and the message is valid
// UTF-8 that never echoes the injected marker.
#include <gtest/gtest.h>

#include <random>

#include "evident/agents/adapter.h"

namespace evident::agents {
namespace {

const std::pair<const char*, const char*> kSamples[] = {
    {"anthropic-computer-20251124", R"({"type":"message","role":"assistant","content":[
      {"type":"text","text":"x"},
      {"type":"tool_use","id":"t1","name":"computer","input":{"action":"left_click","coordinate":[10,20]}},
      {"type":"tool_use","id":"t2","name":"computer","input":{"action":"scroll","coordinate":[1,2],"scroll_direction":"down","scroll_amount":3}},
      {"type":"tool_use","id":"t3","name":"computer","input":{"action":"zoom","region":[0,0,50,40]}},
      {"type":"tool_use","id":"t4","name":"computer","input":{"action":"key","text":"ctrl+s"}}]})"},
    {"openai-computer", R"({"object":"response","output":[{"type":"computer_call","call_id":"c","pending_safety_checks":[],
      "actions":[{"type":"click","button":"left","x":1,"y":2},{"type":"drag","path":[{"x":1,"y":1},{"x":5,"y":5}]},
                 {"type":"keypress","keys":["CTRL","A"]},{"type":"scroll","x":1,"y":1,"scroll_x":0,"scroll_y":200}]}]})"},
    {"openai-computer-use-preview", R"({"object":"response","output":[{"type":"computer_call","call_id":"c","pending_safety_checks":[],
      "action":{"type":"type","text":"abc"}}]})"},
    {"gemini-computer-use", R"({"candidates":[{"content":{"role":"model","parts":[
      {"functionCall":{"name":"type_text_at","args":{"x":1,"y":2,"text":"a","press_enter":true}}},
      {"functionCall":{"name":"scroll_at","args":{"x":1,"y":2,"direction":"up","magnitude":300}}},
      {"functionCall":{"name":"key_combination","args":{"keys":"control+a"}}}]}}]})"},
    {"gemini-computer-use-3.5", R"({"candidates":[{"content":{"role":"model","parts":[
      {"functionCall":{"id":"f","name":"hotkey","args":{"keys":["Control","c"]}}},
      {"functionCall":{"id":"g","name":"drag_and_drop","args":{"x":1,"y":2,"destination_x":900,"destination_y":5}}}]}}]})"},
    {"evident", R"({"calls":[{"id":"a","actions":[{"type":"click","x":1,"y":1},{"type":"hold_key","key":"shift","ms":10}]}]})"},
    {"anthropic-computer-20250124", R"({"type":"message","content":[{"type":"text","text":"{\"done\":true}"}]})"},
};

const char* kMarker = "MARKER\xc3\xa9";

Json replacement(std::mt19937& rng) {
  switch (rng() % 11) {
    case 0: return nullptr;
    case 1: return -1;
    case 2: return kMaxSafeInteger;
    case 3: return "";
    case 4: return std::string(kMarker);
    case 5: return std::string(5000, 'M');
    case 6: return Json::array();
    case 7: return Json::object();
    case 8: return true;
    case 9: return Json::array({std::string(kMarker), 1, nullptr});
    default: return Json{{std::string(kMarker), std::string(kMarker)}};
  }
}

// Picks a random node (depth-first) and replaces it, or removes a member of an object.
void mutate(Json& root, std::mt19937& rng) {
  Json* node = &root;
  for (int depth = 0; depth < 8; ++depth) {
    if ((!node->is_object() && !node->is_array()) || node->empty() || rng() % 3 == 0) break;
    auto it = node->begin();
    std::advance(it, rng() % node->size());
    if (node->is_object() && rng() % 5 == 0) {
      node->erase(it.key());
      return;
    }
    node = &*it;
  }
  *node = replacement(rng);
}

bool valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (int k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    }
    i += n;
  }
  return true;
}

TEST(Mutations, NeverCrashAndAlwaysAnswerWithACode) {
  std::mt19937 rng(20261201);
  AdapterInput in;
  in.geometry = Geometry{1280, 800, 1280, 800};
  std::size_t accepted = 0, refused = 0;
  for (const auto& [name, text] : kSamples) {
    const Adapter* a = find_adapter(name);
    ASSERT_NE(a, nullptr);
    const Json base = Json::parse(text);
    ASSERT_TRUE(a->parse(base, in).ok()) << name;
    for (int i = 0; i < 1500; ++i) {
      Json j = base;
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits; ++e) mutate(j, rng);
      Result<ParsedTurn> r = make_error("unset", "");
      ASSERT_NO_THROW(r = a->parse(j, in)) << name << " mutation " << i;
      if (r.ok()) {
        ++accepted;
        for (const MappedCall& c : r->calls) EXPECT_EQ(c.parsed.size(), c.actions.size());
        if (r->kind == TurnKind::kFinal) {
          EXPECT_TRUE(r->result.has_value() != r->result_error.has_value());
        }
      } else {
        ++refused;
        EXPECT_TRUE(r.error().code.starts_with("task-")) << name << ": " << r.error().code;
        EXPECT_TRUE(valid_utf8(r.error().message));
        EXPECT_EQ(r.error().message.find("MARKER"), std::string::npos) << name << ": " << r.error().message;
      }
    }
  }
  // Both outcomes occur, so the mutations reach past the first check.
  EXPECT_GT(accepted, 100u);
  EXPECT_GT(refused, 1000u);
}

}  // namespace
}  // namespace evident::agents
