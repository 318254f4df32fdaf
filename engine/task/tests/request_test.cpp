// Task requests: every malformed request is refused with its code before anything is looked up.
#include <gtest/gtest.h>

#include <random>

#include "evident/task/request.h"

namespace evident::task {
namespace {

const std::string kHex(64, 'a');
std::string begin_req(std::string_view extra = "", std::string_view mode = "stage",
                  std::string_view adapter = "anthropic-computer-20250124") {
  return R"({"op":"begin","mode":")" + std::string(mode) + R"(","display_id":3,"generation":"gen-x","app_id":"app-1",)"
         R"("attempt_id":"a1","task_sha256":")" + kHex + R"(","policy":{"adapter":")" + std::string(adapter) +
         R"(","provider":"anthropic","model":"claude-x"})" + std::string(extra) + "}";
}

TEST(TaskRequest, ParsesEveryOp) {
  auto b = parse_task_request(begin_req());
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->op, TaskOp::kBegin);
  EXPECT_EQ(b->mode, TaskMode::kStage);
  EXPECT_EQ(b->display_id, 3);
  EXPECT_EQ(b->policy.adapter, "anthropic-computer-20250124");
  EXPECT_EQ(b->policy.model, "claude-x");
  auto a = parse_task_request(begin_req(R"(,"prior_receipt_id":"etr-)" + kHex + "\"", "attest"));
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->mode, TaskMode::kAttest);
  EXPECT_EQ(a->prior_receipt_id, "etr-" + kHex);
  auto t = parse_task_request(R"({"op":"turn","task_id":"tsk-1","sequence":4,"response":{"type":"message","content":[]}})");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->sequence, 4);
  EXPECT_EQ(t->response["type"], "message");
  auto ab = parse_task_request(R"({"op":"abort","task_id":"tsk-1","sequence":0})");
  ASSERT_TRUE(ab.ok());
  EXPECT_EQ(ab->op, TaskOp::kAbort);
  auto s = parse_task_request(R"({"op":"status","task_id":"tsk-1"})");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->op, TaskOp::kStatus);
}

TEST(TaskRequest, SettleIsOffTheDefaultsOrBoundedMilliseconds) {
  auto settle = [](std::string_view v) {
    auto r = parse_task_request(begin_req(R"(,"settle":)" + std::string(v)));
    EXPECT_TRUE(r.ok()) << v << ": " << (r.ok() ? "" : r.error().message);
    return r.ok() ? r->settle : TaskSettle{};
  };
  auto none = parse_task_request(begin_req());
  ASSERT_TRUE(none.ok());
  // Absent is today's behaviour: on, the §4 quiet time and default cap (300 / 2000 ms).
  EXPECT_TRUE(none->settle.enabled);
  EXPECT_EQ(none->settle.quiet_ms, 300);
  EXPECT_EQ(none->settle.cap_ms, 2000);
  EXPECT_EQ(none->settle.to_json(), Json({{"quiet_ms", 300}, {"cap_ms", 2000}}));
  EXPECT_FALSE(settle("false").enabled);
  EXPECT_EQ(settle("false").to_json(), Json(false));
  EXPECT_EQ(settle("true").to_json(), Json({{"quiet_ms", 300}, {"cap_ms", 2000}}));
  EXPECT_EQ(settle("{}").to_json(), Json({{"quiet_ms", 300}, {"cap_ms", 2000}}));
  EXPECT_EQ(settle(R"({"quiet_ms":50,"cap_ms":400})").to_json(), Json({{"quiet_ms", 50}, {"cap_ms", 400}}));
  EXPECT_EQ(settle(R"({"quiet_ms":1,"cap_ms":1})").to_json(), Json({{"quiet_ms", 1}, {"cap_ms", 1}}));
  EXPECT_EQ(settle(R"({"cap_ms":5000})").to_json(), Json({{"quiet_ms", 300}, {"cap_ms", 5000}}));
  EXPECT_EQ(settle(R"({"quiet_ms":100})").to_json(), Json({{"quiet_ms", 100}, {"cap_ms", 2000}}));
  auto via_session = parse_task_session_request(begin_req(R"(,"settle":{"quiet_ms":20,"cap_ms":30})"));
  ASSERT_TRUE(via_session.ok());
  EXPECT_EQ(via_session->task_settle.to_json(), Json({{"quiet_ms", 20}, {"cap_ms", 30}}));
}

