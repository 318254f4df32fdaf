"""An independent RFC 9162 §2.1 Merkle tree (Certificate Transparency v2; RFC 6962 hashing),
written from the RFC's recursive definitions (MTH, PATH, SUBPROOF) with hashlib only, for the
tests that check evident's run log (docs/receipts.md §9) against something that is not evident."""
import hashlib


def leaf_hash(entry: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def split(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(leaves):
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = split(len(leaves))
    return node_hash(mth(leaves[:k]), mth(leaves[k:]))


def path(m, leaves):
    if len(leaves) <= 1:
        return []
    k = split(len(leaves))
    if m < k:
        return path(m, leaves[:k]) + [mth(leaves[k:])]
    return path(m - k, leaves[k:]) + [mth(leaves[:k])]


def subproof(m, leaves, whole):
    n = len(leaves)
    if m == n:
        return [] if whole else [mth(leaves)]
    k = split(n)
    if m <= k:
        return subproof(m, leaves[:k], whole) + [mth(leaves[k:])]
    return subproof(m - k, leaves[k:], False) + [mth(leaves[:k])]


def root_from_path(index, size, leaf, proof):
    """Recomputes the root from a PATH by walking the same recursion (not §2.1.3.2's loop)."""
    def walk(m, n, proof):
        if n == 1:
            assert not proof
            return leaf
        k = split(n)
        *inner, sibling = proof
        if m < k:
            return node_hash(walk(m, k, inner), sibling)
        return node_hash(sibling, walk(m - k, n - k, inner))
    return walk(index, size, list(proof))
