// Batch validation: every malformed action or batch is refused with the mode's error code before
// anything runs, messages never contain typed text or key names, and projections are redacted.
#include <gtest/gtest.h>

#include "evident/actions/action.h"
#include "evident/actions/batch.h"

namespace evident {
namespace {

Result<std::vector<Action>> parse(const std::string& text, BatchMode mode = BatchMode::kCuActions,
                                  CoordinateSpace space = CoordinateSpace::kPixel) {
  auto j = parse_json_strict(text, 1 << 20, "actions-request");
  EXPECT_TRUE(j.ok()) << text;
  return parse_actions(*j, mode, space, 1280, 800);
}

void expect_error(const std::string& text, const std::string& code, BatchMode mode = BatchMode::kCuActions) {
  auto r = parse(text, mode);
  ASSERT_FALSE(r.ok()) << text;
  EXPECT_EQ(r.error().code, code) << text << " -> " << r.error().message;
  EXPECT_EQ(r.error().message.find("s3cret"), std::string::npos) << r.error().message;
}

TEST(Parse, AcceptsTheWholeVocabulary) {
  auto r = parse(R"([{"type":"click","x":1,"y":2},{"type":"double_click","x":1,"y":2,"button":"right"},
    {"type":"triple_click","x":1,"y":2},{"type":"mouse_down","x":1,"y":2,"button":"middle"},
    {"type":"mouse_up","x":1,"y":2},{"type":"move_mouse","x":1279,"y":799},
    {"type":"drag","start_x":1,"start_y":2,"end_x":3,"end_y":4},
    {"type":"scroll","x":1,"y":2,"direction":"left","amount":100},{"type":"type","text":"h\u00e9\n\t"},
    {"type":"paste","text":"x"},{"type":"key","key":"ctrl+shift+t"},{"type":"hold_key","key":"a","ms":5000},
    {"type":"wait","ms":0},{"type":"screenshot"},{"type":"zoom","x":-10,"y":790,"width":100,"height":100}])");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 15u);
  EXPECT_EQ((*r)[1].button, 3);
  EXPECT_EQ((*r)[3].button, 2);
  EXPECT_EQ((*r)[7].scroll_button, 6);
  EXPECT_EQ((*r)[7].amount, 100);
  const Action& zoom = (*r)[14];
  EXPECT_EQ(zoom.x, 0);
  EXPECT_EQ(zoom.y, 790);
  EXPECT_EQ(zoom.width, 90);
  EXPECT_EQ(zoom.height, 10);
}

TEST(Parse, RefusesBadActionsInCuMode) {
  expect_error(R"([])", "actions-request");
  expect_error(R"({"type":"click"})", "actions-request");
  expect_error(R"([{"type":"click","x":1,"y":2},{"type":"click","x":1,"y":2},{"type":"click","x":1,"y":2},
    {"type":"click","x":1,"y":2},{"type":"click","x":1,"y":2},{"type":"click","x":1,"y":2},{"type":"click","x":1,"y":2},
    {"type":"click","x":1,"y":2},{"type":"click","x":1,"y":2},{"type":"click","x":1,"y":2},{"type":"click","x":1,"y":2},
    {"type":"click","x":1,"y":2},{"type":"click","x":1,"y":2},{"type":"click","x":1,"y":2},{"type":"click","x":1,"y":2},
    {"type":"click","x":1,"y":2},{"type":"click","x":1,"y":2}])", "actions-request");
  expect_error(R"([{"type":"teleport"}])", "action-invalid");
  expect_error(R"([{"type":"click","x":1,"y":2,"z":3}])", "action-invalid");
  expect_error(R"([{"type":"click","x":"1","y":2}])", "action-invalid");
  expect_error(R"([{"type":"click","x":1}])", "action-invalid");
  expect_error(R"([{"type":"click","x":1280,"y":2}])", "action-invalid");
  expect_error(R"([{"type":"click","x":-1,"y":2}])", "action-invalid");
  expect_error(R"([{"type":"click","x":1,"y":2,"button":"fourth"}])", "action-invalid");
  expect_error(R"([{"type":"scroll","x":1,"y":2,"direction":"down","amount":0}])", "action-invalid");
  expect_error(R"([{"type":"scroll","x":1,"y":2,"direction":"down","amount":101}])", "action-invalid");
  expect_error(R"([{"type":"scroll","x":1,"y":2,"direction":"diagonal"}])", "action-invalid");
  expect_error(R"([{"type":"hold_key","key":"a","ms":5001}])", "action-invalid");
  expect_error(R"([{"type":"wait","ms":5001}])", "action-invalid");
  expect_error(R"([{"type":"wait","ms":-1}])", "action-invalid");
  expect_error(R"([{"type":"key","key":""}])", "action-invalid");
  expect_error(R"([{"type":"key","key":"ctrl+s3cret"}])", "action-invalid");
  expect_error(R"([{"type":"type","text":"s3cret\u0007"}])", "action-invalid");
  expect_error("[{\"type\":\"type\",\"text\":\"" + std::string(4097, 'a') + "\"}]", "action-invalid");
  expect_error(R"([{"type":"zoom","x":2000,"y":0,"width":10,"height":10}])", "action-invalid");
  expect_error(R"([{"type":"zoom","x":0,"y":0,"width":0,"height":10}])", "action-invalid");
  expect_error(R"([{"type":"screenshot","x":1}])", "action-invalid");
  expect_error(R"([42])", "action-invalid");
  // A valid action before a bad one does not make the batch partly valid.
  expect_error(R"([{"type":"click","x":1,"y":2},{"type":"wait"}])", "action-invalid");
}

