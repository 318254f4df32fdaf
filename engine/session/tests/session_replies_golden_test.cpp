// The exact bytes of every reply of the session state machine, compared with a committed
// transcript (tests/data/replies.golden.txt): every op in every phase, then the busy, expiry,
// abort, failure, limit, actor, begin-refusal and shutdown paths, over the fake backend and a
// FakeClock. The transcript was generated from the state machine before it was restructured
// (docs/sessions.md "The state machine"); any change of a reply's bytes fails this test.
//
// Only values that are random by design or depend on the machine are replaced, each by a
// placeholder that keeps identity (the same value always gets the same placeholder): the test's
// temporary root (<root>), session ids (ses-#N), receipt ids (ecr-#N), the host id (hst-#N) and
// the random names of temporary files in error messages (.tmp-#N).
// Everything else, digests, times, messages and key order included, is compared byte for byte.
//
// Regenerate (only when a reply is meant to change, and say so in the commit):
//   EVIDENT_UPDATE_GOLDEN=1 build/engine/session/session_replies_golden_test
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "evident/core/fs.h"
#include "evident/core/random.h"
#include "evident/evidence/session_evidence.h"
#include "evident/session/manager.h"
#include "fake_backend.h"

namespace evident {
namespace {

namespace fs = std::filesystem;
using testing::fake_app_id;

const std::string kGoldenPath =
    std::string(EVIDENT_SOURCE_DIR) + "/engine/session/tests/data/replies.golden.txt";
const std::string kJob(64, '1');
const std::vector<std::string> kPhases = {"beginning", "stage",   "frozen", "observed", "finished",
                                          "closed",    "aborted", "failed", "expired"};
const std::vector<std::string> kOps = {"begin",  "actions", "freeze", "observe",
                                       "finish", "close",   "abort",  "status"};

std::string fixed_generation(std::int64_t d) {
  return "gen-" + std::string(32, "0123456789abcdef"[d % 16]);
}

bool is_lower_hex_char(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// The transcript: each request ("> ") and its reply ("< ") on one line each, normalized.
class Transcript {
 public:
  explicit Transcript(std::string root) : root_(std::move(root)) {}

  void section(const std::string& name) { out_ += "\n## " + name + "\n"; }
  void request(const std::string& raw) {
    // A long request is named by its size and start (the reply is what is compared).
    if (raw.size() > 512) {
      out_ += "> (" + std::to_string(raw.size()) + " bytes) " + normalize(raw.substr(0, 120)) + "\n";
      return;
    }
    out_ += "> " + normalize(raw) + "\n";
  }
  void reply(const Json& r) { out_ += "< " + normalize(r.dump()) + "\n"; }
  void note(const std::string& what, std::int64_t value) {
    out_ += "= " + what + " " + std::to_string(value) + "\n";
  }
  const std::string& text() const { return out_; }

 private:
  std::string normalize(std::string s) {
    for (std::size_t at; (at = s.find(root_)) != std::string::npos;) s.replace(at, root_.size(), "<root>");
    struct Kind {
      const char* prefix;
      std::size_t hex;
    };
    static const Kind kKinds[] = {{"ses-", 32}, {"ecr-", 64}, {"hst-", 32}, {".tmp-", 16}};
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
      bool replaced = false;
      for (const Kind& k : kKinds) {
        const std::size_t plen = std::char_traits<char>::length(k.prefix);
        std::size_t end = i + plen + k.hex;
        if (s.compare(i, plen, k.prefix) != 0 || end > s.size()) continue;
        bool hex = true;
        for (std::size_t j = i + plen; j < end && hex; ++j) hex = is_lower_hex_char(s[j]);
        if (!hex || (end < s.size() && is_lower_hex_char(s[end]))) continue;
        std::string raw = s.substr(i, end - i);
        auto it = ids_.find(raw);
        if (it == ids_.end()) {
          int n = ++counts_[k.prefix];
          it = ids_.emplace(raw, std::string(k.prefix) + "#" + std::to_string(n)).first;
        }
        out += it->second;
        i = end;
        replaced = true;
        break;
      }
      if (!replaced) out += s[i++];
    }
    return out;
  }

  std::string root_;
  std::map<std::string, std::string> ids_;
  std::map<std::string, int> counts_;
  std::string out_;
};

// A session the test drives, as far as the test knows it.
struct Ses {
  std::string id;
  std::int64_t seq = 0;
  std::string observed_sha;  // the observe reply's frame.sha256, for finish
};

class SessionRepliesGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("evident-session-golden-" + random_hex(6));
    for (std::int64_t d = 1; d <= 10; ++d) {
      world_.generations[d] = fixed_generation(d);
      world_.app_display[fake_app_id(d)] = d;
    }
    t_ = std::make_unique<Transcript>(root_.string());
    mgr_ = std::make_unique<SessionManager>(backend_, options());
  }
  void TearDown() override {
    mgr_.reset();
    (void)remove_tree(root_.string());
  }

