"""Independent verifier for ``evident.session-receipt/v3`` and ``/v2`` receipts and
``evident.task-receipt/v1`` task receipts (stdlib only).

Written from docs/receipts.md, not from the C++ code, so that the two implementations cross-check
each other. It has its own strict JSON parsing, its own JCS (RFC 8785) and its own checks; check
names and outcomes must agree with ``evident verify`` on every input.

Command line (same output shape and exit status as ``evident verify``)::

    python3 -m evident.verify RECEIPT [--frames DIR] [--png P] [--expect-job H] [--expect-uid N]
        [--disclosure FILE] [--prior RECEIPT] [--json]
        [--key PUB.pem]... [--trusted-keys DIR] [--envelope PATH]   (signatures: evident/envelope.py)

Library::

    report = verify_receipt(parsed_receipt, frames_dir=..., png_path=..., expect_job_sha256=...,
                            expect_uid=...)
    report["ok"], report["receipt_id"], report["checks"]  # [{"name","ok","detail"}, ...]
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import re
import sys
from types import ModuleType
from typing import IO, Any, Dict, Iterable, List, Optional, Tuple

__all__ = ["ReceiptFormatError", "jcs", "domain_digest", "parse_strict", "load_receipt_file",
           "verify_receipt", "run_verify_command", "main", "commitment_digest",
           "load_disclosure_file", "check_disclosure", "verify_task_receipt",
           "check_task_lineage"]

# The limits below: protocol/evident.json (checked equal by a test; this file stands alone).
MAX_SAFE_INTEGER = 2 ** 53 - 1
MAX_RECEIPT_FILE_BYTES = 8 * 1024 * 1024
MAX_FRAME_FILE_BYTES = 256 * 1024 * 1024
MAX_CLAIMS_CANONICAL_BYTES = 16384
# Nesting limit of a receipt document (open containers; {} is depth 1), the same as the C++
# parser's kMaxJsonDepth: claims have at most 63 levels of their own (they arrive at level 2 of a
# finish request) and sit at level 2 of the receipt. Deeper files are refused as receipt-json by
# both verifiers, before any recursive step (docs/receipts.md, docs/reliability.md); protocol/evident.json's
# json_depth_max (test_errors_and_protocol.py checks they agree).
MAX_JSON_DEPTH = 64
SCHEMA_V2 = "evident.session-receipt/v2"
SCHEMA_V3 = "evident.session-receipt/v3"
SCHEMA = SCHEMA_V3  # what new sessions write; v2 receipts still verify
DISCLOSURE_SCHEMA = "evident.disclosure/v1"
MAX_DISCLOSURE_FILE_BYTES = 64 * 1024
MAX_DISCLOSED_VALUE_BYTES = 4096

DOMAIN_STAGE_TRANSCRIPT = "evident/stage-transcript/v2"
DOMAIN_TRANSCRIPT = "evident/transcript/v2"
DOMAIN_CLAIMS = "evident/claims/v2"
DOMAIN_RECEIPT = "evident/receipt/v2"
DOMAIN_ACTION_PROJECTION = "evident/action-projection/v2"
DOMAIN_COMMITMENT = "evident/commitment/v1"

# Kept here (not imported from _protocol) so this file runs on its own, loaded by path; a test
# (bindings/python/tests/test_errors_and_protocol.py) checks it equals protocol/evident.json.
SESSION_ACTIONS = frozenset({"click", "double_click", "triple_click", "move_mouse", "drag",
                             "scroll", "type", "key", "hold_key", "wait", "screenshot"})
# Receipt v3 (also checked equal to protocol/evident.json by that test): the session kinds that
# send input, the kinds whose projection is always {"type": kind}, and the kinds whose event
# carries a salted commitment.
INPUT_ACTIONS = frozenset({"click", "double_click", "triple_click", "move_mouse", "drag",
                           "scroll", "type", "key", "hold_key", "mouse_down", "mouse_up",
                           "paste"})
CONSTANT_PROJECTION_ACTIONS = frozenset({"type", "key", "paste", "screenshot"})
COMMITTED_ACTIONS = frozenset({"type", "key", "paste", "hold_key"})
# Receipt v3 session action events may carry the outcome of the settle wait before their frame
# (checked equal to protocol/evident.json's settle_outcomes by test_receipt_v3.py).
SETTLE_OUTCOMES = frozenset({"settled", "still_loading", "fixed", "off"})
TOP_LEVEL_KEYS = frozenset({
    "schema", "session_id", "engine", "binding", "actor", "execution", "started_at", "frozen_at",
    "observed_at", "completed_at", "elapsed_ms", "action_count", "input_event_count",
    "post_observation_input_event_count", "transcript", "stage_transcript_sha256",
    "transcript_sha256", "pre_observation_sha256", "observation", "claims", "claims_sha256",
    "receipt_id"})
# Receipt v3 may bind files besides the frames (docs/receipts.md §14): today one, the session's
# video. VIDEO_MAX_BYTES is protocol/evident.json's video_max_bytes (checked equal by a test).
ARTIFACT_KEYS = frozenset({"kind", "name", "media_type", "sha256", "byte_length", "fps",
                           "start_offset_ms"})
VIDEO_ARTIFACT = {"kind": "video", "name": "video.webm", "media_type": "video/webm"}
VIDEO_MAX_BYTES = 268435456
# A bound browser workspace (docs/receipts.md §15); the viewport's bounds are the protocol's
# browser_viewport_min/max.
BROWSER_KEYS = frozenset({"workspace_id", "browser_version", "target_id", "profile_sha256", "viewport"})
BROWSER_VIEWPORT_MIN = 64
BROWSER_VIEWPORT_MAX = 8192
_PRINTABLE_ASCII = re.compile(r"[\x20-\x7e]{1,256}")
_TARGET_ID = re.compile(r"[0-9A-Za-z._-]{1,128}")
EVENT_KEYS = {
    "initial_frame": frozenset({"index", "kind", "frame_sha256"}),
    "action": frozenset({"index", "kind", "action", "projection_sha256", "status", "input",
                         "frame_sha256"}),
    "freeze": frozenset({"index", "kind", "frame_sha256"}),
    "observation": frozenset({"index", "kind", "frame_sha256", "pre_observation_sha256"}),
    "claims": frozenset({"index", "kind", "claims_sha256", "frame_sha256"}),
    # v3 only: the app's exit, recorded (a session begun with "app_exit":"record")
    "app_exit": frozenset({"index", "kind", "exit_status", "frame_sha256"}),
}
UNAUTHENTICATED_NOTE = (
    "NOT AUTHENTICATED: no --key or --trusted-keys was given. The checks above show only that the "
    "receipt is internally consistent; anyone can write a consistent receipt, so this proves "
    "nothing about who made it. Pass the signer's public key (evident key show) to authenticate.")
TIMESTAMP_KEYS = ("started_at", "frozen_at", "observed_at", "completed_at")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

_HEX64 = re.compile(r"[0-9a-f]{64}")
# A whole string literal (skipped) or one bracket: the nesting pre-scan of parse_strict.
_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.S)
_HEX64_ANY_CASE = re.compile(r"[0-9a-fA-F]{64}")
_TIMESTAMP = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})"
                        r"\.([0-9]{3})Z")


class ReceiptFormatError(Exception):
    """A value outside the allowed JSON content; ``code`` is a stable error id."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


# ---------------------------------------------------------------- canonical JSON (RFC 8785)

def _is_int(v: Any) -> bool:
    return type(v) is int  # bool is a subclass of int and is not an integer here


def _jcs_string(s: str, out: List[str]) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise ReceiptFormatError("receipt-noncanonical", "string is not valid Unicode") from None
    out.append('"')
    for ch in s:
        c = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif c < 0x20:
            short = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"}.get(c)
            out.append(short if short else "\\u%04x" % c)
        else:
            out.append(ch)
    out.append('"')


def _utf16_key(k: str) -> bytes:
    # Big-endian UTF-16 bytes compare like sequences of unsigned 16-bit code units.
    return k.encode("utf-16-be")


def _jcs(v: Any, out: List[str], depth: int = 0) -> None:
    if isinstance(v, (list, dict)) and depth >= MAX_JSON_DEPTH:
        raise ReceiptFormatError("receipt-noncanonical",
                                 "nesting deeper than %d levels" % MAX_JSON_DEPTH)
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif _is_int(v):
        if not -MAX_SAFE_INTEGER <= v <= MAX_SAFE_INTEGER:
            raise ReceiptFormatError("receipt-noncanonical", "integer outside +-(2^53-1)")
        out.append(str(v))
    elif isinstance(v, str):
        _jcs_string(v, out)
    elif isinstance(v, list):
        out.append("[")
        for i, e in enumerate(v):
            if i:
                out.append(",")
            _jcs(e, out, depth + 1)
        out.append("]")
    elif isinstance(v, dict):
        for k in v:
            if not isinstance(k, str):
                raise ReceiptFormatError("receipt-noncanonical", "object key is not a string")
        try:
            keys = sorted(v, key=_utf16_key)
        except UnicodeEncodeError:
            raise ReceiptFormatError("receipt-noncanonical", "key is not valid Unicode") from None
        out.append("{")
        for i, k in enumerate(keys):
            if i:
                out.append(",")
            _jcs_string(k, out)
            out.append(":")
            _jcs(v[k], out, depth + 1)
        out.append("}")
    else:
        raise ReceiptFormatError("receipt-noncanonical",
                                 "%s values are not allowed in canonical JSON" % type(v).__name__)


