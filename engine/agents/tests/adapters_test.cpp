// Provider adapters: each response shape comes from the provider's documentation or SDK types
// (docs/agents.md cites them); every expected mapping is written out by hand.
#include <gtest/gtest.h>

#include "evident/agents/adapter.h"

namespace evident::agents {
namespace {

Json J(std::string_view text) {
  auto j = parse_json_strict(text, 1 << 20, "test");
  EXPECT_TRUE(j.ok()) << text;
  return j.ok() ? *j : Json();
}

AdapterInput geometry(int dw = 1280, int dh = 800, int iw = 0, int ih = 0) {
  AdapterInput in;
  in.geometry = Geometry{dw, dh, iw ? iw : dw, ih ? ih : dh};
  return in;
}

Result<ParsedTurn> run(std::string_view adapter, std::string_view response, const AdapterInput& in = geometry()) {
  const Adapter* a = find_adapter(adapter);
  EXPECT_NE(a, nullptr) << adapter;
  if (!a) return make_error("test", "no adapter");
  return a->parse(J(response), in);
}

// The §4 actions of every call, concatenated.
Json actions_of(const ParsedTurn& t) {
  Json out = Json::array();
  for (const MappedCall& c : t.calls) {
    for (const Json& a : c.actions) out.push_back(a);
  }
  return out;
}

std::string anthropic(std::string_view blocks) {
  return std::string(R"({"id":"msg_01","type":"message","role":"assistant","model":"claude-x",)"
                     R"("stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1},"content":[)") +
         std::string(blocks) + "]}";
}
std::string tool_use(std::string_view id, std::string_view input) {
  return R"({"type":"tool_use","id":")" + std::string(id) + R"(","name":"computer","input":)" + std::string(input) + "}";
}
// A computer_toolset_20260801 member call (the SDK's ToolUseBlock: name = member, toolset_name).
std::string member(std::string_view id, std::string_view name, std::string_view input) {
  return R"({"type":"tool_use","id":")" + std::string(id) + R"(","name":")" + std::string(name) +
         R"(","toolset_name":"computer","input":)" + std::string(input) + "}";
}
std::string openai(std::string_view items) {
  return R"({"id":"resp_1","object":"response","status":"completed","output":[)" + std::string(items) + "]}";
}
std::string gemini(std::string_view parts) {
  return R"({"candidates":[{"content":{"role":"model","parts":[)" + std::string(parts) +
         R"(]},"finishReason":"STOP"}],"modelVersion":"m"})";
}

TEST(Registry, EveryDocumentedAdapterIsRegistered) {
  std::vector<std::string_view> want = {"anthropic-computer-20250124", "anthropic-computer-20251124",
                                        "anthropic-toolset-20260801",  "openai-computer",
                                        "openai-computer-use-preview", "gemini-computer-use",
                                        "gemini-computer-use-3.5",     "evident"};
  EXPECT_EQ(adapter_names(), want);
  for (auto n : want) EXPECT_NE(find_adapter(n), nullptr);
  EXPECT_EQ(find_adapter("anthropic"), nullptr);
  EXPECT_EQ(find_adapter(""), nullptr);
}

TEST(Anthropic, MapsEveryActionOf20250124) {
  auto t = run("anthropic-computer-20250124",
               anthropic(tool_use("toolu_1", R"({"action":"left_click","coordinate":[100,200]})") + "," +
                         tool_use("toolu_2", R"({"action":"type","text":"hello\nworld"})") + "," +
                         tool_use("toolu_3", R"({"action":"key","text":"ctrl+a Delete"})") + "," +
                         tool_use("toolu_4", R"({"action":"scroll","coordinate":[10,20],"scroll_direction":"down","scroll_amount":5})") + "," +
                         tool_use("toolu_5", R"({"action":"left_click_drag","start_coordinate":[1,2],"coordinate":[30,40]})") + "," +
                         tool_use("toolu_6", R"({"action":"hold_key","text":"shift","duration":2})") + "," +
                         tool_use("toolu_7", R"({"action":"wait","duration":1})") + "," +
                         tool_use("toolu_8", R"({"action":"triple_click","coordinate":[5,6]})") + "," +
                         tool_use("toolu_9", R"({"action":"right_click","coordinate":[7,8]})") + "," +
                         tool_use("toolu_10", R"({"action":"screenshot"})") + "," +
                         tool_use("toolu_11", R"({"action":"mouse_move","coordinate":[9,9]})")));
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->kind, TurnKind::kCalls);
  ASSERT_EQ(t->calls.size(), 11u);
  EXPECT_EQ(t->calls[0].id, "toolu_1");
  EXPECT_EQ(t->calls[2].native_actions, std::vector<std::string>{"key"});
  EXPECT_EQ(actions_of(*t), J(R"([
    {"type":"click","x":100,"y":200,"button":"left"},
    {"type":"type","text":"hello\nworld"},
    {"type":"key","key":"ctrl+a"},{"type":"key","key":"Delete"},
    {"type":"scroll","x":10,"y":20,"direction":"down","amount":5},
    {"type":"drag","start_x":1,"start_y":2,"end_x":30,"end_y":40},
    {"type":"hold_key","key":"shift","ms":2000},
    {"type":"wait","ms":1000},
    {"type":"triple_click","x":5,"y":6},
    {"type":"click","x":7,"y":8,"button":"right"},
    {"type":"screenshot"},
    {"type":"move_mouse","x":9,"y":9}])"));
  EXPECT_EQ(t->action_count(), 12u);
  EXPECT_TRUE(t->input());
  EXPECT_EQ(t->pointer, (Point{9, 9}));
}

