#include "evident/evidence/keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>

#include "evident/core/fs.h"
#include "evident/core/json.h"
#include "evident/core/random.h"
#include "evident/core/sha256.h"
#include "evident/receipts/jcs.h"

namespace evident {
namespace {

EVP_PKEY* as_pkey(const std::shared_ptr<void>& p) { return static_cast<EVP_PKEY*>(p.get()); }

std::string bio_to_string(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<std::size_t>(n)) : std::string();
}

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

bool regular_file(const std::string& path, struct stat* st) {
  return ::stat(path.c_str(), st) == 0 && S_ISREG(st->st_mode);
}

}  // namespace

void Ed25519Key::Deleter::operator()(void* p) const { EVP_PKEY_free(static_cast<EVP_PKEY*>(p)); }

Result<Ed25519Key> Ed25519Key::wrap(void* raw, bool has_private) {
  auto* pkey = static_cast<EVP_PKEY*>(raw);
  Ed25519Key k;
  k.pkey_ = std::shared_ptr<void>(pkey, Deleter{});
  if (EVP_PKEY_get_base_id(pkey) != EVP_PKEY_ED25519) {
    return make_error("key-invalid", "the key is not an Ed25519 key");
  }
  k.has_private_ = has_private;
  unsigned char* der = nullptr;
  int n = i2d_PUBKEY(pkey, &der);
  if (n <= 0) return make_error("key-invalid", "cannot encode the public key");
  k.spki_der_.assign(reinterpret_cast<const char*>(der), static_cast<std::size_t>(n));
  OPENSSL_free(der);
  k.key_id_ = std::string(kKeyIdPrefix) + sha256_hex(k.spki_der_);
  return k;
}

Result<Ed25519Key> Ed25519Key::generate() {
  EVP_PKEY* pkey = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  if (pkey == nullptr) return make_error("key-invalid", "OpenSSL cannot generate an Ed25519 key");
  return wrap(pkey, true);
}

Result<Ed25519Key> Ed25519Key::from_private_pem(std::string_view pem) {
  if (pem.size() > kMaxKeyFileBytes) return make_error("key-invalid", "the key file is too large");
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EVP_PKEY* pkey = bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr;
  if (pkey == nullptr) return make_error("key-invalid", "not a PKCS#8 PEM private key");
  return wrap(pkey, true);
}

Result<Ed25519Key> Ed25519Key::from_public_pem(std::string_view pem) {
  if (pem.size() > kMaxKeyFileBytes) return make_error("key-invalid", "the key file is too large");
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EVP_PKEY* pkey = bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr;
  if (pkey == nullptr) return make_error("key-invalid", "not an SPKI PEM public key");
  return wrap(pkey, false);
}

std::string Ed25519Key::public_pem() const {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), as_pkey(pkey_)) != 1) return {};
  return bio_to_string(bio.get());
}

Result<std::string> Ed25519Key::private_pem() const {
  if (!has_private_) return make_error("key-invalid", "this is a public key");
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PKCS8PrivateKey(bio.get(), as_pkey(pkey_), nullptr, nullptr, 0,
                                            nullptr, nullptr) != 1) {
    return make_error("key-invalid", "cannot encode the private key");
  }
  return bio_to_string(bio.get());
}

Result<std::string> Ed25519Key::sign(std::string_view message) const {
  if (!has_private_) return make_error("key-invalid", "a public key cannot sign");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  std::string sig(kEd25519SignatureBytes, '\0');
  std::size_t len = sig.size();
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, as_pkey(pkey_)) != 1 ||
      EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1 ||
      len != kEd25519SignatureBytes) {
    return make_error("key-invalid", "Ed25519 signing failed");
  }
  return sig;
}

bool Ed25519Key::verify(std::string_view message, std::string_view signature) const {
  if (signature.size() != kEd25519SignatureBytes || !pkey_) return false;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, as_pkey(pkey_)) != 1) {
    return false;
  }
  return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                          signature.size(), reinterpret_cast<const unsigned char*>(message.data()),
                          message.size()) == 1;
}

KeyPaths key_paths(const std::string& state_dir) {
  KeyPaths p;
  p.dir = state_dir + "/keys";
  p.private_path = p.dir + "/signing.key";
  p.public_path = p.dir + "/signing.pub";
  return p;
}