TEST(TaskRequest, BadRequestsAreRefusedWithTheirCode) {
  const std::string big_response = R"({"op":"turn","task_id":"t","sequence":0,"response":{"k":")" +
                                   std::string(agents::kMaxResponseBytes, 'x') + "\"}}";
  const std::vector<std::pair<std::string, const char*>> cases = {
      {std::string(kMaxTaskRequestBytes + 1, ' '), "task-input-size"},
      {big_response, "task-input-size"},
      {"", "task-json"},
      {"{", "task-json"},
      {R"({"op":"status","task_id":"t"} x)", "task-json"},
      {R"({"op":"status","op":"status","task_id":"t"})", "task-json"},
      {R"({"op":"turn","task_id":"t","sequence":0,"response":{"x":1.5}})", "task-json"},
      {"[]", "task-command"},
      {R"({"task_id":"t"})", "task-command"},
      {R"({"op":"fly"})", "task-command"},
      {R"({"op":7})", "task-command"},
      {R"({"op":"status"})", "task-command"},
      {R"({"op":"status","task_id":"t","extra":1})", "task-command"},
      {R"({"op":"turn","task_id":"t","sequence":0})", "task-command"},
      {R"({"op":"turn","task_id":"t","sequence":-1,"response":{}})", "task-command"},
      {R"({"op":"turn","task_id":"t","sequence":"0","response":{}})", "task-command"},
      {R"({"op":"turn","task_id":"t","sequence":0,"response":[]})", "task-command"},
      {R"({"op":"turn","task_id":"t","sequence":0,"response":"{}"})", "task-command"},
      {R"({"op":"abort","task_id":"t"})", "task-command"},
      {R"({"op":"abort","task_id":"t","sequence":0,"response":{}})", "task-command"},
      {begin_req("", "rehearse"), "task-command"},
      {begin_req(R"(,"note":1)"), "task-command"},
      {begin_req("", "stage", ""), "task-command"},
      {begin_req("", "stage", std::string(257, 'a')), "task-command"},
      {begin_req("", "stage", "anthropic"), "task-adapter-unknown"},
      {begin_req("", "stage", "openai-computer-use"), "task-adapter-unknown"},
      {begin_req(R"(,"prior_receipt_id":"etr-)" + kHex + "\""), "task-lineage-invalid"},
      {begin_req("", "attest"), "task-lineage-invalid"},
      {begin_req(R"(,"prior_receipt_id":"ecr-)" + kHex + "\"", "attest"), "task-lineage-invalid"},
      {begin_req(R"(,"prior_receipt_id":"etr-)" + std::string(64, 'A') + "\"", "attest"), "task-lineage-invalid"},
      {begin_req(R"(,"prior_receipt_id":5)", "attest"), "task-lineage-invalid"},
      {begin_req(R"(,"settle":300)"), "task-command"},
      {begin_req(R"(,"settle":"off")"), "task-command"},
      {begin_req(R"(,"settle":null)"), "task-command"},
      {begin_req(R"(,"settle":[300,2000])"), "task-command"},
      {begin_req(R"(,"settle":{"quiet_ms":0})"), "task-command"},
      {begin_req(R"(,"settle":{"quiet_ms":-5,"cap_ms":10})"), "task-command"},
      {begin_req(R"(,"settle":{"cap_ms":0})"), "task-command"},
      {begin_req(R"(,"settle":{"cap_ms":5001})"), "task-command"},
      {begin_req(R"(,"settle":{"quiet_ms":5001,"cap_ms":5000})"), "task-command"},
      {begin_req(R"(,"settle":{"quiet_ms":500,"cap_ms":400})"), "task-command"},
      {begin_req(R"(,"settle":{"cap_ms":100})"), "task-command"},  // the default quiet time, 300, exceeds it
      {begin_req(R"(,"settle":{"quiet_ms":"50"})"), "task-command"},
      {begin_req(R"(,"settle":{"quiet_ms":50,"secret":1})"), "task-command"},
      {begin_req(R"(,"settle":{"quiet_ms":1.5})"), "task-json"},
      {R"({"op":"begin","mode":"stage","display_id":3,"generation":"g","app_id":"a","attempt_id":"","task_sha256":")" + kHex +
           R"(","policy":{"adapter":"evident","provider":"p","model":"m"}})", "task-command"},
      {R"({"op":"begin","mode":"stage","display_id":3,"generation":"g","app_id":"a","attempt_id":"x","task_sha256":"abc",)"
       R"("policy":{"adapter":"evident","provider":"p","model":"m"}})", "task-command"},
      {R"({"op":"begin","mode":"stage","display_id":-1,"generation":"g","app_id":"a","attempt_id":"x","task_sha256":")" + kHex +
           R"(","policy":{"adapter":"evident","provider":"p","model":"m"}})", "task-command"},
      {R"({"op":"begin","mode":"stage","display_id":3,"generation":"g","app_id":"a","attempt_id":"x","task_sha256":")" + kHex +
           R"(","policy":{"adapter":"evident","provider":"p"}})", "task-command"},
      {R"({"op":"begin","mode":"stage","display_id":3,"generation":"g","app_id":"a","attempt_id":"x","task_sha256":")" + kHex +
           R"(","policy":{"adapter":"evident","provider":"p","model":"m","secret":"s"}})", "task-command"},
      {R"({"op":"begin","mode":"stage","display_id":3,"generation":"g","app_id":"a","attempt_id":"x","task_sha256":")" + kHex +
           R"(","policy":"evident"})", "task-command"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    auto r = parse_task_request(cases[i].first);
    ASSERT_FALSE(r.ok()) << "case " << i;
    EXPECT_EQ(r.error().code, cases[i].second) << "case " << i << ": " << r.error().message;
    EXPECT_EQ(r.error().message.find("secret"), std::string::npos);
    EXPECT_EQ(r.error().message.find("rehearse"), std::string::npos);
  }
}

