// Fuzz target: the run log's readers (engine/evidence RunLog over <state>/log/: state.json,
// entries.jsonl, leaves.bin), as `evident log show|prove|consistency|verify` and the next append
// read a log that a crash, a full disk or a hand edit may have left in any state.
// Input: 2 bytes big-endian length of state.json, 2 bytes length of entries.jsonl, those two
// files, then leaves.bin (the rest). Tree heads are checked with the fuzz-only test key
// (engine/fuzz/keys/fuzz-signing.key; make_seeds.py signs the seeds' heads with it).
// Invariants: every reader answers (no crash, no allocation beyond what the files hold); a
// refusal is log-corrupt, fs-error, log-not-found or log-tree-size with a good message; verify
// reports named checks; when verify passes, every entry is a valid run-log entry whose inclusion
// proof (checked by the RFC 9162 algorithm, merkle_verify_inclusion) leads to the signed head's
// root, and an append after it succeeds and leaves a log that verifies with one entry more.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "evident/core/fs.h"
#include "evident/evidence/merkle.h"
#include "evident/evidence/runlog.h"
#include "fuzz_check.h"
#include "fuzz_files.h"

using namespace evident;

namespace {
std::string g_dir;
std::string g_state;
std::string g_log;
Ed25519Key* g_key = nullptr;



void require_log_error(const Error& e, std::string_view input) {
  fuzz::require_good_error(e, input, {"log-corrupt", "fs-error", "log-not-found", "log-tree-size"});
}

bool all_ok(const Json& checks) {
  fuzz::require(checks.is_array() && !checks.empty(), "log verify reported no checks");
  bool all = true;
  for (const auto& c : checks) {
    fuzz::require(c.is_object() && c["name"].is_string() && c["ok"].is_boolean() && c["detail"].is_string(),
                  "log verify check is not {name,ok,detail}");
    fuzz::require(is_valid_utf8(c["detail"].get<std::string>()), "log verify detail is not valid UTF-8");
    all = all && c["ok"].get<bool>();
  }
  return all;
}

Hash32 root_of(const Json& head) {
  Hash32 h{};
  fuzz::require(head.is_object() && head["root_hash"].is_string() &&
                    hash_from_hex(head["root_hash"].get<std::string>(), &h),
                "a verified log whose head has no root_hash");
  return h;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string src = EVIDENT_FUZZ_SOURCE_DIR;
  g_dir = fuzz::scratch_dir("runlog");
  g_state = g_dir + "/state";
  g_log = g_state + "/log";
  auto pem = read_file(src + "/engine/fuzz/keys/fuzz-signing.key", kMaxKeyFileBytes);
  if (!pem.ok()) fuzz::fail("cannot read the fuzz signing key");
  auto key = Ed25519Key::from_private_pem(*pem);
  if (!key.ok()) fuzz::fail("the fuzz signing key does not load");
  g_key = new Ed25519Key(std::move(*key));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  const std::size_t state_len = (std::size_t{data[0]} << 8) | data[1];
  const std::size_t entries_len = (std::size_t{data[2]} << 8) | data[3];
  if (4 + state_len + entries_len > size) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string_view state = input.substr(4, state_len);
  const std::string_view entries = input.substr(4 + state_len, entries_len);
  const std::string_view leaves = input.substr(4 + state_len + entries_len);

  std::error_code ec;
  std::filesystem::remove_all(g_log, ec);
  std::filesystem::create_directories(g_log, ec);
  if (!state.empty()) fuzz::write_bytes(g_log + "/state.json", state);
  fuzz::write_bytes(g_log + "/entries.jsonl", entries);
  fuzz::write_bytes(g_log + "/leaves.bin", leaves);

  RunLog log(g_state);
  const std::uint64_t n = log.size();
  if (auto h = log.head(); !h.ok()) require_log_error(h.error(), input);
  auto listed = log.entries(0, 64);
  if (!listed.ok()) require_log_error(listed.error(), input);
  if (auto f = log.find("ses-00000000000000000000000000000000"); !f.ok()) require_log_error(f.error(), input);
  for (std::uint64_t i : {std::uint64_t{0}, n / 2, n > 0 ? n - 1 : 0, n}) {
    if (auto p = log.prove(i, 0); !p.ok()) require_log_error(p.error(), input);
  }
  if (auto c = log.consistency(n / 2, n); !c.ok()) require_log_error(c.error(), input);
  if (auto c = log.consistency(1, n + 1); c.ok()) fuzz::fail("a consistency proof beyond the log's size");

  const bool verified = all_ok(log.verify(*g_key));
  fuzz::trace(verified ? "verified" : "not verified", std::to_string(n));
  if (!verified || n > 64) return 0;

  // A log that verifies: every entry proves into the signed head.
  auto head = log.head();
  fuzz::require(head.ok(), "a verified log without a head");
  fuzz::require(listed.ok() && listed->size() == n, "a verified log lists another number of entries");
  if (n > 0) {
    const Hash32 root = root_of(*head);
    for (std::uint64_t i = 0; i < n; ++i) {
      fuzz::require(log_entry_problem((*listed)[i]["entry"]).empty(), "a verified log holds an invalid entry");
      auto p = log.prove(i, 0);
      fuzz::require(p.ok(), "no inclusion proof in a verified log");
      std::vector<Hash32> path;
      for (const auto& h : (*p)["inclusion_proof"]) {
        Hash32 x{};
        fuzz::require(hash_from_hex(h.get<std::string>(), &x), "inclusion proof is not hex");
        path.push_back(x);
      }
      Hash32 leaf{};
      fuzz::require(hash_from_hex((*p)["leaf_hash"].get<std::string>(), &leaf), "leaf hash is not hex");
      fuzz::require(merkle_verify_inclusion(i, n, leaf, path, root), "an inclusion proof that does not verify");
    }
  }
  // The next append extends it.
  Json entry{{"kind", "session"},
             {"id", "ses-0123456789abcdef0123456789abcdef"},
             {"attempt_id", "fuzz"},
             {"job_sha256", std::string(64, 'a')},
             {"outcome", "failed"},
             {"receipt_id", nullptr},
             {"ended_at", "2026-12-02T00:00:00.000Z"}};
  auto appended = log.append(entry, *g_key, /*sync=*/false);
  if (!appended.ok()) {
    require_log_error(appended.error(), input);
    fuzz::fail("append to a verified log failed", appended.error().code);
  }
  fuzz::require(appended->index == n, "append to a verified log got the wrong index");
  fuzz::require(log.size() == n + 1, "append did not grow the log");
  fuzz::require(all_ok(log.verify(*g_key)), "a verified log does not verify after an append");
  return 0;
}
