// What the engine does with evidence when a session ends (docs/receipts.md §8–§9): every ending
// appends one run-log entry; a close also signs the receipt (receipt.dsse.json) with the log
// entry's index, the signed tree head and the inclusion proof in the predicate.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/evidence/keys.h"
#include "evident/evidence/runlog.h"

namespace evident {

class SessionEvidence {
 public:
  // Loads the state dir's signing key, creating it if missing (the first engine start), and
  // derives the host id. A failure is kept and returned by every later call (fail closed: no
  // session closes with an unsigned receipt).
  explicit SessionEvidence(std::string state_dir);

  const std::string& state_dir() const { return state_dir_; }
  // The signing key, or the error that prevented loading it.
  Result<Ed25519Key> key() const;
  const std::string& host_id() const { return host_id_; }

  // A closed session: reads `evidence_dir`/receipt.json (its exact bytes), appends the closed
  // entry, writes receipt.dsse.json. Returns {"index","tree_head"}. On any error once the key is
  // usable (the receipt unreadable, the closed entry's append, the envelope), a "failed" entry
  // for the same session is logged before the error is returned, so the ended session is in
  // the run log either way.
  //
  // Every append that fails (a full disk, a log that cannot be written) keeps its entry pending,
  // in order, and every later append writes the pending entries first: an ending is logged once
  // the log can be written again (while this process lives; at most kMaxPendingEntries).
  Result<Json> seal_closed(const std::string& evidence_dir, const Json& receipt,
                           std::int64_t ended_wall_ms);
  // Any other ending (aborted, failed, expired): one entry, receipt_id null.
  Status record_end(const std::string& session_id, const std::string& attempt_id,
                    const std::string& job_sha256, const std::string& outcome,
                    std::int64_t ended_wall_ms);
  // The same for an agent task: kind "task" with task_sha256 (a closed task is seal_closed's,
  // which reads the kind from the receipt's schema).
  Status record_task_end(const std::string& task_id, const std::string& attempt_id,
                         const std::string& task_sha256, const std::string& outcome,
                         std::int64_t ended_wall_ms);

  // How many endings are not yet in the run log (pending, see seal_closed).
  std::size_t pending_entries();
  static constexpr std::size_t kMaxPendingEntries = 1024;

 private:
  // Appends the pending entries, then `entry`; with `keep`, an entry whose append fails is kept
  // pending.
  // Caller holds mu_.
  Result<LogAppendResult> append_locked(const Json& entry, const Ed25519Key& key, bool keep);
  std::string state_dir_;
  std::optional<Ed25519Key> key_;
  Error key_error_;
  std::string host_id_;
  RunLog log_;
  std::mutex mu_;  // one append at a time in this process (the log's flock covers others)
  std::deque<Json> pending_;  // guarded by mu_
};

}  // namespace evident