def jcs(value: Any) -> bytes:
    """RFC 8785 bytes of ``value``; raises ReceiptFormatError("receipt-noncanonical")."""
    out: List[str] = []
    _jcs(value, out)
    return "".join(out).encode("utf-8")


def domain_digest(domain: str, value: Any) -> str:
    """H(domain, value) = sha256(domain || 0x00 || JCS(value)) as lowercase hex."""
    return hashlib.sha256(domain.encode("utf-8") + b"\x00" + jcs(value)).hexdigest()


def project_action(action: Dict[str, Any]) -> Dict[str, Any]:
    """The action's projection P (secrets removed), docs/receipts.md §2."""
    t = action.get("type")
    if t in ("type", "key", "paste"):
        return {"type": t}
    if t == "hold_key":
        return {k: action[k] for k in ("type", "ms") if k in action}
    return {k: v for k, v in action.items() if k not in ("text", "key")}


# ---------------------------------------------------------------- strict parsing

def _reject_float(text: str) -> Any:
    raise ReceiptFormatError("receipt-json", "floating-point numbers are not allowed")


def _reject_constant(text: str) -> Any:
    raise ReceiptFormatError("receipt-json", "%s is not allowed" % text)


def _parse_int(text: str) -> int:
    v = int(text)
    if not -MAX_SAFE_INTEGER <= v <= MAX_SAFE_INTEGER:
        raise ReceiptFormatError("receipt-json", "integer outside +-(2^53-1)")
    return v


def _no_duplicates(pairs: List[Any]) -> Dict[str, Any]:
    obj: Dict[str, Any] = {}
    for k, v in pairs:
        if k in obj:
            raise ReceiptFormatError("receipt-json", "duplicate key")
        obj[k] = v
    return obj


def _check_unicode(v: Any) -> None:
    # json.loads accepts escaped lone surrogates ("\ud800"); a strict parser must not.
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            x.encode("utf-8")
        elif isinstance(x, list):
            stack.extend(x)
        elif isinstance(x, dict):
            for k, e in x.items():
                k.encode("utf-8")
                stack.append(e)


def _nesting_exceeds(text: str, limit: int) -> bool:
    """True when ``text`` opens more than ``limit`` containers at once (strings skipped).

    A scan without recursion, run before json.loads (whose recursion is bounded only by the
    interpreter's limit, ~1000): any text it passes nests at most ``limit`` levels.
    """
    depth = 0
    for m in _STRUCTURE.finditer(text):
        c = m.group()
        if c == "[" or c == "{":
            depth += 1
            if depth > limit:
                return True
        elif c == "]" or c == "}":
            depth -= 1
    return False


def parse_strict(data: bytes) -> Any:
    """Parses one JSON value strictly; raises ReceiptFormatError("receipt-json")."""
    if len(data) > MAX_RECEIPT_FILE_BYTES:
        raise ReceiptFormatError("receipt-json", "more than 8 MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ReceiptFormatError("receipt-json", "not valid UTF-8") from None
    if text.startswith("\ufeff"):
        text = text[1:]  # a UTF-8 byte order mark is skipped, as by nlohmann::json
    if _nesting_exceeds(text, MAX_JSON_DEPTH):
        raise ReceiptFormatError("receipt-json", "nesting deeper than %d levels" % MAX_JSON_DEPTH)
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_float=_reject_float,
                           parse_constant=_reject_constant, parse_int=_parse_int)
        _check_unicode(value)
    except ReceiptFormatError:
        raise
    except (ValueError, RecursionError) as e:
        if isinstance(e, UnicodeEncodeError):
            raise ReceiptFormatError("receipt-json", "string is not valid Unicode") from None
        raise ReceiptFormatError("receipt-json", "invalid JSON") from None
    return value


def load_receipt_file(path: str) -> Any:
    """Reads and strictly parses a receipt file.

    Raises ReceiptFormatError with "receipt-unreadable" (missing, not a regular file,
    unreadable, > 8 MiB) or "receipt-json".
    """
    if not os.path.isfile(path):
        raise ReceiptFormatError("receipt-unreadable",
                                 "receipt file does not exist or is not a regular file")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_RECEIPT_FILE_BYTES + 1)
    except OSError as e:
        raise ReceiptFormatError("receipt-unreadable", "cannot read the receipt file: %s"
                                 % e.strerror) from None
    if len(data) > MAX_RECEIPT_FILE_BYTES:
        raise ReceiptFormatError("receipt-unreadable", "receipt file is larger than 8 MiB")
    return parse_strict(data)


# ---------------------------------------------------------------- schema

def _hex64(v: Any) -> bool:
    return isinstance(v, str) and _HEX64.fullmatch(v) is not None


def _prefixed(v: Any, prefix: str, hex_len: int) -> bool:
    return (isinstance(v, str) and v.startswith(prefix)
            and re.fullmatch("[0-9a-f]{%d}" % hex_len, v[len(prefix):]) is not None)


def _int_min(v: Any, minimum: int) -> bool:
    return _is_int(v) and minimum <= v <= MAX_SAFE_INTEGER


def _str_len(v: Any, lo: int, hi: int) -> bool:
    return isinstance(v, str) and lo <= len(v.encode("utf-8", "surrogatepass")) <= hi


def _exact_keys(v: Any, keys: Iterable[str]) -> bool:
    return isinstance(v, dict) and set(v) == set(keys)


def _event_problem(e: Any, pos: int, v3: bool) -> Optional[str]:
    where = "transcript[%d]" % pos
    if not isinstance(e, dict):
        return where + " is not an object"
    kind = e.get("kind")
    if not isinstance(kind, str):
        return where + ".kind is missing"
    if not _int_min(e.get("index"), 0):
        return where + ".index is not an integer >= 0"
    if kind not in EVENT_KEYS or (kind == "app_exit" and not v3):
        return where + ".kind is not a known event kind"
    keys = EVENT_KEYS[kind]
    if kind == "action" and v3:
        if not (isinstance(e.get("action"), str) and e["action"] in SESSION_ACTIONS):
            return where + ".action is not a session action type"
        if "settle" in e:
            if not (isinstance(e["settle"], str) and e["settle"] in SETTLE_OUTCOMES):
                return where + ".settle is not a settle outcome"
            keys = keys | {"settle"}
        keys = keys | {"input_events"}
        if e["action"] in COMMITTED_ACTIONS:
            keys = keys | {"commitment"}
    if not _exact_keys(e, keys):
        return where + " has wrong keys"
    if kind == "app_exit":
        x = e["exit_status"]
        if not (x is None or (_int_min(x, 0) and x <= 255)):
            return where + ".exit_status is not null or an integer 0..255"
    for k in ("frame_sha256", "projection_sha256", "pre_observation_sha256", "claims_sha256",
              "commitment"):
        if k in e and not _hex64(e[k]):
            return "%s.%s is not 64 lowercase hex" % (where, k)
    if kind == "action":
        if not (isinstance(e["action"], str) and e["action"] in SESSION_ACTIONS):
            return where + ".action is not a session action type"
        if not (isinstance(e["status"], str) and e["status"] in ("ok", "injected")):
            return where + '.status is not "ok" or "injected"'
        if not isinstance(e["input"], bool):
            return where + ".input is not a boolean"
        if v3 and not _int_min(e["input_events"], 0):
            return where + ".input_events is not an integer >= 0"
    return None


# ---- The shape rules session and task receipts share (one place for both schema checks).

def _actor_problem(a: Any) -> Optional[str]:
    if isinstance(a, dict):
        if a.get("kind") == "local_user" and _exact_keys(a, ("kind", "uid")) and _int_min(a["uid"], 0):
            return None
        if (a.get("kind") == "in_process" and _exact_keys(a, ("kind", "uid", "pid"))
                and _int_min(a["uid"], 0) and _int_min(a["pid"], 1)):
            return None
    return "actor is not a local_user or in_process actor"


def _timestamps_counters_problem(r: Dict[str, Any], counters: Iterable[str]) -> Optional[str]:
    for k in TIMESTAMP_KEYS:
        if not isinstance(r[k], str):
            return k + " is not a string"
    for k in counters:
        if not _int_min(r[k], 0):
            return k + " is not an integer >= 0"
    return None


