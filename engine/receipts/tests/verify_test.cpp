// Verification: every golden passes both verifiers (C++ and the independent Python one); a single
// change to any leaf of any golden, a missing or altered frame, a wrong --png and wrong
// expectations make both fail, naming the same checks.
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "evident/core/fs.h"
#include "evident/core/random.h"
#include "evident/receipts/jcs.h"
#include "evident/receipts/receipt.h"
#include "evident/receipts/verify.h"
#include "golden.h"

namespace evident {
namespace {

using testing::golden_dir;
using testing::read_json;
using testing::read_text;
using testing::write_text;

struct Job {
  std::string path;
  VerifyOptions options;
  std::string label;
};

struct Outcome {
  std::string error;  // load error code, or ""
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

std::vector<Outcome> run_python(const std::vector<Job>& jobs) {
  Json req{{"verify_py", testing::source_path("bindings/python/evident/verify.py")},
           {"jobs", Json::array()}};
  for (const auto& j : jobs) {
    Json o{{"path", j.path},
           {"frames_dir", j.options.frames_dir},
           {"png_path", j.options.png_path},
           {"expect_job_sha256", j.options.expect_job_sha256},
           {"expect_uid", j.options.expect_uid ? Json(*j.options.expect_uid) : Json(nullptr)}};
    req["jobs"].push_back(o);
  }
  auto r = testing::run_command(
      "/usr/bin/python3 " +
          testing::shell_quote(testing::source_path("engine/receipts/tests/py_verify_batch.py")),
      dump_json(req));
  EXPECT_EQ(r.exit_status, 0);
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

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

class TempDir {
 public:
  TempDir() : path_("/tmp/evident-verify-test-" + random_hex(8)) {
    EXPECT_TRUE(make_private_dir(path_).ok());
  }
  ~TempDir() { (void)remove_tree(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

VerifyOptions full_options(const std::string& name, const Json& receipt) {
  VerifyOptions o;
  o.frames_dir = golden_dir(name) + "/frames";
  o.png_path = o.frames_dir + "/" + receipt["observation"]["sha256"].get<std::string>() + ".png";
  o.expect_job_sha256 = receipt["binding"]["job_sha256"];
  o.expect_uid = receipt["actor"]["uid"].get<std::int64_t>();
  return o;
}

TEST(Verify, GoldensPassBothVerifiers) {
  std::vector<Job> jobs;
  for (const auto& name : testing::verified_names()) {
    std::string path = golden_dir(name) + "/receipt.json";
    Json receipt = read_json(path);
    jobs.push_back({path, VerifyOptions{}, name + " plain"});
    jobs.push_back({path, full_options(name, receipt), name + " full"});
  }
  auto py = run_python(jobs);
  ASSERT_EQ(py.size(), jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE(jobs[i].label);
    Outcome c = run_cpp(jobs[i]);
    EXPECT_TRUE(c.ok) << join(c.failed);
    EXPECT_TRUE(py[i].ok) << join(py[i].failed);
    EXPECT_EQ(c.names, py[i].names);
  }
  Outcome full = run_cpp(jobs[1]);
  EXPECT_EQ(join(full.names),
            "schema,receipt_id,transcript_sha256,stage_transcript_sha256,claims_sha256,"
            "event_order,counters,post_observation_input_event_count,timestamps,"
            "observation_digest,frames,png,expect_job,expect_uid");
}

// One change to a leaf: flip a hex digit / the last letter or digit, add 1, negate, null -> 0.
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
    for (auto it = v.begin(); it != v.end(); ++it) {
      collect_leaves(it.value(), pointer + "/" + it.key(), out);  // keys here hold no '/' or '~'
    }
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      collect_leaves(v[i], pointer + "/" + std::to_string(i), out);
    }
  } else {
    out->push_back(pointer);
  }
}

TEST(Verify, EveryLeafTamperFailsBothVerifiersWithTheSameChecks) {
  TempDir tmp;
  std::vector<Job> jobs;
  std::vector<std::string> pointers;
  std::vector<std::size_t> freeze_pos;
  std::size_t counter = 0;
  for (const auto& name : testing::verified_names()) {
    Json receipt = read_json(golden_dir(name) + "/receipt.json");
    VerifyOptions options = full_options(name, receipt);
    // Hashing 44 frames for each of ~650 tampers is slow and adds nothing beyond the smaller
    // goldens; the 64-action golden keeps --png and the expectations.
    if (name == "sixty-four-actions") options.frames_dir.clear();
    // The freeze event's position (an app_exit may follow it, docs/receipts.md §13).
    std::size_t freeze = 0;
    for (const Json& e : receipt["transcript"]) {
      if (e["kind"] == "freeze") break;
      ++freeze;
    }
    std::vector<std::string> leaves;
    collect_leaves(receipt, "", &leaves);
    ASSERT_GT(leaves.size(), 40u);
    for (const auto& p : leaves) {
      Json t = receipt;
      Json::json_pointer ptr(p);
      t[ptr] = mutate_leaf(t[ptr]);
      ASSERT_NE(t, receipt) << p;
      std::string path = tmp.path() + "/t" + std::to_string(counter++) + ".json";
      write_text(path, dump_json(t));
      jobs.push_back({path, options, name + p});
      pointers.push_back(p);
      freeze_pos.push_back(freeze);
    }
  }
  auto py = run_python(jobs);
  ASSERT_EQ(py.size(), jobs.size());
  std::map<std::string, std::string> seen;  // "three-actions" pointer -> failed set
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE(jobs[i].label);
    Outcome c = run_cpp(jobs[i]);
    ASSERT_EQ(c.error, "");
    EXPECT_FALSE(c.ok);
    EXPECT_FALSE(py[i].ok);
    EXPECT_EQ(join(c.failed), join(py[i].failed));
    std::set<std::string> failed(c.failed.begin(), c.failed.end());
    // A receipt with the wrong shape stops at "schema"; otherwise the receipt id covers
    // every member, and the transcript and claims digests cover their parts.
    if (failed.count("schema")) {
      EXPECT_EQ(failed.size(), 1u);
      continue;
    }
    EXPECT_TRUE(failed.count("receipt_id"));
    const std::string& p = pointers[i];
    if (p.rfind("/transcript/", 0) == 0) {
      EXPECT_TRUE(failed.count("transcript_sha256"));
      std::size_t pos = std::stoul(p.substr(12));
      if (pos <= freeze_pos[i]) {
        EXPECT_TRUE(failed.count("stage_transcript_sha256"));
      }
    }
    if (p.rfind("/claims/", 0) == 0) {
      EXPECT_TRUE(failed.count("claims_sha256"));
    }
    if (jobs[i].label.rfind("three-actions", 0) == 0) seen[p] = join(c.failed);
  }
  // Exact expectations for representative fields (three-actions: 3 actions, events 0..6).
  const std::map<std::string, std::string> exact = {
      {"/receipt_id", "receipt_id"},
      {"/schema", "schema"},
      {"/execution/internal_model_calls", "schema"},
      {"/binding/job_sha256", "receipt_id,expect_job"},
      {"/binding/attempt_id", "receipt_id"},
      {"/actor/uid", "receipt_id,expect_uid"},
      {"/post_observation_input_event_count", "receipt_id,post_observation_input_event_count"},
      {"/action_count", "receipt_id,counters"},
      {"/input_event_count", "receipt_id"},
      {"/observation/sha256", "receipt_id,observation_digest,frames,png"},
      {"/observation/width", "receipt_id,frames"},
      {"/observation/byte_length", "receipt_id,frames"},
      {"/claims_sha256", "receipt_id,claims_sha256"},
      {"/claims/answer", "receipt_id,claims_sha256"},
      {"/pre_observation_sha256", "receipt_id,observation_digest"},
      {"/started_at", "receipt_id,timestamps"},
      {"/stage_transcript_sha256", "receipt_id,stage_transcript_sha256"},
      {"/transcript_sha256", "receipt_id,transcript_sha256"},
      {"/transcript/0/frame_sha256", "receipt_id,transcript_sha256,stage_transcript_sha256,frames"},
      {"/transcript/1/index",
       "receipt_id,transcript_sha256,stage_transcript_sha256,event_order"},
      {"/transcript/2/input", "receipt_id,transcript_sha256,stage_transcript_sha256"},
      {"/transcript/5/pre_observation_sha256",
       "receipt_id,transcript_sha256,observation_digest"},
      {"/transcript/5/frame_sha256",
       "receipt_id,transcript_sha256,observation_digest,frames"},
      {"/transcript/6/claims_sha256", "receipt_id,transcript_sha256,claims_sha256"},
  };
  for (const auto& [p, want] : exact) {
    ASSERT_TRUE(seen.count(p) || want == "schema") << p;
    if (want != "schema") {
      EXPECT_EQ(seen[p], want) << p;
    }
  }
}

TEST(Verify, StructuralTampersAndFileProblems) {
  TempDir tmp;
  const std::string name = "three-actions";
  const std::string golden = golden_dir(name) + "/receipt.json";
  Json receipt = read_json(golden);
  VerifyOptions full = full_options(name, receipt);
  std::vector<Job> jobs;
  std::vector<std::string> want;
  auto add = [&](const Json& r, const VerifyOptions& o, const std::string& label,
                 const std::string& expected) {
    std::string path = tmp.path() + "/" + label + ".json";
    write_text(path, dump_json(r));
    jobs.push_back({path, o, label});
    want.push_back(expected);
  };
  auto add_raw = [&](const std::string& bytes, const std::string& label, const std::string& expected) {
    std::string path = tmp.path() + "/" + label + ".json";
    write_text(path, bytes);
    jobs.push_back({path, VerifyOptions{}, label});
    want.push_back(expected);
  };
  Json r = receipt;
  r.erase("claims");
  add(r, full, "missing-key", "schema");
  r = receipt;
  r["extra"] = 1;
  add(r, full, "extra-key", "schema");
  r = receipt;
  std::swap(r["transcript"][1], r["transcript"][2]);
  add(r, VerifyOptions{}, "swapped-events",
      "receipt_id,transcript_sha256,stage_transcript_sha256,event_order");
  r = receipt;
  r["transcript"][1]["status"] = "failed";
  add(r, VerifyOptions{}, "failed-status", "schema");
  // An action event without "action" (found by receipt_verify_fuzz: the check read the missing
  // key through const operator[], undefined behaviour; regressions/receipt_verify_fuzz/).
  r = receipt;
  ASSERT_EQ(r["transcript"][1]["kind"], "action");
  r["transcript"][1].erase("action");
  add(r, VerifyOptions{}, "action-event-without-action", "schema");
  EXPECT_EQ(join(verify_receipt(r, VerifyOptions{}).failed_names()), "schema");
  r = receipt;
  r["transcript"][1]["index"] = 1.0;
  add(r, VerifyOptions{}, "float-in-file", "!receipt-json");
  // In memory (a caller's own Json), a float is a shape error, not a crash.
  VerifyReport in_memory = verify_receipt(r, VerifyOptions{});
  EXPECT_EQ(join(in_memory.failed_names()), "schema");
  r = receipt;
  r["claims"]["f"] = 0.5;
  in_memory = verify_receipt(r, VerifyOptions{});
  EXPECT_EQ(join(in_memory.failed_names()), "receipt_id,claims_sha256");

  // Frames: missing, altered, and a --png that is another frame.
  std::string frames = tmp.path() + "/frames";
  std::filesystem::copy(full.frames_dir, frames);
  std::string victim = receipt["transcript"][2]["frame_sha256"];
  VerifyOptions o = full;
  o.frames_dir = frames;
  std::filesystem::remove(frames + "/" + victim + ".png");
  add(receipt, o, "missing-frame", "frames");
  std::string frames2 = tmp.path() + "/frames2";
  std::filesystem::copy(full.frames_dir, frames2);
  std::string bytes = read_text(frames2 + "/" + victim + ".png");
  bytes[bytes.size() / 2] ^= 0x01;
  write_text(frames2 + "/" + victim + ".png", bytes);
  o.frames_dir = frames2;
  add(receipt, o, "altered-frame", "frames");
  o = full;
  o.png_path = full.frames_dir + "/" + victim + ".png";
  add(receipt, o, "wrong-png", "png");
  o.png_path = tmp.path() + "/nonexistent.png";
  add(receipt, o, "missing-png", "png");
  o = full;
  o.expect_job_sha256 = std::string(64, 'a');
  add(receipt, o, "wrong-job", "expect_job");
  o = full;
  o.expect_job_sha256 = receipt["binding"]["job_sha256"].get<std::string>();
  for (auto& ch : o.expect_job_sha256) ch = static_cast<char>(std::toupper(ch));
  add(receipt, o, "upper-case-job-matches", "");
  o = full;
  o.expect_uid = 4242;
  add(receipt, o, "wrong-uid", "expect_uid");

  // Files that are not strict JSON.
  std::string text = read_text(golden);
  add_raw(text.substr(0, text.size() / 2), "truncated", "!receipt-json");
  add_raw("{\"a\":1,\"a\":2}", "duplicate-key", "!receipt-json");
  add_raw(text + "{}", "trailing-data", "!receipt-json");
  add_raw("[1.0]", "float", "!receipt-json");
  add_raw("[9007199254740992]", "big-int", "!receipt-json");
  add_raw("[\"\\ud800\"]", "lone-surrogate", "!receipt-json");
  add_raw("\xff", "bad-utf8", "!receipt-json");
  add_raw(text + std::string(1, '\0') + "{}", "data-after-nul", "!receipt-json");
  add_raw("\xef\xbb\xbf" + text, "byte-order-mark", "");  // skipped by both parsers
  add_raw("[]", "not-object", "schema");
  jobs.push_back({tmp.path() + "/does-not-exist.json", VerifyOptions{}, "missing-file"});
  want.push_back("!receipt-unreadable");

  auto py = run_python(jobs);
  ASSERT_EQ(py.size(), jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE(jobs[i].label);
    Outcome c = run_cpp(jobs[i]);
    if (want[i].rfind("!", 0) == 0) {
      EXPECT_EQ(c.error, want[i].substr(1));
      EXPECT_EQ(py[i].error, want[i].substr(1));
      continue;
    }
    EXPECT_EQ(c.error, "");
    EXPECT_EQ(join(c.failed), want[i]);
    EXPECT_EQ(join(py[i].failed), want[i]);
    EXPECT_EQ(c.ok, want[i].empty());
    EXPECT_EQ(py[i].ok, want[i].empty());
  }
}

TEST(Verify, TimestampEdgeCasesAgree) {
  TempDir tmp;
  Json receipt = read_json(golden_dir("zero-actions") + "/receipt.json");
  const std::vector<std::pair<std::string, bool>> cases = {
      {"2026-01-01T00:00:00.000Z", true},  {"2026-02-29T00:00:00.000Z", false},
      {"2028-02-29T00:00:00.000Z", true},  {"2026-01-01T24:00:00.000Z", false},
      {"2026-01-01T00:00:60.000Z", false}, {"2026-01-01T00:00:00.000z", false},
      {"2026-01-01 00:00:00.000Z", false}, {"2026-01-01T00:00:00.00Z", false},
      {"1969-12-31T23:59:59.999Z", false}, {"1970-01-01T00:00:00.000Z", true},
      {"+026-01-01T00:00:00.000Z", false}, {" 2026-01-01T00:00:00.000Z", false},
      {"2026-13-01T00:00:00.000Z", false}, {"2026-04-31T00:00:00.000Z", false},
      {"2026-01-01T00:00:00.000+00:00", false}};
  std::vector<Job> jobs;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    Json r = receipt;
    r["started_at"] = cases[i].first;
    r["frozen_at"] = r["observed_at"] = r["completed_at"] = "2030-01-01T00:00:00.000Z";
    std::string path = tmp.path() + "/ts" + std::to_string(i) + ".json";
    write_text(path, dump_json(r));
    jobs.push_back({path, VerifyOptions{}, cases[i].first});
  }
  auto py = run_python(jobs);
  ASSERT_EQ(py.size(), jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE(jobs[i].label);
    Outcome c = run_cpp(jobs[i]);
    bool ts_ok = std::find(c.failed.begin(), c.failed.end(), "timestamps") == c.failed.end();
    EXPECT_EQ(ts_ok, cases[i].second);
    EXPECT_EQ(join(c.failed), join(py[i].failed));
  }
}

TEST(Verify, CommandOutputShapes) {
  std::string golden = golden_dir("three-actions") + "/receipt.json";
  Json receipt = read_json(golden);
  std::ostringstream out;
  EXPECT_EQ(run_verify_command(golden, full_options("three-actions", receipt), true, out), 0);
  Json ok = parse_json_strict(out.str(), 1 << 20, "out").value();
  EXPECT_EQ(ok["ok"], true);
  EXPECT_EQ(ok["receipt_id"], receipt["receipt_id"]);
  EXPECT_EQ(ok["checks"].size(), 14u);
  EXPECT_FALSE(ok.contains("error"));

  VerifyOptions wrong;
  wrong.expect_uid = 1;
  wrong.expect_job_sha256 = std::string(64, '0');
  std::ostringstream out2;
  EXPECT_EQ(run_verify_command(golden, wrong, true, out2), 1);
  Json bad = parse_json_strict(out2.str(), 1 << 20, "out").value();
  EXPECT_EQ(bad["ok"], false);
  EXPECT_EQ(bad["error"],
            (Json{{"code", "verify-failed"},
                  {"message", "failed checks: expect_job, expect_uid"},
                  {"retryable", false}}));
  EXPECT_EQ(bad["receipt_id"], receipt["receipt_id"]);

  std::ostringstream out3;
  EXPECT_EQ(run_verify_command("/nonexistent/receipt.json", VerifyOptions{}, true, out3), 1);
  EXPECT_EQ(parse_json_strict(out3.str(), 1 << 20, "o").value()["error"]["code"],
            "receipt-unreadable");
  std::ostringstream out4;
  VerifyOptions usage;
  usage.expect_job_sha256 = "xyz";
  EXPECT_EQ(run_verify_command(golden, usage, true, out4), 2);
  EXPECT_EQ(parse_json_strict(out4.str(), 1 << 20, "o").value()["error"]["code"], "verify-usage");

  std::ostringstream human;
  EXPECT_EQ(run_verify_command(golden, wrong, false, human), 1);
  EXPECT_NE(human.str().find("verification failed: expect_job, expect_uid"), std::string::npos);
}

TEST(Verify, PythonCommandLineMatchesCppOutput) {
  // The Python CLI, run as a program, prints the same JSON (apart from details) and exit status.
  std::string golden = golden_dir("three-actions") + "/receipt.json";
  Json receipt = read_json(golden);
  VerifyOptions o = full_options("three-actions", receipt);
  for (int variant = 0; variant < 2; ++variant) {
    if (variant == 1) o.expect_uid = 7;
    std::ostringstream cpp_out;
    int cpp_status = run_verify_command(golden, o, true, cpp_out);
    std::string cmd = "/usr/bin/python3 " +
                      testing::shell_quote(testing::source_path("bindings/python/evident/verify.py")) +
                      " " + testing::shell_quote(golden) + " --frames " +
                      testing::shell_quote(o.frames_dir) + " --png " + testing::shell_quote(o.png_path) +
                      " --expect-job " + o.expect_job_sha256 + " --expect-uid " +
                      std::to_string(*o.expect_uid) + " --json";
    auto py = testing::run_command(cmd);
    EXPECT_EQ(py.exit_status, cpp_status);
    Json a = parse_json_strict(cpp_out.str(), 1 << 20, "c").value();
    Json b = parse_json_strict(py.out, 1 << 20, "p").value();
    for (Json* j : {&a, &b}) {
      for (Json& c : (*j)["checks"]) c.erase("detail");
    }
    EXPECT_EQ(a, b);
  }
}

}  // namespace
}  // namespace evident

