// Running a turn on a fake display: every frame is a real PNG whose grey level says how many
// actions ran, so the tests can tell which frame answered which call.
#include <gtest/gtest.h>
#include <png.h>

#include "evident/agents/convert.h"
#include "evident/capture/capture.h"
#include "evident/core/sha256.h"
#include "evident/task/turn.h"

namespace evident::task {
namespace {

std::string solid_png(int w, int h, int level) {
  RawImage raw;
  raw.width = w;
  raw.height = h;
  raw.rgb.assign(static_cast<std::size_t>(w) * h * 3, static_cast<std::uint8_t>(level));
  // A marker column so crops are distinguishable: x == 2 is white.
  for (int y = 0; y < h && w > 2; ++y) {
    for (int k = 0; k < 3; ++k) raw.rgb[(static_cast<std::size_t>(y) * w + 2) * 3 + k] = 255;
  }
  return encode_png(raw)->bytes;
}

class FakeLease : public SessionLease {
 public:
  FakeLease(int w, int h) : w_(w), h_(h) {
    target_.width = w;
    target_.height = h;
  }
  const SessionTarget& target() const override { return target_; }
  Result<SessionFrame> capture() override {
    if (capture_fails) return make_error("capture-failed", "fake capture failure");
    SessionFrame f;
    f.bytes = solid_png(w_, h_, static_cast<int>(executed.size()) * 10);
    f.sha256 = sha256_hex(f.bytes);
    f.width = w_;
    f.height = h_;
    return f;
  }
  SessionActionOutcome execute(const Action& a, int index) override {
    executed.push_back(index);
    types.push_back(to_string(a.type));
    if (static_cast<int>(executed.size()) == fail_at) return {"failed", "the fake app did not react", 2};
    if (a.type == ActionType::kScreenshot || a.type == ActionType::kZoom || a.type == ActionType::kWait) return {"ok", "", 0};
    return {"injected", "", 2};
  }
  std::string settle(std::int64_t quiet_ms, std::int64_t cap_ms) override {
    settles.emplace_back(quiet_ms, cap_ms);
    return "settled";
  }
  Status release_all_checked() override { return ok_status(); }
  bool display_alive() override { return static_cast<int>(executed.size()) < display_dies_after; }
  bool app_alive() override { return static_cast<int>(executed.size()) < app_dies_after; }
  bool display_confirmed_alive() override { return display_alive() && !display_dying; }

  std::vector<int> executed;
  std::vector<std::string> types;
  std::vector<std::pair<std::int64_t, std::int64_t>> settles;  // (quiet_ms, cap_ms) per settle
  int fail_at = -1;              // the n-th executed action (1-based) reports failed
  int display_dies_after = 1 << 30;
  int app_dies_after = 1 << 30;
  bool capture_fails = false;
  bool display_dying = false;  // looks alive, but fails the confirming round trip

 private:
  int w_, h_;
  SessionTarget target_;
};

agents::ParsedTurn parse(const char* adapter, std::string_view response, int w = 8, int h = 6) {
  agents::AdapterInput in;
  in.geometry = agents::Geometry{w, h, w, h};
  auto j = parse_json_strict(response, 1 << 20, "test");
  auto t = agents::find_adapter(adapter)->parse(*j, in);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? *t : agents::ParsedTurn{};
}

const char* kThreeCalls = R"({"type":"message","role":"assistant","content":[
  {"type":"tool_use","id":"a","name":"computer","input":{"action":"left_click","coordinate":[1,1]}},
  {"type":"tool_use","id":"b","name":"computer","input":{"action":"key","text":"ctrl+a Delete"}},
  {"type":"tool_use","id":"c","name":"computer","input":{"action":"type","text":"x"}}]})";

struct Sink {
  std::vector<std::string> written;
  FrameSink fn() {
    return [this](const SessionFrame& f) {
      written.push_back(f.sha256);
      return ok_status();
    };
  }
};

