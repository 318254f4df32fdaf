// Integration tests of the session protocol through Engine::call against a real Xvfb display
// (created by the engine) and the real fixture app: the full session, every refusal (proving
// with the app's event log that no input was injected and the sequence did not advance),
// fail-closed endings by killing real processes, and one real expiry.
#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "evident/display/display.h"
#include "evident/receipts/verify.h"
#include "evident/session/manager.h"
#include "engine_harness.h"

namespace evident {
namespace {

using testing::code_of;
using testing::EngineHarness;
using testing::pixel_hex;

Json click(int x, int y) { return Json{{"type", "click"}, {"x", x}, {"y", y}}; }

Json actions_req(const std::string& sid, std::int64_t seq, Json actions) {
  return Json{{"op", "actions"}, {"session_id", sid}, {"sequence", seq}, {"actions", actions}};
}
Json op_req(const std::string& op, const std::string& sid, std::int64_t seq) {
  return Json{{"op", op}, {"session_id", sid}, {"sequence", seq}};
}

std::size_t presses(const std::vector<Json>& ev) {
  std::size_t n = 0;
  for (const auto& e : ev) n += (e["type"] == "button_press" || e["type"] == "key_press") ? 1 : 0;
  return n;
}

// A full session — click the text field, type the trigger phrase, freeze, observe, finish with
// a claim about the colour, close — yields a receipt that the receipts module verifies against
// the frames and the observed PNG, whose pixels (decoded by Pillow) show the green background.
TEST(SessionX11, FullSessionTypesTriggerAndProducesVerifiedReceipt) {
  EngineHarness h;
  ASSERT_FALSE(h.launch_app().empty());
  Json b = h.begin("attempt-full");
  ASSERT_EQ(code_of(b), "ok") << b.dump();
  std::string sid = b["session_id"];
  EXPECT_EQ(b["sequence"], 0);
  EXPECT_EQ(b["phase"], "stage");
  EXPECT_EQ(b["actor"]["kind"], "in_process");
  EXPECT_EQ(b["binding"]["app_pid"], h.app_pid());
  EXPECT_EQ(pixel_hex(b["frame"]["path"], 5, 5), "404040");

  Json a = h.session(actions_req(sid, 0, Json::array({click(100, 40), Json{{"type", "type"}, {"text", "evident"}}})));
  ASSERT_EQ(code_of(a), "ok") << a.dump();
  EXPECT_EQ(a["sequence"], 1);
  EXPECT_EQ(a["action_count"], 2);
  EXPECT_GT(a["input_event_count"].get<int>(), 0);
  ASSERT_EQ(a["results"].size(), 2u);
  for (const auto& r : a["results"]) EXPECT_NE(r["status"], "failed") << r.dump();
  ASSERT_TRUE(h.log().wait_for([](const std::vector<Json>& ev) {
    for (const auto& e : ev) if (e["type"] == "trigger") return true;
    return false;
  }));

  Json f = h.session(op_req("freeze", sid, 1));
  ASSERT_EQ(code_of(f), "ok") << f.dump();
  EXPECT_EQ(f["phase"], "frozen");
  Json o = h.session(Json{{"op", "observe"}, {"session_id", sid}, {"sequence", 2},
                          {"pre_observation_sha256", f["frame"]["sha256"]}});
  ASSERT_EQ(code_of(o), "ok") << o.dump();
  std::string png = o["frame"]["path"];
  struct stat st {};
  ASSERT_EQ(::stat(png.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(pixel_hex(png, 5, 5), "20A040");  // the trigger turned the background green

  Json fin = h.session(Json{{"op", "finish"}, {"session_id", sid}, {"sequence", 3},
                            {"observation_sha256", o["frame"]["sha256"]},
                            {"claims", {{"background", "green"}}}});
  ASSERT_EQ(code_of(fin), "ok") << fin.dump();
  const std::string receipt_path = b["evidence_dir"].get<std::string>() + "/receipt.json";
  EXPECT_FALSE(std::filesystem::exists(receipt_path));  // written at close, not at finish
  Json c = h.session(op_req("close", sid, 4));
  ASSERT_EQ(code_of(c), "ok") << c.dump();
  EXPECT_EQ(c["receipt_path"], receipt_path);
  EXPECT_EQ(c["closed"], true);
  EXPECT_EQ(c["cleanup_complete"], true);
  EXPECT_EQ(c["receipt_id"], fin["receipt"]["receipt_id"]);

  auto receipt = load_receipt_file(receipt_path);
  ASSERT_TRUE(receipt.ok());
  VerifyOptions vo;
  vo.frames_dir = b["evidence_dir"];
  vo.png_path = png;
  vo.expect_job_sha256 = std::string(64, 'a');
  vo.expect_uid = static_cast<std::int64_t>(::getuid());
  VerifyReport rep = verify_receipt(*receipt, vo);
  EXPECT_TRUE(rep.ok) << ::testing::PrintToString(rep.failed_names());
  // actions.json: the click's geometry, the typed text's projection without its text, and the
  // times of the two frames in order.
  std::string actions_text = testing::slurp(b["evidence_dir"].get<std::string>() + "/actions.json");
  // The typed text ("evident") appears only as the schema's name.
  auto schema_at = actions_text.find("\"evident.actions/v1\"");
  ASSERT_NE(schema_at, std::string::npos);
  EXPECT_EQ(actions_text.find("evident"), schema_at + 1);
  EXPECT_EQ(actions_text.find("evident", schema_at + 2), std::string::npos);
  auto actions_doc = parse_json_strict(actions_text, 1 << 20, "test");
  ASSERT_TRUE(actions_doc.ok());
  const Json& entries = (*actions_doc)["actions"];
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0]["projection"], click(100, 40));
  EXPECT_EQ(entries[1]["projection"], (Json{{"type", "type"}}));
  EXPECT_GE(entries[0]["elapsed_ms"].get<std::int64_t>(), 0);
  EXPECT_GE(entries[1]["elapsed_ms"].get<std::int64_t>(), entries[0]["elapsed_ms"].get<std::int64_t>());
  EXPECT_LE(entries[1]["elapsed_ms"].get<std::int64_t>(), (*receipt)["elapsed_ms"].get<std::int64_t>());
  // The display is free again: a second session can begin on it.
  Json b2 = h.begin("attempt-full");
  EXPECT_EQ(code_of(b2), "ok") << b2.dump();
}

// Every refusal the protocol names executes no input (the app's log gains no press) and leaves
// the sequence where it was; a marker click afterwards shows the log is live and in order.
TEST(SessionX11, RefusalsInjectNothingAndDoNotAdvance) {
  EngineHarness h;
  ASSERT_FALSE(h.launch_app().empty());
  Json b = h.begin();
  ASSERT_EQ(code_of(b), "ok") << b.dump();
  std::string sid = b["session_id"];
  std::int64_t seq = 0;
  int counter = 0;

  // Clicks the counter and waits for its event: proof that everything before was processed.
  auto marker = [&]() {
    Json r = h.session(actions_req(sid, seq, Json::array({click(245, 105)})));
    ASSERT_EQ(code_of(r), "ok") << r.dump();
    ++seq;
    ++counter;
    int want = counter;
    ASSERT_TRUE(h.log().wait_for([want](const std::vector<Json>& ev) {
      for (const auto& e : ev) if (e["type"] == "counter" && e["value"] == want) return true;
      return false;
    }));
  };
  marker();

  auto expect_refused = [&](const std::string& raw, const std::string& want, const Actor* as = nullptr) {
    std::size_t before = presses(h.log().events());
    Json r = as ? h.session_as(*as, raw) : h.session_raw(raw);
    EXPECT_EQ(code_of(r), want) << raw.substr(0, 200) << " -> " << r.dump();
    Json s = h.session(Json{{"op", "status"}, {"session_id", sid}});
    EXPECT_EQ(s["sequence"], seq) << want;
    marker();
    // Exactly the marker's one press arrived since `before`.
    EXPECT_EQ(presses(h.log().events()), before + 1) << "input was injected by a refused " << want;
  };
  auto batch = [&](std::int64_t s, Json actions) { return actions_req(sid, s, actions).dump(); };
  Json two = Json::array({click(245, 105), click(245, 105)});

  expect_refused(batch(seq - 1, two), "session-sequence");              // replayed / stale
  expect_refused(batch(seq + 1, two), "session-sequence");              // future
  expect_refused(batch(seq + 100, two), "session-sequence");
  Actor other = h.actor();
  other.kind = Actor::Kind::kLocalUser;
  {
    std::size_t before = presses(h.log().events());
    Json r = h.session_as(other, batch(seq, two));
    EXPECT_EQ(code_of(r), "session-not-found");
    Actor other_pid = h.actor();
    other_pid.pid += 1;
    EXPECT_EQ(code_of(h.session_as(other_pid, batch(seq, two))), "session-not-found");
    EXPECT_EQ(h.session(Json{{"op", "status"}, {"session_id", sid}})["sequence"], seq);
    marker();
    EXPECT_EQ(presses(h.log().events()), before + 1);
  }
  // Wrong phase: observe / finish / close in stage.
  auto cur = [&]() { return seq; };
  expect_refused(Json{{"op", "observe"}, {"session_id", sid}, {"sequence", cur()},
                      {"pre_observation_sha256", std::string(64, 'b')}}.dump(), "session-phase");
  expect_refused(op_req("close", sid, cur()).dump(), "session-phase");
  // Invalid batch: valid clicks first, an invalid last action.
  expect_refused(batch(cur(), Json::array({click(245, 105), Json{{"type", "wait"}, {"ms", 5001}}})), "session-action");
  expect_refused(batch(cur(), Json::array({click(245, 105), Json{{"type", "click"}, {"x", 1}}})), "session-action");
  expect_refused(batch(cur(), Json::array({click(245, 105), Json{{"type", "type"}, {"text", std::string(4097, 'a')}}})),
                 "session-action");
  // Forbidden actions.
  for (Json fa : {Json{{"type", "paste"}, {"text", "x"}}, Json{{"type", "mouse_down"}, {"x", 245}, {"y", 105}},
                  Json{{"type", "mouse_up"}, {"x", 245}, {"y", 105}},
                  Json{{"type", "zoom"}, {"x", 0}, {"y", 0}, {"width", 10}, {"height", 10}}}) {
    expect_refused(batch(cur(), Json::array({click(245, 105), fa})), "session-action-forbidden");
  }
  // Over-limit batch, empty batch.
  Json seventeen = Json::array();
  for (int i = 0; i < 17; ++i) seventeen.push_back(click(245, 105));
  expect_refused(batch(cur(), seventeen), "session-actions");
  expect_refused(batch(cur(), Json::array()), "session-actions");
  // Bad JSON / shape / size.
  std::string dup = "{\"op\":\"actions\",\"session_id\":\"" + sid + "\",\"sequence\":" + std::to_string(cur()) +
                    ",\"actions\":[{\"type\":\"click\",\"x\":245,\"x\":245,\"y\":105}]}";
  expect_refused(dup, "session-json");
  expect_refused(batch(cur(), Json::array({click(245, 105)})) + " {}", "session-json");
  Json unknown = actions_req(sid, cur(), Json::array({click(245, 105)}));
  unknown["extra"] = true;
  expect_refused(unknown.dump(), "session-command");
  Json big = actions_req(sid, cur(), Json::array({Json{{"type", "type"}, {"text", std::string(97 * 1024, 'a')}}}));
  expect_refused(big.dump(), "session-input-size");

  // 64 per session: fill up to 63 with cheap waits, then a batch that would pass 64.
  std::int64_t done = h.session(Json{{"op", "status"}, {"session_id", sid}})["action_count"];
  while (done < 63) {
    Json waits = Json::array();
    for (int i = 0; i < 16 && done < 63; ++i, ++done) waits.push_back(Json{{"type", "wait"}, {"ms", 0}});
    Json r = h.session(actions_req(sid, seq, waits));
    ASSERT_EQ(code_of(r), "ok") << r.dump();
    ++seq;
  }
  expect_refused(batch(cur(), two), "session-action-limit");  // the marker makes it 64
  std::size_t before = presses(h.log().events());
  EXPECT_EQ(code_of(h.session_raw(batch(cur(), Json::array({click(245, 105)})))), "session-action-limit");
  // Freezing works and the log (in order, up to the freeze's release) gained no press.
  ASSERT_EQ(code_of(h.session(op_req("freeze", sid, seq))), "ok");
  EXPECT_EQ(presses(h.log().events()), before);
}


// Killing the real app mid-session ends the session at the next action, without receipt and
// without injecting that action; status reports the reason and the display is free again.
TEST(SessionX11, KilledAppEndsTheSessionWithoutReceipt) {
  EngineHarness h;
  ASSERT_FALSE(h.launch_app().empty());
  Json b = h.begin();
  ASSERT_EQ(code_of(b), "ok") << b.dump();
  std::string sid = b["session_id"];
  ASSERT_EQ(::kill(h.app_pid(), SIGKILL), 0);
  ASSERT_TRUE(testing::wait_pid_gone(h.app_pid()));
  Json r = h.session(actions_req(sid, 0, Json::array({click(245, 105)})));
  EXPECT_EQ(code_of(r), "app-not-live") << r.dump();
  Json s = h.session(Json{{"op", "status"}, {"session_id", sid}});
  ASSERT_EQ(code_of(s), "ok") << s.dump();
  EXPECT_EQ(s["phase"], "failed");
  EXPECT_EQ(s["ended"]["reason"], "app-not-live");
  EXPECT_TRUE(s["receipt"].is_null());
  EXPECT_EQ(s["action_count"], 0);
  EXPECT_FALSE(std::filesystem::exists(b["evidence_dir"].get<std::string>() + "/receipt.json"));
  EXPECT_EQ(presses(h.log().events()), 0u);
  EXPECT_EQ(code_of(h.session(op_req("freeze", sid, 0))), "session-phase");
  // The display lock was released: a new session with a new app can begin.
  ASSERT_FALSE(h.launch_app("app2").empty());
  EXPECT_EQ(code_of(h.begin()), "ok");
}

// settle in a session batch: each action's frame is taken after the app repainted. The fixture's
// button toggles blue -> orange -> blue on each click, so every action frame must show the colour
// after its own click (without settle a frame may show the colour before it).
TEST(SessionX11, SettledActionFramesShowTheRepaint) {
  EngineHarness h;
  ASSERT_FALSE(h.launch_app().empty());
  Json b = h.begin();
  ASSERT_EQ(code_of(b), "ok") << b.dump();
  std::string sid = b["session_id"];
  const std::string dir = b["evidence_dir"];
  Json req = actions_req(sid, 0, Json::array({click(25, 105), click(25, 105), click(25, 105)}));
  req["settle"] = true;
  Json a = h.session(req);
  ASSERT_EQ(code_of(a), "ok") << a.dump();
  ASSERT_EQ(a["results"].size(), 3u);
  const char* want[] = {"E08020", "2050C0", "E08020"};
  for (int i = 0; i < 3; ++i) {
    const Json& r = a["results"][i];
    EXPECT_EQ(r["settle"], "settled") << r.dump();  // the fixture is still 300 ms after a click
    EXPECT_EQ(pixel_hex(dir + "/" + r["frame_sha256"].get<std::string>() + ".png", 25, 105), want[i]) << i;
  }
  ASSERT_EQ(code_of(h.session(op_req("freeze", sid, 1))), "ok");
  Json o = h.session(Json{{"op", "observe"}, {"session_id", sid}, {"sequence", 2},
                          {"pre_observation_sha256", std::string(64, 'b')}});
  ASSERT_EQ(code_of(o), "ok") << o.dump();
  Json fin = h.session(Json{{"op", "finish"}, {"session_id", sid}, {"sequence", 3},
                            {"observation_sha256", o["frame"]["sha256"]}, {"claims", Json::object()}});
  ASSERT_EQ(code_of(fin), "ok") << fin.dump();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(fin["receipt"]["transcript"][i + 1]["settle"], "settled");
  ASSERT_EQ(code_of(h.session(op_req("close", sid, 4))), "ok");
  auto receipt = load_receipt_file(dir + "/receipt.json");
  ASSERT_TRUE(receipt.ok());
  VerifyOptions vo;
  vo.frames_dir = dir;
  VerifyReport rep = verify_receipt(*receipt, vo);
  EXPECT_TRUE(rep.ok) << ::testing::PrintToString(rep.failed_names());
}

// app_exit: "record" with a real dialog (xmessage, x11-utils) whose default button, pressed with
// Return, exits it with that button's value: the exit is an event with status 3 and the session
// still ends in a verified receipt.
TEST(SessionX11, RecordedExitOfARealDialogEndsInAReceipt) {
  EngineHarness h;
  Json launched = h.call("app.launch",
                         Json{{"display_id", h.display_id()},
                              {"generation", h.generation()},
                              {"argv", Json::array({"xmessage", "-geometry", "+0+0", "-buttons", "OK:3",
                                                    "-default", "OK", "evident app_exit test"})},
                              {"wait_window_ms", 10000}});
  ASSERT_EQ(code_of(launched), "ok") << launched.dump();
  const int pid = launched["app"]["pid"];
  Json b = h.session(Json{{"op", "begin"},
                          {"display_id", h.display_id()},
                          {"generation", h.generation()},
                          {"app_id", launched["app"]["app_id"]},
                          {"attempt_id", "attempt-xmessage"},
                          {"job_sha256", std::string(64, 'a')},
                          {"app_exit", "record"}});
  ASSERT_EQ(code_of(b), "ok") << b.dump();
  std::string sid = b["session_id"];
  const std::string dir = b["evidence_dir"];
  // Keys go to the window under the pointer (no window manager): point at the dialog, press Return.
  Json req = actions_req(sid, 0, Json::array({Json{{"type", "move_mouse"}, {"x", 10}, {"y", 10}},
                                              Json{{"type", "key"}, {"key", "Return"}}}));
  req["settle"] = true;
  Json a = h.session(req);
  ASSERT_EQ(code_of(a), "ok") << a.dump();
  ASSERT_EQ(a["results"].size(), 2u);
  ASSERT_TRUE(testing::wait_pid_gone(pid));
  // The exit is recorded by whichever request notices it: the batch above (after its last
  // action) or this one, which then runs nothing. After that, input is refused, nothing advances.
  std::int64_t seq = 1;
  Json more = h.session(actions_req(sid, seq, Json::array({click(1, 1)})));
  if (code_of(more) == "ok") {
    EXPECT_FALSE(a.contains("app_exit"));
    EXPECT_EQ(more["results"].size(), 0u) << more.dump();
    ++seq;
  } else {
    EXPECT_EQ(code_of(more), "app-not-live") << more.dump();
    EXPECT_EQ(a["app_exit"]["exit_status"], 3) << a.dump();
  }
  Json refused = h.session(actions_req(sid, seq, Json::array({click(1, 1)})));
  EXPECT_EQ(code_of(refused), "app-not-live") << refused.dump();
  Json f = h.session(op_req("freeze", sid, seq));
  ASSERT_EQ(code_of(f), "ok") << f.dump();
  EXPECT_EQ(f["action_count"], 2);
  ASSERT_TRUE(f.contains("app_exit")) << f.dump();
  EXPECT_EQ(f["app_exit"]["exit_status"], 3);
  EXPECT_EQ(f["app_exit"]["after_freeze"], false);
  Json o = h.session(Json{{"op", "observe"}, {"session_id", sid}, {"sequence", seq + 1},
                          {"pre_observation_sha256", f["frame"]["sha256"]}});
  ASSERT_EQ(code_of(o), "ok") << o.dump();
  Json fin = h.session(Json{{"op", "finish"}, {"session_id", sid}, {"sequence", seq + 2},
                            {"observation_sha256", o["frame"]["sha256"]},
                            {"claims", {{"dialog", "closed"}}}});
  ASSERT_EQ(code_of(fin), "ok") << fin.dump();
  Json c = h.session(op_req("close", sid, seq + 3));
  ASSERT_EQ(code_of(c), "ok") << c.dump();
  auto receipt = load_receipt_file(dir + "/receipt.json");
  ASSERT_TRUE(receipt.ok());
  const Json& t = (*receipt)["transcript"];
  ASSERT_EQ(t.size(), 7u) << t.dump();
  EXPECT_EQ(t[3]["kind"], "app_exit");
  EXPECT_EQ(t[3]["exit_status"], 3);
  EXPECT_EQ(t[4]["kind"], "freeze");
  // The dialog was drawn at the top-left in the initial frame and is gone in the exit's frame.
  EXPECT_NE(t[3]["frame_sha256"], t[0]["frame_sha256"]);
  VerifyOptions vo;
  vo.frames_dir = dir;
  VerifyReport rep = verify_receipt(*receipt, vo);
  EXPECT_TRUE(rep.ok) << ::testing::PrintToString(rep.failed_names());
}

// Killing the real Xvfb mid-session ends the session at the next action without receipt.
TEST(SessionX11, KilledDisplayEndsTheSessionWithoutReceipt) {
  EngineHarness h;
  ASSERT_FALSE(h.launch_app().empty());
  Json b = h.begin();
  ASSERT_EQ(code_of(b), "ok") << b.dump();
  std::string sid = b["session_id"];
  ASSERT_EQ(code_of(h.session(actions_req(sid, 0, Json::array({click(245, 105)})))), "ok");
  int xvfb = 0;
  for (const auto& d : h.engine().displays().list()) {
    if (d.id == h.display_id()) xvfb = d.xvfb_pid;
  }
  ASSERT_GT(xvfb, 0);
  ASSERT_EQ(::kill(xvfb, SIGKILL), 0);
  ASSERT_TRUE(testing::wait_pid_gone(xvfb));
  Json r = h.session(actions_req(sid, 1, Json::array({click(245, 105)})));
  EXPECT_EQ(code_of(r), "session-display-lost") << r.dump();
  Json s = h.session(Json{{"op", "status"}, {"session_id", sid}});
  ASSERT_EQ(code_of(s), "ok") << s.dump();
  EXPECT_EQ(s["phase"], "failed");
  EXPECT_EQ(s["ended"]["reason"], "display-lost");
  EXPECT_TRUE(s["receipt"].is_null());
  EXPECT_EQ(s["action_count"], 1);
  EXPECT_FALSE(std::filesystem::exists(b["evidence_dir"].get<std::string>() + "/receipt.json"));
}

// With the test-only stage deadline shortened, the reaper expires a session on its own (no
// call arrives): the display lock is released, later calls get session-expired, and a new
// session can begin on the display.
TEST(SessionX11, RealExpiryReleasesTheDisplayWithoutAnyCall) {
  ::setenv("EVIDENT_SESSION_STAGE_TIMEOUT_MS", "800", 1);
  EngineHarness h;
  ::unsetenv("EVIDENT_SESSION_STAGE_TIMEOUT_MS");
  ASSERT_FALSE(h.launch_app().empty());
  const auto before_begin = std::chrono::steady_clock::now();
  Json b = h.begin();
  ASSERT_EQ(code_of(b), "ok") << b.dump();
  std::string sid = b["session_id"];
  EXPECT_LE(b["expires_in_ms"].get<int>(), 800);
  auto d = h.engine().displays().get(h.display_id(), h.generation());
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE((*d)->session_holder().has_value());
  // Wait (bounded) for the reaper's expiry event — the manager's condition variable, notified
  // once cleanup ran — without making any session call; then the display lock must be free.
  ASSERT_TRUE(h.engine().sessions().wait_ended(sid, 10000)) << "the reaper did not expire the session";
  // Not before its deadline (admission + 800 ms, admission after `before_begin`; 10 ms for the
  // manager's whole-ms clock).
  EXPECT_GE(std::chrono::steady_clock::now() - before_begin, std::chrono::milliseconds(790));
  EXPECT_FALSE((*d)->session_holder().has_value());
  EXPECT_EQ(code_of(h.session(actions_req(sid, 0, Json::array({click(245, 105)})))), "session-expired");
  EXPECT_EQ(code_of(h.session(Json{{"op", "status"}, {"session_id", sid}})), "session-expired");
  EXPECT_EQ(presses(h.log().events()), 0u);
  EXPECT_EQ(code_of(h.begin()), "ok");
}


// The refusals of begin, observe and finish against real resources: wrong or malformed
// generation, unknown or foreign app, a display or attempt already in a session, a wrong
// observation digest and bad claims. None injects input or advances the sequence.
TEST(SessionX11, BeginObserveFinishRefusals) {
  EngineHarness h;
  std::string app1 = h.launch_app();
  ASSERT_FALSE(app1.empty());
  Json d2 = h.call("display.create", Json{{"width", 320}, {"height", 240}});
  ASSERT_EQ(code_of(d2), "ok") << d2.dump();
  testing::EventLog log2(h.root() + "/app2-events.jsonl");
  Json a2 = h.call("app.launch", Json{{"display_id", d2["display"]["id"]},
                                      {"generation", d2["display"]["generation"]},
                                      {"argv", Json::array({testing::fixture_app_path(), "--events", log2.path()})},
                                      {"wait_window_ms", 10000}});
  ASSERT_EQ(code_of(a2), "ok") << a2.dump();
  std::string app2 = a2["app"]["app_id"];
  auto begin_req = [&](Json display_id, Json gen, const std::string& app, const std::string& attempt) {
    return Json{{"op", "begin"}, {"display_id", display_id}, {"generation", gen}, {"app_id", app},
                {"attempt_id", attempt}, {"job_sha256", std::string(64, 'a')}};
  };
  Json id1 = h.display_id(), gen1 = h.generation();
  Json id2 = d2["display"]["id"], gen2 = d2["display"]["generation"];

  EXPECT_EQ(code_of(h.session(begin_req(id1, "gen-" + std::string(32, '0'), app1, "a"))), "display-generation-mismatch");
  EXPECT_EQ(code_of(h.session(begin_req(id1, "not-a-generation", app1, "a"))), "display-generation-mismatch");
  EXPECT_EQ(code_of(h.session(begin_req(id1, gen2, app1, "a"))), "display-generation-mismatch");
  EXPECT_EQ(code_of(h.session(begin_req(9999, gen1, app1, "a"))), "display-generation-mismatch");
  EXPECT_EQ(code_of(h.session(begin_req(id1, gen1, "app-" + std::string(32, '0'), "a"))), "app-not-live");
  EXPECT_EQ(code_of(h.session(begin_req(id1, gen1, app2, "a"))), "session-binding");

  Json b = h.session(begin_req(id1, gen1, app1, "attempt-a"));
  ASSERT_EQ(code_of(b), "ok") << b.dump();
  std::string sid = b["session_id"];
  Json busy_display = h.session(begin_req(id1, gen1, app1, "attempt-b"));
  EXPECT_EQ(code_of(busy_display), "session-busy");
  EXPECT_EQ(busy_display["error"]["retryable"], true);
  EXPECT_EQ(code_of(h.session(begin_req(id2, gen2, app2, "attempt-a"))), "session-busy");
  // `cu actions` cannot touch a display a session holds.
  Json cu = h.call("cu.actions", Json{{"display_id", id1}, {"generation", gen1},
                                      {"request", {{"actions", Json::array({click(245, 105)})}}}});
  EXPECT_EQ(code_of(cu), "display-busy") << cu.dump();
  // Another display and attempt are fine.
  Json b2 = h.session(begin_req(id2, gen2, app2, "attempt-c"));
  ASSERT_EQ(code_of(b2), "ok") << b2.dump();
  ASSERT_EQ(code_of(h.session(op_req("abort", b2["session_id"], 0))), "ok");

  ASSERT_EQ(code_of(h.session(op_req("freeze", sid, 0))), "ok");
  Json o = h.session(Json{{"op", "observe"}, {"session_id", sid}, {"sequence", 1},
                          {"pre_observation_sha256", std::string(64, 'c')}});
  ASSERT_EQ(code_of(o), "ok") << o.dump();
  EXPECT_EQ(o["pre_observation_sha256"], std::string(64, 'c'));
  auto finish = [&](const std::string& obs, Json claims) {
    return h.session(Json{{"op", "finish"}, {"session_id", sid}, {"sequence", 2},
                          {"observation_sha256", obs}, {"claims", claims}});
  };
  std::string obs = o["frame"]["sha256"];
  EXPECT_EQ(code_of(finish(std::string(64, 'f'), Json{{"x", 1}})), "session-observation");
  EXPECT_EQ(code_of(finish(obs, Json::array({1}))), "session-claims");
  EXPECT_EQ(code_of(finish(obs, Json{{"big", std::string(17000, 'x')}})), "session-claims");
  Json st = h.session(Json{{"op", "status"}, {"session_id", sid}});
  EXPECT_EQ(st["sequence"], 2);
  EXPECT_EQ(st["phase"], "observed");
  EXPECT_TRUE(st["receipt"].is_null());
  ASSERT_EQ(code_of(finish(obs, Json{{"x", 1}})), "ok");
  ASSERT_EQ(code_of(h.session(op_req("close", sid, 3))), "ok");
  EXPECT_EQ(presses(h.log().events()), 0u);
  EXPECT_EQ(presses(log2.events()), 0u);
}

}  // namespace
}  // namespace evident
