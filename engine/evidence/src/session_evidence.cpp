#include "evident/evidence/session_evidence.h"

#include "evident/core/clock.h"
#include "evident/core/fs.h"
#include "evident/evidence/dsse.h"
#include "evident/receipts/receipt.h"
#include "evident/receipts/verify.h"

namespace evident {

SessionEvidence::SessionEvidence(std::string state_dir)
    : state_dir_(std::move(state_dir)), log_(state_dir_) {
  auto k = load_or_create_signing_key(state_dir_);
  if (k.ok()) key_ = std::move(*k);
  else key_error_ = k.error();
  auto h = evident::host_id(state_dir_);
  if (h.ok()) host_id_ = *h;
}

Result<Ed25519Key> SessionEvidence::key() const {
  if (key_) return *key_;
  return make_error(key_error_.code, key_error_.message + "; sessions cannot be signed");
}

Status SessionEvidence::record_end(const std::string& session_id, const std::string& attempt_id,
                                   const std::string& job_sha256, const std::string& outcome,
                                   std::int64_t ended_wall_ms) {
  auto k = key();
  if (!k.ok()) return k.error();
  Json entry{{"kind", "session"},          {"id", session_id},  {"attempt_id", attempt_id},
             {"job_sha256", job_sha256},   {"outcome", outcome}, {"receipt_id", nullptr},
             {"ended_at", format_rfc3339_ms(ended_wall_ms)}};
  std::lock_guard<std::mutex> lock(mu_);
  auto r = append_locked(entry, *k, /*keep=*/true);
  if (!r.ok()) return r.error();
  return {};
}

Status SessionEvidence::record_task_end(const std::string& task_id, const std::string& attempt_id,
                                        const std::string& task_sha256, const std::string& outcome,
                                        std::int64_t ended_wall_ms) {
  auto k = key();
  if (!k.ok()) return k.error();
  Json entry{{"kind", "task"},             {"id", task_id},     {"attempt_id", attempt_id},
             {"task_sha256", task_sha256}, {"outcome", outcome}, {"receipt_id", nullptr},
             {"ended_at", format_rfc3339_ms(ended_wall_ms)}};
  std::lock_guard<std::mutex> lock(mu_);
  auto r = append_locked(entry, *k, /*keep=*/true);
  if (!r.ok()) return r.error();
  return {};
}

Result<Json> SessionEvidence::seal_closed(const std::string& evidence_dir, const Json& receipt,
                                          std::int64_t ended_wall_ms) {
  auto k = key();
  if (!k.ok()) return k.error();
  // The exact bytes on disk are what the envelope's first subject names.
  auto bytes = read_receipt_bytes(evidence_dir + "/" + std::string(kReceiptFileName));
  // Read with value(): a receipt's members are not assumed (a const operator[] on a missing key
  // is undefined). A task receipt (schema evident.task-receipt/v1) is logged as kind "task".
  const Json binding = receipt.value("binding", Json::object());
  const bool task = receipt.value("schema", std::string()) == "evident.task-receipt/v1";
  Json entry{{"kind", task ? "task" : "session"},
             {"id", receipt.value(task ? "task_id" : "session_id", Json())},
             {"attempt_id", binding.value("attempt_id", Json())},
             {"outcome", "closed"},
             {"receipt_id", receipt.value("receipt_id", Json())},
             {"ended_at", format_rfc3339_ms(ended_wall_ms)}};
  if (task) entry["task_sha256"] = receipt.value("task_sha256", Json());
  else entry["job_sha256"] = binding.value("job_sha256", Json());
  // Whatever fails from here, the session ends failed, and that ending is logged (or kept
  // pending until the log can be written).
  Json failed = entry;
  failed["outcome"] = "failed";
  failed["receipt_id"] = nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  if (!bytes.ok()) {
    (void)append_locked(failed, *k, /*keep=*/true);
    return bytes.error();
  }
  auto appended = append_locked(entry, *k, /*keep=*/false);  // a closed entry is never deferred
  if (!appended.ok()) {
    (void)append_locked(failed, *k, /*keep=*/true);
    return appended.error();
  }
  Json proof = Json::array();
  for (const auto& h : appended->inclusion_proof) proof.push_back(hash_hex(h));
  Json log{{"index", appended->index},
           {"tree_head", appended->tree_head},
           {"entry", appended->entry},
           {"inclusion_proof", proof}};
  if (auto st = write_receipt_envelope(evidence_dir, *bytes, receipt, log, *k); !st) {
    (void)append_locked(failed, *k, /*keep=*/true);
    return st.error();
  }
  return Json{{"index", appended->index}, {"tree_head", appended->tree_head}};
}

Result<LogAppendResult> SessionEvidence::append_locked(const Json& entry, const Ed25519Key& key, bool keep) {
  auto defer = [&](const Error& e) {
    // An entry the log refuses as invalid never becomes valid: not kept.
    if (keep && e.code != "log-entry-invalid" && pending_.size() < kMaxPendingEntries) pending_.push_back(entry);
  };
  // The pending entries first, in order: the log's order is the order of the endings.
  while (!pending_.empty()) {
    auto r = log_.append(pending_.front(), key);
    if (!r.ok() && r.error().code != "log-entry-invalid") {
      defer(r.error());
      return r.error();
    }
    pending_.pop_front();
  }
  auto r = log_.append(entry, key);
  if (!r.ok()) defer(r.error());
  return r;
}

std::size_t SessionEvidence::pending_entries() {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size();
}

}  // namespace evident