// Deterministic mutations of valid requests never throw; each parses or gets a task-* code.
TEST(TaskRequest, MutationsNeverThrow) {
  std::mt19937 rng(1201);
  const std::vector<std::string> valid = {
      begin_req(), begin_req(R"(,"prior_receipt_id":"etr-)" + kHex + "\"", "attest"),
      R"({"op":"turn","task_id":"tsk-1","sequence":4,"response":{"type":"message","content":[]}})",
      R"({"op":"abort","task_id":"tsk-1","sequence":0})", R"({"op":"status","task_id":"tsk-1"})"};
  const Json replacements[] = {nullptr, -1, kMaxSafeInteger, "", Json::array(), Json::object(), true, "MARKER"};
  for (const std::string& text : valid) {
    const Json base = Json::parse(text);
    for (int i = 0; i < 400; ++i) {
      Json j = base;
      auto it = j.begin();
      std::advance(it, rng() % j.size());
      if (rng() % 4 == 0) j.erase(it.key());
      else *it = replacements[rng() % std::size(replacements)];
      Result<TaskRequest> r = make_error("unset", "");
      ASSERT_NO_THROW(r = parse_task_request(dump_json(j)));
      if (!r.ok()) {
        EXPECT_TRUE(r.error().code.starts_with("task-")) << r.error().code;
        EXPECT_EQ(r.error().message.find("MARKER"), std::string::npos);
      }
    }
  }
}

}  // namespace
}  // namespace evident::task