namespace {

Result<Ed25519Key> read_private_key(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return make_error("key-missing", "no signing key in the state directory (run `evident key init`)");
  }
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return make_error("key-permissions",
                      "the signing key must be owned by this user with mode 0600");
  }
  auto text = read_file(path, kMaxKeyFileBytes);
  if (!text.ok()) return make_error("key-invalid", "cannot read the signing key");
  return Ed25519Key::from_private_pem(*text);
}

// Writes bytes to a new file `path` (0600) only if it does not exist yet: temp file + link(2),
// so a concurrent creator loses cleanly. Returns false (no error) when `path` already existed.
Result<bool> create_exclusive(const std::string& path, std::string_view bytes) {
  std::string tmp = path + ".tmp-" + random_hex(8);
  if (auto st = write_file_atomic(tmp, bytes, 0600); !st) return st.error();
  int rc = ::link(tmp.c_str(), path.c_str());
  int err = errno;
  ::unlink(tmp.c_str());
  if (rc == 0) return true;
  if (err == EEXIST) return false;
  return fs_error("cannot create", path, err);
}

Status ensure_public_file(const KeyPaths& p, const Ed25519Key& key) {
  struct stat st {};
  if (regular_file(p.public_path, &st)) {
    auto text = read_file(p.public_path, kMaxKeyFileBytes);
    if (text.ok()) {
      auto pub = Ed25519Key::from_public_pem(*text);
      if (pub.ok() && pub->key_id() == key.key_id()) return {};
    }
  }
  return write_file_atomic(p.public_path, key.public_pem(), 0644);
}

}  // namespace

Result<Ed25519Key> load_signing_key(const std::string& state_dir) {
  return read_private_key(key_paths(state_dir).private_path);
}

Result<Ed25519Key> load_or_create_signing_key(const std::string& state_dir, bool* created) {
  if (created) *created = false;
  KeyPaths p = key_paths(state_dir);
  if (auto st = make_private_dir(p.dir); !st) return st.error();
  auto existing = read_private_key(p.private_path);
  if (!existing.ok() && existing.error().code != "key-missing") return existing.error();
  if (!existing.ok()) {
    auto fresh = Ed25519Key::generate();
    if (!fresh.ok()) return fresh.error();
    auto pem = fresh->private_pem();
    if (!pem.ok()) return pem.error();
    auto made = create_exclusive(p.private_path, *pem);
    if (!made.ok()) return made.error();
    if (*made && created) *created = true;
    existing = read_private_key(p.private_path);  // ours, or the one a concurrent start made
    if (!existing.ok()) return existing.error();
  }
  if (auto st = ensure_public_file(p, *existing); !st) return st.error();
  return existing;
}

Result<Ed25519Key> load_public_key_file(const std::string& path) {
  struct stat st {};
  if (!regular_file(path, &st) || static_cast<std::size_t>(st.st_size) > kMaxKeyFileBytes) {
    return make_error("key-unreadable", "the key file does not exist, is not a regular file or is too large");
  }
  auto text = read_file(path, kMaxKeyFileBytes);
  if (!text.ok()) return make_error("key-unreadable", "cannot read the key file");
  if (text->find("PRIVATE KEY") != std::string::npos) {
    auto k = Ed25519Key::from_private_pem(*text);
    if (!k.ok()) return k.error();
    return Ed25519Key::from_public_pem(k->public_pem());
  }
  return Ed25519Key::from_public_pem(*text);
}

Result<std::string> host_id(const std::string& state_dir, const std::string& machine_id_path) {
  std::string mid;
  if (auto text = read_file(machine_id_path, 256); text.ok()) {
    std::string t = *text;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    if (is_lower_hex(t, 32) && t != std::string(32, '0')) mid = t;
  }
  if (mid.empty()) {
    KeyPaths p = key_paths(state_dir);
    if (auto st = make_private_dir(p.dir); !st) return st.error();
    std::string path = p.dir + "/machine-id";
    auto made = create_exclusive(path, random_hex(16) + "\n");
    if (!made.ok()) return made.error();
    auto text = read_file(path, 256);
    if (!text.ok()) return text.error();
    mid = *text;
    while (!mid.empty() && mid.back() == '\n') mid.pop_back();
    if (!is_lower_hex(mid, 32)) return make_error("fs-error", "the generated machine id is damaged", false);
  }
  auto h = domain_digest(kDomainHostId, Json{{"machine_id", mid}});
  if (!h.ok()) return h.error();
  return "hst-" + h->substr(0, 32);
}

}  // namespace evident
