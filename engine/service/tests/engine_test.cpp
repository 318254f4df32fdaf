// In-process Engine tests against real Xvfb: the op table answers with the protocol's shapes,
// refuses bad envelopes with stable codes, serves concurrent callers, and shutdown cleans up.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <future>

#include "evident/testing/files.h"
#include "evident/testing/fixture_log.h"
#include "evident/testing/process.h"
#include "evident/display/display.h"
#include "evident/service/engine.h"
#include "engine_fixture.h"

namespace evident {
namespace {

using testing::pid_running;
using testing::run_command;

using EngineTest = testing::InProcessEngineTest;

TEST(ActorTest, JsonShapes) {
  Actor a{Actor::Kind::kLocalUser, 1000, 0};
  EXPECT_EQ(a.to_json(), Json::parse(R"({"kind":"local_user","uid":1000})"));
  Actor b{Actor::Kind::kInProcess, 0, 42};
  EXPECT_EQ(b.to_json(), Json::parse(R"({"kind":"in_process","uid":0,"pid":42})"));
  EXPECT_EQ(error_response(make_error("x-y", "m", true)),
            Json::parse(R"({"ok":false,"error":{"code":"x-y","message":"m","retryable":true}})"));
}

// Proves: the display ops through Engine::call produce the protocol's results, concurrently.
TEST_F(EngineTest, DisplayOpsThroughCall) {
  Json ping = call(R"({"op":"ping"})");
  EXPECT_EQ(ping["ok"], true);
  EXPECT_EQ(ping["pid"], ::getpid());

  std::vector<std::future<Json>> creates;
  for (int i = 0; i < 3; ++i) {
    creates.push_back(std::async(std::launch::async, [&] {
      return call(R"({"op":"display.create","args":{"width":320,"height":240}})");
    }));
  }
  std::vector<Json> displays;
  for (auto& f : creates) {
    Json r = f.get();
    ASSERT_EQ(r["ok"], true) << r.dump();
    displays.push_back(r["display"]);
  }
  EXPECT_EQ(call(R"({"op":"display.list","args":{}})")["displays"].size(), 3u);

  const Json& d = displays[0];
  Json args{{"display_id", d["id"]}, {"generation", d["generation"]}, {"out", dir_ + "/s.png"}};
  Json shot = engine_->call(actor_, Json{{"op", "display.screenshot"}, {"args", args}});
  ASSERT_EQ(shot["ok"], true) << shot.dump();
  EXPECT_EQ(shot["png"]["width"], 320);
  EXPECT_EQ(shot["png"]["height"], 240);
  auto sum = run_command("sha256sum " + dir_ + "/s.png");
  EXPECT_EQ(sum.out.substr(0, 64), shot["png"]["sha256"].get<std::string>());

  Json bad = call(R"({"op":"display.destroy","args":{"display_id":)" + d["id"].dump() +
                  R"(,"generation":"gen-00000000000000000000000000000000"}})");
  EXPECT_EQ(bad["error"]["code"], "display-generation-mismatch");
  EXPECT_EQ(call(R"({"op":"display.list","args":{}})")["displays"].size(), 3u);

  // Shutdown destroys everything, and later calls are refused.
  std::vector<pid_t> xvfbs;
  for (const auto& info : engine_->displays().list()) xvfbs.push_back(info.xvfb_pid);
  engine_->shutdown();
  for (pid_t p : xvfbs) EXPECT_FALSE(pid_running(p));
  EXPECT_EQ(call(R"({"op":"display.list","args":{}})")["error"]["code"], "engine-shutting-down");
}

// The `text` values the fixture app logged, in order.
std::vector<std::string> fixture_texts(const std::vector<Json>& events) {
  std::vector<std::string> out;
  for (const Json& e : testing::of_type(events, "text")) out.push_back(e.value("value", ""));
  return out;
}

// Proves: a display's one input device outlives a `cu actions` batch, so characters outside the
// keymap typed again in a second batch use the keycodes still mapped (no remap reported) and both
// batches arrive exactly in a real client (the fixture app's log), and destroying the display with
// the keymap still remapped is clean.
TEST_F(EngineTest, SpareKeycodeMappingsOutliveABatch) {
  Json created = call(R"({"op":"display.create","args":{"width":640,"height":480}})");
  ASSERT_EQ(created["ok"], true) << created.dump();
  const Json d = created["display"];
  const testing::EventLog log(dir_ + "/fixture.jsonl");
  Json launch{{"op", "app.launch"},
              {"args", {{"display_id", d["id"]}, {"generation", d["generation"]},
                        {"argv", {testing::fixture_app_path(), "--events", log.path()}},
                        {"wait_window_ms", 15000}}}};
  Json app = engine_->call(actor_, launch);
  ASSERT_EQ(app["ok"], true) << app.dump();
  ASSERT_TRUE(log.wait_ready(15000));
  const std::string text = "h\u00e9llo \u2014 \u4e16\u754c";
  auto type_batch = [&] {
    Json req{{"actions", {{{"type", "type"}, {"text", text}}}}, {"observe", "none"}};
    return engine_->call(actor_, Json{{"op", "cu.actions"},
                                      {"args", {{"display_id", d["id"]}, {"generation", d["generation"]},
                                                {"request", req}}}});
  };
  Json first = type_batch();
  ASSERT_EQ(first["ok"], true) << first.dump();
  const std::string d1 = first["results"][0]["detail"];
  EXPECT_NE(d1.find("4 through spare keycodes"), std::string::npos) << d1;
  ASSERT_TRUE(log.wait_for([&](const std::vector<Json>& ev) {
    auto t = fixture_texts(ev);
    return !t.empty() && t.back() == text;
  }, 5000));
  Json second = type_batch();
  ASSERT_EQ(second["ok"], true) << second.dump();
  const std::string d2 = second["results"][0]["detail"];
  EXPECT_EQ(d2.find("spare keycodes"), std::string::npos) << "no remap the second time: " << d2;
  ASSERT_TRUE(log.wait_for([&](const std::vector<Json>& ev) {
    auto t = fixture_texts(ev);
    return !t.empty() && t.back() == text + text;
  }, 5000)) << "the second batch arrived exactly after the first";
  Json destroyed = engine_->call(actor_, Json{{"op", "display.destroy"},
                                              {"args", {{"display_id", d["id"]}, {"generation", d["generation"]}}}});
  EXPECT_EQ(destroyed["ok"], true) << destroyed.dump();
}

// Proves: a destroy that begins after a `cu actions` batch registered with the display, but
// before the batch built its executor, makes the batch answer display-destroyed (the destroy is
// what stopped it), not display-dead. The test holds the display's X mutex so that the batch
// waits inside the executor's setup, after begin_batch, and lets it go once teardown started.
// Found by DaemonHostileTest.DestroyDuringABatchFailsTheBatchAndFreesNothingInUse in one CI run;
// here the interleaving is forced, not hoped for.
TEST_F(EngineTest, DestroyBeforeTheExecutorIsBuiltAnswersDisplayDestroyed) {
  Json created = call(R"({"op":"display.create","args":{"width":320,"height":240}})");
  ASSERT_EQ(created["ok"], true) << created.dump();
  const Json ref{{"display_id", created["display"]["id"]},
                 {"generation", created["display"]["generation"]}};
  auto disp = engine_->displays().get(ref["display_id"].get<int>(), ref["generation"]);
  ASSERT_TRUE(disp.ok());
  std::shared_ptr<OwnedDisplay> d = *disp;
  std::unique_lock x_lock(d->x_mutex());
  Json args = ref;
  args["request"] = Json{{"actions", {{{"type", "wait"}, {"ms", 1}}}}, {"observe", "none"}};
  auto batch = std::async(std::launch::async, [&] { return call("cu.actions", args); });
  ASSERT_TRUE(testing::wait_until([&] { return d->batches_in_flight() == 1; }, 10000));
  auto destroy = std::async(std::launch::async, [&] { return call("display.destroy", ref); });
  ASSERT_TRUE(testing::wait_until([&] { return d->destroyed(); }, 10000));
  x_lock.unlock();
  Json answer = batch.get();
  EXPECT_EQ(code(answer), "display-destroyed") << answer.dump();
  Json destroyed = destroy.get();
  EXPECT_EQ(destroyed["ok"], true) << destroyed.dump();
  EXPECT_EQ(d->batches_in_flight(), 0u);
}

// Proves: call_inline answers ping and a bounded batch (and envelope errors) on the calling
// thread, and runs nothing of any other request: the deferred batches click the fixture app's
// counter, the inline one its button, and when the button's click is in the app's log no counter
// click is before it (X and the app keep the order the clicks were sent in).
TEST_F(EngineTest, CallInlineRunsOnlyBoundedRequests) {
  Json created = call(R"({"op":"display.create","args":{"width":640,"height":480}})");
  ASSERT_EQ(created["ok"], true) << created.dump();
  const Json d = created["display"];
  const testing::EventLog log(dir_ + "/inline.jsonl");
  Json app = call("app.launch", Json{{"display_id", d["id"]}, {"generation", d["generation"]},
                                     {"argv", {testing::fixture_app_path(), "--events", log.path()}},
                                     {"wait_window_ms", 15000}});
  ASSERT_EQ(app["ok"], true) << app.dump();
  ASSERT_TRUE(log.wait_ready(15000));
  auto batch = [&](Json actions, Json settle) {
    Json req{{"actions", std::move(actions)}, {"observe", "none"}, {"settle", std::move(settle)}};
    return Json{{"op", "cu.actions"},
                {"args", {{"display_id", d["id"]}, {"generation", d["generation"]}, {"request", req}}}}
        .dump();
  };
  const Json counter = {{"type", "click"}, {"x", 340}, {"y", 130}};  // window at (0, 0)
  const Json button = {{"type", "click"}, {"x", 120}, {"y", 130}};
  EXPECT_FALSE(engine_->call_inline(actor_, batch({counter, {{"type", "wait"}, {"ms", 1}}}, false)));
  EXPECT_FALSE(engine_->call_inline(actor_, batch({counter}, true)));
  EXPECT_FALSE(engine_->call_inline(actor_, batch({counter, {{"type", "type"}, {"text", "x"}}}, false)));
  EXPECT_FALSE(engine_->call_inline(actor_, R"({"op":"display.list","args":{}})"));
  auto ping = engine_->call_inline(actor_, R"({"op":"ping","args":{}})");
  ASSERT_TRUE(ping);
  EXPECT_EQ((*ping)["ok"], true);
  auto bad = engine_->call_inline(actor_, "{\"op\":");
  ASSERT_TRUE(bad);
  EXPECT_EQ((*bad)["error"]["code"], "request-json");
  // Larger than every op's bound but task's: nothing runs inline (a task must stay
  // interruptible; the worker refuses anything else as request-too-large); larger than task's:
  // refused at once.
  const std::string pad(Engine::kMaxRequestBytes, 'p');
  EXPECT_FALSE(engine_->call_inline(actor_, R"({"op":"task","args":{"request":")" + pad + R"("}})"));
  EXPECT_FALSE(engine_->call_inline(actor_, R"({"op":"ping","args":{"pad":")" + pad + R"("}})"));
  auto huge = engine_->call_inline(actor_, std::string(Engine::kMaxEnvelopeBytes + 1, ' '));
  ASSERT_TRUE(huge);
  EXPECT_EQ((*huge)["error"]["code"], "request-too-large");
  // The object path (call_inline_value, the Python binding's): the same decision and answers.
  EXPECT_FALSE(engine_->call_inline_value(actor_, Json::parse(batch({counter}, true))));
  EXPECT_FALSE(engine_->call_inline_value(actor_, Json{{"op", "display.list"}, {"args", Json::object()}}));
  auto ping_value = engine_->call_inline_value(actor_, Json{{"op", "ping"}, {"args", Json::object()}});
  ASSERT_TRUE(ping_value);
  EXPECT_EQ(dump_json(*ping_value), dump_json(*ping));
  auto not_object = engine_->call_inline_value(actor_, Json::array());
  auto not_object_text = engine_->call_inline(actor_, "[]");
  ASSERT_TRUE(not_object && not_object_text);
  EXPECT_EQ((*not_object)["error"]["code"], "request-args");
  EXPECT_EQ(dump_json(*not_object), dump_json(*not_object_text));
  auto ran = engine_->call_inline(actor_, batch({button}, false));
  ASSERT_TRUE(ran);
  ASSERT_EQ((*ran)["ok"], true) << ran->dump();
  auto count = [](const std::vector<Json>& ev, const char* type) {
    return std::count_if(ev.begin(), ev.end(),
                         [&](const Json& e) { return e.value("type", "") == type; });
  };
  std::vector<Json> seen;
  ASSERT_TRUE(log.wait_for([&](const std::vector<Json>& ev) {
    seen = ev;
    return count(ev, "button_clicked") >= 1;
  }, 5000));
  EXPECT_EQ(count(seen, "counter"), 0) << "a deferred request ran its click";
}

TEST_F(EngineTest, EnvelopeErrors) {
  EXPECT_EQ(call("{")["error"]["code"], "request-json");
  EXPECT_EQ(call(R"({"op":"x","op":"y"})")["error"]["code"], "request-json");
  EXPECT_EQ(call(R"({"op":"x"})")["error"]["code"], "request-unknown-op");
  EXPECT_EQ(call(R"({"op":"ping","args":5})")["error"]["code"], "request-args");
  EXPECT_EQ(call(std::string(Engine::kMaxRequestBytes + 1, ' '))["error"]["code"],
            "request-too-large");
  EXPECT_EQ(engine_->call(actor_, Json::array())["error"]["code"], "request-args");
}

}  // namespace
}  // namespace evident
