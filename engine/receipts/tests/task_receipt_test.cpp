// Task receipts (evident.task-receipt/v1): the builder reproduces the independently computed
// vectors byte for byte (receipts/task/make_task_vectors.py); both verifiers (C++ and the
// independent Python one) accept them, with --frames, --png, expectations and --prior; the
// builder refuses malformed input with stable codes; every leaf tamper and a table of semantic
// mutations (re-sealed, so the rule itself is what fails) make both verifiers fail with the same
// checks.
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "evident/core/fs.h"
#include "evident/core/random.h"
#include "evident/receipts/jcs.h"
#include "evident/receipts/receipt.h"
#include "evident/receipts/task_receipt.h"
#include "evident/receipts/verify.h"
#include "task_golden.h"

namespace evident {
namespace {

using testing::read_json;
using testing::read_text;
using testing::task_vector_dir;
using testing::task_vector_input;
using testing::write_text;

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

class TempDir {
 public:
  TempDir() : path_("/tmp/evident-task-receipt-test-" + random_hex(8)) {
    EXPECT_TRUE(make_private_dir(path_).ok());
  }
  ~TempDir() { (void)remove_tree(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string receipt_path(const std::string& name) { return task_vector_dir(name) + "/receipt.json"; }

TEST(TaskReceipt, BuilderReproducesTheIndependentVectorsByteForByte) {
  for (const std::string name : {"stage", "attest"}) {
    SCOPED_TRACE(name);
    auto built = build_task_receipt(task_vector_input(name));
    ASSERT_TRUE(built.ok()) << built.error().code << ": " << built.error().message;
    auto bytes = receipt_file_bytes(*built);
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(*bytes, read_text(receipt_path(name)));
    Json digests = read_json(task_vector_dir("digests.json"))[name];
    EXPECT_EQ((*built)["receipt_id"], digests["receipt_id"]);
    EXPECT_EQ((*built)["transcript_sha256"], digests["transcript_sha256"]);
    EXPECT_EQ((*built)["stage_transcript_sha256"], digests["stage_transcript_sha256"]);
    EXPECT_EQ((*built)["result_sha256"], digests["result_sha256"]);
    EXPECT_EQ((*built)["transcript"][1]["call_ids_sha256"], digests["turn1.call_ids_sha256"]);
  }
}

TEST(TaskReceipt, NothingSecretIsWritten) {
  const std::string text = read_text(receipt_path("stage"));
  // Typed text, key names, raw call ids: only their salted commitments / digest are there.
  for (const char* secret : {"Ada Lovelace\"", "ada@example.org", "\"Tab\"", "toolu_01A", "toolu_02C"}) {
    EXPECT_EQ(text.find(secret), std::string::npos) << secret;
  }
  // (The result is the policy's final answer and is bound in clear, as claims are.)
}

VerifyOptions full_options(const std::string& name, const Json& r) {
  VerifyOptions o;
  o.frames_dir = task_vector_dir(name) + "/frames";
  o.png_path = o.frames_dir + "/" + r["observation"]["sha256"].get<std::string>() + ".png";
  o.expect_job_sha256 = r["task_sha256"];
  o.expect_uid = r["actor"]["uid"].get<std::int64_t>();
  return o;
}

TEST(TaskReceipt, VectorsVerifyWithEveryOptionAndLineage) {
  Json stage = read_json(receipt_path("stage"));
  Json attest = read_json(receipt_path("attest"));
  VerifyReport s = verify_receipt(stage, full_options("stage", stage));
  EXPECT_TRUE(s.ok) << join(s.failed_names());
  std::vector<std::string> names;
  for (const auto& c : s.checks) names.push_back(c.name);
  EXPECT_EQ(join(names),
            "schema,receipt_id,transcript_sha256,stage_transcript_sha256,result_sha256,event_order,"
            "turns,turn_frames,counters,input_flags,projections,limits,attest_input,lineage,"
            "post_observation_input_event_count,timestamps,observation_digest,frames,png,"
            "expect_task,expect_uid");
  VerifyOptions ao = full_options("attest", attest);
  ao.prior = stage;
  VerifyReport a = verify_receipt(attest, ao);
  EXPECT_TRUE(a.ok) << join(a.failed_names());
  EXPECT_EQ(a.checks.back().name, "prior_transcript");
  EXPECT_EQ(a.checks[a.checks.size() - 4].name, "prior_receipt");
  // A stage receipt has no prior; an attest receipt's prior must be the stage one.
  VerifyOptions so;
  so.prior = attest;
  EXPECT_EQ(join(verify_receipt(stage, so).failed_names()),
            "prior_receipt,prior_binding,prior_chronology,prior_transcript");
  VerifyOptions self;
  self.prior = attest;
  EXPECT_EQ(join(verify_receipt(attest, self).failed_names()),
            "prior_receipt,prior_binding,prior_chronology,prior_transcript");
}

// ---------------------------------------------------------------- builder refusals

TEST(TaskReceipt, BuilderRefusesMalformedInputWithStableCodes) {
  const TaskReceiptInput good = task_vector_input("stage");
  struct Case {
    const char* label;
    std::function<void(TaskReceiptInput&)> change;
    const char* code;
  };
  const std::vector<Case> cases = {
      {"result not an object", [](TaskReceiptInput& in) { in.result = Json::array(); }, "task-result-invalid"},
      {"result too large",
       [](TaskReceiptInput& in) { in.result = Json{{"x", std::string(16400, 'a')}}; },
       "task-result-invalid"},
      {"result with a float", [](TaskReceiptInput& in) { in.result = Json{{"x", 0.5}}; },
       "receipt-noncanonical"},
      {"unknown mode", [](TaskReceiptInput& in) { in.mode = "replay"; }, "receipt-invalid"},
      {"job_sha256 set", [](TaskReceiptInput& in) { in.binding.job_sha256 = std::string(64, 'a'); },
       "receipt-invalid"},
      {"stage with lineage",
       [](TaskReceiptInput& in) { in.lineage = TaskLineage{"etr-" + std::string(64, 'a'), std::string(64, 'b'), 9, 0}; },
       "receipt-invalid"},
      {"attest without lineage", [](TaskReceiptInput& in) { in.mode = "attest"; }, "receipt-invalid"},
      {"turn holds more actions than recorded",
       [](TaskReceiptInput& in) { in.turns[1].action_count = 9; }, "receipt-invalid"},
      {"an action no turn holds", [](TaskReceiptInput& in) { in.turns[1].action_count = 3; },
       "receipt-invalid"},
      {"turns not contiguous", [](TaskReceiptInput& in) { in.turns[1].turn = 3; }, "receipt-invalid"},
      {"turn frame not issued",
       [](TaskReceiptInput& in) { in.turns[1].frame_sha256 = std::string(64, 'c'); }, "receipt-invalid"},
      {"last turn has calls", [](TaskReceiptInput& in) { in.turns.pop_back(); in.turns.pop_back(); },
       "receipt-invalid"},
      {"invalid_result_count wrong", [](TaskReceiptInput& in) { in.invalid_result_count = 0; },
       "receipt-invalid"},
      {"safety checks counted", [](TaskReceiptInput& in) { in.safety_check_count = 1; }, "receipt-invalid"},
      {"input_event_count wrong", [](TaskReceiptInput& in) { in.input_event_count += 1; }, "receipt-invalid"},
      {"bad task id", [](TaskReceiptInput& in) { in.task_id = "ses-" + std::string(32, 'a'); }, "receipt-invalid"},
      {"bad native action name",
       [](TaskReceiptInput& in) { in.turns[0].native_actions[0] = "left click"; }, "receipt-invalid"},
      {"empty policy model", [](TaskReceiptInput& in) { in.policy.model.clear(); }, "receipt-invalid"},
      {"commitment on a click",
       [](TaskReceiptInput& in) { in.actions[0].commitment = std::string(64, 'd'); }, "receipt-invalid"},
      {"projection type differs",
       [](TaskReceiptInput& in) { in.actions[0].type = "double_click"; }, "receipt-invalid"},
      {"call id not UTF-8", [](TaskReceiptInput& in) { in.turns[0].call_ids[0] = "\xff"; }, "receipt-invalid"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.label);
    TaskReceiptInput in = good;
    c.change(in);
    auto built = build_task_receipt(in);
    ASSERT_FALSE(built.ok());
    EXPECT_EQ(built.error().code, c.code) << built.error().message;
    // Never the secrets in the message.
    EXPECT_EQ(built.error().message.find("Ada"), std::string::npos);
    EXPECT_EQ(built.error().message.find("toolu"), std::string::npos);
  }
  // Attest input: a click in attest is refused by the self-check.
  TaskReceiptInput in = task_vector_input("attest");
  in.actions[0].type = "click";
  in.actions[0].projection = Json{{"type", "click"}, {"x", 1}, {"y", 1}};
  in.actions[0].input = true;
  in.actions[0].input_events = 3;
  in.input_event_count = 3;
  auto built = build_task_receipt(in);
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.error().code, "receipt-invalid");
  EXPECT_NE(built.error().message.find("attest_input"), std::string::npos);
}

// ---------------------------------------------------------------- agreement with Python

struct Job {
  std::string path;
  VerifyOptions options;
  std::string label;
};

struct Outcome {
  std::string error;
  bool ok = false;
  std::vector<std::string> failed;
  std::vector<std::string> names;
};

Outcome run_cpp(const Job& job) {
  Outcome o;
  auto receipt = load_receipt_file(job.path);
  if (!receipt.ok()) {
    o.error = receipt.error().code;
    return o;
  }
  VerifyReport report = verify_receipt(*receipt, job.options);
  o.ok = report.ok;
  o.failed = report.failed_names();
  for (const auto& c : report.checks) o.names.push_back(c.name);
  return o;
}

std::vector<Outcome> run_python(const std::vector<Job>& jobs, const std::vector<std::string>& priors) {
  Json req{{"verify_py", testing::source_path("bindings/python/evident/verify.py")},
           {"jobs", Json::array()}};
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto& j = jobs[i];
    req["jobs"].push_back(
        Json{{"path", j.path},
             {"frames_dir", j.options.frames_dir},
             {"png_path", j.options.png_path},
             {"expect_job_sha256", j.options.expect_job_sha256},
             {"expect_uid", j.options.expect_uid ? Json(*j.options.expect_uid) : Json(nullptr)},
             {"prior_path", priors[i]}});
  }
  auto r = testing::run_command(
      "/usr/bin/python3 " +
          testing::shell_quote(testing::source_path("engine/receipts/tests/py_verify_batch.py")),
      dump_json(req));
  EXPECT_EQ(r.exit_status, 0) << r.out.substr(0, 2000);
  auto parsed = parse_json_strict(r.out, 64 << 20, "py");
  EXPECT_TRUE(parsed.ok()) << r.out.substr(0, 500);
  std::vector<Outcome> out;
  if (!parsed.ok()) return out;
  for (const Json& x : *parsed) {
    Outcome o;
    o.error = x["error"].is_null() ? "" : x["error"].get<std::string>();
    o.ok = x["ok"];
    for (const Json& n : x["failed"]) o.failed.push_back(n);
    if (x.contains("names")) {
      for (const Json& n : x["names"]) o.names.push_back(n);
    }
    out.push_back(o);
  }
  return out;
}

// Recomputes the digests and receipt_id of a (mutated) task receipt, so that a semantic rule,
// not a digest, is what a verifier must catch. Uses this module's JCS: it only makes bad inputs.
Json reseal(Json r) {
  Json t = r["transcript"];
  Json stage = Json::array();
  for (const Json& e : t) {
    stage.push_back(e);
    if (e.value("kind", "") == "freeze") break;
  }
  if (r["result"].is_object()) {
    r["result_sha256"] = *domain_digest(kDomainTaskResult, r["result"]);
    for (Json& e : r["transcript"]) {
      if (e.value("kind", "") == "result") e["result_sha256"] = r["result_sha256"];
    }
  }
  r["stage_transcript_sha256"] = *domain_digest(kDomainTaskStageTranscript, stage);
  r["transcript_sha256"] = *domain_digest(
      kDomainTaskTranscript,
      Json{{"prior_transcript_sha256", r["prior_transcript_sha256"]}, {"events", r["transcript"]}});
  r.erase("receipt_id");
  r["receipt_id"] = "etr-" + *domain_digest(kDomainTaskReceipt, r);
  return r;
}

TEST(TaskReceipt, VectorsPassBothVerifiers) {
  TempDir tmp;
  Json stage = read_json(receipt_path("stage"));
  Json attest = read_json(receipt_path("attest"));
  std::vector<Job> jobs;
  std::vector<std::string> priors;
  jobs.push_back({receipt_path("stage"), VerifyOptions{}, "stage plain"});
  priors.push_back("");
  jobs.push_back({receipt_path("stage"), full_options("stage", stage), "stage full"});
  priors.push_back("");
  jobs.push_back({receipt_path("attest"), full_options("attest", attest), "attest full"});
  priors.push_back("");
  VerifyOptions ao = full_options("attest", attest);
  ao.prior = stage;
  jobs.push_back({receipt_path("attest"), ao, "attest --prior"});
  priors.push_back(receipt_path("stage"));
  auto py = run_python(jobs, priors);
  ASSERT_EQ(py.size(), jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE(jobs[i].label);
    Outcome c = run_cpp(jobs[i]);
    EXPECT_TRUE(c.ok) << join(c.failed);
    EXPECT_TRUE(py[i].ok) << join(py[i].failed);
    EXPECT_EQ(join(c.names), join(py[i].names));
  }
}

Json mutate_leaf(const Json& v) {
  if (v.is_boolean()) return !v.get<bool>();
  if (v.is_null()) return 0;
  if (v.is_number_integer()) return v.get<std::int64_t>() + 1;
  std::string s = v.get<std::string>();
  for (std::size_t i = s.size(); i-- > 0;) {
    char& c = s[i];
    static const std::string kHex = "0123456789abcdef";
    if (c >= '0' && c <= '9') { c = c == '9' ? '0' : static_cast<char>(c + 1); return s; }
    if (c >= 'a' && c <= 'f') { c = kHex[(kHex.find(c) + 1) % 16]; return s; }
    if (c >= 'g' && c <= 'z') { c = c == 'z' ? 'a' : static_cast<char>(c + 1); return s; }
    if (c >= 'A' && c <= 'Z') { c = c == 'Z' ? 'A' : static_cast<char>(c + 1); return s; }
  }
  return s + "x";
}

void collect_leaves(const Json& v, const std::string& pointer, std::vector<std::string>* out) {
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) collect_leaves(it.value(), pointer + "/" + it.key(), out);
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) collect_leaves(v[i], pointer + "/" + std::to_string(i), out);
  } else {
    out->push_back(pointer);
  }
}

