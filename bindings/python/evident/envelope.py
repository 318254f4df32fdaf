"""Signed evidence in Python: Ed25519 keys, DSSE envelopes, in-toto Statements (docs/receipts.md §8).

Written from docs/receipts.md §8–§9, not from the C++ code (``engine/evidence``), so the two
verifiers cross-check each other: for the same receipt, envelope and keys, the checks
``envelope``, ``payload_type``, ``signature``, ``statement``, ``subjects``, ``log_inclusion``
have the same names and outcomes as ``evident verify --key``. Ed25519 comes from Debian's
``python3-cryptography``; everything else (strict JSON, JCS, base64, the RFC 9162 inclusion
check) is this package's own.

Library::

    keys = load_trusted_keys(["signing.pub"], trusted_keys_dir=None)   # raises KeyUsageError
    auth = verify_receipt_envelope(receipt_bytes, receipt, "receipt.dsse.json", keys)
    auth["checks"], auth["authenticated"], auth["key_id"]

    signer = load_signing_key("keys/signing.key")                       # raises KeyUsageError
    envelope = sign_statement(signer, statement)                        # a dict (DSSE)
    checks, statement, key = open_envelope(path, keys, predicate_type)  # generic DSSE checks

It is used by ``python3 -m evident.verify --key/--trusted-keys/--envelope`` and by
``evident merge`` (receipt envelopes and the signed run manifest, docs/scale.md).
"""
from __future__ import annotations

import base64
import hashlib
import os
import re
import stat
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Type

from .verify import ReceiptFormatError, _timestamp_ms, domain_digest, jcs, parse_strict

__all__ = ["KeyUsageError", "TrustedKey", "SigningKey", "load_trusted_keys", "load_public_key",
           "load_signing_key", "key_id_of", "pae", "b64decode_strict", "sign_statement",
           "envelope_bytes", "open_envelope", "verify_receipt_envelope", "receipt_frame_digests", "receipt_subjects",
           "ENVELOPE_CHECKS", "PAYLOAD_TYPE", "STATEMENT_TYPE", "SESSION_PREDICATE_TYPE",
           "TASK_PREDICATE_TYPE", "predicate_type_for"]

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
SESSION_PREDICATE_TYPE = "urn:evident:session-receipt:v3"
TASK_PREDICATE_TYPE = "urn:evident:task-receipt:v1"
TASK_SCHEMA = "evident.task-receipt/v1"
DOMAIN_TREE_HEAD = "evident/tree-head/v1"
ENVELOPE_FILE = "receipt.dsse.json"
MAX_ENVELOPE_BYTES = 1024 * 1024
MAX_KEY_FILE_BYTES = 16 * 1024
MAX_TRUSTED_KEYS = 256
MAX_PROOF_HASHES = 64
ENVELOPE_CHECKS = ("envelope", "payload_type", "signature", "statement", "subjects",
                   "log_inclusion")
LOG_OUTCOMES = ("closed", "aborted", "failed", "expired")

_B64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_RECEIPT_ID = {"session": re.compile(r"ecr-[0-9a-f]{64}"), "task": re.compile(r"etr-[0-9a-f]{64}")}


def _is_task(receipt: Any) -> bool:
    return isinstance(receipt, dict) and receipt.get("schema") == TASK_SCHEMA


def predicate_type_for(receipt: Any) -> str:
    """The predicateType a receipt is signed with: task receipts (docs/receipts.md §12) as
    urn:evident:task-receipt:v1, session receipts as urn:evident:session-receipt:v3."""
    return TASK_PREDICATE_TYPE if _is_task(receipt) else SESSION_PREDICATE_TYPE


class KeyUsageError(Exception):
    """A key option that cannot be used: ``code`` is key-unreadable, key-invalid,
    key-permissions or verify-usage (docs/errors.md)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message


def _crypto() -> Tuple[Any, Any, Type[BaseException]]:
    """(serialization, ed25519, InvalidSignature) of python3-cryptography."""
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:  # pragma: no cover - ci/packages.txt installs python3-cryptography
        raise KeyUsageError("key-invalid", "Ed25519 needs python3-cryptography, which is not "
                            "installed") from None
    return serialization, ed25519, InvalidSignature


def key_id_of(public_key: Any) -> str:
    """``"ed25519:"`` + hex SHA-256 of the key's SubjectPublicKeyInfo DER bytes."""
    serialization, _, _ = _crypto()
    der = public_key.public_bytes(serialization.Encoding.DER,
                                  serialization.PublicFormat.SubjectPublicKeyInfo)
    return "ed25519:" + hashlib.sha256(der).hexdigest()