def _tail_problem(r: Dict[str, Any], claims_key: str, id_prefix: str) -> Optional[str]:
    """The transcript digests, the observation, the claims object (session ``claims``, task
    ``result``) with its digest, and ``receipt_id`` (``ecr-`` / ``etr-``)."""
    for k in ("stage_transcript_sha256", "transcript_sha256", "pre_observation_sha256",
              claims_key + "_sha256"):
        if not _hex64(r[k]):
            return k + " is not 64 lowercase hex"
    o = r["observation"]
    if not (_exact_keys(o, ("sha256", "byte_length", "width", "height")) and _hex64(o["sha256"])
            and _int_min(o["byte_length"], 1) and _int_min(o["width"], 1)
            and _int_min(o["height"], 1)):
        return "observation is not {sha256, byte_length>=1, width>=1, height>=1}"
    if not isinstance(r[claims_key], dict):
        return claims_key + " is not an object"
    if not _prefixed(r["receipt_id"], id_prefix, 64):
        return "receipt_id is not " + id_prefix + "<64 hex>"
    return None


def _artifacts_problem(a: Any, elapsed_ms: Any) -> Optional[str]:
    """The shape of a v3 receipt's ``artifacts``: exactly one entry, the session's video."""
    if not (isinstance(a, list) and len(a) == 1):
        return "artifacts is not an array of 1 entry"
    v = a[0]
    if not _exact_keys(v, ARTIFACT_KEYS):
        return ("artifact 0 does not have exactly kind, name, media_type, sha256, byte_length, "
                "fps, start_offset_ms")
    if any(not isinstance(v[k], str) or v[k] != want for k, want in VIDEO_ARTIFACT.items()):
        return "artifact 0 is not the video (kind video, name video.webm, media_type video/webm)"
    if not _hex64(v["sha256"]):
        return "artifact 0 sha256 is not 64 lowercase hex"
    if not (_int_min(v["byte_length"], 1) and v["byte_length"] < VIDEO_MAX_BYTES):
        return "artifact 0 byte_length is not in 1..video_max_bytes-1"
    if not (_int_min(v["fps"], 1) and v["fps"] <= 60):
        return "artifact 0 fps is not in 1..60"
    if not (_int_min(v["start_offset_ms"], 0) and _is_int(elapsed_ms)
            and v["start_offset_ms"] <= elapsed_ms):
        return "artifact 0 start_offset_ms is not in 0..elapsed_ms"
    return None


def _browser_problem(b: Any) -> Optional[str]:
    """The shape of a v3 receipt's ``browser``: the workspace the session bound at begin."""
    if not _exact_keys(b, BROWSER_KEYS):
        return ("browser does not have exactly workspace_id, browser_version, target_id, "
                "profile_sha256, viewport")
    if not _prefixed(b["workspace_id"], "browser-", 32):
        return "browser.workspace_id is not browser-<32 hex>"
    v = b["browser_version"]
    if not (isinstance(v, str) and _PRINTABLE_ASCII.fullmatch(v)):
        return "browser.browser_version is not 1..256 printable ASCII"
    t = b["target_id"]
    if not (isinstance(t, str) and _TARGET_ID.fullmatch(t)):
        return "browser.target_id is not 1..128 of [0-9A-Za-z._-]"
    if not _hex64(b["profile_sha256"]):
        return "browser.profile_sha256 is not 64 lowercase hex"
    vp = b["viewport"]
    if not (_exact_keys(vp, ("width", "height"))
            and all(_int_min(vp[k], BROWSER_VIEWPORT_MIN) and vp[k] <= BROWSER_VIEWPORT_MAX
                    for k in ("width", "height"))):
        return "browser.viewport is not {width,height} each in browser_viewport_min..browser_viewport_max"
    return None


def _artifact_files_problem(frames_dir: str, artifacts: List[Dict[str, Any]]) -> Optional[str]:
    """Each artifact is DIR/<name>, a regular file of byte_length bytes hashing to its sha256."""
    for a in artifacts:
        path = os.path.join(frames_dir, a["name"])
        if os.path.islink(path) or not os.path.isfile(path):
            return "missing artifact %s" % a["name"]
        if os.path.getsize(path) != a["byte_length"]:
            return "artifact %s byte_length differs" % a["name"]
        h = hashlib.sha256()
        try:
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
        except OSError:
            return "unreadable artifact %s" % a["name"]
        if h.hexdigest() != a["sha256"]:
            return "artifact %s does not hash to its sha256" % a["name"]
    return None


def _schema_problem(r: Any) -> Optional[str]:
    if not isinstance(r, dict):
        return "receipt is not a JSON object"
    with_artifacts = "artifacts" in r
    with_browser = "browser" in r
    optional = {k for k, present in (("artifacts", with_artifacts), ("browser", with_browser)) if present}
    if set(r) != TOP_LEVEL_KEYS | optional:
        return "receipt does not have exactly the top-level keys of a session receipt"
    if r["schema"] not in (SCHEMA_V3, SCHEMA_V2) or not isinstance(r["schema"], str):
        return 'schema is not "evident.session-receipt/v3" or "evident.session-receipt/v2"'
    v3 = r["schema"] == SCHEMA_V3
    if with_artifacts:
        if not v3:
            return "artifacts need schema evident.session-receipt/v3"
        p = _artifacts_problem(r["artifacts"], r["elapsed_ms"])
        if p:
            return p
    if with_browser:
        if not v3:
            return "browser needs schema evident.session-receipt/v3"
        p = _browser_problem(r["browser"])
        if p:
            return p
    if not _prefixed(r["session_id"], "ses-", 32):
        return "session_id is not ses-<32 hex>"
    eng = r["engine"]
    if v3:
        if not (_exact_keys(eng, ("name", "version", "host_id")) and eng["name"] == "evident"
                and _str_len(eng["version"], 1, 64) and _prefixed(eng["host_id"], "hst-", 32)):
            return "engine is not {name: evident, version, host_id}"
    elif not (_exact_keys(eng, ("name", "version")) and eng["name"] == "evident"
              and _str_len(eng["version"], 1, 64)):
        return "engine is not {name: evident, version}"
    b = r["binding"]
    if not _exact_keys(b, ("display_id", "display_name", "generation", "app_id", "app_pid",
                           "app_argv_sha256", "attempt_id", "job_sha256")):
        return "binding does not have exactly its eight keys"
    if not _int_min(b["display_id"], 0):
        return "binding.display_id is not an integer >= 0"
    if not _str_len(b["display_name"], 1, 64):
        return "binding.display_name is not 1..64 bytes"
    if not _prefixed(b["generation"], "gen-", 32):
        return "binding.generation is not gen-<32 hex>"
    if not _prefixed(b["app_id"], "app-", 32):
        return "binding.app_id is not app-<32 hex>"
    if not _int_min(b["app_pid"], 1):
        return "binding.app_pid is not an integer >= 1"
    if not _hex64(b["app_argv_sha256"]):
        return "binding.app_argv_sha256 is not 64 lowercase hex"
    if not _str_len(b["attempt_id"], 1, 256):
        return "binding.attempt_id is not 1..256 bytes"
    if not _hex64(b["job_sha256"]):
        return "binding.job_sha256 is not 64 lowercase hex"
    p = _actor_problem(r["actor"])
    if p:
        return p
    ex = r["execution"]
    if not (_exact_keys(ex, ("kind", "internal_model_calls", "claims_authority"))
            and ex["kind"] == "external-actions" and _is_int(ex["internal_model_calls"])
            and ex["internal_model_calls"] == 0 and ex["claims_authority"] == "external-caller"):
        return "execution is not the external-actions constant"
    p = _timestamps_counters_problem(r, ("elapsed_ms", "action_count", "input_event_count",
                                         "post_observation_input_event_count"))
    if p:
        return p
    t = r["transcript"]
    if not (isinstance(t, list) and 4 <= len(t) <= (69 if v3 else 68)):  # v3: one app_exit more
        return "transcript is not an array of %s events" % ("4..69" if v3 else "4..68")
    for i, e in enumerate(t):
        p = _event_problem(e, i, v3)
        if p:
            return p
    return _tail_problem(r, "claims", "ecr-")


# ---------------------------------------------------------------- checks

def _timestamp_ms(s: str) -> Optional[int]:
    m = _TIMESTAMP.fullmatch(s)
    if not m:
        return None
    y, mo, d, h, mi, sec, ms = (int(x) for x in m.groups())
    if y < 1970:
        return None
    try:
        dt = datetime.datetime(y, mo, d, h, mi, sec, tzinfo=datetime.timezone.utc)
    except ValueError:
        return None
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return (dt - epoch) // datetime.timedelta(seconds=1) * 1000 + ms


