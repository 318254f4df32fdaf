// The task lane end to end on a real display: the engine's own Xvfb, the real fixture app (which
// logs every event it receives), the `task` op in-process (Engine::call, as Python and the
// daemon reach it). Stage tasks through the `evident` adapter and anthropic-computer-20250124
// drive the app and end in receipts `evident verify` accepts; an attest task follows one with
// lineage; and a table of bad inputs, each asserting its exact code, that the task's snapshot did
// not advance, and — by a marker click after it whose log event must be the only press since the
// previous marker — that nothing of it reached the app. One display and one app serve every case
// (a refused turn ends its task; the next case begins a new one on the same display).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "../../session/tests/engine_harness.h"
#include "evident/core/clock.h"
#include "evident/testing/daemon.h"
#include "evident/testing/process.h"

namespace evident::task {
namespace {

using testing::code_of;
using testing::EngineHarness;

const std::string kTaskSha(64, 'b');

std::size_t presses(const std::vector<Json>& ev) {
  std::size_t n = 0;
  for (const auto& e : ev) n += (e["type"] == "button_press" || e["type"] == "key_press") ? 1 : 0;
  return n;
}

class TaskX11 {
 public:
  explicit TaskX11(const Clock* clock = nullptr) : h(800, 600, clock) { app_id = h.launch_app(); }

  Json raw(const std::string& text) { return h.call("task", Json{{"request", text}}); }
  Json req(const Json& r) { return raw(r.dump()); }
  Json begin_req(const std::string& mode, const std::string& adapter, const std::string& attempt) {
    return Json{{"op", "begin"},
                {"mode", mode},
                {"display_id", h.display_id()},
                {"generation", h.generation()},
                {"app_id", app_id},
                {"attempt_id", attempt},
                {"task_sha256", kTaskSha},
                {"policy", {{"adapter", adapter}, {"provider", "test"}, {"model", "scripted"}}}};
  }
  Json begin(const std::string& mode, const std::string& adapter, const std::string& attempt,
             const std::string& prior = "") {
    Json r = begin_req(mode, adapter, attempt);
    if (!prior.empty()) r["prior_receipt_id"] = prior;
    return req(r);
  }
  Json turn(const std::string& id, std::int64_t seq, const Json& response) {
    return req(Json{{"op", "turn"}, {"task_id", id}, {"sequence", seq}, {"response", response}});
  }
  Json status(const std::string& id) { return req(Json{{"op", "status"}, {"task_id", id}}); }
  Json abort(const std::string& id, std::int64_t seq) {
    return req(Json{{"op", "abort"}, {"task_id", id}, {"sequence", seq}});
  }

  // A click on the background at (x, 180) outside any task (cu.actions), then waits until the
  // app logged it. Returns whether the presses since the previous marker are exactly this one:
  // X delivers events in order, so a press injected by an earlier request would be logged
  // before the marker.
  bool marker(int x) {
    Json r = h.call("cu.actions", Json{{"display_id", h.display_id()},
                                       {"generation", h.generation()},
                                       {"request", {{"actions", Json::array({Json{{"type", "click"}, {"x", x}, {"y", 180}}})},
                                                    {"observe", "none"}}}});
    if (code_of(r) != "ok") {
      ADD_FAILURE() << "marker click: " << r.dump();
      return false;
    }
    bool seen = h.log().wait_for([&](const std::vector<Json>& ev) {
      for (const auto& e : ev) {
        if (e["type"] == "button_press" && e["x"] == x && e["y"] == 180) return true;
      }
      return false;
    });
    if (!seen) return false;
    const std::size_t now = presses(h.log().events());
    const bool only = now == marked_ + 1;
    marked_ = now;
    return only;
  }
  void settle_marks() { marked_ = presses(h.log().events()); }

  EngineHarness h;
  std::string app_id;