TEST(Anthropic, ClickWithoutCoordinateUsesTheKnownPointer) {
  AdapterInput in = geometry();
  in.pointer = Point{44, 55};
  auto t = run("anthropic-computer-20250124", anthropic(tool_use("t1", R"({"action":"double_click"})")), in);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(actions_of(*t), J(R"([{"type":"double_click","x":44,"y":55}])"));
  auto unknown = run("anthropic-computer-20250124", anthropic(tool_use("t1", R"({"action":"double_click"})")));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, "task-action-forbidden");
}

TEST(Anthropic, ScaledImageCoordinatesMapBackToTheDisplay) {
  // The model saw 1429x804 of a 1920x1080 display.
  auto t = run("anthropic-computer-20251124",
               anthropic(tool_use("t1", R"({"action":"left_click","coordinate":[714,402]})") + "," +
                         tool_use("t2", R"({"action":"zoom","region":[0,0,1429,804]})")),
               geometry(1920, 1080, 1429, 804));
  ASSERT_TRUE(t.ok()) << t.error().message;
  // x: floor(1429*1920/2858) = 960; y: floor(805*1080/1608) = 540.
  EXPECT_EQ(actions_of(*t), J(R"([{"type":"click","x":960,"y":540,"button":"left"},
                                  {"type":"zoom","x":0,"y":0,"width":1920,"height":1080}])"));
}

TEST(Anthropic, ImageSizeRule) {
  const Adapter* a = find_adapter("anthropic-computer-20250124");
  EXPECT_EQ(a->model_image_size(1280, 800), (std::pair<int, int>{1280, 800}));
  EXPECT_EQ(a->model_image_size(1024, 768), (std::pair<int, int>{1024, 768}));
  auto [w, h] = a->model_image_size(1920, 1080);
  EXPECT_LE(static_cast<long>(w) * h, 1'200'000);
  // Long edge 1461: 1080*1461/1920 = 821.8 -> 821, 1461*821 = 1,199,481; 1462 gives 822 -> 1,201,764.
  EXPECT_EQ(w, 1461);
  EXPECT_EQ(h, 821);
  auto [w2, h2] = a->model_image_size(3000, 500);  // long edge rule: 1568/3000
  EXPECT_EQ(w2, 1568);
  EXPECT_EQ(h2, 261);
  EXPECT_EQ(find_adapter("openai-computer")->model_image_size(1920, 1080), (std::pair<int, int>{1920, 1080}));
}

TEST(Anthropic, FinalAnswerFromTextBlocks) {
  auto t = run("anthropic-toolset-20260801",
               anthropic(R"({"type":"thinking","thinking":"...","signature":"s"},)"
                         R"({"type":"text","text":"```json\n{\"saved\": true}\n```"})"));
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->kind, TurnKind::kFinal);
  ASSERT_TRUE(t->result);
  EXPECT_EQ(*t->result, J(R"({"saved":true})"));
  auto bad = run("anthropic-toolset-20260801", anthropic(R"({"type":"text","text":"Done! I saved it."})"));
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->kind, TurnKind::kFinal);
  ASSERT_TRUE(bad->result_error);
  EXPECT_EQ(bad->result_error->code, "task-result-invalid");
  EXPECT_EQ(bad->result_error->message.find("saved"), std::string::npos);
}

TEST(Anthropic, ToolResultsCarryTheImageAndIsError) {
  auto t = run("anthropic-computer-20251124",
               anthropic(tool_use("toolu_a", R"({"action":"screenshot"})") + "," +
                         tool_use("toolu_b", R"({"action":"left_click","coordinate":[1,1]})")));
  ASSERT_TRUE(t.ok());
  const std::string png = "PNG";
  std::vector<CallOutcome> o(2);
  o[0] = CallOutcome{CallStatus::kFailed, "the display was lost", &png, 1, 1};
  o[1] = CallOutcome{CallStatus::kNotRun, "", nullptr, 0, 0};
  Json r = find_adapter("anthropic-computer-20251124")->tool_results(*t, o);
  EXPECT_EQ(r, J(R"({"role":"user","content":[
    {"type":"tool_result","tool_use_id":"toolu_a","is_error":true,"content":[
      {"type":"text","text":"failed: the display was lost"},
      {"type":"image","source":{"type":"base64","media_type":"image/png","data":"UE5H"}}]},
    {"type":"tool_result","tool_use_id":"toolu_b","is_error":true,"content":[
      {"type":"text","text":"not run: an earlier call of this turn failed"}]}]})"));
}