namespace evident {
namespace {

// Issue #9 item 2: the C++ verifier crashed on claims ~28,000 levels deep and the Python one
// answered receipt-json from ~990 levels while C++ accepted. One limit now (kMaxJsonDepth, the
// receipt document's depth): every receipt whose claims the engine can accept (<= 63 levels of
// their own, at level 2) verifies in both; anything deeper is receipt-json in both, no crash.
TEST(Verify, DeepClaimsAgreeAtTheOneDepthLimit) {
  TempDir tmp;
  const std::string name = "three-actions";
  const Json golden = read_json(golden_dir(name) + "/receipt.json");
  auto nested_text = [](int depth) {
    std::string open, close;
    for (int i = 0; i < depth; ++i) {
      open += "{\"k\":";
      close += "}";
    }
    return open.substr(0, open.size() - 5) + "{}" + close.substr(1);  // innermost is {}
  };
  std::vector<Job> jobs;
  std::vector<std::string> want_error;  // "" = verifies ok
  for (int depth : {1, 2, 32, 62, 63}) {
    Json claims = *parse_json_strict(nested_text(depth), 1 << 20, "t");
    ASSERT_EQ(json_depth(claims), depth);
    // Re-sealed, as the engine would have sealed these claims.
    Json r = golden;
    r["claims"] = claims;
    r["claims_sha256"] = *domain_digest(kDomainClaims, claims);
    for (auto& e : r["transcript"]) {
      if (e["kind"] == "claims") e["claims_sha256"] = r["claims_sha256"];
    }
    r["transcript_sha256"] = *domain_digest(kDomainTranscript, r["transcript"]);
    r.erase("receipt_id");
    r["receipt_id"] = "ecr-" + *domain_digest(kDomainReceipt, r);
    ASSERT_EQ(json_depth(r), std::max(3, depth + 1));  // the transcript is 3 deep
    const std::string path = tmp.path() + "/claims-" + std::to_string(depth) + ".json";
    write_text(path, dump_json(r));
    jobs.push_back({path, VerifyOptions{}, "claims depth " + std::to_string(depth)});
    want_error.push_back("");
  }
  Json placeholder = golden;
  placeholder["claims"] = "@@CLAIMS@@";
  const std::string text = dump_json(placeholder);
  const std::size_t at = text.find("\"@@CLAIMS@@\"");
  ASSERT_NE(at, std::string::npos);
  for (int depth : {64, 65, 990, 1000, 8000, 28000, 100000}) {
    std::string bytes = text.substr(0, at) + nested_text(depth) + text.substr(at + 12);
    const std::string path = tmp.path() + "/deep-" + std::to_string(depth) + ".json";
    write_text(path, bytes);
    jobs.push_back({path, VerifyOptions{}, "claims depth " + std::to_string(depth)});
    want_error.push_back("receipt-json");
  }
  auto py = run_python(jobs);
  ASSERT_EQ(py.size(), jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE(jobs[i].label);
    Outcome c = run_cpp(jobs[i]);
    EXPECT_EQ(c.error, want_error[i]);
    EXPECT_EQ(py[i].error, want_error[i]);
    EXPECT_EQ(c.ok, want_error[i].empty()) << join(c.failed);
    EXPECT_EQ(py[i].ok, want_error[i].empty()) << join(py[i].failed);
    EXPECT_EQ(c.failed, py[i].failed);
  }
}

}  // namespace
}  // namespace evident
