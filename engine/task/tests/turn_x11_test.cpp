// run_turn on a real display: the engine's Xvfb, the real fixture app (which logs every event it
// receives) and the service's session lease. An Anthropic turn clicks the text field and types
// the trigger phrase (the app turns green); refused provider responses (forbidden tools, safety
// checks, unmappable actions) run nothing, which the app's log proves.
#include <gtest/gtest.h>

#include "../../service/src/session_backend.h"
#include "../../session/tests/engine_harness.h"
#include "evident/agents/adapter.h"
#include "evident/task/turn.h"

namespace evident::task {
namespace {

using testing::code_of;
using testing::EngineHarness;

std::size_t presses(const std::vector<Json>& ev) {
  std::size_t n = 0;
  for (const auto& e : ev) n += (e["type"] == "button_press" || e["type"] == "key_press") ? 1 : 0;
  return n;
}

agents::AdapterInput geometry() {
  agents::AdapterInput in;
  in.geometry = agents::Geometry{800, 600, 800, 600};
  return in;
}

TEST(TurnX11, AnthropicTurnDrivesTheRealAppAndRefusedTurnsInjectNothing) {
  EngineHarness h;
  const std::string app_id = h.launch_app();
  ASSERT_FALSE(app_id.empty());
  DisplaySessionBackend backend(h.engine().displays());
  auto lease = backend.acquire(h.display_id(), h.generation(), app_id);
  ASSERT_TRUE(lease.ok()) << lease.error().message;

  const std::size_t before = presses(h.log().events());
  // Refused responses: nothing of them may reach the app.
  const std::vector<std::pair<const char*, const char*>> refused = {
      {"anthropic-computer-20250124", R"({"type":"message","content":[
         {"type":"tool_use","id":"a","name":"computer","input":{"action":"left_click","coordinate":[245,105]}},
         {"type":"tool_use","id":"b","name":"bash","input":{"command":"true"}}]})"},
      {"openai-computer", R"({"object":"response","output":[{"type":"computer_call","call_id":"c",
         "pending_safety_checks":[{"id":"s","code":"malicious_instructions"}],
         "actions":[{"type":"click","button":"left","x":245,"y":105}]}]})"},
      {"gemini-computer-use", R"({"candidates":[{"content":{"parts":[
         {"functionCall":{"name":"click_at","args":{"x":306,"y":175}}},
         {"functionCall":{"name":"navigate","args":{"url":"https://example.com"}}}]}}]})"},
      {"evident", R"({"calls":[{"id":"x","actions":[{"type":"click","x":245,"y":105},{"type":"paste","text":"p"}]}]})"},
  };
  for (const auto& [adapter, text] : refused) {
    auto parsed = agents::find_adapter(adapter)->parse(*parse_json_strict(text, 1 << 20, "t"), geometry());
    ASSERT_FALSE(parsed.ok()) << adapter;
    EXPECT_TRUE(parsed.error().code.starts_with("task-")) << adapter;
  }

  // The accepted turn: click the text field, type the trigger phrase, then the counter button.
  const auto* adapter = agents::find_adapter("anthropic-computer-20250124");
  auto turn = adapter->parse(*parse_json_strict(R"({"type":"message","role":"assistant","content":[
      {"type":"tool_use","id":"t1","name":"computer","input":{"action":"left_click","coordinate":[100,40]}},
      {"type":"tool_use","id":"t2","name":"computer","input":{"action":"type","text":"evident"}},
      {"type":"tool_use","id":"t3","name":"computer","input":{"action":"left_click","coordinate":[245,105]}}]})",
                                                        1 << 20, "t"),
                             geometry());
  ASSERT_TRUE(turn.ok()) << turn.error().message;
  std::vector<std::string> written;
  TurnRun run = run_turn(**lease, *adapter, *turn, 0, [&](const SessionFrame& f) {
    written.push_back(f.sha256);
    return ok_status();
  });
  ASSERT_FALSE(run.failure) << run.failure->message;
  ASSERT_EQ(run.actions.size(), 3u);
  for (const RanAction& a : run.actions) {
    EXPECT_EQ(a.status, "injected") << a.type << ": " << a.detail;
    // Input was injected, so each frame waited for the display (the engine's Xvfb has a watcher).
    EXPECT_TRUE(a.settle == "settled" || a.settle == "still_loading") << a.type << ": " << a.settle;
  }
  EXPECT_EQ(written.size(), 3u);
  ASSERT_TRUE(h.log().wait_for([](const std::vector<Json>& ev) {
    bool trigger = false, counter = false;
    for (const auto& e : ev) {
      trigger = trigger || e["type"] == "trigger";
      counter = counter || (e["type"] == "counter" && e["value"] == 1);
    }
    return trigger && counter;
  }));
  // The refused turns added no press: the first presses in the log are this turn's (2 clicks and
  // the 7 typed keys), and the counter saw exactly one click.
  const std::vector<Json> ev = h.log().events();
  EXPECT_EQ(presses(ev), before + 2 + 7);
  std::size_t counters = 0;
  for (const auto& e : ev) counters += e["type"] == "counter" ? 1 : 0;
  EXPECT_EQ(counters, 1u);
  // Every call was answered with an image, and the last frame differs from the first (green).
  ASSERT_EQ(run.tool_results["content"].size(), 3u);
  for (const auto& r : run.tool_results["content"]) {
    EXPECT_EQ(r["is_error"], false);
    EXPECT_EQ(r["content"][1]["type"], "image");
  }
  EXPECT_NE(run.actions.front().frame_sha256, run.actions.back().frame_sha256);
  EXPECT_TRUE((*lease)->release_all_checked().ok());
}

}  // namespace
}  // namespace evident::task