@dataclass(frozen=True)
class TrustedKey:
    key_id: str
    public_key: Any   # cryptography Ed25519PublicKey

    def verify(self, message: bytes, signature: bytes) -> bool:
        _, _, InvalidSignature = _crypto()
        try:
            self.public_key.verify(signature, message)
            return True
        except InvalidSignature:
            return False


@dataclass(frozen=True)
class SigningKey:
    key_id: str
    private_key: Any  # cryptography Ed25519PrivateKey

    def sign(self, message: bytes) -> bytes:
        return bytes(self.private_key.sign(message))

    @property
    def public(self) -> TrustedKey:
        return TrustedKey(self.key_id, self.private_key.public_key())


def _read_key_file(path: str) -> bytes:
    try:
        st = os.stat(path)
    except OSError:
        raise KeyUsageError("key-unreadable", "the key file does not exist, is not a regular "
                            "file or is too large") from None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_KEY_FILE_BYTES:
        raise KeyUsageError("key-unreadable", "the key file does not exist, is not a regular "
                            "file or is too large")
    try:
        with open(path, "rb") as f:
            return f.read(MAX_KEY_FILE_BYTES + 1)
    except OSError:
        raise KeyUsageError("key-unreadable", "cannot read the key file") from None


def load_public_key(path: str) -> TrustedKey:
    """An SPKI PEM public key, or a PKCS#8 PEM private key whose public half is used."""
    serialization, ed25519, _ = _crypto()
    data = _read_key_file(path)
    try:
        if b"PRIVATE KEY" in data:
            key = serialization.load_pem_private_key(data, password=None)
            if not isinstance(key, ed25519.Ed25519PrivateKey):
                raise ValueError
            pub = key.public_key()
        else:
            pub = serialization.load_pem_public_key(data)
            if not isinstance(pub, ed25519.Ed25519PublicKey):
                raise ValueError
    except (ValueError, TypeError):
        raise KeyUsageError("key-invalid", "the key file is not an Ed25519 key in PEM") from None
    return TrustedKey(key_id_of(pub), pub)


def load_signing_key(path: str) -> SigningKey:
    """A PKCS#8 PEM Ed25519 private key, readable by its owner only (else key-permissions)."""
    serialization, ed25519, _ = _crypto()
    data = _read_key_file(path)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise KeyUsageError("key-invalid", "the key file is not an unencrypted PKCS#8 PEM "
                            "private key") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise KeyUsageError("key-invalid", "the private key is not an Ed25519 key")
    if os.stat(path).st_mode & 0o077:
        raise KeyUsageError("key-permissions", "the private key file is readable or writable by "
                            "group or others (chmod 600 it)")
    return SigningKey(key_id_of(key.public_key()), key)


def load_trusted_keys(key_files: Sequence[str] = (), trusted_keys_dir: Optional[str] = None
                      ) -> List[TrustedKey]:
    """Every ``--key`` file, then every ``*.pub``/``*.pem`` of ``--trusted-keys`` (sorted by
    name, at most 256). Raises KeyUsageError."""
    keys = [load_public_key(p) for p in key_files]
    if trusted_keys_dir:
        try:
            names = os.listdir(trusted_keys_dir)
        except OSError:
            raise KeyUsageError("verify-usage", "--trusted-keys is not a readable directory") \
                from None
        names = sorted(n for n in names if len(n) >= 5 and n[-4:] in (".pub", ".pem"))
        if len(names) > MAX_TRUSTED_KEYS:
            raise KeyUsageError("verify-usage", "--trusted-keys holds more than 256 key files")
        if not names:
            raise KeyUsageError("verify-usage", "--trusted-keys holds no *.pub or *.pem key")
        keys += [load_public_key(os.path.join(trusted_keys_dir, n)) for n in names]
    return keys