// computer_toolset_20260801, in the shape Anthropic's SDK types give it (anthropic-sdk-typescript
// bfa9197f, messages.ts): each call is a tool_use block named by its member with toolset_name, its
// input the member's fields; each tool_result carries toolset_name.
TEST(AnthropicToolset, MapsMemberNamedCalls) {
  auto t = run("anthropic-toolset-20260801",
               anthropic(R"({"type":"text","text":"I will fill the form."},)" +
                         member("toolu_1", "left_click", R"({"coordinate":[100,200]})") + "," +
                         member("toolu_2", "type", R"({"text":"h\u00e9llo"})") + "," +
                         member("toolu_3", "key", R"({"text":"ctrl+s"})") + "," +
                         member("toolu_4", "scroll", R"({"coordinate":[10,20],"scroll_direction":"up","scroll_amount":2})") + "," +
                         member("toolu_5", "left_click_drag", R"({"start_coordinate":[1,2],"coordinate":[30,40]})") + "," +
                         member("toolu_6", "wait", R"({"duration":1})") + "," +
                         member("toolu_7", "zoom", R"({"region":[0,0,640,400]})") + "," +
                         member("toolu_8", "screenshot", "{}")));
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->kind, TurnKind::kCalls);
  ASSERT_EQ(t->calls.size(), 8u);
  EXPECT_EQ(t->calls[0].id, "toolu_1");
  EXPECT_EQ(t->calls[0].name, "left_click");
  EXPECT_EQ(t->calls[6].native_actions, std::vector<std::string>{"zoom"});
  EXPECT_EQ(actions_of(*t), J(R"([
    {"type":"click","x":100,"y":200,"button":"left"},
    {"type":"type","text":"h\u00e9llo"},
    {"type":"key","key":"ctrl+s"},
    {"type":"scroll","x":10,"y":20,"direction":"up","amount":2},
    {"type":"drag","start_x":1,"start_y":2,"end_x":30,"end_y":40},
    {"type":"wait","ms":1000},
    {"type":"zoom","x":0,"y":0,"width":640,"height":400},
    {"type":"screenshot"}])"));

  const std::string png = "PNG";
  std::vector<CallOutcome> o(8);
  o[0] = CallOutcome{CallStatus::kOk, "", &png, 1, 1};
  for (std::size_t i = 1; i < 8; ++i) o[i] = CallOutcome{CallStatus::kNotRun, "", nullptr, 0, 0};
  o[1] = CallOutcome{CallStatus::kFailed, "the display was lost", nullptr, 0, 0};
  Json r = find_adapter("anthropic-toolset-20260801")->tool_results(*t, o);
  ASSERT_EQ(r["content"].size(), 8u);
  EXPECT_EQ(r["content"][0], J(R"({"type":"tool_result","tool_use_id":"toolu_1","toolset_name":"computer",
    "is_error":false,"content":[{"type":"text","text":"ok"},
      {"type":"image","source":{"type":"base64","media_type":"image/png","data":"UE5H"}}]})"));
  EXPECT_EQ(r["content"][1], J(R"({"type":"tool_result","tool_use_id":"toolu_2","toolset_name":"computer",
    "is_error":true,"content":[{"type":"text","text":"failed: the display was lost"}]})"));
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(r["content"][i]["toolset_name"], "computer") << i;
}

TEST(AnthropicToolset, RefusesWhatTheToolsetDoesNotDeclare) {
  auto code = [](std::string_view blocks) {
    auto t = run("anthropic-toolset-20260801", anthropic(blocks));
    return t.ok() ? std::string("ok") : t.error().code;
  };
  // The single-tool shape: no tool named "computer" is declared by the toolset entry.
  EXPECT_EQ(code(tool_use("t1", R"({"action":"left_click","coordinate":[1,1]})")), "task-forbidden-tool-call");
  // Another family, a name that is no member, a toolset_name that is not a string.
  EXPECT_EQ(code(R"({"type":"tool_use","id":"t1","name":"left_click","toolset_name":"browser","input":{"coordinate":[1,1]}})"),
            "task-forbidden-tool-call");
  EXPECT_EQ(code(member("t1", "bash", R"({"command":"ls"})")), "task-forbidden-tool-call");
  EXPECT_EQ(code(member("t1", "computer", R"({"action":"left_click","coordinate":[1,1]})")), "task-forbidden-tool-call");
  EXPECT_EQ(code(R"({"type":"tool_use","id":"t1","name":"left_click","toolset_name":7,"input":{"coordinate":[1,1]}})"),
            "task-forbidden-tool-call");
  // A member input carrying "action" is malformed; members with no task equivalent are forbidden.
  EXPECT_EQ(code(member("t1", "left_click", R"({"action":"right_click","coordinate":[1,1]})")),
            "task-response");
  EXPECT_EQ(code(member("t1", "cursor_position", "{}")), "task-action-forbidden");
  EXPECT_EQ(code(member("t1", "left_mouse_down", "{}")), "task-action-forbidden");
  EXPECT_EQ(code(member("t1", "left_click", R"({"coordinate":[1,1],"text":"shift"})")), "task-action-forbidden");
  EXPECT_EQ(code(member("t1", "left_click", R"({"coordinate":[1,1],"bogus":1})")), "task-response");
  // One refused block refuses the whole turn, even after a valid member.
  EXPECT_EQ(code(member("t1", "left_click", R"({"coordinate":[1,1]})") + "," + member("t2", "bash", "{}")),
            "task-forbidden-tool-call");
  // The single-tool versions refuse member calls.
  auto single = run("anthropic-computer-20251124", anthropic(member("t1", "left_click", R"({"coordinate":[1,1]})")));
  ASSERT_FALSE(single.ok());
  EXPECT_EQ(single.error().code, "task-forbidden-tool-call");
  // Their results carry no toolset_name.
  auto t = run("anthropic-computer-20251124", anthropic(tool_use("t1", R"({"action":"screenshot"})")));
  ASSERT_TRUE(t.ok());
  std::vector<CallOutcome> o{CallOutcome{CallStatus::kOk, "", nullptr, 0, 0}};
  EXPECT_FALSE(find_adapter("anthropic-computer-20251124")->tool_results(*t, o)["content"][0].contains("toolset_name"));
}