 private:
  std::size_t marked_ = 0;
};

Json evident_calls(const Json& actions, const std::string& id = "c1") {
  return Json{{"calls", Json::array({Json{{"id", id}, {"actions", actions}}})}};
}
Json anthropic(const Json& content) {
  return Json{{"type", "message"}, {"role", "assistant"}, {"content", content}};
}
Json tool_use(const std::string& id, const Json& input, const std::string& name = "computer") {
  return Json{{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", input}};
}

// `evident verify RECEIPT --frames DIR --key PUB [extra]`: exit status and output.
testing::CommandResult evident_verify(const std::string& receipt_path, const std::string& frames,
                                      const std::string& key, const std::string& extra = "") {
  return testing::run_command(testing::shell_quote(testing::evident_cli_path()) + " --json verify " +
                              testing::shell_quote(receipt_path) + " --frames " + testing::shell_quote(frames) +
                              " --key " + testing::shell_quote(key) + " " + extra + " 2>&1");
}

TEST(TaskLaneX11, StageTasksDriveTheRealAppAndEndInVerifiedReceiptsThenAttestFollowsWithLineage) {
  TaskX11 t;
  ASSERT_FALSE(t.app_id.empty());
  const std::string key = t.h.root() + "/state/keys/signing.pub";

  // 1. The `evident` adapter: click the text field, type the trigger phrase, click the counter.
  Json b = t.begin("stage", "evident", "attempt-evident");
  ASSERT_EQ(code_of(b), "ok") << b.dump();
  const std::string id = b["task_id"];
  Json turn = t.turn(id, 0, evident_calls(Json::array({Json{{"type", "click"}, {"x", 100}, {"y", 40}},
                                                         Json{{"type", "type"}, {"text", "evident"}},
                                                         Json{{"type", "click"}, {"x", 245}, {"y", 105}}})));
  ASSERT_EQ(code_of(turn), "ok") << turn.dump();
  EXPECT_EQ(turn["turn_count"], 1);
  EXPECT_EQ(turn["actions_left"], 61);
  EXPECT_EQ(turn["tool_results"]["results"][0]["status"], "ok");
  EXPECT_FALSE(turn["tool_results"]["results"][0]["png_base64"].get<std::string>().empty());
  ASSERT_TRUE(t.h.log().wait_for([](const std::vector<Json>& ev) {
    bool trigger = false, counter = false;
    for (const auto& e : ev) {
      trigger = trigger || e["type"] == "trigger";
      counter = counter || (e["type"] == "counter" && e["value"] == 1);
    }
    return trigger && counter;
  }));
  EXPECT_EQ(presses(t.h.log().events()), 2u + 7u);  // two clicks and the seven typed keys
  Json fin = t.turn(id, 1, Json{{"result", {{"counter", 1}, {"background", "green"}}}});
  ASSERT_EQ(code_of(fin), "ok") << fin.dump();
  EXPECT_EQ(fin["phase"], "finished");
  const Json& receipt = fin["receipt"];
  EXPECT_EQ(receipt["schema"], "evident.task-receipt/v1");
  EXPECT_EQ(receipt["mode"], "stage");
  EXPECT_EQ(receipt["turn_count"], 2);
  const std::string dir = fin["evidence_dir"];
  auto v = evident_verify(fin["receipt_path"], dir, key);
  EXPECT_EQ(v.exit_status, 0) << v.out;
  EXPECT_NE(v.out.find("\"authenticated\":true"), std::string::npos) << v.out;
  // Nothing secret: the typed text is only committed to, never written.
  EXPECT_EQ(testing::slurp(fin["receipt_path"]).find("\"text\""), std::string::npos);
  // actions.json names the task and lists each action's projection (for the report's geometry).
  {
    const std::string actions_text = testing::slurp(dir + "/actions.json");
    EXPECT_EQ(actions_text.find("\"text\""), std::string::npos);
    auto doc = parse_json_strict(actions_text, 1 << 20, "test");
    ASSERT_TRUE(doc.ok()) << actions_text;
    EXPECT_EQ((*doc)["task_id"], id);
    EXPECT_EQ((*doc)["receipt_id"], receipt["receipt_id"]);
    ASSERT_EQ((*doc)["actions"].size(), receipt["action_count"].get<std::size_t>());
    EXPECT_EQ((*doc)["actions"][0]["projection"]["type"], "click");
  }

  // 2. anthropic-computer-20250124: one click on the counter, then a text final answer.
  b = t.begin("stage", "anthropic-computer-20250124", "attempt-anthropic");
  ASSERT_EQ(code_of(b), "ok") << b.dump();
  const std::string aid = b["task_id"];
  turn = t.turn(aid, 0, anthropic(Json::array({Json{{"type", "text"}, {"text", "I will click the counter."}},
                                               tool_use("toolu_01", {{"action", "left_click"}, {"coordinate", {245, 105}}})})));
  ASSERT_EQ(code_of(turn), "ok") << turn.dump();
  ASSERT_EQ(turn["tool_results"]["content"].size(), 1u);
  EXPECT_EQ(turn["tool_results"]["content"][0]["tool_use_id"], "toolu_01");
  EXPECT_EQ(turn["tool_results"]["content"][0]["is_error"], false);
  ASSERT_TRUE(t.h.log().wait_for([](const std::vector<Json>& ev) {
    for (const auto& e : ev) {
      if (e["type"] == "counter" && e["value"] == 2) return true;
    }
    return false;
  }));
  // An invalid final answer first: counted, and the adapter's retry prompt comes back.
  Json retry = t.turn(aid, 1, anthropic(Json::array({Json{{"type", "text"}, {"text", "done!"}}})));
  ASSERT_EQ(code_of(retry), "ok") << retry.dump();
  EXPECT_EQ(retry["result_error"]["code"], "task-result-invalid");
  EXPECT_EQ(retry["retry_prompt"]["role"], "user");
  EXPECT_EQ(retry["invalid_result_count"], 1);
  fin = t.turn(aid, 2, anthropic(Json::array({Json{{"type", "text"}, {"text", "```json\n{\"counter\": 2}\n```"}}})));
  ASSERT_EQ(code_of(fin), "ok") << fin.dump();
  EXPECT_EQ(fin["receipt"]["result"], (Json{{"counter", 2}}));
  EXPECT_EQ(fin["receipt"]["invalid_result_count"], 1);
  const std::string stage_path = fin["receipt_path"];
  const std::string stage_id = fin["receipt_id"];
  v = evident_verify(stage_path, fin["evidence_dir"], key);
  EXPECT_EQ(v.exit_status, 0) << v.out;

  // 3. attest with lineage: screenshot only, then the final answer.
  b = t.begin("attest", "anthropic-computer-20250124", "attempt-anthropic", stage_id);
  ASSERT_EQ(code_of(b), "ok") << b.dump();
  const std::string tid = b["task_id"];
  EXPECT_EQ(b["turns_left"], 2);
  const std::size_t before = presses(t.h.log().events());
  t.settle_marks();
  turn = t.turn(tid, 0, anthropic(Json::array({tool_use("toolu_02", {{"action", "screenshot"}})})));
  ASSERT_EQ(code_of(turn), "ok") << turn.dump();
  fin = t.turn(tid, 1, anthropic(Json::array({Json{{"type", "text"}, {"text", "{\"counter\": 2}"}}})));
  ASSERT_EQ(code_of(fin), "ok") << fin.dump();
  EXPECT_EQ(fin["receipt"]["mode"], "attest");
  EXPECT_EQ(fin["receipt"]["prior_receipt_id"], stage_id);
  EXPECT_EQ(fin["receipt"]["input_event_count"], 0);
  v = evident_verify(fin["receipt_path"], fin["evidence_dir"], key, "--prior " + testing::shell_quote(stage_path));
  EXPECT_EQ(v.exit_status, 0) << v.out;
  EXPECT_TRUE(t.marker(30));  // the attest task injected nothing
  EXPECT_EQ(presses(t.h.log().events()), before + 1);
}

// One bad input: what the task is begun with (none: the request needs no task), the turns that
// run before it (setup), the request, and its exact code.
struct BadCase {
  std::string name;
  std::string adapter;  // "" = no task is begun for this case
  std::string mode = "stage";
  std::vector<Json> setup;  // responses of turns that run (and must succeed) first
  std::function<std::string(const std::string& task_id, std::int64_t seq)> request;
  std::string code;
};

TEST(TaskLaneX11, EveryBadInputGetsItsCodeAdvancesNothingAndInjectsNothing) {
  FakeClock clock(1000, SystemClock::instance().wall_ms());
  TaskX11 t(&clock);
  ASSERT_FALSE(t.app_id.empty());
  t.settle_marks();

  // A stage receipt for the lineage cases (a screenshot turn: no input).
  Json lb = t.begin("stage", "evident", "lineage");
  ASSERT_EQ(code_of(lb), "ok") << lb.dump();
  ASSERT_EQ(code_of(t.turn(lb["task_id"], 0, evident_calls(Json::array({Json{{"type", "screenshot"}}})))), "ok");
  Json fin = t.turn(lb["task_id"], 1, Json{{"result", Json::object()}});
  ASSERT_EQ(code_of(fin), "ok") << fin.dump();
  const std::string stage_receipt = fin["receipt_id"];

  auto turn_with = [](Json response) {
    return [response](const std::string& id, std::int64_t seq) {
      return Json{{"op", "turn"}, {"task_id", id}, {"sequence", seq}, {"response", response}}.dump();
    };
  };
  auto text = [](std::string s) { return [s](const std::string&, std::int64_t) { return s; }; };
  auto begin_with = [&](std::function<void(Json&)> edit) {
    return [&t, edit](const std::string&, std::int64_t) {
      Json r = t.begin_req("stage", "evident", "bad-begin");
      edit(r);
      return r.dump();
    };
  };
  const Json click{{"type", "click"}, {"x", 100}, {"y", 40}};
  const Json shot{{"type", "screenshot"}};
  Json sixteen_shots = Json::array();
  for (int i = 0; i < 16; ++i) sixteen_shots.push_back(shot);
  auto oa = [](const Json& items) { return Json{{"object", "response"}, {"output", items}}; };
  auto oa_call = [](const Json& actions, const std::string& id = "call_1") {
    return Json{{"type", "computer_call"}, {"call_id", id}, {"pending_safety_checks", Json::array()},
                {"actions", actions}};
  };
  auto gem = [](const Json& parts) {
    return Json{{"candidates", Json::array({Json{{"content", {{"role", "model"}, {"parts", parts}}}}})}};
  };
  auto fcall = [](const std::string& name, const Json& args) {
    return Json{{"functionCall", {{"name", name}, {"args", args}}}};
  };
  const std::string big(1024 * 1024, 'x');

  std::vector<BadCase> cases = {
      // The request itself (task layer's strict parser): nothing is looked up.
      {"not json", "evident", "stage", {}, text("{\"op\":"), "task-json"},
      {"trailing data", "evident", "stage", {}, [](const std::string& id, std::int64_t s) {
         return Json{{"op", "status"}, {"task_id", id}}.dump() + " {}"; (void)s; }, "task-json"},
      {"duplicate key in response", "evident", "stage", {}, [](const std::string& id, std::int64_t s) {
         return "{\"op\":\"turn\",\"task_id\":\"" + id + "\",\"sequence\":" + std::to_string(s) +
                ",\"response\":{\"calls\":[],\"calls\":[]}}"; }, "task-json"},
      {"float in response", "evident", "stage", {}, turn_with(Json::parse(R"({"calls":[{"id":"a","actions":[{"type":"wait","ms":1.5}]}]})")), "task-json"},
      {"request is an array", "evident", "stage", {}, text("[]"), "task-command"},
      {"unknown op", "evident", "stage", {}, text(R"({"op":"freeze"})"), "task-command"},
      {"turn without response", "evident", "stage", {}, [](const std::string& id, std::int64_t s) {
         return Json{{"op", "turn"}, {"task_id", id}, {"sequence", s}}.dump(); }, "task-command"},
      {"turn with an unknown field", "evident", "stage", {}, [](const std::string& id, std::int64_t s) {
         return Json{{"op", "turn"}, {"task_id", id}, {"sequence", s}, {"response", {{"result", Json::object()}}}, {"extra", 1}}.dump(); }, "task-command"},
      {"response not an object", "evident", "stage", {}, [](const std::string& id, std::int64_t s) {
         return Json{{"op", "turn"}, {"task_id", id}, {"sequence", s}, {"response", "click"}}.dump(); }, "task-command"},
      {"negative sequence", "evident", "stage", {}, [](const std::string& id, std::int64_t) {
         return Json{{"op", "turn"}, {"task_id", id}, {"sequence", -1}, {"response", Json::object()}}.dump(); }, "task-command"},
      {"response over 1 MiB", "evident", "stage", {}, turn_with(Json{{"calls", Json::array({Json{{"id", "a"}, {"actions", Json::array({Json{{"type", "type"}, {"text", big}}})}}})}}), "task-input-size"},
      {"request over 1 MiB + 4 KiB", "evident", "stage", {}, text(std::string(1024 * 1024 + 8192, ' ')), "task-input-size"},
      // begin: the task layer, then the state machine.
      {"unknown adapter", "", "stage", {}, begin_with([](Json& r) { r["policy"]["adapter"] = "claude-magic"; }), "task-adapter-unknown"},
      {"stage with a prior receipt", "", "stage", {}, begin_with([&](Json& r) { r["prior_receipt_id"] = stage_receipt; }), "task-lineage-invalid"},
      {"attest without lineage", "", "stage", {}, begin_with([](Json& r) { r["mode"] = "attest"; }), "task-lineage-invalid"},
      {"attest with a malformed prior", "", "stage", {}, begin_with([](Json& r) { r["mode"] = "attest"; r["prior_receipt_id"] = "etr-1234"; }), "task-lineage-invalid"},
      {"attest with an unknown prior", "", "stage", {}, begin_with([](Json& r) { r["mode"] = "attest"; r["prior_receipt_id"] = "etr-" + std::string(64, 'f'); }), "task-prior-receipt-unknown"},
      {"attest of another attempt", "", "stage", {}, begin_with([&](Json& r) { r["mode"] = "attest"; r["prior_receipt_id"] = stage_receipt; }), "task-lineage-invalid"},
      {"stale generation", "", "stage", {}, begin_with([](Json& r) { r["generation"] = "gen-" + std::string(32, '0'); }), "display-generation-mismatch"},
      {"unknown app", "", "stage", {}, begin_with([](Json& r) { r["app_id"] = "app-" + std::string(32, '0'); }), "app-not-live"},
      {"malformed task_sha256", "", "stage", {}, begin_with([](Json& r) { r["task_sha256"] = "ABC"; }), "task-command"},
      {"policy model over 256 bytes", "", "stage", {}, begin_with([](Json& r) { r["policy"]["model"] = std::string(257, 'm'); }), "task-command"},
      {"unknown mode", "", "stage", {}, begin_with([](Json& r) { r["mode"] = "replay"; }), "task-command"},
      {"begin while a task holds the display", "evident", "stage", {}, begin_with([](Json& r) { r["attempt_id"] = "second"; }), "task-busy"},
      // Sequence, actor, ids: the task goes on (abort ends it after the checks).
      {"future sequence", "evident", "stage", {}, [](const std::string& id, std::int64_t s) {
         return Json{{"op", "turn"}, {"task_id", id}, {"sequence", s + 1}, {"response", {{"calls", Json::array({Json{{"id", "a"}, {"actions", Json::array({Json{{"type", "click"}, {"x", 100}, {"y", 40}}})}}})}}}}.dump(); }, "task-sequence"},
      {"replayed sequence", "evident", "stage", {evident_calls(Json::array({shot}))}, [](const std::string& id, std::int64_t s) {
         return Json{{"op", "turn"}, {"task_id", id}, {"sequence", s - 1}, {"response", {{"calls", Json::array({Json{{"id", "a"}, {"actions", Json::array({Json{{"type", "click"}, {"x", 100}, {"y", 40}}})}}})}}}}.dump(); }, "task-sequence"},
      {"abort with a stale sequence", "evident", "stage", {evident_calls(Json::array({shot}))}, [](const std::string& id, std::int64_t s) {
         return Json{{"op", "abort"}, {"task_id", id}, {"sequence", s - 1}}.dump(); }, "task-sequence"},
      {"unknown task id", "evident", "stage", {}, [](const std::string&, std::int64_t s) {
         return Json{{"op", "turn"}, {"task_id", "tsk-" + std::string(32, '0')}, {"sequence", s}, {"response", Json::object()}}.dump(); }, "task-not-found"},
      {"malformed task id", "evident", "stage", {}, [](const std::string&, std::int64_t s) {
         return Json{{"op", "abort"}, {"task_id", "ses-123"}, {"sequence", s}}.dump(); }, "task-not-found"},
      // The adapter refuses the turn whole: the task ends, nothing of it ran.
      {"evident: empty calls", "evident", "stage", {}, turn_with(Json{{"calls", Json::array()}}), "task-response"},
      {"evident: calls and result", "evident", "stage", {}, turn_with(Json{{"calls", Json::array({Json{{"id", "a"}, {"actions", Json::array({click})}}})}, {"result", Json::object()}}), "task-response"},
      {"evident: unknown top-level field", "evident", "stage", {}, turn_with(Json{{"calls", Json::array({Json{{"id", "a"}, {"actions", Json::array({click})}}})}, {"thinking", "x"}}), "task-response"},
      {"evident: paste", "evident", "stage", {}, turn_with(evident_calls(Json::array({click, Json{{"type", "paste"}, {"text", "p"}}}))), "task-action-forbidden"},
      {"evident: mouse_down", "evident", "stage", {}, turn_with(evident_calls(Json::array({click, Json{{"type", "mouse_down"}, {"x", 1}, {"y", 1}}}))), "task-action-forbidden"},
      {"evident: unknown action type", "evident", "stage", {}, turn_with(evident_calls(Json::array({click, Json{{"type", "teleport"}}}))), "task-action-forbidden"},
      {"evident: click off the display", "evident", "stage", {}, turn_with(evident_calls(Json::array({click, Json{{"type", "click"}, {"x", 800}, {"y", 10}}}))), "task-action-forbidden"},
      {"evident: wait over 5000 ms", "evident", "stage", {}, turn_with(evident_calls(Json::array({click, Json{{"type", "wait"}, {"ms", 5001}}}))), "task-action-forbidden"},
      {"evident: text over 4096 bytes", "evident", "stage", {}, turn_with(evident_calls(Json::array({click, Json{{"type", "type"}, {"text", std::string(4097, 'a')}}}))), "task-action-forbidden"},
      {"evident: unknown key", "evident", "stage", {}, turn_with(evident_calls(Json::array({click, Json{{"type", "key"}, {"key", "NoSuchKeysym"}}}))), "task-action-forbidden"},
      {"evident: duplicate call ids", "evident", "stage", {}, turn_with(Json{{"calls", Json::array({Json{{"id", "a"}, {"actions", Json::array({click})}}, Json{{"id", "a"}, {"actions", Json::array({shot})}}})}}), "task-call-id-invalid"},
      {"evident: empty call id", "evident", "stage", {}, turn_with(evident_calls(Json::array({click}), "")), "task-call-id-invalid"},
      {"evident: call id over 256 bytes", "evident", "stage", {}, turn_with(evident_calls(Json::array({click}), std::string(257, 'i'))), "task-call-id-invalid"},
      {"evident: 17 actions in a turn", "evident", "stage", {}, [&](const std::string& id, std::int64_t s) {
         Json a = sixteen_shots;
         a.push_back(click);
         return Json{{"op", "turn"}, {"task_id", id}, {"sequence", s}, {"response", evident_calls(a)}}.dump(); }, "task-action-limit"},
      {"anthropic: bash tool", "anthropic-computer-20250124", "stage", {}, turn_with(anthropic(Json::array({tool_use("t1", {{"action", "left_click"}, {"coordinate", {100, 40}}}), tool_use("t2", {{"command", "true"}}, "bash")}))), "task-forbidden-tool-call"},
      {"anthropic: server tool", "anthropic-computer-20250124", "stage", {}, turn_with(anthropic(Json::array({tool_use("t1", {{"action", "left_click"}, {"coordinate", {100, 40}}}), Json{{"type", "server_tool_use"}, {"id", "s1"}, {"name", "web_search"}, {"input", {{"query", "q"}}}}}))), "task-forbidden-tool-call"},
      {"anthropic: left_mouse_down", "anthropic-computer-20250124", "stage", {}, turn_with(anthropic(Json::array({tool_use("t1", {{"action", "left_click"}, {"coordinate", {100, 40}}}), tool_use("t2", {{"action", "left_mouse_down"}})}))), "task-action-forbidden"},
      {"anthropic: cursor_position", "anthropic-computer-20250124", "stage", {}, turn_with(anthropic(Json::array({tool_use("t1", {{"action", "cursor_position"}})}))), "task-action-forbidden"},
      {"anthropic: zoom is not in 20250124", "anthropic-computer-20250124", "stage", {}, turn_with(anthropic(Json::array({tool_use("t1", {{"action", "zoom"}, {"region", {0, 0, 10, 10}}})}))), "task-response"},
      {"anthropic: coordinate outside the image", "anthropic-computer-20250124", "stage", {}, turn_with(anthropic(Json::array({tool_use("t1", {{"action", "left_click"}, {"coordinate", {100, 40}}}), tool_use("t2", {{"action", "left_click"}, {"coordinate", {800, 10}}})}))), "task-action-forbidden"},
      {"anthropic: duplicate tool_use ids", "anthropic-computer-20250124", "stage", {}, turn_with(anthropic(Json::array({tool_use("t1", {{"action", "left_click"}, {"coordinate", {100, 40}}}), tool_use("t1", {{"action", "screenshot"}})}))), "task-call-id-invalid"},
      {"anthropic: empty tool_use id", "anthropic-computer-20250124", "stage", {}, turn_with(anthropic(Json::array({tool_use("", {{"action", "left_click"}, {"coordinate", {100, 40}}})}))), "task-call-id-invalid"},
      {"anthropic: unknown content block", "anthropic-computer-20250124", "stage", {}, turn_with(anthropic(Json::array({tool_use("t1", {{"action", "left_click"}, {"coordinate", {100, 40}}}), Json{{"type", "hologram"}}}))), "task-response"},
      {"anthropic: not a message", "anthropic-computer-20250124", "stage", {}, turn_with(Json{{"content", Json::array()}}), "task-response"},
      {"anthropic: click with a held key", "anthropic-computer-20250124", "stage", {}, turn_with(anthropic(Json::array({tool_use("t1", {{"action", "left_click"}, {"coordinate", {100, 40}}, {"text", "shift"}})}))), "task-action-forbidden"},
      {"anthropic: scroll amount 0", "anthropic-computer-20250124", "stage", {}, turn_with(anthropic(Json::array({tool_use("t1", {{"action", "left_click"}, {"coordinate", {100, 40}}}), tool_use("t2", {{"action", "scroll"}, {"coordinate", {100, 300}}, {"scroll_direction", "down"}, {"scroll_amount", 0}})}))), "task-action-forbidden"},
      {"anthropic: unknown action", "anthropic-computer-20250124", "stage", {}, turn_with(anthropic(Json::array({tool_use("t1", {{"action", "levitate"}})}))), "task-response"},
      {"openai: pending safety check", "openai-computer", "stage", {}, turn_with(oa(Json::array({Json{{"type", "computer_call"}, {"call_id", "c"}, {"pending_safety_checks", Json::array({Json{{"id", "s"}, {"code", "malicious_instructions"}, {"message", "m"}}})}, {"actions", Json::array({Json{{"type", "click"}, {"button", "left"}, {"x", 100}, {"y", 40}}})}}}))), "task-safety-check-refused"},
      {"openai: function call", "openai-computer", "stage", {}, turn_with(oa(Json::array({oa_call(Json::array({Json{{"type", "click"}, {"button", "left"}, {"x", 100}, {"y", 40}}})), Json{{"type", "function_call"}, {"call_id", "f"}, {"name", "rm"}, {"arguments", "{}"}}}))), "task-forbidden-tool-call"},
      {"openai: back button", "openai-computer", "stage", {}, turn_with(oa(Json::array({oa_call(Json::array({Json{{"type", "click"}, {"button", "left"}, {"x", 100}, {"y", 40}}, Json{{"type", "click"}, {"button", "back"}, {"x", 1}, {"y", 1}}}))}))), "task-action-forbidden"},
      {"openai: drag path of 3 points", "openai-computer", "stage", {}, turn_with(oa(Json::array({oa_call(Json::array({Json{{"type", "drag"}, {"path", Json::array({Json{{"x", 1}, {"y", 1}}, Json{{"x", 5}, {"y", 5}}, Json{{"x", 9}, {"y", 9}}})}}}))}))), "task-action-forbidden"},
      {"openai: preview action in GA", "openai-computer", "stage", {}, turn_with(oa(Json::array({Json{{"type", "computer_call"}, {"call_id", "c"}, {"pending_safety_checks", Json::array()}, {"action", {{"type", "click"}, {"button", "left"}, {"x", 100}, {"y", 40}}}}}))), "task-response"},
      {"openai: missing call_id", "openai-computer", "stage", {}, turn_with(oa(Json::array({Json{{"type", "computer_call"}, {"pending_safety_checks", Json::array()}, {"actions", Json::array({Json{{"type", "click"}, {"button", "left"}, {"x", 100}, {"y", 40}}})}}}))), "task-call-id-invalid"},
      {"openai: other *_call item", "openai-computer", "stage", {}, turn_with(oa(Json::array({Json{{"type", "web_search_call"}, {"id", "w"}, {"status", "completed"}}}))), "task-forbidden-tool-call"},
      {"openai preview: batched actions", "openai-computer-use-preview", "stage", {}, turn_with(oa(Json::array({oa_call(Json::array({Json{{"type", "click"}, {"button", "left"}, {"x", 100}, {"y", 40}}}))}))), "task-response"},
      {"gemini: navigate", "gemini-computer-use", "stage", {}, turn_with(gem(Json::array({fcall("click_at", {{"x", 125}, {"y", 66}}), fcall("navigate", {{"url", "https://example.com"}})}))), "task-action-forbidden"},
      {"gemini: custom function", "gemini-computer-use", "stage", {}, turn_with(gem(Json::array({fcall("click_at", {{"x", 125}, {"y", 66}}), fcall("delete_files", {{"path", "/"}})}))), "task-forbidden-tool-call"},
      {"gemini: safety decision", "gemini-computer-use", "stage", {}, turn_with(gem(Json::array({fcall("click_at", {{"x", 125}, {"y", 66}, {"safety_decision", {{"decision", "require_confirmation"}, {"explanation", "e"}}}})}))), "task-safety-check-refused"},
      {"gemini: grid value 1000", "gemini-computer-use", "stage", {}, turn_with(gem(Json::array({fcall("click_at", {{"x", 125}, {"y", 66}}), fcall("click_at", {{"x", 1000}, {"y", 66}})}))), "task-action-forbidden"},
      {"gemini: executable code", "gemini-computer-use", "stage", {}, turn_with(gem(Json::array({fcall("click_at", {{"x", 125}, {"y", 66}}), Json{{"executableCode", {{"language", "PYTHON"}, {"code", "print(1)"}}}}}))), "task-forbidden-tool-call"},
      {"gemini 3.5: key_down", "gemini-computer-use-3.5", "stage", {}, turn_with(gem(Json::array({fcall("click", {{"x", 125}, {"y", 66}}), fcall("key_down", {{"key", "shift"}})}))), "task-action-forbidden"},
      // Limits and attest.
      {"attest: a click is input", "evident", "attest", {}, turn_with(evident_calls(Json::array({shot, click}))), "task-attest-input-refused"},
      {"attest: a third turn", "evident", "attest", {evident_calls(Json::array({shot})), evident_calls(Json::array({shot}))}, turn_with(evident_calls(Json::array({shot}))), "task-turn-limit"},
      {"the 65th action", "evident", "stage", {evident_calls(sixteen_shots), evident_calls(sixteen_shots), evident_calls(sixteen_shots), evident_calls(sixteen_shots)}, turn_with(evident_calls(Json::array({click}))), "task-action-limit"},
  };

  int marker_x = 40;
  int n = 0;
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    ++n;
    std::string id;
    std::int64_t seq = 0;
    if (!c.adapter.empty()) {
      Json b = c.mode == "attest" ? t.begin("attest", c.adapter, "lineage", stage_receipt)
                                  : t.begin("stage", c.adapter, "case-" + std::to_string(n));
      ASSERT_EQ(code_of(b), "ok") << b.dump();
      id = b["task_id"];
      for (const Json& s : c.setup) {
        Json r = t.turn(id, seq, s);
        ASSERT_EQ(code_of(r), "ok") << r.dump();
        ++seq;
      }
    }
    Json before = id.empty() ? Json(nullptr) : t.status(id);
    Json r = t.raw(c.request(id, seq));
    EXPECT_EQ(code_of(r), c.code) << r.dump().substr(0, 400);
    // Messages never echo request content.
    if (code_of(r) != "ok") {
      const std::string msg = r["error"]["message"];
      EXPECT_EQ(msg.find("claude-magic"), std::string::npos);
      EXPECT_EQ(msg.find("malicious"), std::string::npos);
      EXPECT_EQ(msg.find("example.com"), std::string::npos);
    }
    if (!id.empty()) {
      Json after = t.status(id);
      ASSERT_EQ(code_of(after), "ok") << after.dump();
      EXPECT_EQ(after["sequence"], before["sequence"]);
      EXPECT_EQ(after["turn_count"], before["turn_count"]);
      EXPECT_EQ(after["action_count"], before["action_count"]);
      if (after["phase"] == "running") {
        ASSERT_EQ(code_of(t.abort(id, after["sequence"])), "ok");
      } else {
        EXPECT_EQ(after["phase"], "failed");
        EXPECT_EQ(after["ended"]["error"]["code"], c.code);
        EXPECT_TRUE(after["receipt"].is_null());
      }
    }
    EXPECT_TRUE(t.marker(marker_x++)) << "a refused request reached the app";
  }
  EXPECT_GE(n, 60);

  // The deadline, by the clock the tasks take: past 180 s a turn gets task-deadline, runs nothing,
  // and status reports the task expired; 45 s for attest.
  for (const std::string mode : {"stage", "attest"}) {
    SCOPED_TRACE(mode);
    Json b = mode == "stage" ? t.begin("stage", "evident", "deadline") : t.begin("attest", "evident", "lineage", stage_receipt);
    ASSERT_EQ(code_of(b), "ok") << b.dump();
    const std::string id = b["task_id"];
    clock.advance_ms(mode == "stage" ? 179999 : 44999);
    ASSERT_EQ(t.status(id)["deadline_ms_left"], 1);
    clock.advance_ms(1);
    Json r = t.turn(id, 0, evident_calls(Json::array({click})));
    EXPECT_EQ(code_of(r), "task-deadline") << r.dump();
    Json s = t.status(id);
    EXPECT_EQ(s["phase"], "expired");
    EXPECT_EQ(s["sequence"], 0);
    EXPECT_TRUE(t.marker(marker_x++));
  }
  // Chronology: an attest that would start before its stage receipt's completed_at.
  clock.step_wall_ms(-3600 * 1000);
  Json r = t.begin("attest", "evident", "lineage", stage_receipt);
  EXPECT_EQ(code_of(r), "task-chronology") << r.dump();
  clock.step_wall_ms(3600 * 1000);
  // Another actor's task is not found; the task goes on.
  Json b2 = t.begin("stage", "evident", "actor");
  ASSERT_EQ(code_of(b2), "ok");
  Actor other = t.h.actor();
  other.pid += 1;
  Json foreign = t.h.engine().call(other, Json{{"op", "task"}, {"args", {{"request", Json{{"op", "turn"}, {"task_id", b2["task_id"]}, {"sequence", 0}, {"response", evident_calls(Json::array({click}))}}.dump()}}}});
  EXPECT_EQ(code_of(foreign), "task-not-found");
  EXPECT_EQ(t.status(b2["task_id"])["sequence"], 0);
  // A session op never finds a task.
  Json ses = t.h.session(Json{{"op", "status"}, {"session_id", b2["task_id"]}});
  EXPECT_EQ(code_of(ses), "session-not-found");
  ASSERT_EQ(code_of(t.abort(b2["task_id"], 0)), "ok");
  EXPECT_TRUE(t.marker(marker_x++));
}

// `evident task --request` through a real daemon: begin from @FILE, a turn from stdin (-) whose
// response is larger than the 256 KiB envelope of other ops (an invalid final answer, counted),
// the final answer inline; the same oversized text sent as a session request is refused.
TEST(TaskLaneX11, TheCliDrivesATaskThroughTheDaemon) {
  const std::string root = (std::filesystem::temp_directory_path() / ("evident-task-cli-" + random_hex(6))).string();
  ASSERT_TRUE(make_private_dir(root).ok());
  {
    testing::EvidentDaemon daemon(root);
    ASSERT_TRUE(daemon.start());
    const std::string cli = testing::shell_quote(testing::evident_cli_path()) + " --json --socket " +
                            testing::shell_quote(daemon.socket()) + " ";
    auto run = [&](const std::string& args, const std::string& input = "") {
      auto r = testing::run_command(cli + args, input);
      try {
        return Json::parse(r.out);
      } catch (...) {
        ADD_FAILURE() << "not JSON (exit " << r.exit_status << "): " << r.out.substr(0, 300);
        return Json{{"ok", false}, {"error", {{"code", "not-json"}}}};
      }
    };
    Json d = run("display create --width 640 --height 480");
    ASSERT_EQ(code_of(d), "ok") << d.dump();
    const int id = d["display"]["id"];
    const std::string gen = d["display"]["generation"];
    Json a = run("app launch " + std::to_string(id) + " " + gen + " --wait-window-ms 10000 -- " +
                 testing::shell_quote(std::string(EVIDENT_BINARY_DIR) + "/fixtures/app/evident-fixture-app") +
                 " --events " + testing::shell_quote(root + "/events.jsonl"));
    ASSERT_EQ(code_of(a), "ok") << a.dump();
    const std::string begin_file = root + "/begin.json";
    ASSERT_TRUE(write_file_atomic(begin_file,
                                  Json{{"op", "begin"}, {"mode", "stage"}, {"display_id", id}, {"generation", gen},
                                       {"app_id", a["app"]["app_id"]}, {"attempt_id", "cli-1"},
                                       {"task_sha256", kTaskSha},
                                       {"policy", {{"adapter", "evident"}, {"provider", "test"}, {"model", "cli"}}}}
                                      .dump(),
                                  0600)
                    .ok());
    Json b = run("task --request @" + testing::shell_quote(begin_file));
    ASSERT_EQ(code_of(b), "ok") << b.dump();
    EXPECT_EQ(b["actor"]["kind"], "local_user");
    const std::string tid = b["task_id"];
    const std::string big = Json{{"op", "turn"}, {"task_id", tid}, {"sequence", 0},
                                 {"response", {{"result", {{"pad", std::string(400 * 1024, '"')}}}}}}.dump();
    ASSERT_GT(big.size(), 256u * 1024u);
    Json r = run("task --request -", big);
    ASSERT_EQ(code_of(r), "ok") << r.dump().substr(0, 300);
    EXPECT_EQ(r["result_error"]["code"], "task-result-invalid");
    EXPECT_EQ(r["sequence"], 1);
    Json s = run("session --request -", big);
    EXPECT_EQ(code_of(s), "request-too-large");
    // Human output: the tool results' frames are summarised (size, bytes, sha256), never printed
    // as base64 (a base64 PNG starts "iVBORw0KGgo").
    const std::string human = testing::shell_quote(testing::evident_cli_path()) + " --socket " +
                              testing::shell_quote(daemon.socket()) + " ";
    auto shot = testing::run_command(
        human + "task --request -",
        Json{{"op", "turn"}, {"task_id", tid}, {"sequence", 1},
             {"response", {{"calls", Json::array({Json{{"id", "shot"}, {"actions", Json::array({Json{{"type", "screenshot"}}})}}})}}}}
            .dump());
    EXPECT_EQ(shot.exit_status, 0) << shot.out;
    Json after = run("task --request " + testing::shell_quote(Json{{"op", "status"}, {"task_id", tid}}.dump()));
    ASSERT_EQ(code_of(after), "ok") << after.dump().substr(0, 300);
    ASSERT_EQ(after["sequence"], 2);
    const std::string frame_sha = after["frame"]["sha256"];
    EXPECT_EQ(shot.out.find("iVBORw0KGgo"), std::string::npos) << shot.out.substr(0, 600);
    EXPECT_NE(shot.out.find("<image/png 640x480, " + std::to_string(after["frame"]["byte_length"].get<std::int64_t>()) +
                            " bytes, sha256 " + frame_sha + ">"),
              std::string::npos)
        << shot.out;
    EXPECT_NE(shot.out.find("task " + tid + "  running  stage  sequence 2"), std::string::npos) << shot.out;
    EXPECT_NE(shot.out.find("frame    640x480"), std::string::npos) << shot.out;
    EXPECT_LT(shot.out.size(), 4096u) << "a 640x480 frame as base64 alone is larger";
    Json f = run("task --request " + testing::shell_quote(Json{{"op", "turn"}, {"task_id", tid}, {"sequence", 2},
                                                                {"response", {{"result", {{"ok", true}}}}}}.dump()));
    ASSERT_EQ(code_of(f), "ok") << f.dump();
    EXPECT_EQ(f["phase"], "finished");
    auto v = evident_verify(f["receipt_path"], f["evidence_dir"], root + "/state/keys/signing.pub");
    EXPECT_EQ(v.exit_status, 0) << v.out;
    Json bad = run("task --request " + testing::shell_quote("{\"op\":\"status\"}"));
    EXPECT_EQ(code_of(bad), "task-command");
  }
  (void)remove_tree(root);
}

}  // namespace
}  // namespace evident::task