def _file_sha256(path: str) -> Optional[str]:
    if not os.path.isfile(path):
        return None
    try:
        if os.path.getsize(path) > MAX_FRAME_FILE_BYTES:
            return None
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _png_size(path: str) -> Optional[Tuple[int, int]]:
    with open(path, "rb") as f:
        head = f.read(33)
    if len(head) < 33 or head[:8] != PNG_SIGNATURE:
        return None
    if int.from_bytes(head[8:12], "big") != 13 or head[12:16] != b"IHDR":
        return None
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def _frames_problem(frames_dir: str, wanted: List[str], observation: Dict[str, Any]) -> Optional[str]:
    """Every wanted frame is DIR/<sha>.png hashing to its name; the observed one matches the
    observation's byte_length and IHDR size."""
    for h in wanted:
        path = os.path.join(frames_dir, h + ".png")
        if not os.path.isfile(path):
            return "missing frame %s.png" % h
        if _file_sha256(path) != h:
            return "frame %s.png does not hash to its name" % h
        if h == observation["sha256"]:
            if os.path.getsize(path) != observation["byte_length"]:
                return "observed frame byte_length differs"
            ihdr = _png_size(path)
            if ihdr is None:
                return "observed frame is not a PNG with IHDR"
            if ihdr != (observation["width"], observation["height"]):
                return "observed frame width/height differ from its IHDR"
    return None


def verify_receipt(receipt: Any, *, frames_dir: Optional[str] = None,
                   png_path: Optional[str] = None, expect_job_sha256: Optional[str] = None,
                   expect_uid: Optional[int] = None,
                   disclosure: Optional[Dict[str, Any]] = None,
                   prior: Any = None) -> Dict[str, Any]:
    """Runs every applicable check (docs/receipts.md §4) on a parsed receipt; a task receipt
    (``evident.task-receipt/v1``) gets the task checks (§12, verify_task_receipt).

    ``disclosure``: a parsed, well-formed disclosure (load_disclosure_file) to check.
    ``prior``: the parsed ``--prior`` receipt (task receipts only).

    Returns {"ok": bool, "receipt_id": str|None, "checks": [{"name","ok","detail"}, ...]}.
    Never raises for a bad receipt: problems are failed checks.
    """
    if isinstance(receipt, dict) and receipt.get("schema") == TASK_SCHEMA:
        return verify_task_receipt(receipt, frames_dir=frames_dir, png_path=png_path,
                                   expect_job_sha256=expect_job_sha256, expect_uid=expect_uid,
                                   disclosure=disclosure, prior=prior)
    checks: List[Dict[str, Any]] = []
    rid = receipt.get("receipt_id") if isinstance(receipt, dict) else None
    report = {"ok": False, "receipt_id": rid if isinstance(rid, str) else None, "checks": checks}

    def add(name: str, ok: bool, detail: str) -> None:
        checks.append({"name": name, "ok": bool(ok), "detail": detail})

    problem = _schema_problem(receipt)
    if problem:
        add("schema", False, problem)
        return report
    r = receipt
    v3 = r["schema"] == SCHEMA_V3
    add("schema", True, r["schema"])
    t = r["transcript"]

    def digest(domain: str, v: Any) -> Optional[str]:
        try:
            return domain_digest(domain, v)
        except ReceiptFormatError:
            return None

    body = {k: v for k, v in r.items() if k != "receipt_id"}
    d = digest(DOMAIN_RECEIPT, body)
    ok = d is not None and r["receipt_id"] == "ecr-" + d
    add("receipt_id", ok, "matches" if ok else "recomputed ecr-%s" % (d or "?")[:12])

    d = digest(DOMAIN_TRANSCRIPT, t)
    ok = d is not None and r["transcript_sha256"] == d
    add("transcript_sha256", ok, "matches" if ok else "recomputed %s" % (d or "?")[:12])

    freeze = next((i for i, e in enumerate(t) if e["kind"] == "freeze"), None)
    if freeze is None:
        add("stage_transcript_sha256", False, "no freeze event")
    else:
        d = digest(DOMAIN_STAGE_TRANSCRIPT, t[:freeze + 1])
        ok = d is not None and r["stage_transcript_sha256"] == d
        add("stage_transcript_sha256", ok, "matches" if ok else "recomputed %s" % (d or "?")[:12])

    detail = None
    try:
        size = len(jcs(r["claims"]))
        c = domain_digest(DOMAIN_CLAIMS, r["claims"])
    except ReceiptFormatError:
        detail = "claims are not canonicalizable"
    else:
        if size > MAX_CLAIMS_CANONICAL_BYTES:
            detail = "claims are %d bytes canonical (limit 16384)" % size
        elif r["claims_sha256"] != c:
            detail = "claims_sha256 differs from recomputed %s" % c[:12]
        else:
            bad = [i for i, e in enumerate(t) if e["kind"] == "claims" and e["claims_sha256"] != c]
            if bad:
                detail = "transcript[%d].claims_sha256 differs" % bad[0]
    add("claims_sha256", detail is None, detail or "matches")

    detail = None
    for i, e in enumerate(t):
        if e["index"] != i:
            detail = "transcript[%d].index is not %d" % (i, i)
            break
    if detail is None:
        kinds = [e["kind"] for e in t]
        # At most one app_exit, right before the freeze or the observation; the order is checked
        # on the kinds without it.
        exits = [i for i, k in enumerate(kinds) if k == "app_exit"]
        order = [k for k in kinds if k != "app_exit"]
        n = len(order)
        expected = ["initial_frame"] + ["action"] * (n - 4) + ["freeze", "observation", "claims"]
        if order != expected:
            detail = "kinds are not initial_frame, action*, freeze, observation, claims"
        elif len(exits) > 1:
            detail = "more than one app_exit event"
        elif exits and not (exits[0] >= 1 and exits[0] + 1 < len(kinds)
                            and kinds[exits[0] + 1] in ("freeze", "observation")):
            detail = "app_exit is not right before the freeze or the observation"
    add("event_order", detail is None, detail or "%d events in order" % len(t))

    actions = [e for e in t if e["kind"] == "action"]
    with_input = sum(1 for e in actions if e["input"] is True)
    detail = None
    if r["action_count"] != len(actions):
        detail = "action_count %d but %d action events" % (r["action_count"], len(actions))
    elif v3:
        total = sum(e["input_events"] for e in actions)
        if r["input_event_count"] != total:
            detail = "input_event_count %d is not the sum of input_events (%d)" % (
                r["input_event_count"], total)
    elif r["input_event_count"] < with_input:
        detail = "input_event_count %d < %d actions with input" % (r["input_event_count"],
                                                                   with_input)
    elif with_input == 0 and r["input_event_count"] != 0:
        detail = "input_event_count is not 0 although no action had input"
    add("counters", detail is None, detail or "consistent with events")

    if v3:
        detail = None
        for i, e in enumerate(t):
            if e["kind"] != "action":
                continue
            if e["input"] != (e["input_events"] > 0):
                detail = "transcript[%d].input disagrees with its input_events" % i
                break
            if e["input_events"] > 0 and e["action"] not in INPUT_ACTIONS:
                detail = "transcript[%d] is of a kind that sends no input" % i
                break
        add("input_flags", detail is None, detail or "agree with input_events and kinds")

        detail = None
        for i, e in enumerate(t):
            if e["kind"] == "action" and e["action"] in CONSTANT_PROJECTION_ACTIONS:
                if e["projection_sha256"] != domain_digest(DOMAIN_ACTION_PROJECTION,
                                                           {"type": e["action"]}):
                    detail = ("transcript[%d].projection_sha256 is not the constant projection "
                              "of its kind" % i)
                    break
        add("projections", detail is None, detail or "constant projections recompute")

    ok = r["post_observation_input_event_count"] == 0
    add("post_observation_input_event_count", ok, "0" if ok else "not 0")

    detail = None
    prev = -1
    for k in TIMESTAMP_KEYS:
        ms = _timestamp_ms(r[k])
        if ms is None or ms > 253402300799999:
            detail = "%s is not YYYY-MM-DDTHH:MM:SS.mmmZ (1970..9999)" % k
            break
        if ms < prev:
            detail = "%s is earlier than the previous timestamp" % k
            break
        prev = ms
    add("timestamps", detail is None, detail or "well-formed and ordered")

    obs = r["observation"]["sha256"]
    detail = None
    n_obs = n_claims = 0
    for e in t:
        if e["kind"] == "observation":
            n_obs += 1
            if e["frame_sha256"] != obs:
                detail = "observation event frame differs from observation"
            elif e["pre_observation_sha256"] != r["pre_observation_sha256"]:
                detail = "observation event pre_observation_sha256 differs"
        elif e["kind"] == "claims":
            n_claims += 1
            if e["frame_sha256"] != obs:
                detail = "claims event frame differs from observation"
        if detail:
            break
    if detail is None and (n_obs == 0 or n_claims == 0):
        detail = "no observation or no claims event"
    add("observation_digest", detail is None, detail or "matches")

    if frames_dir:
        wanted = sorted({e["frame_sha256"] for e in t} | {obs})
        detail = _frames_problem(frames_dir, wanted, r["observation"])
        add("frames", detail is None, detail or "%d frames present and hashed" % len(wanted))
        if "artifacts" in r:
            detail = _artifact_files_problem(frames_dir, r["artifacts"])
            add("artifacts", detail is None,
                detail or "%d artifact present and hashed" % len(r["artifacts"]))

    if png_path:
        h = _file_sha256(png_path)
        if h is None:
            add("png", False, "cannot read the --png file")
        else:
            add("png", h == obs, "is the observed frame" if h == obs
                else "the --png file is not the observed frame")

    if expect_job_sha256:
        ok = r["binding"]["job_sha256"] == expect_job_sha256.lower()
        add("expect_job", ok, "binding.job_sha256 matches" if ok else "binding.job_sha256 differs")

    if expect_uid is not None:
        ok = r["actor"]["uid"] == expect_uid
        add("expect_uid", ok, "actor.uid matches" if ok else "actor.uid differs")

    if disclosure is not None:
        checks.extend(check_disclosure(r, disclosure))

    report["ok"] = all(c["ok"] for c in checks)
    return report


