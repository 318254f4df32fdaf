// The run log on disk: appends, proofs, the signed head, crash leftovers and tampering.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "evident/core/json.h"
#include "evident/evidence/dsse.h"
#include "evident/core/fs.h"
#include "evident/evidence/runlog.h"
#include "evident/evidence/session_evidence.h"
#include "evident/receipts/jcs.h"
#include "evident/testing/files.h"
#include "evident/testing/process.h"

namespace evident {
namespace {

using testing::TempDir;

Json entry(int i, const std::string& outcome = "aborted") {
  Json e{{"kind", "session"},
         {"id", "ses-" + std::string(31, '0') + std::to_string(i % 10)},
         {"attempt_id", "attempt-" + std::to_string(i % 3)},
         {"job_sha256", std::string(64, "abc"[i % 3])},
         {"outcome", outcome},
         {"receipt_id", nullptr},
         {"ended_at", "2026-12-01T20:00:00.000Z"}};
  if (outcome == "closed") e["receipt_id"] = "ecr-" + std::string(64, 'd');
  return e;
}

Hash32 H(const Json& v) {
  Hash32 h{};
  EXPECT_TRUE(hash_from_hex(v.get<std::string>(), &h));
  return h;
}

std::vector<Hash32> hashes(const Json& a) {
  std::vector<Hash32> out;
  for (const auto& h : a) out.push_back(H(h));
  return out;
}

TEST(RunLog, AppendsProveAndVerify) {
  TempDir dir;
  auto key = Ed25519Key::generate();
  ASSERT_TRUE(key.ok());
  RunLog log(dir.path());
  EXPECT_EQ(log.size(), 0u);
  EXPECT_TRUE(log.head()->is_null());
  std::vector<Json> heads;
  for (int i = 0; i < 23; ++i) {
    auto r = log.append(entry(i, i % 4 == 0 ? "closed" : i % 4 == 1 ? "failed" : i % 4 == 2 ? "expired" : "aborted"), *key);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->index, static_cast<std::uint64_t>(i));
    EXPECT_EQ(r->tree_head["tree_size"], i + 1);
    EXPECT_EQ(tree_head_problem(r->tree_head, *key), "");
    // The proof returned at append verifies the new entry against the new head.
    auto jcs = canonicalize(r->entry);
    EXPECT_TRUE(merkle_verify_inclusion(r->index, i + 1, merkle_leaf_hash(*jcs), r->inclusion_proof,
                                        H(r->tree_head["root_hash"])));
    heads.push_back(r->tree_head);
  }
  EXPECT_EQ(log.size(), 23u);
  for (const auto& c : log.verify(*key)) EXPECT_TRUE(c["ok"].get<bool>()) << c.dump();
  // Every entry proves against every later head; consistency between every pair of heads.
  for (std::uint64_t n = 1; n <= 23; ++n) {
    const Json& head = heads[n - 1];
    for (std::uint64_t i = 0; i < n; ++i) {
      auto p = log.prove(i, n);
      ASSERT_TRUE(p.ok()) << p.error().message;
      EXPECT_EQ((*p)["root_hash"], head["root_hash"]);
      auto jcs = canonicalize((*p)["entry"]);
      EXPECT_TRUE(merkle_verify_inclusion(i, n, merkle_leaf_hash(*jcs), hashes((*p)["inclusion_proof"]), H(head["root_hash"])));
    }
    for (std::uint64_t m = 1; m <= n; ++m) {
      auto c = log.consistency(m, n);
      ASSERT_TRUE(c.ok());
      EXPECT_TRUE(merkle_verify_consistency(m, n, H(heads[m - 1]["root_hash"]), H(head["root_hash"]), hashes((*c)["proof"])));
    }
  }
  EXPECT_EQ(log.prove(23, 0).error().code, "log-not-found");
  EXPECT_EQ(log.prove(0, 24).error().code, "log-tree-size");
  EXPECT_EQ(log.consistency(5, 24).error().code, "log-tree-size");
  EXPECT_EQ(log.consistency(6, 5).error().code, "log-tree-size");
  EXPECT_EQ(*log.find(entry(7)["id"]), 7u);
  EXPECT_EQ(log.find("ses-none").error().code, "log-not-found");
  auto all = log.entries(20, 10);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 3u);
  // A head signed by another key, or altered, does not verify.
  auto other = Ed25519Key::generate();
  EXPECT_NE(tree_head_problem(heads[3], *other), "");
  Json altered = heads[3];
  altered["tree_size"] = 5;
  EXPECT_NE(tree_head_problem(altered, *key), "");
}

TEST(RunLog, InvalidEntriesAreRefusedAndChangeNothing) {
  TempDir dir;
  auto key = Ed25519Key::generate();
  RunLog log(dir.path());
  ASSERT_TRUE(log.append(entry(0), *key).ok());
  std::vector<Json> bad;
  Json e = entry(1);
  e["extra"] = 1; bad.push_back(e);
  e = entry(1); e["outcome"] = "won"; bad.push_back(e);
  e = entry(1); e["receipt_id"] = "ecr-" + std::string(64, 'd'); bad.push_back(e);  // not closed
  e = entry(1, "closed"); e["receipt_id"] = nullptr; bad.push_back(e);
  e = entry(1); e["job_sha256"] = "ABC"; bad.push_back(e);
  e = entry(1); e["ended_at"] = "yesterday"; bad.push_back(e);
  e = entry(1); e["kind"] = "task"; bad.push_back(e);  // a task carries task_sha256
  e = entry(1); e.erase("id"); bad.push_back(e);
  bad.push_back(Json::array());
  for (const auto& b : bad) {
    auto r = log.append(b, *key);
    ASSERT_FALSE(r.ok()) << b.dump();
    EXPECT_EQ(r.error().code, "log-entry-invalid");
  }
  EXPECT_EQ(log.size(), 1u);
  Json task = entry(2);
  task["kind"] = "task";
  task["task_sha256"] = task["job_sha256"];
  task.erase("job_sha256");
  EXPECT_TRUE(log.append(task, *key).ok());
}