TEST(OpenAi, MapsTheBatchedGaActions) {
  auto t = run("openai-computer", openai(R"({"type":"reasoning","id":"rs_1","summary":[]},
    {"type":"computer_call","id":"cu_1","call_id":"call_1","status":"completed","pending_safety_checks":[],
     "actions":[{"type":"click","button":"left","x":10,"y":20},
                {"type":"click","button":"wheel","x":11,"y":21},
                {"type":"double_click","x":12,"y":22},
                {"type":"drag","path":[{"x":1,"y":2},{"x":3,"y":4}]},
                {"type":"keypress","keys":["CTRL","S"]},
                {"type":"move","x":5,"y":6},
                {"type":"scroll","x":7,"y":8,"scroll_x":-150,"scroll_y":300},
                {"type":"type","text":"abc"},
                {"type":"wait"},
                {"type":"screenshot"}]})"));
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->calls.size(), 1u);
  EXPECT_EQ(t->calls[0].id, "call_1");
  EXPECT_EQ(t->calls[0].native_actions.size(), 10u);
  EXPECT_EQ(actions_of(*t), J(R"([
    {"type":"click","x":10,"y":20,"button":"left"},
    {"type":"click","x":11,"y":21,"button":"middle"},
    {"type":"double_click","x":12,"y":22},
    {"type":"drag","start_x":1,"start_y":2,"end_x":3,"end_y":4},
    {"type":"key","key":"ctrl+s"},
    {"type":"move_mouse","x":5,"y":6},
    {"type":"scroll","x":7,"y":8,"direction":"down","amount":3},
    {"type":"scroll","x":7,"y":8,"direction":"left","amount":2},
    {"type":"type","text":"abc"},
    {"type":"wait","ms":1000},
    {"type":"screenshot"}])"));
}

TEST(OpenAi, PreviewTakesOneActionAndAnswersWithAScreenshot) {
  auto t = run("openai-computer-use-preview", openai(R"({"type":"computer_call","id":"cu_1","call_id":"call_9",
    "status":"completed","pending_safety_checks":[],"action":{"type":"click","button":"right","x":3,"y":4}})"));
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(actions_of(*t), J(R"([{"type":"click","x":3,"y":4,"button":"right"}])"));
  const std::string png = "ab";
  Json r = find_adapter("openai-computer-use-preview")->tool_results(*t, {CallOutcome{CallStatus::kOk, "", &png, 1, 1}});
  EXPECT_EQ(r, J(R"([{"type":"computer_call_output","call_id":"call_9",
                       "output":{"type":"computer_screenshot","image_url":"data:image/png;base64,YWI="}}])"));
}

TEST(OpenAi, FinalAnswerFromOutputText) {
  auto t = run("openai-computer", openai(R"({"type":"message","id":"m","role":"assistant","status":"completed",
    "content":[{"type":"output_text","text":"{\"total\": 42}","annotations":[]}]})"));
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->result);
  EXPECT_EQ(*t->result, J(R"({"total":42})"));
  Json retry = find_adapter("openai-computer")->retry_prompt(make_error("task-result-invalid", "final answer: x"));
  ASSERT_TRUE(retry.is_array());
  EXPECT_EQ(retry[0]["role"], "user");
  EXPECT_EQ(retry[0]["content"][0]["type"], "input_text");
}

TEST(Gemini25, MapsTheFunctionSet) {
  auto t = run("gemini-computer-use", gemini(R"(
    {"text":"I will fill the form."},
    {"functionCall":{"name":"click_at","args":{"x":500,"y":500}}},
    {"functionCall":{"name":"type_text_at","args":{"x":100,"y":999,"text":"Ada","press_enter":true}}},
    {"functionCall":{"name":"key_combination","args":{"keys":"control+s"}}},
    {"functionCall":{"name":"scroll_at","args":{"x":0,"y":0,"direction":"down","magnitude":500}}},
    {"functionCall":{"name":"drag_and_drop","args":{"x":0,"y":0,"destination_x":999,"destination_y":999}}},
    {"functionCall":{"name":"wait_5_seconds","args":{}}},
    {"functionCall":{"name":"scroll_document","args":{"direction":"up"}}})"));
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->calls.size(), 7u);
  EXPECT_EQ(t->calls[1].name, "type_text_at");
  EXPECT_EQ(t->calls[1].native_actions, std::vector<std::string>{"type_text_at"});
  EXPECT_EQ(actions_of(*t), J(R"([
    {"type":"click","x":640,"y":400},
    {"type":"click","x":128,"y":799},{"type":"key","key":"ctrl+a"},{"type":"key","key":"Delete"},
    {"type":"type","text":"Ada"},{"type":"key","key":"Return"},
    {"type":"key","key":"ctrl+s"},
    {"type":"scroll","x":0,"y":0,"direction":"down","amount":4},
    {"type":"drag","start_x":0,"start_y":0,"end_x":1278,"end_y":799},
    {"type":"wait","ms":5000},
    {"type":"key","key":"Prior"}])"));
}

