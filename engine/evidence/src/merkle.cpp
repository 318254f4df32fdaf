#include "evident/evidence/merkle.h"

#define OPENSSL_SUPPRESS_DEPRECATED  // SHA256_Init: no EVP provider init (docs/receipts.md)
#include <openssl/sha.h>

#include <bit>

#include "evident/core/sha256.h"

namespace evident {
namespace {

// Largest power of two strictly less than n (n >= 2).
std::uint64_t split_point(std::uint64_t n) { return std::bit_floor(n - 1); }

Hash32 digest(std::uint8_t prefix, const void* a, std::size_t an, const void* b, std::size_t bn) {
  // The low-level API: no EVP provider initialisation (see docs/receipts.md, Performance).
  SHA256_CTX ctx;
  SHA256_Init(&ctx);
  SHA256_Update(&ctx, &prefix, 1);
  if (an) SHA256_Update(&ctx, a, an);
  if (bn) SHA256_Update(&ctx, b, bn);
  Hash32 out{};
  SHA256_Final(out.data(), &ctx);
  return out;
}

void path(const LeafSource& leaves, std::uint64_t m, std::uint64_t lo, std::uint64_t hi,
          std::vector<Hash32>& out) {
  std::uint64_t n = hi - lo;
  if (n <= 1) return;
  std::uint64_t k = split_point(n);
  if (m < k) {
    path(leaves, m, lo, lo + k, out);
    out.push_back(merkle_subtree_hash(leaves, lo + k, hi));
  } else {
    path(leaves, m - k, lo + k, hi, out);
    out.push_back(merkle_subtree_hash(leaves, lo, lo + k));
  }
}

void subproof(const LeafSource& leaves, std::uint64_t m, std::uint64_t lo, std::uint64_t hi,
              bool whole, std::vector<Hash32>& out) {
  std::uint64_t n = hi - lo;
  if (m == n) {
    if (!whole) out.push_back(merkle_subtree_hash(leaves, lo, hi));
    return;
  }
  std::uint64_t k = split_point(n);
  if (m <= k) {
    subproof(leaves, m, lo, lo + k, whole, out);
    out.push_back(merkle_subtree_hash(leaves, lo + k, hi));
  } else {
    subproof(leaves, m - k, lo + k, hi, false, out);
    out.push_back(merkle_subtree_hash(leaves, lo, lo + k));
  }
}

}  // namespace

Hash32 merkle_leaf_hash(std::string_view entry) {
  return digest(0x00, entry.data(), entry.size(), nullptr, 0);
}

Hash32 merkle_node_hash(const Hash32& left, const Hash32& right) {
  return digest(0x01, left.data(), left.size(), right.data(), right.size());
}

Hash32 merkle_empty_root() {
  Hash32 out{};
  SHA256(nullptr, 0, out.data());
  return out;
}

std::string hash_hex(const Hash32& h) { return to_hex(h); }

bool hash_from_hex(std::string_view hex, Hash32* out) {
  if (hex.size() != 64) return false;
  for (std::size_t i = 0; i < 32; ++i) {
    int v = 0;
    for (int j = 0; j < 2; ++j) {
      char c = hex[2 * i + j];
      int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
      if (d < 0) return false;
      v = v * 16 + d;
    }
    (*out)[i] = static_cast<std::uint8_t>(v);
  }
  return true;
}

Hash32 merkle_subtree_hash(const LeafSource& leaves, std::uint64_t lo, std::uint64_t hi) {
  if (hi <= lo) return merkle_empty_root();
  // Iterative: fold a compact range over the leaves (O(n) hashes, O(log n) memory).
  CompactRange r;
  for (std::uint64_t i = lo; i < hi; ++i) (void)r.append(leaves(i));
  return r.root();
}

std::vector<Hash32> merkle_inclusion_proof(const LeafSource& leaves, std::uint64_t index,
                                           std::uint64_t size) {
  std::vector<Hash32> out;
  if (index >= size) return out;
  path(leaves, index, 0, size, out);
  return out;
}

std::vector<Hash32> merkle_consistency_proof(const LeafSource& leaves, std::uint64_t old_size,
                                             std::uint64_t new_size) {
  std::vector<Hash32> out;
  if (old_size == 0 || old_size >= new_size) return out;
  subproof(leaves, old_size, 0, new_size, true, out);
  return out;
}

bool merkle_verify_inclusion(std::uint64_t index, std::uint64_t size, const Hash32& leaf_hash,
                             const std::vector<Hash32>& proof, const Hash32& root) {
  if (index >= size) return false;
  std::uint64_t fn = index;
  std::uint64_t sn = size - 1;
  Hash32 r = leaf_hash;
  for (const auto& p : proof) {
    if (sn == 0) return false;
    if ((fn & 1) || fn == sn) {
      r = merkle_node_hash(p, r);
      if (!(fn & 1)) {
        while (fn != 0 && !(fn & 1)) {
          fn >>= 1;
          sn >>= 1;
        }
      }
    } else {
      r = merkle_node_hash(r, p);
    }
    fn >>= 1;
    sn >>= 1;
  }
  return sn == 0 && r == root;
}

bool merkle_verify_consistency(std::uint64_t old_size, std::uint64_t new_size,
                               const Hash32& old_root, const Hash32& new_root,
                               const std::vector<Hash32>& proof) {
  if (old_size > new_size) return false;
  if (old_size == new_size) return proof.empty() && old_root == new_root;
  if (old_size == 0) return proof.empty();
  if (proof.empty()) return false;
  std::vector<Hash32> path_;
  if (std::has_single_bit(old_size)) path_.push_back(old_root);
  path_.insert(path_.end(), proof.begin(), proof.end());
  std::uint64_t fn = old_size - 1;
  std::uint64_t sn = new_size - 1;
  while (fn & 1) {
    fn >>= 1;
    sn >>= 1;
  }
  Hash32 fr = path_[0];
  Hash32 sr = path_[0];
  for (std::size_t i = 1; i < path_.size(); ++i) {
    const Hash32& c = path_[i];
    if (sn == 0) return false;
    if ((fn & 1) || fn == sn) {
      fr = merkle_node_hash(c, fr);
      sr = merkle_node_hash(c, sr);
      if (!(fn & 1)) {
        while (fn != 0 && !(fn & 1)) {
          fn >>= 1;
          sn >>= 1;
        }
      }
    } else {
      sr = merkle_node_hash(sr, c);
    }
    fn >>= 1;
    sn >>= 1;
  }
  return fr == old_root && sr == new_root && sn == 0;
}

std::vector<Hash32> CompactRange::append(const Hash32& leaf_hash) {
  std::vector<Hash32> proof(nodes.rbegin(), nodes.rend());
  Hash32 h = leaf_hash;
  // Merge while the new subtree equals the size of the one to its left: one merge per
  // trailing 1 bit of the old size.
  for (std::uint64_t s = size; s & 1; s >>= 1) {
    h = merkle_node_hash(nodes.back(), h);
    nodes.pop_back();
  }
  nodes.push_back(h);
  ++size;
  return proof;
}

Hash32 CompactRange::root() const {
  if (nodes.empty()) return merkle_empty_root();
  Hash32 r = nodes.back();
  for (std::size_t i = nodes.size() - 1; i-- > 0;) r = merkle_node_hash(nodes[i], r);
  return r;
}

CompactRange CompactRange::from_leaves(const LeafSource& leaves, std::uint64_t size) {
  CompactRange r;
  for (std::uint64_t i = 0; i < size; ++i) (void)r.append(leaves(i));
  return r;
}

}  // namespace evident