TEST(RunTurn, RunsEveryActionWithAFrameAndAnswersEveryCall) {
  FakeLease lease(8, 6);
  Sink sink;
  const auto* adapter = agents::find_adapter("anthropic-computer-20250124");
  auto turn = parse("anthropic-computer-20250124", kThreeCalls);
  TurnRun run = run_turn(lease, *adapter, turn, 5, sink.fn());
  ASSERT_FALSE(run.failure) << run.failure->message;
  EXPECT_EQ(lease.executed, (std::vector<int>{5, 6, 7, 8}));
  EXPECT_EQ(lease.types, (std::vector<std::string>{"click", "key", "key", "type"}));
  ASSERT_EQ(run.actions.size(), 4u);
  EXPECT_EQ(sink.written.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(run.actions[i].frame_sha256, sha256_hex(solid_png(8, 6, static_cast<int>(i + 1) * 10)));
    EXPECT_EQ(run.actions[i].frame_sha256, sink.written[i]);
  }
  EXPECT_EQ(run.actions[1].projection, Json({{"type", "key"}}));  // key names never kept
  EXPECT_EQ(run.actions[3].projection, Json({{"type", "type"}}));
  EXPECT_EQ(run.actions[0].call, 0u);
  EXPECT_EQ(run.actions[2].call, 1u);
  EXPECT_TRUE(run.actions[0].input);
  // Each call answers with the frame after its own last action: 1, 3 and 4 actions ran.
  const Json& content = run.tool_results["content"];
  ASSERT_EQ(content.size(), 3u);
  const int levels[3] = {10, 30, 40};
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(content[c]["is_error"], false);
    EXPECT_EQ(content[c]["content"][1]["source"]["data"], agents::base64_encode(solid_png(8, 6, levels[c])));
  }
  EXPECT_EQ(content[1]["tool_use_id"], "b");
  EXPECT_EQ(run.results[1]["native_actions"], Json::array({"key"}));
  EXPECT_EQ(run.results[1]["actions"].size(), 2u);
  EXPECT_EQ(run.results[1]["actions"][1]["index"], 7);
  EXPECT_EQ(run.results[2]["status"], "ok");
  ASSERT_TRUE(run.last_frame);
  EXPECT_EQ(run.last_frame->sha256, run.actions[3].frame_sha256);
}

// After input the frame waits for the display to settle with the task's settle: by default the
// §4 quiet time and default cap, else the task's values; off, no wait at all ("off"). Actions
// without input never wait ("fixed").
TEST(RunTurn, SettleFollowsTheTasksChoice) {
  const auto* adapter = agents::find_adapter("anthropic-computer-20250124");
  const char* kClickThenScreenshot = R"({"type":"message","role":"assistant","content":[
    {"type":"tool_use","id":"a","name":"computer","input":{"action":"left_click","coordinate":[1,1]}},
    {"type":"tool_use","id":"b","name":"computer","input":{"action":"screenshot"}}]})";
  auto outcomes = [](const TurnRun& run) {
    std::vector<std::string> s;
    for (const auto& a : run.actions) s.push_back(a.settle);
    return s;
  };
  {
    FakeLease lease(8, 6);
    Sink sink;
    TurnRun run = run_turn(lease, *adapter, parse("anthropic-computer-20250124", kClickThenScreenshot), 0, sink.fn());
    ASSERT_FALSE(run.failure);
    EXPECT_EQ(lease.settles, (std::vector<std::pair<std::int64_t, std::int64_t>>{{300, 2000}}));
    EXPECT_EQ(outcomes(run), (std::vector<std::string>{"settled", "fixed"}));
    EXPECT_EQ(run.results[0]["actions"][0]["settle"], "settled");
  }
  {
    FakeLease lease(8, 6);
    Sink sink;
    TaskSettle custom;
    custom.quiet_ms = 40;
    custom.cap_ms = 250;
    TurnRun run = run_turn(lease, *adapter, parse("anthropic-computer-20250124", kClickThenScreenshot), 0, sink.fn(),
                           custom);
    ASSERT_FALSE(run.failure);
    EXPECT_EQ(lease.settles, (std::vector<std::pair<std::int64_t, std::int64_t>>{{40, 250}}));
  }
  {
    FakeLease lease(8, 6);
    Sink sink;
    TaskSettle off;
    off.enabled = false;
    TurnRun run = run_turn(lease, *adapter, parse("anthropic-computer-20250124", kClickThenScreenshot), 0, sink.fn(),
                           off);
    ASSERT_FALSE(run.failure);
    EXPECT_TRUE(lease.settles.empty());
    EXPECT_EQ(outcomes(run), (std::vector<std::string>{"off", "fixed"}));
    EXPECT_EQ(run.results[0]["actions"][0]["settle"], "off");
    EXPECT_EQ(sink.written.size(), 2u);  // a frame is still taken after every action
  }
}