TEST(Gemini35, MapsTheFunctionSetAndAnswersWithInlinePng) {
  auto t = run("gemini-computer-use-3.5", gemini(R"(
    {"functionCall":{"id":"fc1","name":"right_click","args":{"x":10,"y":10}}},
    {"functionCall":{"id":"fc2","name":"hotkey","args":{"keys":["Control","Shift","t"]}}},
    {"functionCall":{"id":"fc3","name":"press_key","args":{"key":"Enter"}}},
    {"functionCall":{"id":"fc4","name":"wait","args":{"seconds":2}}},
    {"functionCall":{"id":"fc5","name":"type","args":{"text":"x"}}},
    {"functionCall":{"id":"fc6","name":"take_screenshot","args":{}}},
    {"functionCall":{"id":"fc7","name":"scroll","args":{"x":500,"y":500,"direction":"left"}}})"));
  ASSERT_TRUE(t.ok()) << t.error().message;
  // right_click: floor(10*1280/1000)=12, floor(10*800/1000)=8; scroll magnitude 800 of 1280 = 1024 px -> 10 clicks.
  EXPECT_EQ(actions_of(*t), J(R"([
    {"type":"click","x":12,"y":8,"button":"right"},
    {"type":"key","key":"ctrl+shift+t"},
    {"type":"key","key":"Return"},
    {"type":"wait","ms":2000},
    {"type":"type","text":"x"},
    {"type":"screenshot"},
    {"type":"scroll","x":640,"y":400,"direction":"left","amount":10}])"));
  const std::string png = "PNG";
  std::vector<CallOutcome> o(7, CallOutcome{CallStatus::kOk, "", &png, 1, 1});
  Json r = find_adapter("gemini-computer-use-3.5")->tool_results(*t, o);
  EXPECT_EQ(r["role"], "user");
  ASSERT_EQ(r["parts"].size(), 7u);
  EXPECT_EQ(r["parts"][0], J(R"({"functionResponse":{"id":"fc1","name":"right_click",
    "response":{"status":"ok","detail":"ok"},
    "parts":[{"inlineData":{"mimeType":"image/png","data":"UE5H"}}]}})"));
}

TEST(Gemini, FinalAnswerSkipsThoughts) {
  auto t = run("gemini-computer-use", gemini(R"({"text":"thinking about {","thought":true},{"text":"{\"ok\":1}"})"));
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->result);
  EXPECT_EQ(*t->result, J(R"({"ok":1})"));
}

TEST(Evident, PlainActionsAndResult) {
  auto t = run("evident", R"({"calls":[{"id":"c1","actions":[{"type":"click","x":5,"y":5},{"type":"zoom","x":0,"y":0,"width":10,"height":10}]}]})");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->calls[0].native_actions, (std::vector<std::string>{"click", "zoom"}));
  EXPECT_EQ(t->calls[0].parsed.size(), 2u);
  auto r = run("evident", R"({"result":{"a":[1,2]}})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r->result, J(R"({"a":[1,2]})"));
  auto bad = run("evident", R"({"result":[1]})");
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->result_error->code, "task-result-invalid");
}

