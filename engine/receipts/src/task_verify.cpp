// Verifying `evident.task-receipt/v1` (docs/receipts.md "Task receipts: verification"). The rules
// it shares with the session receipt come from verify_parts.h; only the task's own are here.
// bindings/python/evident/verify.py implements the same checks independently.
#include <algorithm>
#include <set>
#include <string_view>

#include "evident/core/clock.h"
#include "evident/receipts/commitment.h"
#include "evident/receipts/jcs.h"
#include "evident/receipts/task_receipt.h"
#include "verify_parts.h"

namespace evident {

using namespace receipt_parts;

namespace {

// initial_frame + one turn + freeze + observation + result.
constexpr std::size_t kMinTaskEvents = 5;
// initial_frame + 12 turns + 64 actions + freeze + observation + result.
constexpr std::size_t kMaxTaskEvents =
    1 + protocol::kTaskStageMaxTurns + protocol::kActionsPerSessionMax + 3;
constexpr std::size_t kMaxNativeActions = 256;
constexpr std::size_t kMaxNativeActionBytes = 64;

bool is_native_action_name(const Json& v) {
  if (!is_string_len(v, 1, kMaxNativeActionBytes)) return false;
  for (char c : v.get_ref<const std::string&>()) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == ':' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string turn_event_problem(const Json& e, const std::string& where) {
  if (!has_exact_keys(e, {"index", "kind", "turn", "call_count", "call_ids_sha256",
                          "native_actions", "model_image_sha256", "frame_sha256"})) {
    return where + " has wrong keys";
  }
  if (!is_int_at_least(e["turn"], 1)) return where + ".turn is not an integer >= 1";
  if (!is_int_at_least(e["call_count"], 0)) return where + ".call_count is not an integer >= 0";
  if (!is_hex64(e["call_ids_sha256"])) return where + ".call_ids_sha256 is not 64 lowercase hex";
  const Json& n = e["native_actions"];
  if (!n.is_array() || n.size() > kMaxNativeActions) {
    return where + ".native_actions is not an array of at most 256 names";
  }
  for (const Json& name : n) {
    if (!is_native_action_name(name)) {
      return where + ".native_actions holds a value that is not an action name (1..64 bytes of [A-Za-z0-9_.:-])";
    }
  }
  if (!is_hex64(e["model_image_sha256"])) return where + ".model_image_sha256 is not 64 lowercase hex";
  if (!is_hex64(e["frame_sha256"])) return where + ".frame_sha256 is not 64 lowercase hex";
  return "";
}

std::string task_event_problem(const Json& e, std::size_t pos) {
  auto where = [pos] { return "transcript[" + std::to_string(pos) + "]"; };
  if (!e.is_object()) return where() + " is not an object";
  auto kind_it = e.find("kind");
  if (kind_it == e.end() || !kind_it->is_string()) return where() + ".kind is missing";
  const auto& kind = kind_it->get_ref<const std::string&>();
  auto idx = e.find("index");
  if (idx == e.end() || !is_int_at_least(*idx, 0)) return where() + ".index is not an integer >= 0";
  if (kind == "initial_frame" || kind == "freeze") {
    return frame_event_problem(e, where(), {"frame_sha256"});
  }
  if (kind == "turn") return turn_event_problem(e, where());
  if (kind == "action") return action_event_problem(e, where(), true, ActionSet::kTask);
  if (kind == "observation") {
    return frame_event_problem(e, where(), {"frame_sha256", "pre_observation_sha256"});
  }
  if (kind == "result") return frame_event_problem(e, where(), {"result_sha256", "frame_sha256"});
  return where() + ".kind is not a known task event kind";
}

// "" when the receipt has the task receipt's shape (check "schema").
std::string task_schema_problem(const Json& r) {
  if (!r.is_object()) return "receipt is not a JSON object";
  if (!has_exact_keys(
          r, {"schema", "task_id", "mode", "engine", "binding", "actor", "policy", "task_sha256",
              "execution", "limits", "started_at", "frozen_at", "observed_at", "completed_at",
              "elapsed_ms", "turn_count", "call_count", "refused_call_count",
              "invalid_result_count", "safety_check_count", "action_count", "input_event_count",
              "post_observation_input_event_count", "prior_receipt_id",
              "prior_transcript_sha256", "prior_transcript_event_count", "prior_completed_at",
              "transcript", "stage_transcript_sha256", "transcript_sha256",
              "pre_observation_sha256", "observation", "result", "result_sha256",
              "receipt_id"})) {
    return "receipt does not have exactly the top-level keys of a task receipt";
  }
  if (!str_eq(r["schema"], kTaskReceiptSchema)) return "schema is not \"evident.task-receipt/v1\"";
  if (!is_prefixed_id(r["task_id"], "tsk-", 32)) return "task_id is not tsk-<32 hex>";
  if (!str_eq(r["mode"], "stage") && !str_eq(r["mode"], "attest")) {
    return "mode is not \"stage\" or \"attest\"";
  }
  if (auto p = engine_problem(r["engine"], true); !p.empty()) return p;
  if (auto p = binding_problem(r["binding"], false); !p.empty()) return p;
  if (auto p = actor_problem(r["actor"]); !p.empty()) return p;
  const Json& pol = r["policy"];
  if (!has_exact_keys(pol, {"adapter", "provider", "model"}) ||
      !is_string_len(pol["adapter"], 1, 256) || !is_string_len(pol["provider"], 1, 256) ||
      !is_string_len(pol["model"], 1, 256)) {
    return "policy is not {adapter, provider, model} of 1..256 bytes each";
  }
  if (!is_hex64(r["task_sha256"])) return "task_sha256 is not 64 lowercase hex";
  const Json& ex = r["execution"];
  if (!has_exact_keys(ex, {"kind", "internal_model_calls", "claims_authority"}) ||
      ex["kind"] != "caller-policy" || !ex["internal_model_calls"].is_number_integer() ||
      ex["internal_model_calls"] != 0 || ex["claims_authority"] != "caller-policy") {
    return "execution is not the caller-policy constant";
  }
  const Json& lim = r["limits"];
  if (!has_exact_keys(lim, {"max_turns", "deadline_ms", "input_sealed", "max_actions_per_turn",
                            "max_actions"}) ||
      !is_int_at_least(lim["max_turns"], 0) || !is_int_at_least(lim["deadline_ms"], 0) ||
      !lim["input_sealed"].is_boolean() || !is_int_at_least(lim["max_actions_per_turn"], 0) ||
      !is_int_at_least(lim["max_actions"], 0)) {
    return "limits is not {max_turns, deadline_ms, input_sealed, max_actions_per_turn, max_actions}";
  }
  for (const char* k : {"started_at", "frozen_at", "observed_at", "completed_at"}) {
    if (!r[k].is_string()) return std::string(k) + " is not a string";
  }
  for (const char* k : {"elapsed_ms", "turn_count", "call_count", "refused_call_count",
                        "invalid_result_count", "safety_check_count", "action_count",
                        "input_event_count", "post_observation_input_event_count"}) {
    if (!is_int_at_least(r[k], 0)) return std::string(k) + " is not an integer >= 0";
  }
  if (!r["prior_receipt_id"].is_null() && !is_prefixed_id(r["prior_receipt_id"], "etr-", 64)) {
    return "prior_receipt_id is not null or etr-<64 hex>";
  }
  if (!r["prior_transcript_sha256"].is_null() && !is_hex64(r["prior_transcript_sha256"])) {
    return "prior_transcript_sha256 is not null or 64 lowercase hex";
  }
  if (!r["prior_transcript_event_count"].is_null() &&
      !is_int_at_least(r["prior_transcript_event_count"], 0)) {
    return "prior_transcript_event_count is not null or an integer >= 0";
  }
  if (!r["prior_completed_at"].is_null() && !r["prior_completed_at"].is_string()) {
    return "prior_completed_at is not null or a string";
  }
  const Json& t = r["transcript"];
  if (!t.is_array() || t.size() < kMinTaskEvents || t.size() > kMaxTaskEvents) {
    return "transcript is not an array of 5..80 events";
  }
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::string p = task_event_problem(t[i], i);
    if (!p.empty()) return p;
  }
  for (const char* k : {"stage_transcript_sha256", "transcript_sha256", "pre_observation_sha256",
                        "result_sha256"}) {
    if (!is_hex64(r[k])) return std::string(k) + " is not 64 lowercase hex";
  }
  if (auto p = observation_problem(r["observation"]); !p.empty()) return p;
  if (!r["result"].is_object()) return "result is not an object";
  if (!is_prefixed_id(r["receipt_id"], kTaskReceiptIdPrefix, 64)) return "receipt_id is not etr-<64 hex>";
  return "";
}

std::int64_t int_of(const Json& v) { return v.get<std::int64_t>(); }

const std::string& empty_call_ids_sha() {
  static const std::string kSha = *domain_digest(kDomainTaskCallIds, Json::array());
  return kSha;
}

}  // namespace

VerifyReport verify_task_receipt(const Json& r, const VerifyOptions& options) {
  VerifyReport report;
  report.receipt_id = (r.is_object() && r.contains("receipt_id") && r["receipt_id"].is_string())
                          ? r["receipt_id"]
                          : Json(nullptr);
  auto add = [&report](std::string name, bool ok, std::string detail) {
    report.checks.push_back(VerifyCheck{std::move(name), ok, std::move(detail)});
  };
  auto add_detail = [&add](std::string name, const std::string& detail, std::string ok_detail) {
    add(std::move(name), detail.empty(), detail.empty() ? std::move(ok_detail) : detail);
  };

  // 1. schema
  std::string problem = task_schema_problem(r);
  if (!problem.empty()) {
    add("schema", false, problem);
    report.ok = false;
    return report;
  }
  add("schema", true, std::string(kTaskReceiptSchema));
  const Json& t = r["transcript"];
  std::vector<std::string_view> kinds;
  kinds.reserve(t.size());
  for (const auto& e : t) kinds.push_back(e["kind"].get_ref<const std::string&>());
  const bool attest = str_eq(r["mode"], "attest");

  const TranscriptJcs events = transcript_jcs(t);
  const std::string transcript_bytes = events.join(t.size());
  bool result_canonical = true;
  std::string result_jcs;
  {
    auto bytes = canonicalize(r["result"]);
    result_canonical = bytes.ok();
    if (bytes.ok()) result_jcs = std::move(*bytes);
  }

  // 2. receipt_id
  {
    bool ok = events.canonical && result_canonical;
    std::string body;
    if (ok) {
      body = body_jcs_without_id(r, {{"transcript", &transcript_bytes}, {"result", &result_jcs}},
                                 &ok);
    }
    std::string want = ok ? std::string(kTaskReceiptIdPrefix) +
                                domain_digest_of_jcs(kDomainTaskReceipt, body)
                          : std::string();
    ok = ok && str_eq(r["receipt_id"], want);
    add("receipt_id", ok, ok ? "matches" : "recomputed " + want.substr(0, 16) + "…");
  }
  // 3. transcript_sha256: H(task-transcript, {"events": [...], "prior_transcript_sha256": P|null})
  {
    std::string want;
    if (events.canonical) {
      const std::string prior = r["prior_transcript_sha256"].is_null()
                                    ? std::string("null")
                                    : "\"" + r["prior_transcript_sha256"].get<std::string>() + "\"";
      want = domain_digest_of_jcs(kDomainTaskTranscript, "{\"events\":" + transcript_bytes +
                                                             ",\"prior_transcript_sha256\":" +
                                                             prior + "}");
    }
    bool ok = events.canonical && str_eq(r["transcript_sha256"], want);
    add("transcript_sha256", ok, ok ? "matches" : "recomputed " + short_hex(want));
  }
  // 4. stage_transcript_sha256: the events up to and including the first freeze.
  {
    std::size_t freeze = t.size();
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (kinds[i] == "freeze") { freeze = i; break; }
    }
    if (freeze == t.size()) {
      add("stage_transcript_sha256", false, "no freeze event");
    } else {
      std::string want = events.canonical
                             ? domain_digest_of_jcs(kDomainTaskStageTranscript, events.join(freeze + 1))
                             : "";
      bool ok = events.canonical && str_eq(r["stage_transcript_sha256"], want);
      add("stage_transcript_sha256", ok, ok ? "matches" : "recomputed " + short_hex(want));
    }
  }
  // 5. result_sha256
  {
    std::string detail;
    std::string want = result_canonical ? domain_digest_of_jcs(kDomainTaskResult, result_jcs) : "";
    if (!result_canonical) {
      detail = "the result is not canonicalizable";
    } else if (result_jcs.size() > kMaxClaimsCanonicalBytes) {
      detail = "the result is " + std::to_string(result_jcs.size()) +
               " bytes canonical (limit 16384)";
    } else if (!str_eq(r["result_sha256"], want)) {
      detail = "result_sha256 differs from recomputed " + short_hex(want);
    } else {
      for (std::size_t i = 0; i < t.size(); ++i) {
        if (kinds[i] == "result" && !str_eq(t[i]["result_sha256"], want)) {
          detail = "transcript[" + std::to_string(i) + "].result_sha256 differs";
          break;
        }
      }
    }
    add_detail("result_sha256", detail, "matches");
  }
  // 6. event_order: contiguous indices; initial_frame, (turn action*)+, freeze, observation,
  // result.
  {
    std::string detail;
    for (std::size_t i = 0; i < t.size() && detail.empty(); ++i) {
      if (int_of(t[i]["index"]) != static_cast<std::int64_t>(i)) {
        detail = "transcript[" + std::to_string(i) + "].index is not " + std::to_string(i);
      }
    }
    if (detail.empty()) {
      const std::size_t n = t.size();
      bool ok = kinds[0] == "initial_frame" && kinds[1] == "turn" && kinds[n - 3] == "freeze" &&
                kinds[n - 2] == "observation" && kinds[n - 1] == "result";
      for (std::size_t i = 2; ok && i + 3 < n; ++i) ok = kinds[i] == "turn" || kinds[i] == "action";
      if (!ok) detail = "kinds are not initial_frame, (turn, action*)+, freeze, observation, result";
    }
    add_detail("event_order", detail, std::to_string(t.size()) + " events in order");
  }
  // 7. turns: numbered 1.. contiguously; per-turn counts; the last turn is the final answer.
  std::int64_t turn_events = 0;
  std::int64_t calls = 0;
  std::int64_t answers = 0;  // turns without calls (final answers)
  {
    std::string detail;
    const std::int64_t per_turn = int_of(r["limits"]["max_actions_per_turn"]);
    std::size_t last_turn = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (kinds[i] != "turn") continue;
      const Json& e = t[i];
      ++turn_events;
      const std::int64_t cc = int_of(e["call_count"]);
      calls += cc;
      if (cc == 0) ++answers;
      std::int64_t acts = 0;
      for (std::size_t j = i + 1; j < t.size() && kinds[j] == "action"; ++j) ++acts;
      if (!detail.empty()) continue;
      const std::string where = "transcript[" + std::to_string(i) + "]";
      if (int_of(e["turn"]) != turn_events) {
        detail = where + ".turn is not " + std::to_string(turn_events);
      } else if (cc > protocol::kTaskCallsPerTurnMax) {
        detail = where + " has more than 16 calls";
      } else if (cc == 0 && (acts != 0 || !e["native_actions"].empty() ||
                             !str_eq(e["call_ids_sha256"], empty_call_ids_sha()))) {
        detail = where + " is a final answer (no calls) but has actions, native actions or call ids";
      } else if (cc > 0 && (acts < 1 || acts > per_turn)) {
        detail = where + " has " + std::to_string(acts) + " action events (1.." +
                 std::to_string(per_turn) + " for a turn with calls)";
      } else if (cc > 0 && e["native_actions"].empty()) {
        detail = where + " has calls but no native actions";
      }
      last_turn = i;
    }
    if (detail.empty() && int_of(t[last_turn]["call_count"]) != 0) {
      detail = "the last turn is not a final answer (it has calls)";
    }
    add_detail("turns", detail, std::to_string(turn_events) + " turns, contiguous");
  }
  // 8. turn_frames: each turn's frame_sha256 is a frame issued before it.
  {
    std::string detail;
    std::set<std::string_view> issued;
    for (std::size_t i = 0; i < t.size() && detail.empty(); ++i) {
      const std::string& f = t[i]["frame_sha256"].get_ref<const std::string&>();
      if (kinds[i] == "turn" && !issued.contains(f)) {
        detail = "transcript[" + std::to_string(i) + "].frame_sha256 is not an earlier issued frame";
      }
      if (kinds[i] == "initial_frame" || kinds[i] == "action") issued.insert(f);
    }
    add_detail("turn_frames", detail, "every turn was shown an earlier issued frame");
  }
  // 9. counters
  {
    std::string detail = counters_v3_problem(t, kinds, int_of(r["action_count"]),
                                             int_of(r["input_event_count"]));
    if (detail.empty() && int_of(r["turn_count"]) != turn_events) {
      detail = "turn_count " + std::to_string(int_of(r["turn_count"])) + " but " +
               std::to_string(turn_events) + " turn events";
    }
    if (detail.empty() && int_of(r["call_count"]) != calls) {
      detail = "call_count " + std::to_string(int_of(r["call_count"])) +
               " is not the sum of the turns' call_count (" + std::to_string(calls) + ")";
    }
    if (detail.empty() && int_of(r["invalid_result_count"]) != answers - 1) {
      detail = "invalid_result_count " + std::to_string(int_of(r["invalid_result_count"])) +
               " is not the final answers before the valid one (" + std::to_string(answers - 1) + ")";
    }
    if (detail.empty() &&
        (int_of(r["refused_call_count"]) != 0 || int_of(r["safety_check_count"]) != 0)) {
      detail = "refused_call_count and safety_check_count are not 0 (a refusal ends a task without a receipt)";
    }
    add_detail("counters", detail, "consistent with events");
  }
  // 10. input_flags, 11. projections (as the session receipt v3)
  add_detail("input_flags", input_flags_problem(t, kinds), "agree with input_events and kinds");
  add_detail("projections", projections_problem(t, kinds), "constant projections recompute");
  // 12. limits: exactly the mode's, and the counts within them.
  {
    std::string detail;
    const Json& lim = r["limits"];
    auto want = task_limits_for(r["mode"].get<std::string>());
    if (int_of(lim["max_turns"]) != want->max_turns || int_of(lim["deadline_ms"]) != want->deadline_ms ||
        lim["input_sealed"].get<bool>() != want->input_sealed ||
        int_of(lim["max_actions_per_turn"]) != want->max_actions_per_turn ||
        int_of(lim["max_actions"]) != want->max_actions) {
      detail = "limits are not the " + r["mode"].get<std::string>() + " limits";
    } else if (turn_events > want->max_turns) {
      detail = std::to_string(turn_events) + " turns exceed max_turns";
    } else if (int_of(r["action_count"]) > want->max_actions) {
      detail = "action_count exceeds max_actions";
    }
    add_detail("limits", detail, "the " + r["mode"].get<std::string>() + " limits, kept");
  }
  // 13. attest_input: in attest no action sent input (screenshot and zoom only).
  {
    std::string detail;
    if (attest) {
      for (std::size_t i = 0; i < t.size() && detail.empty(); ++i) {
        if (kinds[i] != "action") continue;
        const Json& e = t[i];
        if (!str_eq(e["action"], "screenshot") && !str_eq(e["action"], "zoom")) {
          detail = "transcript[" + std::to_string(i) + "] is an input action in attest";
        } else if (e["input"].get<bool>() || int_of(e["input_events"]) != 0) {
          detail = "transcript[" + std::to_string(i) + "] sent input in attest";
        }
      }
      if (detail.empty() && int_of(r["input_event_count"]) != 0) {
        detail = "input_event_count is not 0 in attest";
      }
    }
    add_detail("attest_input", detail, attest ? "no input in attest" : "stage: input allowed");
  }
  // 14. lineage: null in stage; in attest all four set and the prior completed before start.
  {
    std::string detail;
    int set = 0;
    for (const char* k : {"prior_receipt_id", "prior_transcript_sha256",
                          "prior_transcript_event_count", "prior_completed_at"}) {
      if (!r[k].is_null()) ++set;
    }
    if (!attest && set != 0) {
      detail = "a stage receipt has lineage members";
    } else if (attest && set != 4) {
      detail = "an attest receipt lacks lineage members";
    } else if (attest) {
      std::int64_t prior_ms = 0;
      std::int64_t start_ms = 0;
      const std::int64_t count = int_of(r["prior_transcript_event_count"]);
      if (!parse_rfc3339_ms(r["prior_completed_at"].get<std::string>(), &prior_ms) ||
          prior_ms < 0 || prior_ms > 253402300799999) {
        detail = "prior_completed_at is not YYYY-MM-DDTHH:MM:SS.mmmZ (1970..9999)";
      } else if (parse_rfc3339_ms(r["started_at"].get<std::string>(), &start_ms) &&
                 start_ms < prior_ms) {
        detail = "started_at is earlier than prior_completed_at";
      } else if (count < static_cast<std::int64_t>(kMinTaskEvents) ||
                 count > static_cast<std::int64_t>(kMaxTaskEvents)) {
        detail = "prior_transcript_event_count is not 5..80";
      }
    }
    add_detail("lineage", detail, attest ? "attest bound to a stage receipt" : "stage: no lineage");
  }
  // 15. post_observation_input_event_count
  {
    bool ok = r["post_observation_input_event_count"] == 0;
    add("post_observation_input_event_count", ok, ok ? "0" : "not 0");
  }
  // 16. timestamps
  add_detail("timestamps",
             timestamps_problem(r, {"started_at", "frozen_at", "observed_at", "completed_at"}),
             "well-formed and ordered");
  // 17. observation_digest
  {
    const std::string& obs = r["observation"]["sha256"].get_ref<const std::string&>();
    std::string detail;
    for (std::size_t i = 0; i < t.size() && detail.empty(); ++i) {
      const Json& e = t[i];
      if (kinds[i] == "observation") {
        if (!str_eq(e["frame_sha256"], obs)) detail = "observation event frame differs from observation";
        else if (e["pre_observation_sha256"] != r["pre_observation_sha256"])
          detail = "observation event pre_observation_sha256 differs";
      } else if (kinds[i] == "result" && !str_eq(e["frame_sha256"], obs)) {
        detail = "result event frame differs from observation";
      }
    }
    add_detail("observation_digest", detail, "matches");
  }
  // 18. frames (every event's frame_sha256 and the observation; scaled model images are not
  // evidence files)
  if (!options.frames_dir.empty()) {
    std::set<std::string> wanted;
    for (const auto& e : t) wanted.insert(e["frame_sha256"].get<std::string>());
    wanted.insert(r["observation"]["sha256"].get<std::string>());
    std::size_t count = 0;
    std::string detail = frames_problem(options.frames_dir, wanted, r["observation"], &count);
    add_detail("frames", detail, std::to_string(count) + " frames present and hashed");
  }
  // 19. png
  if (!options.png_path.empty()) {
    add_detail("png", png_problem(options.png_path, r["observation"]["sha256"]),
               "is the observed frame");
  }
  // 20. expect_task (--expect-job on a task receipt names its task_sha256)
  if (!options.expect_job_sha256.empty()) {
    std::string want = options.expect_job_sha256;
    std::transform(want.begin(), want.end(), want.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    bool ok = r["task_sha256"] == want;
    add("expect_task", ok, ok ? "task_sha256 matches" : "task_sha256 differs");
  }
  // 21. expect_uid
  if (options.expect_uid.has_value()) {
    bool ok = r["actor"]["uid"] == *options.expect_uid;
    add("expect_uid", ok, ok ? "actor.uid matches" : "actor.uid differs");
  }
  // D1–D3. disclosure
  if (!options.disclosure.is_null()) {
    for (auto& c : check_disclosure(r, options.disclosure)) add(c.name, c.ok, c.detail);
  }
  // P1–P4. lineage against --prior
  if (!options.prior.is_null()) check_task_lineage(r, options.prior, report);

  report.ok = std::all_of(report.checks.begin(), report.checks.end(),
                          [](const VerifyCheck& c) { return c.ok; });
  return report;
}