# ---------------------------------------------------------------- task receipts (docs/receipts.md §12)

TASK_SCHEMA = "evident.task-receipt/v1"
DOMAIN_TASK_RECEIPT = "evident/task-receipt/v1"
DOMAIN_TASK_STAGE_TRANSCRIPT = "evident/task-stage-transcript/v1"
DOMAIN_TASK_TRANSCRIPT = "evident/task-transcript/v1"
DOMAIN_TASK_RESULT = "evident/task-result/v1"
DOMAIN_TASK_CALL_IDS = "evident/task-call-ids/v1"
# The session kinds plus zoom (tasks may zoom; paste and mouse_down/up are refused everywhere).
TASK_ACTIONS = SESSION_ACTIONS | {"zoom"}
# Each mode's limits (protocol/evident.json limits task_*, actions_per_batch_max,
# actions_per_session_max; checked equal by a test).
TASK_LIMITS = {
    "stage": {"max_turns": 12, "deadline_ms": 180000, "input_sealed": False,
              "max_actions_per_turn": 16, "max_actions": 64},
    "attest": {"max_turns": 2, "deadline_ms": 45000, "input_sealed": True,
               "max_actions_per_turn": 16, "max_actions": 64},
}
TASK_CALLS_PER_TURN_MAX = 16
TASK_MIN_EVENTS = 5      # initial_frame, one turn, freeze, observation, result
TASK_MAX_EVENTS = 80     # + 12 turns + 64 actions
TASK_TOP_LEVEL_KEYS = frozenset({
    "schema", "task_id", "mode", "engine", "binding", "actor", "policy", "task_sha256",
    "execution", "limits", "started_at", "frozen_at", "observed_at", "completed_at",
    "elapsed_ms", "turn_count", "call_count", "refused_call_count", "invalid_result_count",
    "safety_check_count", "action_count", "input_event_count",
    "post_observation_input_event_count", "prior_receipt_id", "prior_transcript_sha256",
    "prior_transcript_event_count", "prior_completed_at", "transcript",
    "stage_transcript_sha256", "transcript_sha256", "pre_observation_sha256", "observation",
    "result", "result_sha256", "receipt_id"})
TASK_COUNTERS = ("elapsed_ms", "turn_count", "call_count", "refused_call_count",
                 "invalid_result_count", "safety_check_count", "action_count",
                 "input_event_count", "post_observation_input_event_count")
_NATIVE_ACTION = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_TASK_FRAME_EVENTS = {
    "initial_frame": ("frame_sha256",),
    "freeze": ("frame_sha256",),
    "observation": ("frame_sha256", "pre_observation_sha256"),
    "result": ("result_sha256", "frame_sha256"),
}
_TASK_TURN_KEYS = frozenset({"index", "kind", "turn", "call_count", "call_ids_sha256",
                             "native_actions", "model_image_sha256", "frame_sha256"})


def _task_event_problem(e: Any, pos: int) -> Optional[str]:
    where = "transcript[%d]" % pos
    if not isinstance(e, dict):
        return where + " is not an object"
    kind = e.get("kind")
    if not isinstance(kind, str):
        return where + ".kind is missing"
    if not _int_min(e.get("index"), 0):
        return where + ".index is not an integer >= 0"
    if kind in _TASK_FRAME_EVENTS:
        hex_keys = _TASK_FRAME_EVENTS[kind]
        if not _exact_keys(e, ("index", "kind") + hex_keys):
            return where + " has wrong keys"
        for k in hex_keys:
            if not _hex64(e[k]):
                return "%s.%s is not 64 lowercase hex" % (where, k)
        return None
    if kind == "turn":
        if not _exact_keys(e, _TASK_TURN_KEYS):
            return where + " has wrong keys"
        if not _int_min(e["turn"], 1):
            return where + ".turn is not an integer >= 1"
        if not _int_min(e["call_count"], 0):
            return where + ".call_count is not an integer >= 0"
        if not _hex64(e["call_ids_sha256"]):
            return where + ".call_ids_sha256 is not 64 lowercase hex"
        n = e["native_actions"]
        if not (isinstance(n, list) and len(n) <= 256):
            return where + ".native_actions is not an array of at most 256 names"
        if not all(isinstance(x, str) and _NATIVE_ACTION.fullmatch(x) for x in n):
            return where + ".native_actions holds a value that is not an action name"
        for k in ("model_image_sha256", "frame_sha256"):
            if not _hex64(e[k]):
                return "%s.%s is not 64 lowercase hex" % (where, k)
        return None
    if kind == "action":
        a = e.get("action")
        if not (isinstance(a, str) and a in TASK_ACTIONS):
            return where + ".action is not a task action type"
        keys = {"index", "kind", "action", "projection_sha256", "status", "input",
                "input_events", "frame_sha256"}
        if a in COMMITTED_ACTIONS:
            keys.add("commitment")
        if not _exact_keys(e, keys):
            return where + " has wrong keys"
        if "commitment" in e and not _hex64(e["commitment"]):
            return where + ".commitment is not 64 lowercase hex"
        if not _int_min(e["input_events"], 0):
            return where + ".input_events is not an integer >= 0"
        if not _hex64(e["projection_sha256"]):
            return where + ".projection_sha256 is not 64 lowercase hex"
        if not (isinstance(e["status"], str) and e["status"] in ("ok", "injected")):
            return where + '.status is not "ok" or "injected"'
        if not isinstance(e["input"], bool):
            return where + ".input is not a boolean"
        if not _hex64(e["frame_sha256"]):
            return where + ".frame_sha256 is not 64 lowercase hex"
        return None
    return where + ".kind is not a known task event kind"


def _task_schema_problem(r: Any) -> Optional[str]:
    if not isinstance(r, dict):
        return "receipt is not a JSON object"
    if set(r) != TASK_TOP_LEVEL_KEYS:
        return "receipt does not have exactly the top-level keys of a task receipt"
    if r["schema"] != TASK_SCHEMA:
        return 'schema is not "evident.task-receipt/v1"'
    if not _prefixed(r["task_id"], "tsk-", 32):
        return "task_id is not tsk-<32 hex>"
    if r["mode"] not in ("stage", "attest") or not isinstance(r["mode"], str):
        return 'mode is not "stage" or "attest"'
    eng = r["engine"]
    if not (_exact_keys(eng, ("name", "version", "host_id")) and eng["name"] == "evident"
            and _str_len(eng["version"], 1, 64) and _prefixed(eng["host_id"], "hst-", 32)):
        return "engine is not {name: evident, version, host_id}"
    b = r["binding"]
    if not _exact_keys(b, ("display_id", "display_name", "generation", "app_id", "app_pid",
                           "app_argv_sha256", "attempt_id")):
        return "binding does not have exactly its seven keys"
    if not (_int_min(b["display_id"], 0) and _str_len(b["display_name"], 1, 64)
            and _prefixed(b["generation"], "gen-", 32) and _prefixed(b["app_id"], "app-", 32)
            and _int_min(b["app_pid"], 1) and _hex64(b["app_argv_sha256"])
            and _str_len(b["attempt_id"], 1, 256)):
        return "binding has a malformed member"
    p = _actor_problem(r["actor"])
    if p:
        return p
    pol = r["policy"]
    if not (_exact_keys(pol, ("adapter", "provider", "model"))
            and all(_str_len(pol[k], 1, 256) for k in ("adapter", "provider", "model"))):
        return "policy is not {adapter, provider, model} of 1..256 bytes each"
    if not _hex64(r["task_sha256"]):
        return "task_sha256 is not 64 lowercase hex"
    ex = r["execution"]
    if not (_exact_keys(ex, ("kind", "internal_model_calls", "claims_authority"))
            and ex["kind"] == "caller-policy" and _is_int(ex["internal_model_calls"])
            and ex["internal_model_calls"] == 0 and ex["claims_authority"] == "caller-policy"):
        return "execution is not the caller-policy constant"
    lim = r["limits"]
    if not (_exact_keys(lim, ("max_turns", "deadline_ms", "input_sealed", "max_actions_per_turn",
                              "max_actions"))
            and all(_int_min(lim[k], 0) for k in ("max_turns", "deadline_ms",
                                                  "max_actions_per_turn", "max_actions"))
            and isinstance(lim["input_sealed"], bool)):
        return "limits is not {max_turns, deadline_ms, input_sealed, max_actions_per_turn, max_actions}"
    p = _timestamps_counters_problem(r, TASK_COUNTERS)
    if p:
        return p
    if r["prior_receipt_id"] is not None and not _prefixed(r["prior_receipt_id"], "etr-", 64):
        return "prior_receipt_id is not null or etr-<64 hex>"
    if r["prior_transcript_sha256"] is not None and not _hex64(r["prior_transcript_sha256"]):
        return "prior_transcript_sha256 is not null or 64 lowercase hex"
    if r["prior_transcript_event_count"] is not None and not _int_min(
            r["prior_transcript_event_count"], 0):
        return "prior_transcript_event_count is not null or an integer >= 0"
    if r["prior_completed_at"] is not None and not isinstance(r["prior_completed_at"], str):
        return "prior_completed_at is not null or a string"
    t = r["transcript"]
    if not (isinstance(t, list) and TASK_MIN_EVENTS <= len(t) <= TASK_MAX_EVENTS):
        return "transcript is not an array of 5..80 events"
    for i, e in enumerate(t):
        prob = _task_event_problem(e, i)
        if prob:
            return prob
    return _tail_problem(r, "result", "etr-")


