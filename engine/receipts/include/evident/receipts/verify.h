// Offline verification of `evident.session-receipt/v3` and `/v2` receipts (docs/receipts.md). The checks and
// their names are specified in docs/receipts.md; bindings/python/evident/verify.py implements
// the same algorithm independently.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/protocol/protocol.h"

namespace evident {

inline constexpr std::size_t kMaxReceiptFileBytes = protocol::kReceiptFileMaxBytes;
inline constexpr std::size_t kMaxFrameFileBytes = protocol::kFrameFileMaxBytes;

struct VerifyOptions {
  std::string frames_dir;                     // non-empty: run the "frames" check
  std::string png_path;                       // non-empty: run the "png" check
  std::string expect_job_sha256;              // non-empty: run "expect_job"
  std::optional<std::int64_t> expect_uid;     // set: run "expect_uid"
  // --disclosure FILE: run_verify_command reads it (errors "disclosure-unreadable",
  // "disclosure-invalid") into `disclosure`; verify_receipt runs the disclosure checks when
  // `disclosure` is not null (a well-formed disclosure, commitment.h).
  std::string disclosure_path;
  Json disclosure = nullptr;
  // --prior RECEIPT (task receipts): run_verify_command reads it (errors
  // "verify-prior-unreadable", "verify-prior-json") into `prior`; verify_task_receipt runs the
  // lineage checks against it when `prior` is not null (task_receipt.h).
  std::string prior_path;
  Json prior = nullptr;
};

// Reads and strictly parses a disclosure file (≤ 64 KiB) and checks its shape. Errors:
// "disclosure-unreadable" (missing, not a regular file, unreadable, too large),
// "disclosure-invalid" (not strict JSON or not exactly an evident.disclosure/v1 object).
Result<Json> load_disclosure_file(const std::string& path);

struct VerifyCheck {
  std::string name;    // stable: schema, receipt_id, transcript_sha256, ... (docs/receipts.md)
  bool ok = false;
  std::string detail;  // for people
};

struct VerifyReport {
  bool ok = false;                  // every check passed
  Json receipt_id;                  // the receipt's receipt_id if it is a string, else null
  std::vector<VerifyCheck> checks;  // in the documented order
  std::vector<std::string> failed_names() const;
};

// Runs every applicable check on an already parsed receipt. Never fails: problems are checks.
VerifyReport verify_receipt(const Json& receipt, const VerifyOptions& options);

// Reads and strictly parses a receipt file (≤ 8 MiB). Errors: "receipt-unreadable" (missing,
// unreadable or too large), "receipt-json" (not strict JSON: duplicate keys, floats, ...).
Result<Json> load_receipt_file(const std::string& path);

// load_receipt_file for `--prior RECEIPT`. Errors: "verify-prior-unreadable",
// "verify-prior-json".
Result<Json> load_prior_receipt_file(const std::string& path);

// Reads a receipt file's exact bytes (≤ 8 MiB). Error "receipt-unreadable".
Result<std::string> read_receipt_bytes(const std::string& path);

// The last line of `evident verify`'s human output when no key authenticated the receipt.
inline constexpr std::string_view kUnauthenticatedNote =
    "NOT AUTHENTICATED: no --key or --trusted-keys was given. The checks above show only that the "
    "receipt is internally consistent; anyone can write a consistent receipt, so this proves "
    "nothing about who made it. Pass the signer's public key (evident key show) to authenticate.";

// Checks beyond the receipt's own, added by a higher layer (the evidence module's signature,
// subject and log checks) without this module depending on it.
class VerifyExtension {
 public:
  virtual ~VerifyExtension() = default;
  // Before the receipt is read: load keys etc. An error is a usage error (exit 2).
  virtual Status prepare() { return {}; }
  // After the receipt checks: append checks to `report`, members to the JSON result (`extra`),
  // and a line for people (`note`).
  virtual void run(const std::string& receipt_path, const std::string& receipt_bytes,
                   const Json& receipt, VerifyReport& report, Json& extra, std::string& note) = 0;
};

// The `evident verify` command: loads `path`, verifies, prints the result to `out` (one JSON
// object with `json`, else lines for people) and returns the exit status: 0 all checks pass,
// 1 otherwise. Error codes in the JSON: "verify-failed", "receipt-unreadable", "receipt-json",
// "disclosure-unreadable", "disclosure-invalid", "verify-prior-unreadable", "verify-prior-json",
// "verify-usage" (a malformed --expect-job).
int run_verify_command(const std::string& path, const VerifyOptions& options, bool json,
                       std::ostream& out, VerifyExtension* extension = nullptr);

}  // namespace evident
