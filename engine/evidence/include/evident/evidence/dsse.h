// DSSE envelopes (github.com/secure-systems-lab/dsse, protocol.md / envelope.md) carrying an
// in-toto Statement v1 (github.com/in-toto/attestation, spec/v1/statement.md) about a receipt.
// Format and verification: docs/receipts.md §8.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/evidence/keys.h"

namespace evident {

inline constexpr std::string_view kDssePayloadType = "application/vnd.in-toto+json";
inline constexpr std::string_view kStatementType = "https://in-toto.io/Statement/v1";
inline constexpr std::string_view kSessionPredicateType = "urn:evident:session-receipt:v3";
// A task receipt's (evident.task-receipt/v1) predicateType is kTaskReceiptPredicateType
// (evident/receipts/task_receipt.h): "urn:evident:task-receipt:v1".

// The predicateType for a receipt: kTaskReceiptPredicateType when its schema is
// evident.task-receipt/v1, else kSessionPredicateType (one place, used by signing and verifying).
std::string_view predicate_type_for(const Json& receipt);
inline constexpr std::string_view kEnvelopeFileName = "receipt.dsse.json";
inline constexpr std::size_t kMaxEnvelopeFileBytes = 1024 * 1024;

// PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, LEN as ASCII decimal.
std::string dsse_pae(std::string_view payload_type, std::string_view payload);

// Standard base64 (RFC 4648 §4) with padding.
std::string base64_encode(std::string_view bytes);
// Strict decoding: standard alphabet, '=' padding required, no whitespace, zero pad bits.
std::optional<std::string> base64_decode(std::string_view text);

// The frames a receipt references: every event's frame_sha256 plus observation.sha256, sorted
// and unique. Non-hex values are skipped (the receipt checks report them).
std::vector<std::string> receipt_frame_digests(const Json& receipt);

// Every subject a receipt's statement names, in order: receipt.json (with `receipt_sha256`),
// the frames (receipt_frame_digests, "<h>.png"), then the receipt's artifacts in their order
// ("video.webm"; docs/receipts.md §14). Malformed artifacts are skipped (the receipt checks
// report them).
std::vector<std::pair<std::string, std::string>> receipt_subjects(const Json& receipt,
                                                                  const std::string& receipt_sha256);

// The in-toto Statement v1 about a receipt file: subject[0] = {"name":"receipt.json",
// "digest":{"sha256": SHA-256 of `receipt_file_bytes`}}, then one {"name":"<h>.png",
// "digest":{"sha256":h}} per frame (sorted), then one per artifact (receipt_subjects); predicateType predicate_type_for(receipt);
// predicate {"receipt_id", "log"}.
Json make_receipt_statement(std::string_view receipt_file_bytes, const Json& receipt,
                            const Json& log);

// A DSSE envelope {"payload","payloadType","signatures":[{"keyid","sig"}]} signing `payload`.
Result<Json> sign_envelope(const Ed25519Key& key, std::string_view payload_type,
                           std::string_view payload);

// Builds, signs and writes `dir`/receipt.dsse.json (JCS + "\n", 0600, atomic) for the receipt
// whose exact file bytes are `receipt_file_bytes`. Errors: "key-invalid", "receipt-noncanonical",
// "fs-error".
Status write_receipt_envelope(const std::string& dir, std::string_view receipt_file_bytes,
                              const Json& receipt, const Json& log, const Ed25519Key& key);

}  // namespace evident