TEST(Parse, SessionModeCodes) {
  expect_error(R"([])", "session-actions", BatchMode::kSession);
  expect_error(R"("click")", "session-actions", BatchMode::kSession);
  for (const char* forbidden : {R"([{"type":"paste","text":"s3cret"}])", R"([{"type":"mouse_down","x":1,"y":1}])",
                                R"([{"type":"mouse_up","x":1,"y":1}])",
                                R"([{"type":"zoom","x":0,"y":0,"width":5,"height":5}])"}) {
    expect_error(forbidden, "session-action-forbidden", BatchMode::kSession);
  }
  expect_error(R"([{"type":"click","x":1,"y":900}])", "session-action", BatchMode::kSession);
  expect_error(R"([{"type":"key","key":"s3cret"}])", "session-action", BatchMode::kSession);
}

TEST(Parse, Normalized1000Scaling) {
  auto r = parse(R"([{"type":"click","x":500,"y":999},{"type":"zoom","x":0,"y":0,"width":1000,"height":500}])",
                 BatchMode::kCuActions, CoordinateSpace::kNormalized1000);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)[0].x, 640);
  EXPECT_EQ((*r)[0].y, 799);  // 999*800/1000 = 799.2 truncated
  EXPECT_EQ((*r)[1].width, 1280);
  EXPECT_EQ((*r)[1].height, 400);
  auto out = parse(R"([{"type":"click","x":1000,"y":0}])", BatchMode::kCuActions, CoordinateSpace::kNormalized1000);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, "action-invalid");
}

TEST(Parse, ProjectionRedactsSecrets) {
  auto r = parse(R"([{"type":"type","text":"s3cret"},{"type":"key","key":"ctrl+a"},{"type":"paste","text":"s3cret"},
                     {"type":"hold_key","key":"shift","ms":20},{"type":"click","x":5,"y":6,"button":"left"}])");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].projection(), Json::parse(R"({"type":"type"})"));
  EXPECT_EQ((*r)[1].projection(), Json::parse(R"({"type":"key"})"));
  EXPECT_EQ((*r)[2].projection(), Json::parse(R"({"type":"paste"})"));
  EXPECT_EQ((*r)[3].projection(), Json::parse(R"({"type":"hold_key","ms":20})"));
  EXPECT_EQ((*r)[4].projection(), Json::parse(R"({"type":"click","x":5,"y":6,"button":"left"})"));
  EXPECT_FALSE((*r)[4].projection().dump().empty());
}

// Which batches may run on the caller's thread (Engine::call_inline): settle off and every
// action of a kind the protocol file marks bounded. The expected kinds are written out here,
// not read from the protocol tables the code uses.
TEST(Parse, ObserveKinds) {
  auto kind = [](const std::string& observe) -> Result<ActionBatchRequest> {
    return parse_action_batch_request(
        Json::parse(R"({"actions":[{"type":"click","x":1,"y":2}],"observe":)" + observe + "}"), 1280,
        800);
  };
  EXPECT_EQ(kind(R"("pixels")")->observe, ObserveKind::kPixels);
  EXPECT_EQ(kind(R"("none")")->observe, ObserveKind::kNone);
  EXPECT_EQ(kind(R"("ax")")->observe, ObserveKind::kAx);
  auto dflt = parse_action_batch_request(Json::parse(R"({"actions":[{"type":"click","x":1,"y":2}]})"),
                                         1280, 800);
  ASSERT_TRUE(dflt.ok());
  EXPECT_EQ(dflt->observe, ObserveKind::kPixels);
  for (const char* bad : {R"("AX")", R"("ax ")", R"("text")", R"(["ax"])", "true", "null"}) {
    auto r = kind(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, "actions-request") << bad;
  }
}

TEST(BatchIsBounded, OnlyBoundedKindsWithoutSettle) {
  auto bounded = [](const std::string& text) {
    return batch_is_bounded(Json::parse(text));
  };
  for (const char* kind : {"click", "double_click", "triple_click", "mouse_down", "mouse_up",
                           "move_mouse", "drag", "scroll", "key", "screenshot", "zoom"}) {
    EXPECT_TRUE(bounded(std::string(R"({"actions":[{"type":")") + kind + R"("}]})")) << kind;
  }
  for (const char* kind : {"type", "paste", "hold_key", "wait", "no_such_kind"}) {
    EXPECT_FALSE(bounded(std::string(R"({"actions":[{"type":"click"},{"type":")") + kind +
                         R"("}]})"))
        << kind;
  }
  EXPECT_TRUE(bounded(R"({"actions":[{"type":"click","x":1,"y":2}],"settle":false,"observe":"pixels"})"));
  EXPECT_FALSE(bounded(R"({"actions":[{"type":"click"}],"settle":true})"));
  EXPECT_FALSE(bounded(R"({"actions":[{"type":"click"}],"settle":300})"));
  EXPECT_FALSE(bounded(R"({"actions":[{"type":"click"}],"settle":null})"));
  EXPECT_FALSE(bounded(R"({"actions":[{"type":1}]})"));
  EXPECT_FALSE(bounded(R"({"actions":["click"]})"));
  EXPECT_FALSE(bounded(R"({"actions":{}})"));
  EXPECT_FALSE(bounded(R"({})"));
  EXPECT_FALSE(bounded(R"([])"));
  std::string seventeen = R"({"actions":[)";
  for (int i = 0; i < 17; ++i) seventeen += std::string(i ? "," : "") + R"({"type":"click"})";
  EXPECT_FALSE(bounded(seventeen + "]}"));
}

}  // namespace
}  // namespace evident
