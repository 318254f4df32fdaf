// Offline verification of `evident.session-receipt/v2` receipts (contract §7). The checks and
// their names are specified in docs/receipts.md; bindings/python/evident/verify.py implements
// the same algorithm independently.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "evident/core/json.h"
#include "evident/core/status.h"

namespace evident {

inline constexpr std::size_t kMaxReceiptFileBytes = 8 * 1024 * 1024;
inline constexpr std::size_t kMaxFrameFileBytes = 256 * 1024 * 1024;

struct VerifyOptions {
  std::string frames_dir;                     // non-empty: run the "frames" check
  std::string png_path;                       // non-empty: run the "png" check
  std::string expect_job_sha256;              // non-empty: run "expect_job"
  std::optional<std::int64_t> expect_uid;     // set: run "expect_uid"
};

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

// The `evident verify` command: loads `path`, verifies, prints the result to `out` (one JSON
// object with `json`, else lines for people) and returns the exit status: 0 all checks pass,
// 1 otherwise. Error codes in the JSON: "verify-failed", "receipt-unreadable", "receipt-json",
// "verify-usage" (a malformed --expect-job).
int run_verify_command(const std::string& path, const VerifyOptions& options, bool json,
                       std::ostream& out);

}  // namespace evident
