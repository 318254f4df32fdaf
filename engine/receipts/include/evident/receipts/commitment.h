// Salted commitments (receipt v3, docs/receipts.md "Commitments and disclosures"): each action
// that carries a secret (typed text, a key) is bound in the receipt by
// commitment = H("evident/commitment/v1", {"salt": 64 hex, "value": the text or key}); a
// disclosure reveals salt and value for one action so anyone can recompute it. Pure logic, no
// files: the private store of salts lives in engine/evidence.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "evident/core/json.h"
#include "evident/core/status.h"

namespace evident {

inline constexpr std::string_view kDisclosureSchema = "evident.disclosure/v1";
inline constexpr std::size_t kCommitmentSaltBytes = 32;             // 256 bits, 64 hex
inline constexpr std::size_t kMaxDisclosureFileBytes = 64 * 1024;   // a value is ≤ 4096 bytes
inline constexpr std::size_t kMaxDisclosedValueBytes = 4096;

// True for the action kinds whose event carries a `commitment` in receipt v3: exactly those whose
// receipt projection removes a secret (protocol/evident.json: projection other than "as_sent").
bool action_has_commitment(std::string_view action_type);

// H("evident/commitment/v1", {"salt":salt_hex,"value":value}). Error "receipt-invalid" when the
// salt is not 64 lowercase hex, "receipt-noncanonical" when the value is not valid UTF-8.
Result<std::string> commitment_digest(std::string_view salt_hex, std::string_view value);

// A fresh salt from the OS CSPRNG (64 lowercase hex).
std::string new_commitment_salt();

// The disclosure document for action `action_index` (0-based among the receipt's actions):
// {"schema":"evident.disclosure/v1","receipt_id","action_index","action","salt","value"}.
Json make_disclosure(const std::string& receipt_id, std::int64_t action_index,
                     const std::string& action, const std::string& salt, const std::string& value);

// Shape of a parsed disclosure file (exact keys and types). "" when well-formed, else a
// description that never echoes the file's content.
std::string disclosure_shape_problem(const Json& disclosure);

struct DisclosureCheck {
  std::string name;  // disclosure_receipt, disclosure_action, disclosure_commitment
  bool ok = false;
  std::string detail;
};

// The three disclosure checks of docs/receipts.md against a receipt that passed `schema`
// (a well-formed disclosure: see disclosure_shape_problem). Never fails.
std::vector<DisclosureCheck> check_disclosure(const Json& receipt, const Json& disclosure);

}  // namespace evident
