// Ed25519 signing keys (OpenSSL EVP_PKEY) and the machine's host id (docs/evidence.md).
// The state directory holds keys/signing.key (PKCS#8 PEM, 0600) and keys/signing.pub (SPKI PEM);
// key_id = "ed25519:" + lowercase hex SHA-256 of the SPKI DER bytes.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "evident/core/status.h"

namespace evident {

inline constexpr std::string_view kKeyIdPrefix = "ed25519:";
inline constexpr std::size_t kMaxKeyFileBytes = 16 * 1024;
inline constexpr std::size_t kEd25519SignatureBytes = 64;

class Ed25519Key {
 public:
  // A fresh key from the OS CSPRNG. Error "key-invalid" if OpenSSL refuses (never expected).
  static Result<Ed25519Key> generate();
  // A PKCS#8 PEM private key, or an SPKI PEM public key. Error "key-invalid": not PEM, not
  // Ed25519, or trailing garbage that OpenSSL would not parse.
  static Result<Ed25519Key> from_private_pem(std::string_view pem);
  static Result<Ed25519Key> from_public_pem(std::string_view pem);

  bool has_private() const { return has_private_; }
  const std::string& key_id() const { return key_id_; }
  const std::string& spki_der() const { return spki_der_; }
  std::string public_pem() const;
  Result<std::string> private_pem() const;  // "key-invalid" without a private half

  // The 64-byte Ed25519 signature of `message`. "key-invalid" without a private half.
  Result<std::string> sign(std::string_view message) const;
  // True iff `signature` (exactly 64 bytes) is this key's signature of `message`.
  bool verify(std::string_view message, std::string_view signature) const;

 private:
  struct Deleter {
    void operator()(void* p) const;
  };
  static Result<Ed25519Key> wrap(void* pkey, bool has_private);
  std::shared_ptr<void> pkey_;  // EVP_PKEY*
  bool has_private_ = false;
  std::string spki_der_;
  std::string key_id_;
};

struct KeyPaths {
  std::string dir;           // <state>/keys (0700)
  std::string private_path;  // <state>/keys/signing.key
  std::string public_path;   // <state>/keys/signing.pub
};
KeyPaths key_paths(const std::string& state_dir);

// Loads the state dir's signing key, creating it first if it does not exist (exclusive create:
// two processes starting at once end up with the same key). `created` is set when this call made
// it. A missing signing.pub is rewritten from the private key. Errors: "key-invalid" (the file is
// not an Ed25519 PKCS#8 PEM), "key-permissions" (signing.key is readable by group or others, or
// not owned by us), "fs-error".
Result<Ed25519Key> load_or_create_signing_key(const std::string& state_dir, bool* created = nullptr);
// Loads without creating. "key-missing" when there is none.
Result<Ed25519Key> load_signing_key(const std::string& state_dir);
// Reads a public key file (SPKI PEM, or a private PKCS#8 PEM whose public half is used).
// Errors: "key-unreadable" (missing, not a regular file, > 16 KiB), "key-invalid".
Result<Ed25519Key> load_public_key_file(const std::string& path);

// The machine's id for receipts (engine.host_id): "hst-" + the first 32 hex digits of
// H("evident/host-id/v1", {"machine_id": <machine-id>}) where <machine-id> is /etc/machine-id
// (32 lowercase hex) — never the raw value. Without a valid /etc/machine-id, a random one is
// generated once and kept in <state>/keys/machine-id (0600) and used instead. `machine_id_path`
// is for tests. "fs-error" when the generated one cannot be stored.
inline constexpr std::string_view kDomainHostId = "evident/host-id/v1";
Result<std::string> host_id(const std::string& state_dir,
                            const std::string& machine_id_path = "/etc/machine-id");

}  // namespace evident