TEST(TaskReceipt, EveryLeafTamperFailsBothVerifiersWithTheSameChecks) {
  TempDir tmp;
  std::vector<Job> jobs;
  std::vector<std::string> priors;
  std::size_t counter = 0;
  for (const std::string name : {"stage", "attest"}) {
    Json receipt = read_json(receipt_path(name));
    VerifyOptions options = full_options(name, receipt);
    std::string prior;
    if (name == "attest") {
      options.prior = read_json(receipt_path("stage"));
      prior = receipt_path("stage");
    }
    std::vector<std::string> leaves;
    collect_leaves(receipt, "", &leaves);
    for (const auto& p : leaves) {
      Json t = receipt;
      Json::json_pointer ptr(p);
      t[ptr] = mutate_leaf(t[ptr]);
      std::string path = tmp.path() + "/t" + std::to_string(counter++) + ".json";
      write_text(path, dump_json(t));
      jobs.push_back({path, options, name + p});
      priors.push_back(prior);
    }
  }
  ASSERT_GT(jobs.size(), 200u);
  auto py = run_python(jobs, priors);
  ASSERT_EQ(py.size(), jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE(jobs[i].label);
    Outcome c = run_cpp(jobs[i]);
    ASSERT_EQ(c.error, "");
    EXPECT_FALSE(c.ok);
    EXPECT_FALSE(py[i].ok);
    EXPECT_EQ(join(c.failed), join(py[i].failed));
    std::set<std::string> failed(c.failed.begin(), c.failed.end());
    if (!failed.count("schema")) {
      EXPECT_TRUE(failed.count("receipt_id"));
    }
  }
}