void check_task_lineage(const Json& r, const Json& prior, VerifyReport& report) {
  auto add = [&report](std::string name, bool ok, std::string detail) {
    report.checks.push_back(VerifyCheck{std::move(name), ok, std::move(detail)});
  };
  const char* kNames[] = {"prior_binding", "prior_chronology", "prior_transcript"};
  std::string detail;
  if (!str_eq(r["mode"], "attest")) {
    detail = "this is a stage receipt: it has no prior";
  } else if (!is_task_receipt(prior)) {
    detail = "the prior is not a task receipt";
  } else {
    VerifyReport pr = verify_task_receipt(prior, VerifyOptions{});
    if (!pr.ok) {
      detail = "the prior does not verify (failed: ";
      bool first = true;
      for (const auto& n : pr.failed_names()) {
        detail += (first ? "" : ", ") + n;
        first = false;
      }
      detail += ")";
    } else if (!str_eq(prior["mode"], "stage")) {
      detail = "the prior is not a stage receipt";
    } else if (prior["receipt_id"] != r["prior_receipt_id"]) {
      detail = "the prior's receipt_id is not prior_receipt_id";
    }
  }
  add("prior_receipt", detail.empty(), detail.empty() ? "a verified stage task receipt" : detail);
  if (!detail.empty()) {
    for (const char* n : kNames) add(n, false, "not checked: no usable prior");
    return;
  }
  {
    const Json& a = r["binding"];
    const Json& b = prior["binding"];
    std::string d;
    if (a["generation"] != b["generation"]) d = "binding.generation differs from the prior's";
    else if (a["app_id"] != b["app_id"]) d = "binding.app_id differs from the prior's";
    else if (a["attempt_id"] != b["attempt_id"]) d = "binding.attempt_id differs from the prior's";
    add("prior_binding", d.empty(), d.empty() ? "same generation, app and attempt" : d);
  }
  {
    std::string d;
    std::int64_t prior_ms = 0;
    std::int64_t start_ms = 0;
    if (prior["completed_at"] != r["prior_completed_at"]) {
      d = "prior_completed_at is not the prior's completed_at";
    } else if (!parse_rfc3339_ms(prior["completed_at"].get<std::string>(), &prior_ms) ||
               !parse_rfc3339_ms(r["started_at"].get<std::string>(), &start_ms) ||
               start_ms < prior_ms) {
      d = "started before the prior completed";
    }
    add("prior_chronology", d.empty(), d.empty() ? "started after the prior completed" : d);
  }
  {
    std::string d;
    if (prior["transcript_sha256"] != r["prior_transcript_sha256"]) {
      d = "prior_transcript_sha256 is not the prior's transcript_sha256";
    } else if (static_cast<std::int64_t>(prior["transcript"].size()) !=
               int_of(r["prior_transcript_event_count"])) {
      d = "prior_transcript_event_count is not the prior's transcript length";
    }
    add("prior_transcript", d.empty(), d.empty() ? "digest and event count match" : d);
  }
}

}  // namespace evident