TEST(RunTurn, HaltRuleAfterAFailedAction) {
  FakeLease lease(8, 6);
  lease.fail_at = 2;  // the first key of call b
  Sink sink;
  const auto* adapter = agents::find_adapter("anthropic-computer-20250124");
  TurnRun run = run_turn(lease, *adapter, parse("anthropic-computer-20250124", kThreeCalls), 0, sink.fn());
  ASSERT_TRUE(run.failure);
  EXPECT_EQ(run.failure->code, "task-action-failed");
  EXPECT_EQ(lease.executed.size(), 2u);  // nothing ran after the failure
  EXPECT_EQ(run.call_status, (std::vector<agents::CallStatus>{agents::CallStatus::kOk, agents::CallStatus::kFailed,
                                                              agents::CallStatus::kNotRun}));
  const Json& content = run.tool_results["content"];
  EXPECT_EQ(content[0]["is_error"], false);
  EXPECT_EQ(content[1]["is_error"], true);
  EXPECT_EQ(content[1]["content"][1]["source"]["data"], agents::base64_encode(solid_png(8, 6, 20)));
  EXPECT_EQ(content[2]["is_error"], true);
  EXPECT_EQ(content[2]["content"].size(), 1u);  // not run: no image
  EXPECT_EQ(content[2]["content"][0]["text"], "not run: an earlier call of this turn failed");
  EXPECT_EQ(run.results[1]["status"], "failed");
  EXPECT_EQ(run.results[2]["status"], "not_run");
  EXPECT_EQ(run.results[2]["actions"].size(), 0u);
}

TEST(RunTurn, LostDisplayDeadAppAndFrameFailuresEndTheTurn) {
  const auto* adapter = agents::find_adapter("openai-computer");
  const char* two = R"({"object":"response","output":[
    {"type":"computer_call","call_id":"c1","pending_safety_checks":[],"actions":[{"type":"click","button":"left","x":1,"y":1}]},
    {"type":"computer_call","call_id":"c2","pending_safety_checks":[],"actions":[{"type":"move","x":2,"y":2}]}]})";
  {
    FakeLease lease(8, 6);
    lease.display_dies_after = 1;
    Sink sink;
    TurnRun run = run_turn(lease, *adapter, parse("openai-computer", two), 0, sink.fn());
    ASSERT_TRUE(run.failure);
    EXPECT_EQ(run.failure->code, "session-display-lost");
    EXPECT_EQ(lease.executed.size(), 1u);
    EXPECT_EQ(run.tool_results.size(), 2u);
  }
  {
    FakeLease lease(8, 6);
    lease.app_dies_after = 0;
    Sink sink;
    TurnRun run = run_turn(lease, *adapter, parse("openai-computer", two), 0, sink.fn());
    ASSERT_TRUE(run.failure);
    EXPECT_EQ(run.failure->code, "app-not-live");
    EXPECT_TRUE(lease.executed.empty());
  }
  {
    // the app died with its display: the display's loss (SessionLease::gone)
    FakeLease lease(8, 6);
    lease.app_dies_after = 0;
    lease.display_dying = true;
    Sink sink;
    TurnRun run = run_turn(lease, *adapter, parse("openai-computer", two), 0, sink.fn());
    ASSERT_TRUE(run.failure);
    EXPECT_EQ(run.failure->code, "session-display-lost");
    EXPECT_TRUE(lease.executed.empty());
  }
  {
    FakeLease lease(8, 6);
    lease.capture_fails = true;
    Sink sink;
    TurnRun run = run_turn(lease, *adapter, parse("openai-computer", two), 0, sink.fn());
    ASSERT_TRUE(run.failure);
    EXPECT_EQ(run.failure->code, "capture-failed");
    EXPECT_EQ(lease.executed.size(), 1u);
  }
  {
    FakeLease lease(8, 6);
    TurnRun run = run_turn(lease, *adapter, parse("openai-computer", two), 0,
                           [](const SessionFrame&) -> Status { return make_error("fs-error", "disk full"); });
    ASSERT_TRUE(run.failure);
    EXPECT_EQ(run.failure->code, "fs-error");
    EXPECT_EQ(lease.executed.size(), 1u);
  }
}

