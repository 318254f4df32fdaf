// `evident verify --key/--trusted-keys`: authenticates a receipt with its DSSE envelope
// (signature, statement, subjects against the receipt file, run-log inclusion proof). The
// checks are specified in docs/receipts.md §8.
#pragma once

#include <string>
#include <vector>

#include "evident/core/json.h"
#include "evident/core/status.h"
#include "evident/evidence/keys.h"
#include "evident/receipts/verify.h"

namespace evident {

inline constexpr std::size_t kMaxTrustedKeys = 256;

struct AuthOptions {
  std::vector<std::string> key_files;  // --key (repeatable)
  std::string trusted_keys_dir;        // --trusted-keys: every regular *.pub / *.pem file in it
  std::string envelope_path;           // --envelope; default <receipt's dir>/receipt.dsse.json
};

// Loads the trusted keys. Errors: "key-unreadable", "key-invalid", "verify-usage" (a
// --trusted-keys directory that is unreadable, holds no key or more than 256 files).
Result<std::vector<Ed25519Key>> load_trusted_keys(const AuthOptions& options);

struct AuthResult {
  bool authenticated = false;  // every check passed (the caller also requires the receipt's)
  Json key_id = nullptr;       // the trusted key whose signature verified
  std::vector<VerifyCheck> checks;  // envelope, payload_type, signature, statement, subjects, log_inclusion
};

// The envelope checks for one receipt (its exact file bytes and parsed value). Never fails:
// every problem is a failing check.
AuthResult verify_receipt_envelope(const std::string& receipt_bytes, const Json& receipt,
                                   const std::string& envelope_path,
                                   const std::vector<Ed25519Key>& keys);

// The extension `evident verify` runs: with keys, the checks above and
// "authenticated":true|false,"key_id"; without, "authenticated":false and a plain warning.
class SignedVerifyExtension final : public VerifyExtension {
 public:
  explicit SignedVerifyExtension(AuthOptions options) : options_(std::move(options)) {}
  Status prepare() override;
  void run(const std::string& receipt_path, const std::string& receipt_bytes, const Json& receipt,
           VerifyReport& report, Json& extra, std::string& note) override;

 private:
  AuthOptions options_;
  std::vector<Ed25519Key> keys_;
};


}  // namespace evident
