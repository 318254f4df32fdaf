// RFC 9162 (Certificate Transparency v2) §2.1 Merkle trees over SHA-256: leaf and node hashes,
// tree heads, inclusion and consistency proofs (generation and verification), and the compact
// range (right edge) that makes appends O(log n). Pure functions, no I/O.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace evident {

using Hash32 = std::array<std::uint8_t, 32>;

Hash32 merkle_leaf_hash(std::string_view entry);               // SHA-256(0x00 || entry)
Hash32 merkle_node_hash(const Hash32& left, const Hash32& right);  // SHA-256(0x01 || l || r)
Hash32 merkle_empty_root();                                     // SHA-256("")
std::string hash_hex(const Hash32& h);
bool hash_from_hex(std::string_view hex, Hash32* out);  // exactly 64 lowercase hex

// Leaf hash of index i in [0, size): how proofs read the stored leaves.
using LeafSource = std::function<Hash32(std::uint64_t index)>;

// MTH(D[lo:hi]) (RFC 9162 §2.1.1) from the leaves.
Hash32 merkle_subtree_hash(const LeafSource& leaves, std::uint64_t lo, std::uint64_t hi);
// PATH(index, D[size]) (§2.1.3.1). Requires index < size.
std::vector<Hash32> merkle_inclusion_proof(const LeafSource& leaves, std::uint64_t index,
                                           std::uint64_t size);
// PROOF(old_size, D[new_size]) (§2.1.4.1). Requires 0 < old_size <= new_size; empty when equal.
std::vector<Hash32> merkle_consistency_proof(const LeafSource& leaves, std::uint64_t old_size,
                                             std::uint64_t new_size);

// §2.1.3.2. False for index >= size, a wrong-length path or a root mismatch.
bool merkle_verify_inclusion(std::uint64_t index, std::uint64_t size, const Hash32& leaf_hash,
                             const std::vector<Hash32>& proof, const Hash32& root);
// §2.1.4.2, plus the trivial cases: old_size == new_size needs an empty proof and equal roots;
// old_size == 0 needs an empty proof. False for old_size > new_size.
bool merkle_verify_consistency(std::uint64_t old_size, std::uint64_t new_size,
                               const Hash32& old_root, const Hash32& new_root,
                               const std::vector<Hash32>& proof);

// The right edge of a tree of `size` leaves: the roots of its perfect subtrees, largest (leftmost)
// first, one per set bit of size.
struct CompactRange {
  std::uint64_t size = 0;
  std::vector<Hash32> nodes;

  // Appends one leaf in O(log n). Returns PATH(size-1, D[size]) of the new leaf (the previous
  // right edge, smallest first).
  std::vector<Hash32> append(const Hash32& leaf_hash);
  Hash32 root() const;  // MTH of the whole tree (the empty root for size 0)
  // Rebuilds the range of a tree of `size` leaves from them (O(n)).
  static CompactRange from_leaves(const LeafSource& leaves, std::uint64_t size);
};

}  // namespace evident