TEST(RunTurn, ZoomAnswersWithTheRegion) {
  FakeLease lease(8, 6);
  Sink sink;
  const auto* adapter = agents::find_adapter("evident");
  auto turn = parse("evident", R"({"calls":[{"id":"z","actions":[{"type":"zoom","x":2,"y":1,"width":3,"height":2}]}]})");
  TurnRun run = run_turn(lease, *adapter, turn, 0, sink.fn());
  ASSERT_FALSE(run.failure);
  ASSERT_EQ(run.call_images.size(), 1u);
  EXPECT_EQ(run.call_images[0].width, 3);
  EXPECT_EQ(run.call_images[0].height, 2);
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  ASSERT_TRUE(png_image_begin_read_from_memory(&img, run.call_images[0].png.data(), run.call_images[0].png.size()));
  img.format = PNG_FORMAT_GRAY;
  std::vector<std::uint8_t> px(PNG_IMAGE_SIZE(img));
  ASSERT_TRUE(png_image_finish_read(&img, nullptr, px.data(), 0, nullptr));
  // The region starts on the white marker column (x == 2), then the frame's grey (1 action: 10).
  EXPECT_EQ(px, (std::vector<std::uint8_t>{255, 10, 10, 255, 10, 10}));
  EXPECT_EQ(run.tool_results["results"][0]["png_base64"], agents::base64_encode(run.call_images[0].png));
}

TEST(RunTurn, AnthropicSeesAScaledFrame) {
  FakeLease lease(1600, 1000);
  Sink sink;
  const auto* adapter = agents::find_adapter("anthropic-computer-20251124");
  agents::AdapterInput in;
  in.geometry = agents::Geometry{1600, 1000, 1385, 865};
  auto j = parse_json_strict(R"({"type":"message","content":[{"type":"tool_use","id":"s","name":"computer","input":{"action":"screenshot"}}]})", 1 << 20, "t");
  auto turn = adapter->parse(*j, in);
  ASSERT_TRUE(turn.ok());
  TurnRun run = run_turn(lease, *adapter, *turn, 0, sink.fn());
  ASSERT_FALSE(run.failure);
  // 1600x1000 is over 1,200,000 px: long edge 1385 (1000*1385/1600 = 865.6 -> 865; 1386 -> 866, too many).
  EXPECT_EQ(run.call_images[0].width, 1385);
  EXPECT_EQ(run.call_images[0].height, 865);
  EXPECT_NE(run.call_images[0].sha256, run.actions[0].frame_sha256);  // both digests exist
  EXPECT_EQ(run.call_images[0].sha256, sha256_hex(run.call_images[0].png));
}

}  // namespace
}  // namespace evident::task