# ---------------------------------------------------------------- DSSE

def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body."""
    t = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


def b64decode_strict(s: str) -> Optional[bytes]:
    """RFC 4648 §4 base64, standard alphabet, ``=`` padding, zero pad bits; else None."""
    if not isinstance(s, str) or _B64.fullmatch(s) is None:
        return None
    data = base64.b64decode(s)
    return data if base64.b64encode(data).decode("ascii") == s else None


def sign_statement(key: SigningKey, statement: Dict[str, Any]) -> Dict[str, Any]:
    """A DSSE envelope with one Ed25519 signature over PAE(in-toto type, JCS(statement))."""
    payload = jcs(statement)
    sig = key.sign(pae(PAYLOAD_TYPE, payload))
    return {"payload": base64.b64encode(payload).decode("ascii"), "payloadType": PAYLOAD_TYPE,
            "signatures": [{"keyid": key.key_id, "sig": base64.b64encode(sig).decode("ascii")}]}


def envelope_bytes(envelope: Dict[str, Any]) -> bytes:
    """The file form: JCS + one newline (as the engine writes receipt.dsse.json)."""
    return jcs(envelope) + b"\n"


def _exact(v: Any, keys: Sequence[str]) -> bool:
    return isinstance(v, dict) and set(v) == set(keys) and len(v) == len(keys)


def _is_int(v: Any) -> bool:
    return type(v) is int


def _read_envelope(path: str) -> Tuple[Optional[Dict[str, Any]], Optional[bytes], str]:
    """(envelope, payload bytes, problem) per check 15."""
    try:
        st = os.stat(path)
        regular = stat.S_ISREG(st.st_mode)
    except OSError:
        regular = False
    if not regular:
        return None, None, "no envelope file beside the receipt"
    try:
        if os.path.getsize(path) > MAX_ENVELOPE_BYTES:
            raise OSError
        with open(path, "rb") as f:
            data = f.read(MAX_ENVELOPE_BYTES + 1)
        if len(data) > MAX_ENVELOPE_BYTES:
            raise OSError
    except OSError:
        return None, None, "the envelope is unreadable or larger than 1 MiB"
    try:
        env = parse_strict(data)
    except ReceiptFormatError as e:
        return None, None, "the envelope is not strict JSON: " + e.message
    if not _exact(env, ("payload", "payloadType", "signatures")):
        return None, None, "the envelope must have exactly payload, payloadType and signatures"
    if not (isinstance(env["payload"], str) and isinstance(env["payloadType"], str)
            and isinstance(env["signatures"], list)):
        return None, None, "payload and payloadType must be strings and signatures an array"
    payload = b64decode_strict(env["payload"])
    if payload is None:
        return None, None, "payload is not standard padded base64"
    if not env["signatures"]:
        return None, None, "signatures is empty"
    for s in env["signatures"]:
        if not (_exact(s, ("keyid", "sig")) and isinstance(s["keyid"], str)
                and isinstance(s["sig"], str)):
            return None, None, "each signature must be exactly {keyid, sig} strings"
    return env, payload, ""


def _check_signature(env: Dict[str, Any], payload: bytes, keys: Sequence[TrustedKey]
                     ) -> Tuple[Optional[TrustedKey], str]:
    sigs = env["signatures"]
    if len(sigs) != 1:
        return None, "the envelope must carry exactly one signature (it has %d)" % len(sigs)
    sig = b64decode_strict(sigs[0]["sig"])
    if sig is None or len(sig) != 64:
        return None, "sig is not 64 bytes of standard base64"
    message = pae(env["payloadType"], payload)
    hint = sigs[0]["keyid"]   # a hint, not trusted: the named key first, then the others
    for k in sorted(keys, key=lambda k: bool(k.key_id != hint)):
        if k.verify(message, sig):
            return k, "Ed25519 over the DSSE PAE by " + k.key_id
    return None, "the signature does not verify with any trusted key"


def open_envelope(path: str, keys: Sequence[TrustedKey], predicate_type: str
                  ) -> Tuple[List[Dict[str, Any]], Any, Optional[TrustedKey]]:
    """Checks ``envelope``, ``payload_type``, ``signature`` and the statement's ``_type`` and
    ``predicateType`` (as ``statement``, shape only). Returns (checks, statement or None,
    the verifying key or None). Any DSSE in-toto envelope signed the way receipts are."""
    checks: List[Dict[str, Any]] = []

    def add(name: str, ok: bool, detail: str) -> None:
        checks.append({"name": name, "ok": bool(ok), "detail": detail})

    env, payload, problem = _read_envelope(path)
    if env is None or payload is None:
        add("envelope", False, problem)
        for n in ENVELOPE_CHECKS[1:4]:
            add(n, False, "not checked: the envelope is unusable")
        return checks, None, None
    add("envelope", True, "a DSSE envelope")
    ok = env["payloadType"] == PAYLOAD_TYPE
    add("payload_type", ok, PAYLOAD_TYPE if ok else "payloadType is not " + PAYLOAD_TYPE)
    signer, detail = _check_signature(env, payload, keys)
    add("signature", signer is not None, detail)
    statement: Any = None
    try:
        statement = parse_strict(payload)
    except ReceiptFormatError:
        add("statement", False, "the payload is not strict JSON")
        return checks, None, signer
    if not _exact(statement, ("_type", "subject", "predicateType", "predicate")):
        problem = "the statement must have exactly _type, subject, predicateType and predicate"
    elif statement["_type"] != STATEMENT_TYPE:
        problem = "_type is not " + STATEMENT_TYPE
    elif statement["predicateType"] != predicate_type:
        problem = "predicateType is not " + predicate_type
    else:
        problem = ""
    add("statement", not problem, problem or "in-toto Statement v1")
    return checks, statement, signer


# ---------------------------------------------------------------- receipts

def receipt_frame_digests(receipt: Any) -> List[str]:
    """The distinct frame digests a receipt names (every event's frame_sha256 and
    observation.sha256), sorted; values that are not 64 lowercase hex are ignored."""
    found = set()
    if isinstance(receipt, dict):
        t = receipt.get("transcript")
        for e in t if isinstance(t, list) else []:
            if isinstance(e, dict):
                found.add(e.get("frame_sha256"))
        o = receipt.get("observation")
        if isinstance(o, dict):
            found.add(o.get("sha256"))
    return sorted(h for h in found if isinstance(h, str) and _HEX64.fullmatch(h))


def receipt_subjects(receipt: Any, receipt_sha256: str) -> List[Tuple[str, str]]:
    """Every subject a receipt's statement names, in order: receipt.json, the frames
    (``<h>.png``, sorted), then the receipt's artifacts in their order (``video.webm``);
    malformed artifacts are skipped (the receipt checks report them)."""
    out = [("receipt.json", receipt_sha256)] + [(h + ".png", h) for h in receipt_frame_digests(receipt)]
    arts = receipt.get("artifacts") if isinstance(receipt, dict) else None
    for a in arts if isinstance(arts, list) else []:
        if isinstance(a, dict) and isinstance(a.get("name"), str) and isinstance(a.get("sha256"), str) \
                and _HEX64.fullmatch(a["sha256"]):
            out.append((a["name"], a["sha256"]))
    return out


def _log_entry_problem(e: Any) -> str:
    """docs/receipts.md §9: the shape of one run-log entry ("" when well-formed)."""
    if not isinstance(e, dict):
        return "the entry is not an object"
    kind = e.get("kind")
    if kind not in ("session", "task"):
        return "kind must be session or task"
    digest_key = "job_sha256" if kind == "session" else "task_sha256"
    want = {"kind", "id", "attempt_id", digest_key, "outcome", "receipt_id", "ended_at"}
    if set(e) != want:
        return "the entry must have exactly " + ", ".join(sorted(want))
    if not (isinstance(e["id"], str) and 1 <= len(e["id"].encode("utf-8")) <= 64):
        return "id must be a string of 1..64 bytes"
    if not (isinstance(e["attempt_id"], str) and 1 <= len(e["attempt_id"].encode("utf-8")) <= 256):
        return "attempt_id must be a string of 1..256 bytes"
    if not (isinstance(e[digest_key], str) and _HEX64.fullmatch(e[digest_key])):
        return digest_key + " must be 64 lowercase hex"
    if e["outcome"] not in LOG_OUTCOMES:
        return "outcome must be closed, aborted, failed or expired"
    rid = e["receipt_id"]
    if e["outcome"] == "closed":
        if not (isinstance(rid, str) and _RECEIPT_ID[kind].fullmatch(rid)):
            return "a closed run's receipt_id must be ecr- (session) or etr- (task) + 64 hex"
    elif rid is not None:
        return "only a closed run has a receipt_id"
    if not (isinstance(e["ended_at"], str) and _timestamp_ms(e["ended_at"]) is not None):
        return "ended_at must be an RFC 3339 time with ms and Z"
    return ""


def _tree_head_problem(head: Any, key: TrustedKey) -> str:
    """docs/receipts.md §9: a signed tree head, its signature by ``key``."""
    fields = ("tree_size", "root_hash", "timestamp", "key_id", "signature")
    if not _exact(head, fields):
        return "the tree head must have exactly " + ", ".join(fields)
    if not (_is_int(head["tree_size"]) and head["tree_size"] >= 0):
        return "tree head: tree_size must be an integer >= 0"
    if not (isinstance(head["root_hash"], str) and _HEX64.fullmatch(head["root_hash"])):
        return "tree head: root_hash must be 64 lowercase hex"
    if not (isinstance(head["timestamp"], str) and _timestamp_ms(head["timestamp"]) is not None):
        return "tree head: timestamp must be RFC 3339 with ms"
    if not (isinstance(head["key_id"], str) and isinstance(head["signature"], str)):
        return "tree head: key_id and signature must be strings"
    if head["key_id"] != key.key_id:
        return "tree head: signed by another key"
    sig = b64decode_strict(head["signature"])
    if sig is None or len(sig) != 64:
        return "tree head: signature is not 64 bytes of base64"
    try:
        msg = bytes.fromhex(domain_digest(DOMAIN_TREE_HEAD, {
            "tree_size": head["tree_size"], "root_hash": head["root_hash"],
            "timestamp": head["timestamp"]}))
    except ReceiptFormatError:
        return "tree head: not canonical"
    if not key.verify(msg, sig):
        return "tree head: the signature does not verify"
    return ""


def _inclusion_ok(index: int, size: int, leaf: bytes, proof: List[bytes], root: bytes) -> bool:
    """RFC 9162 §2.1.3.2, as written there."""
    if index >= size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = hashlib.sha256(b"\x01" + p + r).digest()
            if not fn & 1:
                while fn != 0 and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = hashlib.sha256(b"\x01" + r + p).digest()
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def _log_problem(log: Any, receipt: Any, signer: Optional[TrustedKey]) -> str:
    if log is None:
        return "the envelope carries no run-log entry"
    if not (_exact(log, ("index", "tree_head", "entry", "inclusion_proof"))
            and _is_int(log["index"]) and log["index"] >= 0
            and isinstance(log["inclusion_proof"], list)
            and len(log["inclusion_proof"]) <= MAX_PROOF_HASHES):
        return "log must be exactly {index, tree_head, entry, inclusion_proof}"
    if signer is None:
        return "not checked: no trusted signature"
    p = _log_entry_problem(log["entry"])
    if p:
        return "log entry: " + p
    p = _tree_head_problem(log["tree_head"], signer)
    if p:
        return p
    entry = log["entry"]
    r = receipt if isinstance(receipt, dict) else {}
    b = r.get("binding") if isinstance(r.get("binding"), dict) else None
    # A session's entry: kind session, id session_id, the binding's job_sha256; a task's: kind
    # task, id task_id, the receipt's task_sha256 (docs/receipts.md §9, §12).
    task = _is_task(r)
    digest_ok = (entry.get("task_sha256") == r.get("task_sha256") if task
                 else b is not None and entry.get("job_sha256") == b.get("job_sha256"))
    if (entry["kind"] != ("task" if task else "session") or entry["outcome"] != "closed"
            or b is None or entry["id"] != r.get("task_id" if task else "session_id")
            or entry["attempt_id"] != b.get("attempt_id") or not digest_ok
            or entry["receipt_id"] != r.get("receipt_id")):
        return "the log entry does not describe this receipt (kind, id, attempt, job or task " \
               "digest, outcome, receipt_id)"
    proof = []
    for h in log["inclusion_proof"]:
        if not (isinstance(h, str) and _HEX64.fullmatch(h)):
            return "inclusion_proof holds a value that is not 64 lowercase hex"
        proof.append(bytes.fromhex(h))
    head = log["tree_head"]
    leaf = hashlib.sha256(b"\x00" + jcs(entry)).digest()
    if not _inclusion_ok(log["index"], head["tree_size"], leaf, proof,
                         bytes.fromhex(head["root_hash"])):
        return "the inclusion proof does not lead to the signed tree head's root"
    return ""


def verify_receipt_envelope(receipt_bytes: bytes, receipt: Any, envelope_path: str,
                            keys: Sequence[TrustedKey]) -> Dict[str, Any]:
    """Checks 15–20 of docs/receipts.md for one receipt: ``{"checks", "authenticated",
    "key_id"}``; ``authenticated`` iff every one of these checks passed (the caller combines it
    with the receipt's own checks). ``receipt_bytes`` are the receipt file's exact bytes."""
    checks, statement, signer = open_envelope(envelope_path, keys, predicate_type_for(receipt))
    if statement is None and checks[0]["ok"] is False:
        checks += [{"name": n, "ok": False, "detail": "not checked: the envelope is unusable"}
                   for n in ENVELOPE_CHECKS[4:]]
        return {"checks": checks, "authenticated": False, "key_id": None}
    st = statement if isinstance(statement, dict) else {}
    # statement: the shape above, then the predicate is about this receipt
    if checks[-1]["ok"]:
        pred = st["predicate"]
        problem = ""
        if not _exact(pred, ("receipt_id", "log")):
            problem = "the predicate must have exactly receipt_id and log"
        elif not isinstance(receipt, dict) or "receipt_id" not in receipt \
                or not _json_equal(pred["receipt_id"], receipt["receipt_id"]):
            problem = "the predicate's receipt_id is not this receipt's"
        checks[-1] = {"name": "statement", "ok": not problem,
                      "detail": problem or "in-toto Statement v1 about this receipt"}

    # subjects: receipt.json (the exact bytes), then exactly the receipt's frames, sorted
    subj = st.get("subject")
    want = receipt_subjects(receipt, hashlib.sha256(receipt_bytes).hexdigest())
    problem = ""
    if not isinstance(subj, list) or not subj:
        problem = "the statement has no subjects"
    elif len(subj) != len(want):
        problem = "the statement names %d subjects; the receipt has %d (receipt.json and its " \
                  "frames)" % (len(subj), len(want))
    else:
        for i, (s, (name, digest)) in enumerate(zip(subj, want)):
            if not (_exact(s, ("name", "digest")) and _exact(s["digest"], ("sha256",))
                    and isinstance(s["name"], str) and isinstance(s["digest"]["sha256"], str)):
                problem = "subject %d is not {name, digest: {sha256}}" % i
            elif s["name"] != name:
                problem = "subject %d has the wrong name" % i
            elif s["digest"]["sha256"] != digest:
                problem = ("receipt.json's SHA-256 differs from the signed one (the file was "
                           "changed)" if i == 0 else "subject %d has the wrong digest" % i)
            if problem:
                break
    checks.append({"name": "subjects", "ok": not problem, "detail": problem or
                   "receipt.json bytes and %d frame digests as signed" % (len(want) - 1)})

    # log_inclusion
    pred = st.get("predicate")
    log = pred.get("log") if isinstance(pred, dict) else None
    problem = _log_problem(log, receipt, signer)
    if not problem:
        assert isinstance(log, dict)  # _log_problem found none
        detail = "entry %d of a signed tree of %d" % (log["index"], log["tree_head"]["tree_size"])
    checks.append({"name": "log_inclusion", "ok": not problem, "detail": problem or detail})
    authenticated = all(c["ok"] for c in checks)
    return {"checks": checks, "authenticated": authenticated,
            "key_id": signer.key_id if signer is not None else None}


def _json_equal(a: Any, b: Any) -> bool:
    """JSON value equality (true is not 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return set(a) == set(b) and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)