  SessionOptions options() const {
    SessionOptions o;
    o.evidence_root = (root_ / "state/evidence").string();
    o.scratch_root = (root_ / "run/sessions").string();
    o.clock = &clock_;
    return o;
  }
  std::string evidence_dir(const Ses& s) const { return (root_ / "state/evidence" / s.id).string(); }

  Json send_raw(const std::string& raw, const Json& actor) {
    t_->request(raw);
    Json r = mgr_->handle(actor, raw);
    t_->reply(r);
    return r;
  }
  Json send(const Json& req) { return send_raw(req.dump(), actor_); }
  Json send(const Json& req, const Json& actor) { return send_raw(req.dump(), actor); }

  Json begin_request(std::int64_t display, const std::string& attempt) const {
    return Json{{"op", "begin"},
                {"display_id", display},
                {"generation", fixed_generation(display)},
                {"app_id", fake_app_id(display)},
                {"attempt_id", attempt},
                {"job_sha256", kJob}};
  }
  // A well-formed request of `op` for session `s` carrying `seq`.
  Json request(const std::string& op, const Ses& s, std::int64_t seq, int clicks = 1) const {
    if (op == "begin") return begin_request(1, "unused");
    if (op == "status") return Json{{"op", "status"}, {"session_id", s.id}};
    Json j{{"op", op}, {"session_id", s.id}, {"sequence", seq}};
    if (op == "actions") {
      Json a = Json::array();
      for (int i = 0; i < clicks; ++i) a.push_back(Json{{"type", "click"}, {"x", 10 + i}, {"y", 20}});
      j["actions"] = a;
    } else if (op == "observe") {
      j["pre_observation_sha256"] = std::string(64, 'e');
    } else if (op == "finish") {
      j["observation_sha256"] = s.observed_sha.empty() ? std::string(64, 'f') : s.observed_sha;
      j["claims"] = Json{{"background", "green"}};
    }
    return j;
  }
  Json op(const std::string& name, Ses& s, int clicks = 1) {
    Json r = send(request(name, s, s.seq, clicks));
    track(s, r);
    return r;
  }
  static void track(Ses& s, const Json& r) {
    if (r["ok"] != true) return;
    s.seq = r["sequence"].get<std::int64_t>();
    if (r["phase"] == "observed") s.observed_sha = r["frame"]["sha256"].get<std::string>();
  }
  Ses begin(std::int64_t display, const std::string& attempt) {
    Json r = send(begin_request(display, attempt));
    Ses s;
    if (r["ok"] == true) s.id = r["session_id"].get<std::string>();
    known_.insert(s.id);
    return s;
  }