def verify_task_receipt(receipt: Any, *, frames_dir: Optional[str] = None,
                        png_path: Optional[str] = None, expect_job_sha256: Optional[str] = None,
                        expect_uid: Optional[int] = None,
                        disclosure: Optional[Dict[str, Any]] = None,
                        prior: Any = None) -> Dict[str, Any]:
    """The checks of an ``evident.task-receipt/v1`` receipt (docs/receipts.md §12), in order.
    ``prior``: the parsed ``--prior`` receipt (the stage receipt an attest receipt names)."""
    checks: List[Dict[str, Any]] = []
    rid = receipt.get("receipt_id") if isinstance(receipt, dict) else None
    report = {"ok": False, "receipt_id": rid if isinstance(rid, str) else None, "checks": checks}

    def add(name: str, detail: Optional[str], ok_detail: str) -> None:
        checks.append({"name": name, "ok": detail is None, "detail": detail or ok_detail})

    problem = _task_schema_problem(receipt)
    if problem:
        add("schema", problem, "")
        return report
    r = receipt
    add("schema", None, TASK_SCHEMA)
    t = r["transcript"]
    kinds = [e["kind"] for e in t]
    attest = r["mode"] == "attest"

    def digest(domain: str, v: Any) -> Optional[str]:
        try:
            return domain_digest(domain, v)
        except ReceiptFormatError:
            return None

    d = digest(DOMAIN_TASK_RECEIPT, {k: v for k, v in r.items() if k != "receipt_id"})
    add("receipt_id", None if d is not None and r["receipt_id"] == "etr-" + d
        else "recomputed etr-%s" % (d or "?")[:12], "matches")
    d = digest(DOMAIN_TASK_TRANSCRIPT, {"prior_transcript_sha256": r["prior_transcript_sha256"],
                                        "events": t})
    add("transcript_sha256", None if d is not None and r["transcript_sha256"] == d
        else "recomputed %s" % (d or "?")[:12], "matches")
    freeze = next((i for i, k in enumerate(kinds) if k == "freeze"), None)
    if freeze is None:
        add("stage_transcript_sha256", "no freeze event", "")
    else:
        d = digest(DOMAIN_TASK_STAGE_TRANSCRIPT, t[:freeze + 1])
        add("stage_transcript_sha256", None if d is not None and r["stage_transcript_sha256"] == d
            else "recomputed %s" % (d or "?")[:12], "matches")

    detail: Optional[str] = None
    try:
        size = len(jcs(r["result"]))
        c = domain_digest(DOMAIN_TASK_RESULT, r["result"])
    except ReceiptFormatError:
        detail = "the result is not canonicalizable"
    else:
        if size > MAX_CLAIMS_CANONICAL_BYTES:
            detail = "the result is %d bytes canonical (limit 16384)" % size
        elif r["result_sha256"] != c:
            detail = "result_sha256 differs from recomputed %s" % c[:12]
        else:
            bad = [i for i, e in enumerate(t) if e["kind"] == "result" and e["result_sha256"] != c]
            if bad:
                detail = "transcript[%d].result_sha256 differs" % bad[0]
    add("result_sha256", detail, "matches")

    # event_order: initial_frame, (turn action*)+, freeze, observation, result
    detail = next(("transcript[%d].index is not %d" % (i, i)
                   for i, e in enumerate(t) if e["index"] != i), None)
    if detail is None:
        shape = re.fullmatch(r"I(TA*)+FOR", "".join(
            {"initial_frame": "I", "turn": "T", "action": "A", "freeze": "F",
             "observation": "O", "result": "R"}[k] for k in kinds))
        if not shape:
            detail = "kinds are not initial_frame, (turn, action*)+, freeze, observation, result"
    add("event_order", detail, "%d events in order" % len(t))

    # turns
    turns = [(i, e) for i, e in enumerate(t) if e["kind"] == "turn"]
    per_turn = r["limits"]["max_actions_per_turn"]
    empty_ids = domain_digest(DOMAIN_TASK_CALL_IDS, [])
    detail = None
    for n, (i, e) in enumerate(turns, start=1):
        acts = 0
        j = i + 1
        while j < len(t) and kinds[j] == "action":
            acts += 1
            j += 1
        where = "transcript[%d]" % i
        cc = e["call_count"]
        if e["turn"] != n:
            detail = "%s.turn is not %d" % (where, n)
        elif cc > TASK_CALLS_PER_TURN_MAX:
            detail = where + " has more than 16 calls"
        elif cc == 0 and (acts or e["native_actions"] or e["call_ids_sha256"] != empty_ids):
            detail = where + " is a final answer but has actions, native actions or call ids"
        elif cc > 0 and not 1 <= acts <= per_turn:
            detail = "%s has %d action events" % (where, acts)
        elif cc > 0 and not e["native_actions"]:
            detail = where + " has calls but no native actions"
        if detail:
            break
    if detail is None and turns and turns[-1][1]["call_count"] != 0:
        detail = "the last turn is not a final answer"
    add("turns", detail, "%d turns, contiguous" % len(turns))

    # turn_frames
    detail = None
    issued = set()
    for i, e in enumerate(t):
        if e["kind"] == "turn" and e["frame_sha256"] not in issued:
            detail = "transcript[%d].frame_sha256 is not an earlier issued frame" % i
            break
        if e["kind"] in ("initial_frame", "action"):
            issued.add(e["frame_sha256"])
    add("turn_frames", detail, "every turn was shown an earlier issued frame")

    # counters
    actions = [e for e in t if e["kind"] == "action"]
    answers = sum(1 for _, e in turns if e["call_count"] == 0)
    detail = None
    if r["action_count"] != len(actions):
        detail = "action_count %d but %d action events" % (r["action_count"], len(actions))
    elif r["input_event_count"] != sum(e["input_events"] for e in actions):
        detail = "input_event_count is not the sum of input_events"
    elif r["turn_count"] != len(turns):
        detail = "turn_count %d but %d turn events" % (r["turn_count"], len(turns))
    elif r["call_count"] != sum(e["call_count"] for _, e in turns):
        detail = "call_count is not the sum of the turns' call_count"
    elif r["invalid_result_count"] != answers - 1:
        detail = "invalid_result_count is not the final answers before the valid one"
    elif r["refused_call_count"] != 0 or r["safety_check_count"] != 0:
        detail = "refused_call_count and safety_check_count are not 0"
    add("counters", detail, "consistent with events")

    detail = None
    for i, e in enumerate(t):
        if e["kind"] != "action":
            continue
        if e["input"] != (e["input_events"] > 0):
            detail = "transcript[%d].input disagrees with its input_events" % i
            break
        if e["input_events"] > 0 and e["action"] not in INPUT_ACTIONS:
            detail = "transcript[%d] is of a kind that sends no input" % i
            break
    add("input_flags", detail, "agree with input_events and kinds")
    detail = None
    for i, e in enumerate(t):
        if (e["kind"] == "action" and e["action"] in CONSTANT_PROJECTION_ACTIONS
                and e["projection_sha256"] != domain_digest(DOMAIN_ACTION_PROJECTION,
                                                            {"type": e["action"]})):
            detail = "transcript[%d].projection_sha256 is not the constant projection" % i
            break
    add("projections", detail, "constant projections recompute")

    # limits
    want = TASK_LIMITS[r["mode"]]
    detail = None
    if r["limits"] != want:
        detail = "limits are not the %s limits" % r["mode"]
    elif len(turns) > want["max_turns"]:
        detail = "%d turns exceed max_turns" % len(turns)
    elif r["action_count"] > want["max_actions"]:
        detail = "action_count exceeds max_actions"
    add("limits", detail, "the %s limits, kept" % r["mode"])

    # attest_input
    detail = None
    if attest:
        for i, e in enumerate(t):
            if e["kind"] != "action":
                continue
            if e["action"] not in ("screenshot", "zoom"):
                detail = "transcript[%d] is an input action in attest" % i
            elif e["input"] or e["input_events"] != 0:
                detail = "transcript[%d] sent input in attest" % i
            if detail:
                break
        if detail is None and r["input_event_count"] != 0:
            detail = "input_event_count is not 0 in attest"
    add("attest_input", detail, "no input in attest" if attest else "stage: input allowed")

    # lineage
    lineage_keys = ("prior_receipt_id", "prior_transcript_sha256", "prior_transcript_event_count",
                    "prior_completed_at")
    n_set = sum(1 for k in lineage_keys if r[k] is not None)
    detail = None
    if not attest and n_set:
        detail = "a stage receipt has lineage members"
    elif attest and n_set != 4:
        detail = "an attest receipt lacks lineage members"
    elif attest:
        prior_ms = _timestamp_ms(r["prior_completed_at"])
        start_ms = _timestamp_ms(r["started_at"])
        if prior_ms is None or prior_ms > 253402300799999:
            detail = "prior_completed_at is not YYYY-MM-DDTHH:MM:SS.mmmZ (1970..9999)"
        elif start_ms is not None and start_ms < prior_ms:
            detail = "started_at is earlier than prior_completed_at"
        elif not TASK_MIN_EVENTS <= r["prior_transcript_event_count"] <= TASK_MAX_EVENTS:
            detail = "prior_transcript_event_count is not 5..80"
    add("lineage", detail, "attest bound to a stage receipt" if attest else "stage: no lineage")

    ok = r["post_observation_input_event_count"] == 0
    add("post_observation_input_event_count", None if ok else "not 0", "0")

    detail = None
    prev = -1
    for k in TIMESTAMP_KEYS:
        ms = _timestamp_ms(r[k])
        if ms is None or ms > 253402300799999:
            detail = "%s is not YYYY-MM-DDTHH:MM:SS.mmmZ (1970..9999)" % k
            break
        if ms < prev:
            detail = "%s is earlier than the previous timestamp" % k
            break
        prev = ms
    add("timestamps", detail, "well-formed and ordered")

    obs = r["observation"]["sha256"]
    detail = None
    for e in t:
        if e["kind"] == "observation":
            if e["frame_sha256"] != obs:
                detail = "observation event frame differs from observation"
            elif e["pre_observation_sha256"] != r["pre_observation_sha256"]:
                detail = "observation event pre_observation_sha256 differs"
        elif e["kind"] == "result" and e["frame_sha256"] != obs:
            detail = "result event frame differs from observation"
        if detail:
            break
    add("observation_digest", detail, "matches")

    if frames_dir:
        wanted = sorted({e["frame_sha256"] for e in t} | {obs})
        add("frames", _frames_problem(frames_dir, wanted, r["observation"]),
            "%d frames present and hashed" % len(wanted))
    if png_path:
        h = _file_sha256(png_path)
        add("png", "cannot read the --png file" if h is None
            else (None if h == obs else "the --png file is not the observed frame"),
            "is the observed frame")
    if expect_job_sha256:
        ok = r["task_sha256"] == expect_job_sha256.lower()
        add("expect_task", None if ok else "task_sha256 differs", "task_sha256 matches")
    if expect_uid is not None:
        ok = r["actor"]["uid"] == expect_uid
        add("expect_uid", None if ok else "actor.uid differs", "actor.uid matches")
    if disclosure is not None:
        checks.extend(check_disclosure(r, disclosure))
    if prior is not None:
        checks.extend(check_task_lineage(r, prior))
    report["ok"] = all(c["ok"] for c in checks)
    return report