TEST(FinalAnswer, SizeAndShapeRules) {
  std::string big = R"({"k":")" + std::string(16 * 1024, 'a') + R"("})";
  for (const std::string& text : {std::string(""), std::string("[1]"), std::string("{\"a\":1}{\"b\":2}"),
                                  std::string("{\"a\":1.5}"), std::string("```python\n{}\n```"),
                                  std::string("```json\n{}"), big}) {
    Json block{{"type", "text"}, {"text", text}};
    auto t = run("anthropic-computer-20250124", anthropic(dump_json(block)));
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE(t->result_error) << text.substr(0, 40);
    EXPECT_EQ(t->result_error->code, "task-result-invalid");
  }
  auto ok = run("anthropic-computer-20250124", anthropic(R"({"type":"text","text":"  \n{}\n "})"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok->result, Json::object());
}

// Bad input: every malformed, forbidden or unmappable response is refused whole with its code.
struct Bad {
  const char* adapter;
  std::string response;
  const char* code;
};

std::vector<Bad> bad_cases() {
  const std::string big_text(4097, 'a');
  std::vector<Bad> v = {
      // Anthropic
      {"anthropic-computer-20250124", "[]", "task-response"},
      {"anthropic-computer-20250124", R"({"type":"error","error":{"type":"overloaded_error"}})", "task-response"},
      {"anthropic-computer-20250124", R"({"type":"message","role":"user","content":[]})", "task-response"},
      {"anthropic-computer-20250124", R"({"type":"message","content":{}})", "task-response"},
      {"anthropic-computer-20250124", anthropic(R"({"type":"image"})"), "task-response"},
      {"anthropic-computer-20250124", anthropic(R"({"text":"no type"})"), "task-response"},
      {"anthropic-computer-20250124", anthropic(R"({"type":"tool_use","id":"t","name":"bash","input":{"command":"ls"}})"), "task-forbidden-tool-call"},
      {"anthropic-computer-20250124", anthropic(R"({"type":"server_tool_use","id":"s","name":"web_search","input":{}})"), "task-forbidden-tool-call"},
      {"anthropic-computer-20250124", anthropic(R"({"type":"mcp_tool_use","id":"s","name":"x","server_name":"y","input":{}})"), "task-forbidden-tool-call"},
      {"anthropic-computer-20250124", anthropic(tool_use("", R"({"action":"screenshot"})")), "task-call-id-invalid"},
      {"anthropic-computer-20250124", anthropic(tool_use(std::string(257, 'i'), R"({"action":"screenshot"})")), "task-call-id-invalid"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"screenshot"})") + "," + tool_use("t", R"({"action":"screenshot"})")), "task-call-id-invalid"},
      {"anthropic-computer-20250124", anthropic(R"({"type":"tool_use","id":7,"name":"computer","input":{"action":"screenshot"}})"), "task-call-id-invalid"},
      {"anthropic-computer-20250124", anthropic(R"({"type":"tool_use","id":"t","name":"computer","input":"screenshot"})"), "task-response"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"fly"})")), "task-response"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"zoom","region":[0,0,10,10]})")), "task-response"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"screenshot","extra":1})")), "task-response"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"left_click","coordinate":[1]})")), "task-response"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"left_click","coordinate":["1","2"]})")), "task-response"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"left_click","coordinate":[1280,0]})")), "task-action-forbidden"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"left_click","coordinate":[-1,0]})")), "task-action-forbidden"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"left_click","coordinate":[1,1],"text":"shift"})")), "task-action-forbidden"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"left_mouse_down"})")), "task-action-forbidden"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"left_mouse_up"})")), "task-action-forbidden"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"cursor_position"})")), "task-action-forbidden"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"key","text":"notakey_xyz"})")), "task-action-forbidden"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"key","text":""})")), "task-action-forbidden"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"key"})")), "task-response"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"type","text":")" + big_text + R"("})")), "task-action-forbidden"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"type","text":"a\u0007b"})")), "task-action-forbidden"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"scroll","coordinate":[1,1],"scroll_direction":"sideways","scroll_amount":1})")), "task-response"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"scroll","coordinate":[1,1],"scroll_direction":"up","scroll_amount":0})")), "task-action-forbidden"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"scroll","coordinate":[1,1],"scroll_direction":"up","scroll_amount":101})")), "task-action-forbidden"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"wait","duration":6})")), "task-action-forbidden"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"wait","duration":-1})")), "task-response"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"wait"})")), "task-response"},
      {"anthropic-computer-20250124", anthropic(tool_use("t", R"({"action":"hold_key","text":"a b","duration":1})")), "task-action-forbidden"},
      {"anthropic-computer-20251124", anthropic(tool_use("t", R"({"action":"zoom","region":[10,10,10,20]})")), "task-action-forbidden"},
      {"anthropic-computer-20251124", anthropic(tool_use("t", R"({"action":"zoom","region":[0,0,1281,10]})")), "task-action-forbidden"},
      {"anthropic-computer-20251124", anthropic(tool_use("t", R"({"action":"zoom","region":[0,0,10]})")), "task-response"},
      // OpenAI
      {"openai-computer", "{}", "task-response"},
      {"openai-computer", R"({"object":"chat.completion","output":[]})", "task-response"},
      {"openai-computer", openai(R"({"type":"function_call","call_id":"c","name":"f","arguments":"{}"})"), "task-forbidden-tool-call"},
      {"openai-computer", openai(R"({"type":"custom_tool_call","call_id":"c","name":"f","input":""})"), "task-forbidden-tool-call"},
      {"openai-computer", openai(R"({"type":"web_search_call","id":"w","status":"completed"})"), "task-forbidden-tool-call"},
      {"openai-computer", openai(R"({"type":"computer_call","call_id":"c","pending_safety_checks":[{"id":"sc","code":"malicious_instructions","message":"m"}],"actions":[{"type":"screenshot"}]})"), "task-safety-check-refused"},
      {"openai-computer", openai(R"({"type":"computer_call","call_id":"","pending_safety_checks":[],"actions":[{"type":"screenshot"}]})"), "task-call-id-invalid"},
      {"openai-computer", openai(R"({"type":"computer_call","pending_safety_checks":[],"actions":[{"type":"screenshot"}]})"), "task-call-id-invalid"},
      {"openai-computer", openai(R"({"type":"computer_call","call_id":"c","pending_safety_checks":[],"actions":[{"type":"screenshot"}]},{"type":"computer_call","call_id":"c","pending_safety_checks":[],"actions":[{"type":"screenshot"}]})"), "task-call-id-invalid"},
      {"openai-computer", openai(R"({"type":"computer_call","call_id":"c","pending_safety_checks":[],"action":{"type":"screenshot"}})"), "task-response"},
      {"openai-computer", openai(R"({"type":"computer_call","call_id":"c","pending_safety_checks":[],"actions":[]})"), "task-response"},
      {"openai-computer", openai(R"({"type":"computer_call","call_id":"c","pending_safety_checks":[],"actions":[{"type":"click","button":"back","x":1,"y":1}]})"), "task-action-forbidden"},
      {"openai-computer", openai(R"({"type":"computer_call","call_id":"c","pending_safety_checks":[],"actions":[{"type":"click","button":"left","x":1,"y":1,"keys":["shift"]}]})"), "task-action-forbidden"},
      {"openai-computer", openai(R"({"type":"computer_call","call_id":"c","pending_safety_checks":[],"actions":[{"type":"drag","path":[{"x":1,"y":1},{"x":2,"y":2},{"x":3,"y":3}]}]})"), "task-action-forbidden"},
      {"openai-computer", openai(R"({"type":"computer_call","call_id":"c","pending_safety_checks":[],"actions":[{"type":"drag","path":[{"x":1,"y":1}]}]})"), "task-response"},
      {"openai-computer", openai(R"({"type":"computer_call","call_id":"c","pending_safety_checks":[],"actions":[{"type":"keypress","keys":[]}]})"), "task-response"},
      {"openai-computer", openai(R"({"type":"computer_call","call_id":"c","pending_safety_checks":[],"actions":[{"type":"keypress","keys":["NOSUCHKEY_Q"]}]})"), "task-action-forbidden"},
      {"openai-computer", openai(R"({"type":"computer_call","call_id":"c","pending_safety_checks":[],"actions":[{"type":"click","button":"left","x":1,"y":900}]})"), "task-action-forbidden"},
      {"openai-computer", openai(R"({"type":"computer_call","call_id":"c","pending_safety_checks":[],"actions":[{"type":"teleport"}]})"), "task-response"},
      {"openai-computer", openai(R"({"type":"computer_call","call_id":"c","pending_safety_checks":[],"actions":[{"type":"wait","ms":100}]})"), "task-response"},
      {"openai-computer", openai(R"({"type":"computer_call","call_id":"c","pending_safety_checks":[],"actions":[{"type":"scroll","x":1,"y":1,"scroll_x":0,"scroll_y":20000}]})"), "task-action-forbidden"},
      {"openai-computer", openai(R"({"type":"surprise"})"), "task-response"},
      {"openai-computer-use-preview", openai(R"({"type":"computer_call","call_id":"c","pending_safety_checks":[],"actions":[{"type":"screenshot"}]})"), "task-response"},
      {"openai-computer-use-preview", openai(R"({"type":"computer_call","call_id":"c","pending_safety_checks":[]})"), "task-response"},
      // Gemini
      {"gemini-computer-use", R"({"candidates":[]})", "task-response"},
      {"gemini-computer-use", R"({"promptFeedback":{"blockReason":"SAFETY"}})", "task-response"},
      {"gemini-computer-use", R"({"candidates":[{"finishReason":"SAFETY"}]})", "task-response"},
      {"gemini-computer-use", gemini(R"({"functionCall":{"name":"multiply_numbers","args":{"x":1,"y":2}}})"), "task-forbidden-tool-call"},
      {"gemini-computer-use", gemini(R"({"executableCode":{"language":"PYTHON","code":"1"}})"), "task-forbidden-tool-call"},
      {"gemini-computer-use", gemini(R"({"functionCall":{"name":"click_at","args":{"x":1,"y":1,"safety_decision":{"decision":"require_confirmation","explanation":"e"}}}})"), "task-safety-check-refused"},
      {"gemini-computer-use", gemini(R"({"functionCall":{"name":"click_at","args":{"x":1000,"y":1}}})"), "task-action-forbidden"},
      {"gemini-computer-use", gemini(R"({"functionCall":{"name":"click_at","args":{"x":1}}})"), "task-response"},
      {"gemini-computer-use", gemini(R"({"functionCall":{"name":"click_at","args":{"x":1,"y":1,"z":1}}})"), "task-response"},
      {"gemini-computer-use", gemini(R"({"functionCall":{"name":"navigate","args":{"url":"https://example.com"}}})"), "task-action-forbidden"},
      {"gemini-computer-use", gemini(R"({"functionCall":{"name":"go_back","args":{}}})"), "task-action-forbidden"},
      {"gemini-computer-use", gemini(R"({"functionCall":{"name":"key_combination","args":{"keys":"control+"}}})"), "task-action-forbidden"},
      {"gemini-computer-use", gemini(R"({"functionCall":{"name":"type_text_at","args":{"x":1,"y":1,"text":"a","press_enter":"yes"}}})"), "task-response"},
      {"gemini-computer-use", gemini(R"({"functionCall":{"id":"","name":"click_at","args":{"x":1,"y":1}}})"), "task-call-id-invalid"},
      {"gemini-computer-use", gemini(R"({"functionCall":{"id":"a","name":"click_at","args":{"x":1,"y":1}}},{"functionCall":{"id":"a","name":"click_at","args":{"x":1,"y":1}}})"), "task-call-id-invalid"},
      {"gemini-computer-use", gemini(R"({"inlineData":{"mimeType":"image/png","data":""}})"), "task-response"},
      {"gemini-computer-use", gemini(R"({"functionCall":{"name":"click","args":{"x":1,"y":1}}})"), "task-forbidden-tool-call"},
      {"gemini-computer-use-3.5", gemini(R"({"functionCall":{"name":"click_at","args":{"x":1,"y":1}}})"), "task-forbidden-tool-call"},
      {"gemini-computer-use-3.5", gemini(R"({"functionCall":{"name":"mouse_down","args":{"x":1,"y":1}}})"), "task-action-forbidden"},
      {"gemini-computer-use-3.5", gemini(R"({"functionCall":{"name":"key_down","args":{"key":"shift"}}})"), "task-action-forbidden"},
      {"gemini-computer-use-3.5", gemini(R"({"functionCall":{"name":"wait","args":{"seconds":6}}})"), "task-action-forbidden"},
      {"gemini-computer-use-3.5", gemini(R"({"functionCall":{"name":"hotkey","args":{"keys":"ctrl+a"}}})"), "task-response"},
      {"gemini-computer-use-3.5", gemini(R"({"functionCall":{"name":"scroll","args":{"x":1,"y":1,"direction":"down","magnitude":0}}})"), "task-action-forbidden"},
      // evident
      {"evident", "{}", "task-response"},
      {"evident", R"({"calls":[],"result":{}})", "task-response"},
      {"evident", R"({"calls":[]})", "task-response"},
      {"evident", R"({"calls":[{"id":"a","actions":[{"type":"paste","text":"x"}]}]})", "task-action-forbidden"},
      {"evident", R"({"calls":[{"id":"a","actions":[{"type":"mouse_down","x":1,"y":1}]}]})", "task-action-forbidden"},
      {"evident", R"({"calls":[{"id":"a","actions":[{"type":"mouse_up","x":1,"y":1}]}]})", "task-action-forbidden"},
      {"evident", R"({"calls":[{"id":"a","actions":[{"type":"click","x":"1","y":1}]}]})", "task-action-forbidden"},
      {"evident", R"({"calls":[{"id":"a","actions":[{"type":"click","x":1,"y":1,"extra":true}]}]})", "task-action-forbidden"},
      {"evident", R"({"calls":[{"id":"a","actions":[]}]})", "task-response"},
      {"evident", R"({"calls":[{"actions":[{"type":"screenshot"}]}]})", "task-call-id-invalid"},
      {"evident", R"({"calls":[{"id":"a","actions":[{"type":"screenshot"}]},{"id":"a","actions":[{"type":"screenshot"}]}]})", "task-call-id-invalid"},
      {"evident", R"({"calls":[{"id":"a","actions":[{"type":"screenshot"}],"note":1}]})", "task-response"},
  };
  // 17 actions in one turn, spread over calls.
  std::string calls;
  for (int i = 0; i < 17; ++i) {
    calls += std::string(i ? "," : "") + R"({"id":"c)" + std::to_string(i) + R"(","actions":[{"type":"screenshot"}]})";
  }
  v.push_back({"evident", R"({"calls":[)" + calls + "]}", "task-action-limit"});
  std::string blocks;
  for (int i = 0; i < 9; ++i) {
    blocks += std::string(i ? "," : "") + tool_use("t" + std::to_string(i), R"({"action":"key","text":"a b"})");
  }
  v.push_back({"anthropic-computer-20250124", anthropic(blocks), "task-action-limit"});
  std::string many;
  for (int i = 0; i < 17; ++i) many += std::string(i ? "," : "") + R"({"type":"screenshot"})";
  v.push_back({"openai-computer", openai(R"({"type":"computer_call","call_id":"c","pending_safety_checks":[],"actions":[)" + many + "]}"), "task-action-limit"});
  std::string items;
  for (int i = 0; i < 257; ++i) items += std::string(i ? "," : "") + R"({"type":"reasoning","summary":[]})";
  v.push_back({"openai-computer", openai(items), "task-response"});
  return v;
}

TEST(BadInput, EveryCaseIsRefusedWithItsCodeAndNoContentEcho) {
  const auto cases = bad_cases();
  EXPECT_GE(cases.size(), 100u);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Bad& c = cases[i];
    auto t = run(c.adapter, c.response);
    ASSERT_FALSE(t.ok()) << "case " << i << " (" << c.adapter << ") was accepted";
    EXPECT_EQ(t.error().code, c.code) << "case " << i << ": " << t.error().message;
    // Messages never echo provider content (call ids, text, keys, URLs, tool names).
    for (const char* secret : {"toolu_", "notakey", "NOSUCHKEY", "example.com", "multiply_numbers", "bash", "iiii", "aaaa"}) {
      EXPECT_EQ(t.error().message.find(secret), std::string::npos) << "case " << i << ": " << t.error().message;
    }
  }
}

}  // namespace
}  // namespace evident::agents