  // Drives a new session on `display` into `phase` (all but "beginning").
  Ses drive(const std::string& phase, std::int64_t display, const std::string& attempt) {
    Ses s = begin(display, attempt);
    if (phase == "stage") return s;
    if (phase == "aborted") {
      op("abort", s);
      return s;
    }
    if (phase == "failed") {
      world_.fail_action_at = world_.executed.load();
      op("actions", s);
      world_.fail_action_at = -1;
      return s;
    }
    if (phase == "expired") {
      clock_.advance_ms(protocol::kSessionStageTimeoutMs);
      t_->note("expire_due", static_cast<std::int64_t>(mgr_->expire_due()));
      return s;
    }
    op("freeze", s);
    if (phase == "frozen") return s;
    op("observe", s);
    if (phase == "observed") return s;
    op("finish", s);
    if (phase == "finished") return s;
    op("close", s);
    return s;
  }
  // Status of `s`; aborts it when it is still live, so the display is free for the next case.
  void settle_down(Ses& s) {
    Json st = send(request("status", s, 0));
    if (st["ok"] == true && st["ended"].is_null()) {
      s.seq = st["sequence"].get<std::int64_t>();
      op("abort", s);
    }
  }
  void note_deadlines() {
    t_->note("next_deadline_ms", mgr_->next_deadline_ms());
    t_->note("live_count", static_cast<std::int64_t>(mgr_->live_count()));
  }

  // The id of the session begin is setting up (its evidence directory exists, no reply yet).
  std::string beginning_id() const {
    for (const auto& e : fs::directory_iterator(root_ / "state/evidence")) {
      std::string name = e.path().filename().string();
      if (!known_.count(name)) return name;
    }
    return "";
  }

  void run_all();

  fs::path root_;
  testing::FakeWorld world_;
  testing::FakeBackend backend_{world_};
  FakeClock clock_;
  Json actor_ = Json{{"kind", "local_user"}, {"uid", 1000}};
  Json other_actor_ = Json{{"kind", "local_user"}, {"uid", 1001}};
  std::unique_ptr<SessionManager> mgr_;
  std::unique_ptr<Transcript> t_;
  std::set<std::string> known_;
};