TEST(RunLog, CrashLeftoversAreCutAndTamperingIsFound) {
  TempDir dir;
  auto key = Ed25519Key::generate();
  RunLog log(dir.path());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(log.append(entry(i), *key).ok());
  // A crash after writing the entry and leaf, before state.json: bytes state.json does not count.
  {
    int fd = ::open((dir / "log/entries.jsonl").c_str(), O_WRONLY | O_APPEND);
    ASSERT_EQ(::write(fd, "{\"half\":", 8), 8);
    ::close(fd);
    fd = ::open((dir / "log/leaves.bin").c_str(), O_WRONLY | O_APPEND);
    ASSERT_EQ(::write(fd, "0123456789", 10), 10);
    ::close(fd);
  }
  for (const auto& c : log.verify(*key)) EXPECT_TRUE(c["ok"].get<bool>()) << c.dump();
  ASSERT_TRUE(log.append(entry(5), *key).ok());
  for (const auto& c : log.verify(*key)) EXPECT_TRUE(c["ok"].get<bool>()) << c.dump();
  EXPECT_EQ(log.size(), 6u);

  // Tampering with an entry (same length) is found by log verify.
  std::string text = testing::read_text(dir / "log/entries.jsonl");
  auto pos = text.find("\"aborted\"");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, 9, "\"expired\"");
  testing::write_text(dir / "log/entries.jsonl", text);
  bool entries_failed = false;
  for (const auto& c : log.verify(*key)) {
    if (c["name"] == "log_entries") entries_failed = !c["ok"].get<bool>();
  }
  EXPECT_TRUE(entries_failed);
  // A damaged state.json is log-corrupt, never a crash.
  testing::write_text(dir / "log/state.json", "{\"tree_size\":1}");
  EXPECT_EQ(log.append(entry(9), *key).error().code, "log-corrupt");
  EXPECT_EQ(log.prove(0, 0).error().code, "log-corrupt");
}

// Every ended session is in the run log, even when the log could not be written as it ended
// (docs/receipts.md §9 "When the log cannot be written"): a close whose sealing fails logs the
// session `failed` (before: a failed append of the closed entry logged nothing at all), an entry
// whose append fails stays pending and is written, in order, by the next append that succeeds.
TEST(SessionEvidence, EndingsThatCannotBeLoggedArePendingUntilTheLogWorks) {
  TempDir dir;
  const std::string state = dir.path() + "/state";
  SessionEvidence ev(state);
  ASSERT_TRUE(ev.key().ok());
  const std::string evidence = dir.path() + "/evidence";
  ASSERT_TRUE(make_private_dir(evidence).ok());
  const std::string golden = std::string(EVIDENT_SOURCE_DIR) + "/receipts/golden/v3-three-actions/receipt.json";
  testing::write_text(evidence + "/receipt.json", testing::read_text(golden));
  auto receipt = parse_json_strict(testing::read_text(golden), 1 << 22, "test");
  ASSERT_TRUE(receipt.ok());

  // The log cannot be written: <state>/log is a file, not a directory.
  testing::write_text(state + "/log", "not a directory");
  auto sealed = ev.seal_closed(evidence, *receipt, 1764670000000);
  ASSERT_FALSE(sealed.ok());
  EXPECT_EQ(sealed.error().code, "fs-error");
  EXPECT_EQ(ev.pending_entries(), 1u);  // the closed session's `failed` ending
  EXPECT_FALSE(ev.record_end("ses-" + std::string(32, '1'), "a1", std::string(64, 'b'), "aborted",
                             1764670000001).ok());
  EXPECT_EQ(ev.pending_entries(), 2u);

  // The log works again: the next ending writes both pending entries first, in order.
  ASSERT_EQ(::unlink((state + "/log").c_str()), 0);
  EXPECT_TRUE(ev.record_end("ses-" + std::string(32, '2'), "a2", std::string(64, 'c'), "expired",
                            1764670000002).ok());
  EXPECT_EQ(ev.pending_entries(), 0u);
  RunLog log(state);
  auto all = log.entries(0, 10);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0]["entry"]["id"], (*receipt)["session_id"]);
  EXPECT_EQ((*all)[0]["entry"]["outcome"], "failed");
  EXPECT_TRUE((*all)[0]["entry"]["receipt_id"].is_null());
  EXPECT_EQ((*all)[0]["entry"]["job_sha256"], (*receipt)["binding"]["job_sha256"]);
  EXPECT_EQ((*all)[1]["entry"]["outcome"], "aborted");
  EXPECT_EQ((*all)[2]["entry"]["outcome"], "expired");
  for (const auto& c : log.verify(*ev.key())) EXPECT_TRUE(c["ok"].get<bool>()) << c.dump();

  // And a close that can be sealed now is: closed entry, envelope.
  auto again = ev.seal_closed(evidence, *receipt, 1764670000003);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ((*again)["index"], 3);
  EXPECT_TRUE(testing::path_exists(evidence + "/receipt.dsse.json"));
}

}  // namespace
}  // namespace evident
