#include "evident/core/sha256.h"

#include <openssl/evp.h>

#include <cstdlib>

namespace evident {

namespace {

// SHA-256 fetched from the default provider once. With OpenSSL 3, passing EVP_sha256() to
// EVP_DigestInit_ex/EVP_Digest makes every call fetch the implementation again (a locked lookup
// in the provider's method store by name); receipts hash hundreds of small inputs, and that
// lookup was most of the time spent in libcrypto (docs/performance.md, verify_signed). OpenSSL's
// own guidance ("Performance" in migration_guide(7)) is to fetch explicitly and reuse. The object
// lives for the process (never freed: destructors of statics may run after other threads' last
// use at exit).
const EVP_MD* sha256_md() {
  static const EVP_MD* md = [] {
    EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA2-256", nullptr);
    if (!fetched) std::abort();
    return fetched;
  }();
  return md;
}

}  // namespace

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  if (!impl_->ctx || EVP_DigestInit_ex(impl_->ctx, sha256_md(), nullptr) != 1) std::abort();
}

Sha256::~Sha256() { EVP_MD_CTX_free(impl_->ctx); }

void Sha256::update(const void* data, std::size_t size) {
  if (size && EVP_DigestUpdate(impl_->ctx, data, size) != 1) std::abort();
}

std::array<std::uint8_t, 32> Sha256::finish() {
  std::array<std::uint8_t, 32> out{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(impl_->ctx, out.data(), &len) != 1 || len != 32) std::abort();
  return out;
}

std::string Sha256::finish_hex() {
  auto d = finish();
  return to_hex(d);
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out(bytes.size() * 2, '0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xF];
  }
  return out;
}

std::string sha256_hex(const void* data, std::size_t size) {
  std::array<std::uint8_t, 32> out{};
  unsigned int len = 0;
  if (EVP_Digest(data, size, out.data(), &len, sha256_md(), nullptr) != 1) std::abort();
  return to_hex(out);
}

}  // namespace evident