void SessionRepliesGolden::run_all() {
  // ---- The op × phase matrix. Each cell: a fresh session in that phase, the op with a future
  // sequence (refused; nothing runs), the op with the current sequence, then the session's
  // status (and an abort when it is still live).
  t_->section("matrix: phase beginning (requests that arrive while begin sets up)");
  {
    bool armed = true;
    world_.on_capture = [&] {
      if (!armed) return;
      armed = false;
      Ses b;
      b.id = beginning_id();
      for (const std::string& name : kOps) {
        if (name == "begin") {
          send(begin_request(1, "beginning-other"));  // same display
          send(begin_request(2, "beginning"));        // same attempt
          continue;
        }
        send(request(name, b, 1));
        send(request(name, b, 0));
      }
    };
    Ses s = begin(1, "beginning");
    world_.on_capture = nullptr;
    settle_down(s);
  }
  for (const std::string& phase : kPhases) {
    if (phase == "beginning") continue;
    for (const std::string& name : kOps) {
      t_->section("matrix: phase " + phase + ", op " + name);
      Ses s = drive(phase, 1, "m-" + phase + "-" + name);
      if (name == "begin") {
        Ses same_display = begin(1, "m-" + phase + "-begin-other");
        Ses same_attempt = begin(2, "m-" + phase + "-" + name);
        if (!same_display.id.empty()) settle_down(same_display);
        if (!same_attempt.id.empty()) settle_down(same_attempt);
      } else {
        if (name != "status") send(request(name, s, s.seq + 1));
        op(name, s);
      }
      settle_down(s);
    }
  }

  // ---- A request while another request of the same session runs: every op is busy (status
  // answers), expiry waits for the running request, then applies.
  struct BusyCase {
    std::string phase;   // the phase the session is in when the slow op starts
    std::string slow;    // the slow op
    std::string hook;    // where it is held: execute | capture | release
  };
  const BusyCase kBusy[] = {{"stage", "actions", "execute"},
                            {"stage", "freeze", "release"},
                            {"frozen", "observe", "capture"},
                            {"finished", "close", "release"},
                            {"observed", "abort", "release"}};
  for (const BusyCase& c : kBusy) {
    t_->section("busy: " + c.slow + " running in phase " + c.phase);
    Ses s = drive(c.phase, 1, "busy-" + c.slow);
    bool armed = true;
    std::function<void()> during = [&] {
      if (!armed) return;
      armed = false;
      for (const std::string& name : kOps) {
        if (name == "begin") {
          send(begin_request(1, "busy-other"));
          continue;
        }
        send(request(name, s, s.seq));
      }
      note_deadlines();
      clock_.advance_ms(200000);  // past every deadline: the running request is not cut off
      t_->note("expire_due", static_cast<std::int64_t>(mgr_->expire_due()));
      note_deadlines();
    };
    if (c.hook == "execute") world_.on_execute = during;
    if (c.hook == "capture") world_.on_capture = during;
    if (c.hook == "release") world_.on_release = during;
    op(c.slow, s, 2);
    world_.on_execute = nullptr;
    world_.on_capture = nullptr;
    world_.on_release = nullptr;
    note_deadlines();
    t_->note("expire_due", static_cast<std::int64_t>(mgr_->expire_due()));
    settle_down(s);
  }

  // ---- Deadlines: 180 s from admission until freeze, then 45 s; expiry applies on the next
  // call, without the reaper.
  t_->section("expiry: stage deadline, applied by the next call");
  {
    Ses s = begin(1, "exp-stage");
    clock_.advance_ms(179999);
    note_deadlines();
    send(request("status", s, 0));
    clock_.advance_ms(1);
    send(request("actions", s, 0));
    send(request("status", s, 0));
    note_deadlines();
    send(request("abort", s, 0));
  }
  for (const std::string& phase : std::vector<std::string>{"frozen", "observed", "finished"}) {
    t_->section("expiry: post-freeze deadline in phase " + phase);
    Ses s = begin(1, "exp-" + phase);
    clock_.advance_ms(170000);
    op("freeze", s);
    if (phase != "frozen") op("observe", s);
    if (phase == "finished") op("finish", s);
    clock_.advance_ms(44999);
    note_deadlines();
    send(request("status", s, 0));
    t_->note("expire_due", static_cast<std::int64_t>(mgr_->expire_due()));
    clock_.advance_ms(1);
    t_->note("expire_due", static_cast<std::int64_t>(mgr_->expire_due()));
    for (const std::string& name : kOps) {
      if (name != "begin") send(request(name, s, s.seq));
    }
    note_deadlines();
  }
  t_->section("retention: an ended record answers status for 10 minutes, then is dropped");
  {
    Ses s = drive("closed", 1, "retention");
    note_deadlines();
    clock_.advance_ms(599999);
    send(request("status", s, 0));
    note_deadlines();
    clock_.advance_ms(1);
    send(request("status", s, 0));
    note_deadlines();
    t_->note("expire_due", static_cast<std::int64_t>(mgr_->expire_due()));
  }
  t_->section("retention: at most max_ended_records ended records (oldest dropped first)");
  {
    SessionOptions o = options();
    o.max_ended_records = 2;
    std::unique_ptr<SessionManager> main = std::move(mgr_);
    mgr_ = std::make_unique<SessionManager>(backend_, o);
    std::vector<Ses> ended;
    for (int i = 0; i < 3; ++i) {
      ended.push_back(drive("aborted", 1, "cap-" + std::to_string(i)));
      clock_.advance_ms(1);
    }
    t_->note("expire_due", static_cast<std::int64_t>(mgr_->expire_due()));
    for (const Ses& s : ended) send(request("status", s, 0));
    note_deadlines();
    mgr_ = std::move(main);
  }

  // ---- Abort whose cleanup fails, in every live phase.
  for (const std::string& phase : std::vector<std::string>{"stage", "frozen", "observed", "finished"}) {
    t_->section("abort: cleanup fails in phase " + phase);
    Ses s = drive(phase, 1, "abort-fail-" + phase);
    world_.fail_release = true;
    op("abort", s);
    world_.fail_release = false;
    send(request("status", s, 0));
    send(request("abort", s, s.seq));
  }

  // ---- Failures: each ends the session without a receipt (or, where it is the caller's to
  // fix, is refused and changes nothing).
  auto failure = [&](const std::string& name, const std::string& phase, const std::string& op_name,
                     const std::function<void(Ses&)>& arm, const std::function<void()>& disarm,
                     int clicks = 1) {
    t_->section("failure: " + name);
    Ses s = drive(phase, 1, "fail-" + name);
    arm(s);
    op(op_name, s, clicks);
    disarm();
    send(request("status", s, 0));
    settle_down(s);
  };
  auto nothing = [] {};
  failure("action fails mid-batch", "stage", "actions",
          [&](Ses&) { world_.fail_action_at = world_.executed.load() + 1; },
          [&] { world_.fail_action_at = -1; }, 3);
  failure("app dead before actions", "stage", "actions",
          [&](Ses&) { world_.app_dead[fake_app_id(1)] = true; },
          [&] { world_.app_dead[fake_app_id(1)] = false; }, 2);
  failure("display dead before actions", "stage", "actions",
          [&](Ses&) { world_.display_dead = true; }, [&] { world_.display_dead = false; }, 2);
  failure("display dies during actions", "stage", "actions",
          [&](Ses&) { world_.on_execute = [&] { world_.display_dead = true; }; },
          [&] {
            world_.on_execute = nullptr;
            world_.display_dead = false;
          },
          2);
  failure("app dies during actions", "stage", "actions",
          [&](Ses&) {
            world_.on_execute = [this, n = 0]() mutable {
              if (++n == 2) world_.app_dead[fake_app_id(1)] = true;  // during the second action
            };
          },
          [&] {
            world_.on_execute = nullptr;
            world_.app_dead[fake_app_id(1)] = false;
          },
          3);
  failure("capture fails after an action", "stage", "actions",
          [&](Ses&) { world_.fail_capture = true; }, [&] { world_.fail_capture = false; }, 2);
  failure("frame cannot be written after an action", "stage", "actions",
          [&](Ses& s) { (void)remove_tree(evidence_dir(s)); }, nothing, 2);
  failure("freeze: release check fails", "stage", "freeze",
          [&](Ses&) { world_.fail_release = true; }, [&] { world_.fail_release = false; });
  failure("freeze: display dead", "stage", "freeze", [&](Ses&) { world_.display_dead = true; },
          [&] { world_.display_dead = false; });
  failure("freeze: app dead", "stage", "freeze",
          [&](Ses&) { world_.app_dead[fake_app_id(1)] = true; },
          [&] { world_.app_dead[fake_app_id(1)] = false; });
  failure("freeze: capture fails", "stage", "freeze", [&](Ses&) { world_.fail_capture = true; },
          [&] { world_.fail_capture = false; });
  failure("freeze: frame cannot be written", "stage", "freeze",
          [&](Ses& s) { (void)remove_tree(evidence_dir(s)); }, nothing);
  failure("observe: display dead", "frozen", "observe", [&](Ses&) { world_.display_dead = true; },
          [&] { world_.display_dead = false; });
  failure("observe: app dead", "frozen", "observe",
          [&](Ses&) { world_.app_dead[fake_app_id(1)] = true; },
          [&] { world_.app_dead[fake_app_id(1)] = false; });
  failure("observe: capture fails", "frozen", "observe", [&](Ses&) { world_.fail_capture = true; },
          [&] { world_.fail_capture = false; });
  failure("observe: frame cannot be written", "frozen", "observe",
          [&](Ses& s) { (void)remove_tree(evidence_dir(s)); }, nothing);
  failure("finish: observation digest is not the observe frame's", "observed", "finish",
          [&](Ses& s) { s.observed_sha = std::string(64, 'f'); }, nothing);
  failure("finish: actions.json cannot be written", "observed", "finish",
          [&](Ses& s) { (void)remove_tree(evidence_dir(s)); }, nothing);
  failure("close: release check fails (the receipt is withdrawn)", "finished", "close",
          [&](Ses&) { world_.fail_release = true; }, [&] { world_.fail_release = false; });
  failure("close: receipt.json cannot be written", "finished", "close",
          [&](Ses& s) { (void)remove_tree(evidence_dir(s)); }, nothing);
  failure("close: the display died after finish (cleanup still completes)", "finished", "close",
          [&](Ses&) { world_.display_dead = true; }, [&] { world_.display_dead = false; });

  // ---- Signing at close fails (the state dir's signing key is unusable: readable by others):
  // the receipt is withdrawn and the session ends failed (sign-failed). The keys directory
  // itself is fine, so the host id still works on a machine without /etc/machine-id.
  t_->section("close: signing fails (no usable signing key)");
  {
    const fs::path keys = root_ / "signing-state/keys";
    fs::create_directories(keys);
    fs::permissions(keys, fs::perms::owner_all, fs::perm_options::replace);
    std::ofstream(keys / "signing.key") << "not a key\n";
    fs::permissions(keys / "signing.key",
                    fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                        fs::perms::others_read,
                    fs::perm_options::replace);
    SessionOptions o = options();
    o.evidence = std::make_shared<SessionEvidence>((root_ / "signing-state").string());
    std::unique_ptr<SessionManager> main = std::move(mgr_);
    mgr_ = std::make_unique<SessionManager>(backend_, o);
    Ses s = drive("finished", 1, "sign-fails");
    op("close", s);
    send(request("status", s, 0));
    Ses a = drive("aborted", 1, "sign-fails-abort");  // other endings log nothing then; no error
    send(request("status", a, 0));
    mgr_ = std::move(main);
  }

  // ---- Limits and whole-batch validation: nothing of a refused batch runs.
  t_->section("limits: 64 actions per session, 16 per batch, whole-batch validation");
  {
    Ses s = begin(1, "limits");
    for (int i = 0; i < 4; ++i) op("actions", s, 16);
    op("actions", s, 1);
    Ses t = begin(2, "validation");
    for (const Json& bad : {Json::array({Json{{"type", "click"}, {"x", 1}, {"y", 1}},
                                         Json{{"type", "teleport"}}}),
                            Json::array({Json{{"type", "paste"}, {"text", "secret"}}}),
                            Json::array({Json{{"type", "mouse_down"}, {"x", 1}, {"y", 1}}}),
                            Json::array({Json{{"type", "click"}, {"x", 1}, {"y", 1}, {"extra", 1}}}),
                            Json::array({Json{{"type", "wait"}, {"ms", 5001}}}),
                            Json::array({Json{{"type", "type"}, {"text", std::string(4097, 'x')}}})}) {
      Json req = request("actions", t, t.seq);
      req["actions"] = bad;
      send(req);
    }
    t_->note("executed", world_.executed.load());
    settle_down(s);
    settle_down(t);
  }

  // ---- Another actor: every op is not-found and changes nothing.
  t_->section("actor: another actor's requests");
  {
    Ses s = drive("frozen", 1, "actor");
    for (const std::string& name : kOps) {
      if (name != "begin") send(request(name, s, s.seq), other_actor_);
    }
    Ses unknown;
    unknown.id = "ses-" + std::string(32, '0');
    send(request("status", unknown, 0));
    unknown.id = "not-a-session-id";
    send(request("abort", unknown, 0));
    settle_down(s);
  }

  // ---- begin's refusals.
  t_->section("begin: refusals");
  {
    Json wrong_gen = begin_request(1, "b1");
    wrong_gen["generation"] = fixed_generation(2);
    send(wrong_gen);
    Json malformed_gen = begin_request(1, "b2");
    malformed_gen["generation"] = "nope";
    send(malformed_gen);
    send(begin_request(11, "b3"));  // unknown display
    Json unknown_app = begin_request(1, "b4");
    unknown_app["app_id"] = fake_app_id(99);
    send(unknown_app);
    Json foreign_app = begin_request(1, "b5");
    foreign_app["app_id"] = fake_app_id(2);
    send(foreign_app);
    world_.app_dead[fake_app_id(1)] = true;
    send(begin_request(1, "b6"));
    world_.app_dead[fake_app_id(1)] = false;
    world_.locked[1] = true;  // e.g. a `cu actions` batch holds the display
    send(begin_request(1, "b7"));
    world_.locked[1] = false;
    world_.fail_capture = true;
    send(begin_request(1, "b8"));
    world_.fail_capture = false;
    std::vector<Ses> live;
    for (std::int64_t d = 1; d <= 8; ++d) live.push_back(begin(d, "live-" + std::to_string(d)));
    send(begin_request(9, "live-9"));  // the ninth live session
    send(begin_request(10, "live-1"));  // attempt already live (checked with the limit)
    note_deadlines();
    for (Ses& s : live) settle_down(s);
    note_deadlines();
  }

  // ---- Engine shutdown: abort_all ends every live session (engine-shutdown).
  t_->section("shutdown: abort_all");
  {
    Ses a = drive("stage", 1, "shutdown-stage");
    Ses b = drive("frozen", 2, "shutdown-frozen");
    Ses c = drive("finished", 3, "shutdown-finished");
    Ses d = drive("closed", 4, "shutdown-closed");
    note_deadlines();
    mgr_->abort_all();
    note_deadlines();
    for (const Ses* s : {&a, &b, &c, &d}) send(request("status", *s, 0));
    Ses e = drive("observed", 1, "shutdown-release-fails");
    world_.fail_release = true;
    mgr_->abort_all();
    world_.fail_release = false;
    send(request("status", e, 0));
    send(request("abort", e, e.seq));
    note_deadlines();
  }

  // ---- Requests refused by the parser, before the state machine.
  t_->section("parser: refused before the state machine");
  send_raw("{", actor_);
  send_raw(R"({"op":"nope"})", actor_);
  send_raw(R"({"op":"status","session_id":"x","session_id":"y"})", actor_);
  send_raw(R"({"op":"freeze","session_id":"x","sequence":-1})", actor_);
  send_raw(std::string(protocol::kSessionRequestMaxBytes + 1, ' '), actor_);
}