def check_task_lineage(r: Dict[str, Any], prior: Any) -> List[Dict[str, Any]]:
    """prior_receipt, prior_binding, prior_chronology, prior_transcript: an attest receipt
    (that passed "schema") against the stage receipt given as --prior."""
    out: List[Dict[str, Any]] = []
    detail = None
    if r["mode"] != "attest":
        detail = "this is a stage receipt: it has no prior"
    elif not (isinstance(prior, dict) and prior.get("schema") == TASK_SCHEMA):
        detail = "the prior is not a task receipt"
    else:
        pr = verify_task_receipt(prior)
        if not pr["ok"]:
            detail = "the prior does not verify (failed: %s)" % ", ".join(
                c["name"] for c in pr["checks"] if not c["ok"])
        elif prior["mode"] != "stage":
            detail = "the prior is not a stage receipt"
        elif prior["receipt_id"] != r["prior_receipt_id"]:
            detail = "the prior's receipt_id is not prior_receipt_id"
    out.append({"name": "prior_receipt", "ok": detail is None,
                "detail": detail or "a verified stage task receipt"})
    if detail is not None:
        for n in ("prior_binding", "prior_chronology", "prior_transcript"):
            out.append({"name": n, "ok": False, "detail": "not checked: no usable prior"})
        return out
    detail = next(("binding.%s differs from the prior's" % k
                   for k in ("generation", "app_id", "attempt_id")
                   if r["binding"][k] != prior["binding"][k]), None)
    out.append({"name": "prior_binding", "ok": detail is None,
                "detail": detail or "same generation, app and attempt"})
    detail = None
    if prior["completed_at"] != r["prior_completed_at"]:
        detail = "prior_completed_at is not the prior's completed_at"
    else:
        p_ms, s_ms = _timestamp_ms(prior["completed_at"]), _timestamp_ms(r["started_at"])
        if p_ms is None or s_ms is None or s_ms < p_ms:
            detail = "started before the prior completed"
    out.append({"name": "prior_chronology", "ok": detail is None,
                "detail": detail or "started after the prior completed"})
    detail = None
    if prior["transcript_sha256"] != r["prior_transcript_sha256"]:
        detail = "prior_transcript_sha256 is not the prior's transcript_sha256"
    elif len(prior["transcript"]) != r["prior_transcript_event_count"]:
        detail = "prior_transcript_event_count is not the prior's transcript length"
    out.append({"name": "prior_transcript", "ok": detail is None,
                "detail": detail or "digest and event count match"})
    return out


# ---------------------------------------------------------------- disclosures (receipt v3)

def commitment_digest(salt: str, value: str) -> str:
    """H("evident/commitment/v1", {"salt": salt, "value": value})."""
    return domain_digest(DOMAIN_COMMITMENT, {"salt": salt, "value": value})


def _disclosure_problem(d: Any) -> Optional[str]:
    if not isinstance(d, dict):
        return "the disclosure is not a JSON object"
    if set(d) != {"schema", "receipt_id", "action_index", "action", "salt", "value"}:
        return "the disclosure does not have exactly the six members of evident.disclosure/v1"
    if d["schema"] != DISCLOSURE_SCHEMA:
        return "the disclosure's schema is not evident.disclosure/v1"
    if not (_prefixed(d["receipt_id"], "ecr-", 64) or _prefixed(d["receipt_id"], "etr-", 64)):
        return "receipt_id is not ecr-<64 hex> or etr-<64 hex>"
    if not _int_min(d["action_index"], 0):
        return "action_index is not an integer >= 0"
    if not isinstance(d["action"], str):
        return "action is not a string"
    if not _hex64(d["salt"]):
        return "salt is not 64 lowercase hex"
    if not _str_len(d["value"], 0, MAX_DISCLOSED_VALUE_BYTES):
        return "value is not a string of at most 4096 bytes"
    return None


