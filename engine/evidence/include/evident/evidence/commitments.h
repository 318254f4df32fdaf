// The private side of receipt v3's salted commitments (docs/receipts.md "Commitments and
// disclosures"): the salt and value of every committed action of a closed session, kept in
// <state>/commitments/<session_id>.json (directory 0700, file 0600) — outside the evidence
// directory, never logged — and `evident disclose`, which turns one of them into a disclosure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "evident/core/json.h"
#include "evident/core/status.h"

namespace evident {

inline constexpr std::string_view kCommitmentsSchema = "evident.commitments/v1";
inline constexpr std::size_t kMaxCommitmentsFileBytes = 1024 * 1024;

// One committed action: its 0-based index among the session's actions, its kind, the salt
// (64 hex from the CSPRNG), the secret value (the text or key as sent) and the commitment.
struct CommittedValue {
  std::int64_t action_index = 0;
  std::string action;
  std::string salt;
  std::string value;
  std::string commitment;
};

// A fresh salt and the commitment to `value` for action `action_index` of kind `action`.
// Error "receipt-noncanonical" (value not valid UTF-8; never for a validated action).
Result<CommittedValue> commit_value(std::int64_t action_index, const std::string& action,
                                    const std::string& value);

// <state>/commitments/<session_id>.json
std::string commitments_path(const std::string& state_dir, const std::string& session_id);

// Writes the file (JCS + "\n", 0600, atomic; the directory 0700):
// {"schema":"evident.commitments/v1","session_id","receipt_id","actions":[{"action_index",
// "action","salt","value","commitment"}]}. Error "fs-error" (the message names no value).
Status write_session_commitments(const std::string& state_dir, const std::string& session_id,
                                 const std::string& receipt_id,
                                 const std::vector<CommittedValue>& values);
void remove_session_commitments(const std::string& state_dir, const std::string& session_id);

// The disclosure of action `action_index` (0-based among its action events) of `receipt` (a
// parsed v3 session receipt or task receipt that verifies; a task's record is keyed by task_id),
// from this state dir's private record, checked to recompute the receipt's commitment before it
// is returned. Errors: "disclosure-action" (the index names no action carrying a commitment),
// "disclosure-unavailable" (no private record for this receipt here — another machine or state
// dir, a v2 receipt — or a record that does not match the receipt).
Result<Json> disclose_action(const std::string& state_dir, const Json& receipt,
                             std::int64_t action_index);

}  // namespace evident
