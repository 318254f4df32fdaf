// Internal to engine/receipts: the parts of a receipt that the session receipt and the task
// receipt build the same way (receipt.cpp defines them; receipt.cpp and task_receipt.cpp use
// them), so each rule exists once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/receipts/receipt.h"

namespace evident::receipt_parts {

// The claims/result object's checks: an object of at most 16 KiB canonical; `code` is the error
// code for a violation ("session-claims", "task-result-invalid"). Returns its JCS bytes.
Result<std::string> checked_claims_jcs(const Json& claims, std::string_view code,
                                       std::string_view what);

// The `action` event of action `i` at transcript `index` (v3: input_events and, for the kinds
// with one, commitment). Error "receipt-invalid" (projection type differs, commitment on a kind
// without one), "receipt-noncanonical".
Result<Json> action_event(const ActionRecord& a, std::size_t i, std::int64_t index, bool v3);

// `{"index","kind","frame_sha256"}` (initial_frame, freeze).
Json frame_event(std::int64_t index, std::string_view kind, const std::string& frame_sha256);
// `{"index","kind":"observation","frame_sha256","pre_observation_sha256"}`.
Json observation_event(std::int64_t index, const ObservationRecord& o,
                       const std::string& pre_observation_sha256);

// The binding object (with_job: the session's eight keys; else the task's seven).
Json binding_json(const ReceiptBinding& b, bool with_job);
// {"sha256","byte_length","width","height"}.
Json observation_json(const ObservationRecord& o);
// {"name":"evident","version",("host_id")}.
Json engine_json(const std::string& version, const std::string* host_id);
// The receipt's "artifacts" entry of one bound file (docs/receipts.md §14).
Json artifact_json(const ArtifactRecord& a);
// The receipt's "browser" member (docs/receipts.md §15).
Json browser_binding_json(const BrowserBindingRecord& b);

// verify_receipt() on a freshly built receipt: "receipt-invalid" naming the failed checks.
Status self_check(const Json& receipt);

}  // namespace evident::receipt_parts