def load_disclosure_file(path: str) -> Dict[str, Any]:
    """Reads a disclosure file; raises ReceiptFormatError("disclosure-unreadable" |
    "disclosure-invalid")."""
    if not os.path.isfile(path):
        raise ReceiptFormatError("disclosure-unreadable",
                                 "the disclosure file does not exist or is not a regular file")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_DISCLOSURE_FILE_BYTES + 1)
    except OSError:
        raise ReceiptFormatError("disclosure-unreadable",
                                 "cannot read the disclosure file") from None
    if len(data) > MAX_DISCLOSURE_FILE_BYTES:
        raise ReceiptFormatError("disclosure-unreadable", "the disclosure file is over 64 KiB")
    try:
        d = parse_strict(data)
    except ReceiptFormatError:
        raise ReceiptFormatError("disclosure-invalid",
                                 "the disclosure file is not strict JSON") from None
    problem = _disclosure_problem(d)
    if problem:
        raise ReceiptFormatError("disclosure-invalid", problem)
    disclosure: Dict[str, Any] = d  # _disclosure_problem checked it is an object
    return disclosure


def check_disclosure(r: Dict[str, Any], d: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The checks disclosure_receipt, disclosure_action, disclosure_commitment."""
    out = []
    same = r["receipt_id"] == d["receipt_id"]
    out.append({"name": "disclosure_receipt", "ok": same,
                "detail": "names this receipt" if same else "names another receipt"})
    i = d["action_index"]
    # The i-th (0-based) action event: a session's are transcript[1..], a task's follow their
    # turn events.
    actions = [e for e in r["transcript"] if isinstance(e, dict) and e.get("kind") == "action"]
    event = None
    if i >= r["action_count"] or i >= len(actions):
        detail = "action_index is beyond the receipt's actions"
    elif "commitment" not in actions[i]:
        detail = "that action carries no commitment"
    elif actions[i]["action"] != d["action"]:
        detail = "that action is of another kind"
    else:
        event = actions[i]
        detail = "action %d carries a commitment" % i
    out.append({"name": "disclosure_action", "ok": event is not None, "detail": detail})
    if event is None:
        out.append({"name": "disclosure_commitment", "ok": False,
                    "detail": "not checked: no committed action"})
        return out
    ok = commitment_digest(d["salt"], d["value"]) == event["commitment"]
    out.append({"name": "disclosure_commitment", "ok": ok,
                "detail": "salt and value recompute the commitment" if ok
                else "salt and value do not recompute the commitment"})
    return out


# ---------------------------------------------------------------- command line

def _error(code: str, message: str) -> Dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message, "retryable": False}}


def run_verify_command(path: str, *, frames_dir: Optional[str] = None,
                       png_path: Optional[str] = None, expect_job_sha256: Optional[str] = None,
                       expect_uid: Optional[int] = None, as_json: bool = False,
                       out: Optional[IO[str]] = None, key_files: Optional[List[str]] = None,
                       trusted_keys_dir: Optional[str] = None,
                       envelope_path: Optional[str] = None,
                       disclosure_path: Optional[str] = None,
                       prior_path: Optional[str] = None,
                       signatures: Optional[ModuleType] = None) -> int:
    """Same behaviour as ``evident verify``; returns the exit status (0, 1, or 2). With
    ``key_files``/``trusted_keys_dir`` the envelope is checked too, by ``signatures`` (the module
    :mod:`evident.envelope`; this file imports nothing of the package, so the caller passes it:
    ``python3 -m evident.verify`` does); with ``disclosure_path`` the disclosure checks run
    (docs/receipts.md §11)."""
    sink: IO[str] = out or sys.stdout

    def fail(code: str, message: str, status: int) -> int:
        if as_json:
            sink.write(json.dumps(_error(code, message), ensure_ascii=False) + "\n")
        else:
            sink.write("error: %s (%s)\n" % (message, code))
        return status

    if expect_job_sha256 and not _HEX64_ANY_CASE.fullmatch(expect_job_sha256):
        return fail("verify-usage", "--expect-job must be 64 hex characters", 2)
    keys = None
    if key_files or trusted_keys_dir:   # signatures: docs/receipts.md §8 (evident/envelope.py)
        if signatures is None:
            return fail("verify-usage", "signature checks need the evident package: run "
                        "python3 -m evident.verify", 2)
        try:
            keys = signatures.load_trusted_keys(key_files or [], trusted_keys_dir)
        except signatures.KeyUsageError as e:
            return fail(e.code, e.message, 2)
    try:
        receipt = load_receipt_file(path)
    except ReceiptFormatError as e:
        return fail(e.code, e.message, 1)
    disclosure = None
    if disclosure_path:
        try:
            disclosure = load_disclosure_file(disclosure_path)
        except ReceiptFormatError as e:
            return fail(e.code, e.message, 1)
    prior = None
    if prior_path:
        try:
            prior = load_receipt_file(prior_path)
        except ReceiptFormatError as e:
            code = "verify-prior-unreadable" if e.code == "receipt-unreadable" else "verify-prior-json"
            return fail(code, "the --prior receipt: " + e.message, 1)
    report = verify_receipt(receipt, frames_dir=frames_dir, png_path=png_path,
                            expect_job_sha256=expect_job_sha256, expect_uid=expect_uid,
                            disclosure=disclosure, prior=prior)
    auth: Dict[str, Any] = {"authenticated": False, "key_id": None}
    note = UNAUTHENTICATED_NOTE
    if keys:
        assert signatures is not None  # keys are loaded only with it
        auth, note = _authenticate(signatures, path, receipt, report, keys, envelope_path)
    failed = [c["name"] for c in report["checks"] if not c["ok"]]
    if as_json:
        result: Dict[str, Any] = {"ok": report["ok"], "receipt_id": report["receipt_id"],
                                  "checks": report["checks"], **auth}
        if not report["ok"]:
            result["error"] = {"code": "verify-failed",
                               "message": "failed checks: " + ", ".join(failed),
                               "retryable": False}
        sink.write(json.dumps(result, ensure_ascii=False) + "\n")
    else:
        sink.write("receipt %s\n" % (report["receipt_id"] or "(no receipt_id)"))
        for c in report["checks"]:
            sink.write("  %s  %s: %s\n" % ("ok  " if c["ok"] else "FAIL", c["name"], c["detail"]))
        if report["ok"]:
            sink.write("verified: all %d checks passed\n" % len(report["checks"]))
        else:
            sink.write("verification failed: %s\n" % ", ".join(failed))
        sink.write(note + "\n")
    return 0 if report["ok"] else 1


def _authenticate(E: ModuleType, path: str, receipt: Any, report: Dict[str, Any],
                  keys: List[Any], envelope_path: Optional[str]) -> Tuple[Dict[str, Any], str]:
    """Appends checks 15-20 to ``report`` with ``E`` (evident.envelope); returns
    ({authenticated, key_id}, the note)."""
    receipt_ok = report["ok"]
    with open(path, "rb") as f:
        data = f.read(MAX_RECEIPT_FILE_BYTES + 1)
    env = envelope_path or os.path.join(os.path.dirname(path) or ".", E.ENVELOPE_FILE)
    result = E.verify_receipt_envelope(data, receipt, env, keys)
    report["checks"] += result["checks"]
    report["ok"] = all(c["ok"] for c in report["checks"])
    authenticated = receipt_ok and result["authenticated"]
    auth = {"authenticated": authenticated,
            "key_id": result["key_id"] if authenticated else None}
    note = ("authenticated: signed by %s (a key you trust; see docs/receipts.md, threat model)"
            % result["key_id"] if authenticated
            else "NOT AUTHENTICATED: the signature, subject or log checks failed")
    return auth, note


def main(argv: Optional[List[str]] = None, signatures: Optional[ModuleType] = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m evident.verify",
                                     description="Verify an evident session or task receipt.")
    parser.add_argument("receipt")
    parser.add_argument("--frames", metavar="DIR")
    parser.add_argument("--png", metavar="PATH")
    parser.add_argument("--expect-job", metavar="SHA256")
    parser.add_argument("--expect-uid", metavar="N", type=int)
    parser.add_argument("--disclosure", metavar="FILE")
    parser.add_argument("--prior", metavar="RECEIPT",
                        help="the stage task receipt an attest task receipt names")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--key", metavar="PUB.pem", action="append", default=[],
                        help="a trusted public key (repeatable): check the signed envelope")
    parser.add_argument("--trusted-keys", metavar="DIR", help="a directory of trusted keys")
    parser.add_argument("--envelope", metavar="PATH",
                        help="the envelope (default: receipt.dsse.json beside the receipt)")
    args = parser.parse_args(argv)
    return run_verify_command(args.receipt, frames_dir=args.frames, png_path=args.png,
                              expect_job_sha256=args.expect_job, expect_uid=args.expect_uid,
                              as_json=args.json, key_files=args.key,
                              trusted_keys_dir=args.trusted_keys, envelope_path=args.envelope,
                              disclosure_path=args.disclosure, prior_path=args.prior,
                              signatures=signatures)


if __name__ == "__main__":
    # The program's entry (module __main__, not evident.verify). As `python3 -m evident.verify`
    # the package is there, with the signature checks of evident.envelope; run by path this file
    # stands alone (no --key).
    if __package__:
        from . import envelope as _signatures

        sys.exit(main(signatures=_signatures))
    sys.exit(main())