TEST_F(SessionRepliesGolden, EveryReplyIsByteIdenticalToTheTranscript) {
  run_all();
  const std::string& got = t_->text();
  const char* update = std::getenv("EVIDENT_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    fs::create_directories(fs::path(kGoldenPath).parent_path());
    std::ofstream(kGoldenPath, std::ios::binary) << got;
    GTEST_SKIP() << "wrote " << kGoldenPath;
  }
  std::ifstream in(kGoldenPath, std::ios::binary);
  ASSERT_TRUE(in) << "missing " << kGoldenPath;
  std::stringstream want;
  want << in.rdbuf();
  if (got == want.str()) return;
  // Name the first differing line, and leave the whole transcript beside the build for a diff.
  std::string actual = std::string(EVIDENT_BINARY_DIR) + "/replies.actual.txt";
  std::ofstream(actual, std::ios::binary) << got;
  std::istringstream g(got), w(want.str());
  std::string gl, wl, section;
  for (int line = 1;; ++line) {
    bool more_g = static_cast<bool>(std::getline(g, gl));
    bool more_w = static_cast<bool>(std::getline(w, wl));
    if (!more_g && !more_w) break;
    if (wl.rfind("## ", 0) == 0) section = wl;
    if (!more_g || !more_w || gl != wl) {
      FAIL() << "reply transcript differs at line " << line << " (" << section << ")\n  want: "
             << (more_w ? wl : "<end>") << "\n  got:  " << (more_g ? gl : "<end>")
             << "\nwhole transcript: " << actual << " (diff it against " << kGoldenPath << ")";
    }
  }
}

}  // namespace
}  // namespace evident
