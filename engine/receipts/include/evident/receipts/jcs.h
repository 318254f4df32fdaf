// RFC 8785 (JCS) canonical JSON and the domain-separated digests of the receipt format
// (docs/receipts.md). Only the content the protocol allows is accepted: objects, arrays,
// strings, booleans, null and integers within ±(2^53−1).
#pragma once

#include <string>
#include <string_view>

#include "evident/core/json.h"
#include "evident/core/status.h"

namespace evident {

// Digest domains (docs/protocol.md §6). Each H() input is: domain bytes, one 0x00 byte, JCS(value).
inline constexpr std::string_view kDomainStageTranscript = "evident/stage-transcript/v2";
inline constexpr std::string_view kDomainTranscript = "evident/transcript/v2";
inline constexpr std::string_view kDomainClaims = "evident/claims/v2";
inline constexpr std::string_view kDomainReceipt = "evident/receipt/v2";
inline constexpr std::string_view kDomainActionProjection = "evident/action-projection/v2";
// Receipt v3: a salted commitment to a secret-bearing action's text or key (docs/receipts.md).
inline constexpr std::string_view kDomainCommitment = "evident/commitment/v1";

// JCS bytes of `value`: keys sorted by UTF-16 code units, no whitespace, minimal string
// escapes, integers in shortest decimal. Error "receipt-noncanonical" for floats, integers
// outside ±(2^53−1), invalid UTF-8, binary or discarded values, and nesting deeper than
// kMaxJsonDepth (the parse limit; the writer's recursion is bounded by it).
Result<std::string> canonicalize(const Json& value);

// H over bytes that already are JCS(value): lowercase hex SHA-256 of domain, 0x00, bytes.
// Lets a caller canonicalize shared parts once (the verifier composes the transcript's JCS
// from its events' JCS). Never fails.
std::string domain_digest_of_jcs(std::string_view domain, std::string_view jcs_bytes);

// H(domain, value): lowercase hex SHA-256 of domain, 0x00, JCS(value).
// Error "receipt-noncanonical" (as canonicalize).
Result<std::string> domain_digest(std::string_view domain, const Json& value);

}  // namespace evident