TEST(TaskReceipt, SemanticMutationsFailTheirRuleInBothVerifiers) {
  TempDir tmp;
  const Json stage = read_json(receipt_path("stage"));
  const Json attest = read_json(receipt_path("attest"));
  // Stage transcript: 0 initial, 1 turn1, 2-3 actions, 4 turn2, 5-8 actions, 9 turn3, 10 turn4,
  // 11 freeze, 12 observation, 13 result. Attest: 0 initial, 1 turn1, 2 screenshot, 3 turn2,
  // 4 freeze, 5 observation, 6 result.
  struct Case {
    std::string label;
    bool on_attest;
    std::function<void(Json&)> change;
    bool reseal;
    std::string want;  // the failed checks, in order
    std::function<void(Json&)> change_prior = nullptr;  // a mutated --prior (re-sealed)
  };
  const std::string other_hex(64, 'e');
  const std::vector<Case> cases = {
      {"turn number skips", false, [](Json& r) { r["transcript"][4]["turn"] = 3; }, true, "turns"},
      {"turn number repeats", false, [](Json& r) { r["transcript"][10]["turn"] = 3; }, true, "turns"},
      {"first turn is 0", true, [](Json& r) { r["transcript"][1]["turn"] = 0; }, true, "schema"},
      {"17 calls in a turn", false, [](Json& r) { r["transcript"][4]["call_count"] = 17; r["call_count"] = 19; },
       true, "turns"},
      {"final answer with calls", false, [](Json& r) { r["transcript"][10]["call_count"] = 1; r["call_count"] = 6; },
       true, "turns,counters"},
      {"final answer with native actions", false,
       [](Json& r) { r["transcript"][9]["native_actions"] = Json::array({"click"}); }, true, "turns"},
      {"final answer with call ids", false,
       [&](Json& r) { r["transcript"][9]["call_ids_sha256"] = other_hex; }, true, "turns"},
      {"calls turn without actions", false,
       [](Json& r) {
         Json t = Json::array();
         for (std::size_t i = 0; i < r["transcript"].size(); ++i) {
           if (i == 2 || i == 3) continue;
           Json e = r["transcript"][i];
           e["index"] = t.size();
           t.push_back(e);
         }
         r["transcript"] = t;
         r["action_count"] = 4;
         r["input_event_count"] = 37;
       },
       true, "turns,turn_frames"},
      {"calls turn without native actions", false,
       [](Json& r) { r["transcript"][1]["native_actions"] = Json::array(); }, true, "turns"},
      {"turn frame not issued before", false,
       [&](Json& r) { r["transcript"][4]["frame_sha256"] = r["transcript"][5]["frame_sha256"]; }, true,
       "turn_frames"},
      {"turn frame unknown", true, [&](Json& r) { r["transcript"][1]["frame_sha256"] = other_hex; }, true,
       "turn_frames,frames"},
      {"turn_count wrong", false, [](Json& r) { r["turn_count"] = 3; }, true, "counters"},
      {"call_count wrong", false, [](Json& r) { r["call_count"] = 4; }, true, "counters"},
      {"invalid_result_count wrong", false, [](Json& r) { r["invalid_result_count"] = 0; }, true, "counters"},
      {"refused_call_count set", false, [](Json& r) { r["refused_call_count"] = 1; }, true, "counters"},
      {"safety_check_count set", false, [](Json& r) { r["safety_check_count"] = 2; }, true, "counters"},
      {"action_count wrong", false, [](Json& r) { r["action_count"] = 5; }, true, "counters"},
      {"input_event_count wrong", false, [](Json& r) { r["input_event_count"] = 1; }, true, "counters"},
      {"input flag disagrees", false,
       [](Json& r) { r["transcript"][2]["input"] = false; }, true, "input_flags"},
      {"zoom sent input", false,
       [](Json& r) {
         r["transcript"][7]["input"] = true;
         r["transcript"][7]["input_events"] = 1;
         r["input_event_count"] = r["input_event_count"].get<std::int64_t>() + 1;
       },
       true, "input_flags"},
      {"type projection not constant", false,
       [&](Json& r) { r["transcript"][3]["projection_sha256"] = other_hex; }, true, "projections"},
      {"limits of the other mode", false,
       [](Json& r) { r["limits"]["max_turns"] = 2; }, true, "limits"},
      {"limits deadline changed", true, [](Json& r) { r["limits"]["deadline_ms"] = 180000; }, true, "limits"},
      {"attest not sealed", true, [](Json& r) { r["limits"]["input_sealed"] = false; }, true, "limits"},
      {"attest over its turns", true,
       [](Json& r) {
         Json t = r["transcript"];
         Json extra = t[3];
         Json out = Json::array();
         for (std::size_t i = 0; i < 4; ++i) out.push_back(t[i]);
         extra["turn"] = 3;
         out.push_back(extra);
         for (std::size_t i = 4; i < t.size(); ++i) out.push_back(t[i]);
         for (std::size_t i = 0; i < out.size(); ++i) out[i]["index"] = i;
         r["transcript"] = out;
         r["turn_count"] = 3;
         r["invalid_result_count"] = 1;
       },
       true, "limits"},
      {"click in attest", true,
       [](Json& r) {
         Json& e = r["transcript"][2];
         e["action"] = "click";
         e["projection_sha256"] = *domain_digest(kDomainActionProjection, Json{{"type", "click"}, {"x", 1}, {"y", 1}});
         e["input"] = true;
         e["input_events"] = 3;
         r["input_event_count"] = 3;
       },
       true, "attest_input"},
      {"attest mode on the stage receipt", false, [](Json& r) { r["mode"] = "attest"; }, true,
       "limits,attest_input,lineage"},
      {"stage with lineage", false,
       [&](Json& r) { r["prior_transcript_sha256"] = other_hex; }, true, "lineage"},
      {"attest without prior id", true, [](Json& r) { r["prior_receipt_id"] = nullptr; }, true,
       "lineage,prior_receipt,prior_binding,prior_chronology,prior_transcript"},
      {"attest started before its prior", true,
       [](Json& r) { r["prior_completed_at"] = "2026-05-28T20:40:20.000Z"; }, true,
       "lineage,prior_chronology"},
      {"prior event count out of range", true, [](Json& r) { r["prior_transcript_event_count"] = 4; }, true,
       "lineage,prior_transcript"},
      {"prior completed_at malformed", true, [](Json& r) { r["prior_completed_at"] = "yesterday"; }, true,
       "lineage,prior_chronology"},
      {"prior id of another receipt", true,
       [](Json& r) { r["prior_receipt_id"] = "etr-" + std::string(64, '1'); }, true, "prior_receipt,prior_binding,prior_chronology,prior_transcript"},
      {"prior transcript digest differs", true,
       [&](Json& r) { r["prior_transcript_sha256"] = other_hex; }, true, "prior_transcript"},
      {"prior event count differs", true, [](Json& r) { r["prior_transcript_event_count"] = 13; }, true,
       "prior_transcript"},
      {"other generation than the prior", true,
       [](Json& r) { r["binding"]["generation"] = "gen-" + std::string(32, '9'); }, true, "prior_binding"},
      {"other app than the prior", true,
       [](Json& r) { r["binding"]["app_id"] = "app-" + std::string(32, '9'); }, true, "prior_binding"},
      {"other attempt than the prior", true, [](Json& r) { r["binding"]["attempt_id"] = "form-2"; }, true,
       "prior_binding"},
      {"prior is an attest receipt", true, [](Json&) {}, false,
       "prior_receipt,prior_binding,prior_chronology,prior_transcript",
       [](Json& p) { p = read_json(receipt_path("attest")); }},
      {"prior does not verify", true, [](Json&) {}, false,
       "prior_receipt,prior_binding,prior_chronology,prior_transcript",
       [](Json& p) { p["turn_count"] = 9; }},
      {"timestamps out of order", false,
       [](Json& r) { r["observed_at"] = "2026-05-28T20:40:00.000Z"; }, true, "timestamps"},
      {"observation event frame differs", false,
       [&](Json& r) { r["transcript"][12]["frame_sha256"] = other_hex; }, true, "observation_digest,frames"},
      {"result event frame differs", false,
       [&](Json& r) { r["transcript"][13]["frame_sha256"] = other_hex; }, true, "observation_digest,frames"},
      {"post observation input", false, [](Json& r) { r["post_observation_input_event_count"] = 1; }, true,
       "post_observation_input_event_count"},
      {"result changed, digest resealed", false, [](Json& r) { r["result"]["note"] = "changed"; }, true, ""},
      {"result changed, not resealed", false, [](Json& r) { r["result"]["note"] = "changed"; }, false,
       "receipt_id,result_sha256"},
      {"events swapped", false,
       [](Json& r) {
         std::swap(r["transcript"][1], r["transcript"][2]);
         r["transcript"][1]["index"] = 1;
         r["transcript"][2]["index"] = 2;
       },
       true, "event_order"},
      {"no turn at all", true,
       [](Json& r) {
         Json t = r["transcript"];
         Json out = Json::array({t[0], t[4], t[5], t[6]});
         for (std::size_t i = 0; i < out.size(); ++i) out[i]["index"] = i;
         r["transcript"] = out;
       },
       true, "schema"},
      {"paste event", false,
       [](Json& r) { r["transcript"][3]["action"] = "paste"; }, true, "schema"},
      {"mouse_down event", false,
       [](Json& r) { r["transcript"][2]["action"] = "mouse_down"; }, true, "schema"},
      {"unknown event kind", false, [](Json& r) { r["transcript"][9]["kind"] = "thinking"; }, true, "schema"},
      {"extra member (model text)", false, [](Json& r) { r["model_text"] = "I will click"; }, true, "schema"},
      {"extra turn member (call ids)", false,
       [](Json& r) { r["transcript"][1]["call_ids"] = Json::array({"toolu_01A"}); }, true, "schema"},
      {"session execution constant", false,
       [](Json& r) { r["execution"]["kind"] = "external-actions"; }, true, "schema"},
      {"session receipt id prefix", false, [](Json& r) { r["receipt_id"] = "ecr-" + std::string(64, 'a'); },
       false, "schema"},
      {"binding with job_sha256", false,
       [&](Json& r) { r["binding"]["job_sha256"] = other_hex; }, true, "schema"},
      {"result member added, not resealed", false, [](Json& r) { r["result"]["x"] = 1; }, false, "receipt_id,result_sha256"},
  };
  std::vector<Job> jobs;
  std::vector<std::string> priors;
  std::vector<std::string> wants;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    Json r = c.on_attest ? attest : stage;
    c.change(r);
    if (c.reseal) r = reseal(r);
    const std::string path = tmp.path() + "/m" + std::to_string(i) + ".json";
    write_text(path, dump_json(r));
    VerifyOptions o = full_options(c.on_attest ? "attest" : "stage", c.on_attest ? attest : stage);
    std::string prior_path;
    if (c.on_attest) {
      Json prior = stage;
      if (c.change_prior) {
        c.change_prior(prior);
        if (prior != read_json(receipt_path("attest"))) prior = reseal(prior);
      }
      prior_path = tmp.path() + "/p" + std::to_string(i) + ".json";
      write_text(prior_path, dump_json(prior));
      o.prior = prior;
    }
    jobs.push_back({path, o, c.label});
    priors.push_back(prior_path);
    wants.push_back(c.want);
  }
  ASSERT_GE(jobs.size(), 30u);
  auto py = run_python(jobs, priors);
  ASSERT_EQ(py.size(), jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE(jobs[i].label);
    Outcome c = run_cpp(jobs[i]);
    ASSERT_EQ(c.error, "");
    EXPECT_EQ(join(c.failed), wants[i]);
    EXPECT_EQ(join(py[i].failed), wants[i]);
    EXPECT_EQ(c.ok, wants[i].empty());
    EXPECT_EQ(py[i].ok, wants[i].empty());
  }
}

}  // namespace
}  // namespace evident
