// The run log: an append-only RFC 9162 Merkle log of every ended session and task, in
// <state>/log/, with Ed25519-signed tree heads (docs/receipts.md §9).
//
//   entries.jsonl  one JCS entry per line, in order (leaf i = SHA-256(0x00 || line i))
//   leaves.bin     the 32-byte leaf hashes, in order
//   state.json     {"tree_size","entries_bytes","compact":[hex...],"head":signed tree head}
//   lock           flock(2): appends are exclusive, reads shared
//
// An append writes one line, one leaf hash and a new state.json (O(log n) bytes). A crash
// between those leaves extra bytes in entries.jsonl/leaves.bin that state.json does not count;
// the next open truncates them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/evidence/keys.h"
#include "evident/evidence/merkle.h"

namespace evident {

inline constexpr std::string_view kDomainTreeHead = "evident/tree-head/v1";
inline constexpr std::uint64_t kMaxLogEntries = 1ULL << 40;
inline constexpr std::size_t kMaxLogEntryBytes = 4096;

// One run-log entry: {"kind":"session"|"task","id","attempt_id","job_sha256"|"task_sha256",
// "outcome":"closed"|"aborted"|"failed"|"expired","receipt_id":string|null,"ended_at"}.
// Returns "" when well formed, else what is wrong (no values echoed).
std::string log_entry_problem(const Json& entry);

// The signed tree head: {"tree_size","root_hash","timestamp","key_id","signature"} where
// signature = base64(Ed25519(SHA-256 bytes of H("evident/tree-head/v1",
// {"tree_size","root_hash","timestamp"}))).
Result<Json> sign_tree_head(const Ed25519Key& key, std::uint64_t tree_size, const Hash32& root,
                            const std::string& timestamp);
// "" when `head` has that shape and its signature verifies with `key`, else the problem.
std::string tree_head_problem(const Json& head, const Ed25519Key& key);

struct LogAppendResult {
  std::uint64_t index = 0;
  Json entry;                         // as stored
  Json tree_head;                     // signed, tree_size = index + 1
  std::vector<Hash32> inclusion_proof;  // PATH(index, D[index+1])
};

class RunLog {
 public:
  // Opens (creating if needed) <state_dir>/log. The key signs tree heads.
  explicit RunLog(std::string state_dir);

  // Appends one entry (validated first: "log-entry-invalid"), signs the new head. Durable when
  // `sync` (fsync of the files and state.json) — the default; the benchmark measures both.
  // Errors: "log-entry-invalid", "log-corrupt", "fs-error", "key-invalid".
  Result<LogAppendResult> append(const Json& entry, const Ed25519Key& key, bool sync = true);

  // The current signed head (null Json for an empty log). "log-corrupt", "fs-error".
  Result<Json> head() const;
  std::uint64_t size() const;  // 0 when missing or unreadable

  // Entries [from, from+limit) as {"index","entry","leaf_hash"}.
  Result<Json> entries(std::uint64_t from, std::uint64_t limit) const;
  // The first index whose entry's id equals `id`.
  Result<std::uint64_t> find(const std::string& id) const;
  // Inclusion proof of `index` in the tree of `tree_size` (0 = current size):
  // {"index","tree_size","entry","leaf_hash","root_hash","inclusion_proof":[hex]}.
  // Errors: "log-not-found" (index >= tree_size), "log-tree-size" (tree_size > size).
  Result<Json> prove(std::uint64_t index, std::uint64_t tree_size) const;
  // {"old_size","new_size","old_root","new_root","proof":[hex]}. "log-tree-size".
  Result<Json> consistency(std::uint64_t old_size, std::uint64_t new_size) const;
  // Recomputes everything from entries.jsonl and checks it against leaves.bin, state.json and
  // the head's signature (with `key`): [{"name","ok","detail"}].
  Json verify(const Ed25519Key& key) const;

  const std::string& dir() const { return dir_; }

 private:
  struct State;
  Result<State> load_state() const;
  Result<Hash32> leaf_at(std::uint64_t index) const;
  std::string dir_;
};

}  // namespace evident
