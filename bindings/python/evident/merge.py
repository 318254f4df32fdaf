"""``evident merge``: turns shard bundles into one verified run (docs/scale.md).

    python3 -m evident.merge BUNDLE_DIR... -o OUT [--json] [--require-passed] [--verifier both|python|cpp]
        [--key PUB.pem]... [--trusted-keys DIR] [--signing-key KEY.pem | --state-dir DIR]
    python3 -m evident.merge --check OUT [--key PUB.pem]... [--trusted-keys DIR]

(``evident merge`` on the C++ CLI runs exactly this.) Every bundle's ``shard.json`` is read
strictly, every receipt it lists is verified (the C++ and the Python verifiers, with its frames),
the bundles must share one plan and cover it exactly, and only then is ``OUT`` written, in one
step (a temporary sibling directory renamed into place): receipts, frames deduplicated by
digest, ``manifest.json`` (``evident.run-manifest/v1``), ``junit.xml``, ``report.md`` and
``durations.json``. A refused merge writes nothing. Exit status: 0 verified and exact; 1
refused (the failed checks are named); 2 usage (``OUT`` exists, no bundles, ...).

Signatures (docs/scale.md, "Signed evidence in a merge"): with trusted keys every receipt's
envelope (``receipt.dsse.json``) must verify — the Python verifier (evident/envelope.py) and,
when ``--verifier`` includes cpp, ``evident verify --key`` too, which must agree — and each
receipt's ``authenticated``, ``key_id`` and ``host_id`` go into the manifest; without keys the
manifest says ``authenticated: false`` for each. With a signing key, ``manifest.dsse.json`` is a
DSSE envelope over an in-toto Statement (``urn:evident:run-manifest:v1``) whose subjects are the
output's top-level files.

Library: ``merge(dirs, out, ...) -> MergeResult`` (``ok``, ``checks``, ``manifest``,
``error_code``); ``check_bundles(dirs, ...)`` runs the checks without writing anything.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import shutil
import socket
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import envelope as E
from ._native import find_core
from ._version import __version__
from .errors import ReceiptError
from .plan import (ShardError, assign, check_plan, fsync_dir, fsync_write, load_json_strict,
                   plan_sha256)
from .verification import verify_receipt
from .verify import ReceiptFormatError, domain_digest, jcs, parse_strict

__all__ = ["MergeCheck", "MergeResult", "check_bundles", "check_output", "merge", "main",
           "RECEIPT_CHECKS",
           "MANIFEST_SCHEMA", "DOMAIN_MANIFEST"]

SHARD_SCHEMA = "evident.shard/v1"
MANIFEST_SCHEMA = "evident.run-manifest/v1"
DOMAIN_MANIFEST = "evident/run-manifest/v1"
SHARD_FILE = "shard.json"
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
MAX_BUNDLES = 1024
MAX_SHARD_FILE_BYTES = 64 * 1024 * 1024
MAX_RECEIPTS_PER_BUNDLE = 100_000
MAX_NAMED = 20           # test ids named in one check's detail, then "+N more"
MAX_NAME_CHARS = 200
MANIFEST_PREDICATE_TYPE = "urn:evident:run-manifest:v1"
MANIFEST_ENVELOPE = "manifest.dsse.json"
SIGNED_OUTPUTS = ("manifest.json", "junit.xml", "report.md", "durations.json")
SHARD_KEYS = frozenset({"schema", "plan_sha256", "index", "total", "plan", "tests", "outcomes",
                        "durations_ms", "receipts", "runner", "exit_status"})
RECEIPT_ENTRY_KEYS = frozenset({"test", "path", "receipt_id", "sha256", "host_id"})


@dataclass(frozen=True)
class MergeCheck:
    name: str
    ok: bool
    detail: str
    bundle: Optional[str] = None

    def as_json(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"name": self.name, "ok": self.ok, "detail": self.detail}
        if self.bundle is not None:
            d["bundle"] = self.bundle
        return d


@dataclass
class MergeResult:
    ok: bool
    checks: List[MergeCheck]
    manifest: Optional[Dict[str, Any]] = None
    out: Optional[str] = None
    error_code: Optional[str] = None
    message: str = ""

    @property
    def failed(self) -> List[MergeCheck]:
        return [c for c in self.checks if not c.ok]


@dataclass
class _Bundle:
    dir: Path
    label: str
    shard: Optional[Dict[str, Any]] = None
    shard_bytes: bytes = b""
    receipts: List[Dict[str, Any]] = field(default_factory=list)   # verified entries

    @property
    def doc(self) -> Dict[str, Any]:
        """The bundle's shard.json, once loaded (only loaded bundles are checked further)."""
        assert self.shard is not None
        return self.shard


def _name_list(names: Sequence[str]) -> str:
    shown = [n if len(n) <= MAX_NAME_CHARS else n[:MAX_NAME_CHARS] + "…"
             for n in list(names)[:MAX_NAMED]]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" (+{more} more)" if more > 0 else "")


def _canonical(v: Any) -> bool:
    try:
        jcs(v)
        return True
    except ReceiptFormatError:
        return False


def _is_hex64(v: Any) -> bool:
    return isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v)


def _shard_problem(s: Any) -> Optional[str]:
    """None when ``s`` has the evident.shard/v1 shape (docs/scale.md); else what is wrong."""
    if not isinstance(s, dict):
        return "shard.json is not an object"
    if s.get("schema") != SHARD_SCHEMA:
        return "schema is not evident.shard/v1"
    if set(s) != SHARD_KEYS:
        return "shard.json does not have exactly the evident.shard/v1 members"
    if not _is_hex64(s["plan_sha256"]):
        return "plan_sha256 is not 64 lowercase hex"
    for k in ("index", "total", "exit_status"):
        if type(s[k]) is not int:
            return k + " is not an integer"
    problem = check_plan(s["plan"])
    if problem:
        return problem
    tests = s["tests"]
    if not (isinstance(tests, list) and all(isinstance(t, str) for t in tests)
            and tests == sorted(set(tests))):
        return "tests is not a sorted array of unique strings"
    out = s["outcomes"]
    if not (isinstance(out, dict) and all(v in OUTCOMES for v in out.values())):
        return "outcomes is not an object of known outcomes"
    dur = s["durations_ms"]
    if not (isinstance(dur, dict) and all(type(v) is int and v >= 0 for v in dur.values())):
        return "durations_ms is not an object of integers >= 0"
    rs = s["receipts"]
    if not isinstance(rs, list) or len(rs) > MAX_RECEIPTS_PER_BUNDLE:
        return "receipts is not an array of at most %d entries" % MAX_RECEIPTS_PER_BUNDLE
    for r in rs:
        if not (isinstance(r, dict) and {"test", "path", "receipt_id", "sha256"} <= set(r)
                and set(r) <= RECEIPT_ENTRY_KEYS and isinstance(r["test"], str)
                and isinstance(r["path"], str) and isinstance(r["receipt_id"], str)
                and _is_hex64(r["sha256"])
                and (("host_id" not in r) or isinstance(r["host_id"], str))):
            return "a receipts entry is not {test, path, receipt_id, sha256[, host_id]}"
    if not isinstance(s["runner"], dict) or not _canonical(s["runner"]):
        return "runner is not an object of canonical JSON values"
    return None


def _inside(bundle: Path, rel: str) -> Optional[Path]:
    """``bundle/rel`` when it is a relative path that stays inside the bundle (symlinks
    resolved); else None."""
    if not rel or rel.startswith("/") or "\\" in rel or "\x00" in rel:
        return None
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None
    path = bundle / rel
    try:
        real = path.resolve(strict=True)
        root = bundle.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    try:
        real.relative_to(root)
    except ValueError:
        return None
    return path


# One function per extra per-receipt check (signatures and log proofs plug in here once signed
# evidence exists): fn(receipt_path, parsed_receipt, options) -> [(check name, ok, detail)].
RECEIPT_CHECKS: List[Callable[[Path, Dict[str, Any], Dict[str, Any]],
                              List[Tuple[str, bool, str]]]] = []


def _verify_receipt(path: Path, verifier: str) -> Tuple[bool, List[str], List[str]]:
    """(ok, failed check names, verifiers that ran) with the project's verifiers."""
    try:
        v = verify_receipt(str(path), frames_dir=str(path.parent), use=verifier)
    except ReceiptError as e:
        return False, [e.code], []
    return v.ok, sorted({f"{c.verifier}:{c.name}" for c in v.failed}), list(v.verifiers)


def evident_cli() -> Optional[str]:
    """The ``evident`` binary for the C++ cross-checks: $EVIDENT_BIN (``evident merge`` sets it
    to itself), else the build tree beside the loaded ``_core``, else ``evident`` on PATH."""
    env = os.environ.get("EVIDENT_BIN")
    if env:
        return env if os.access(env, os.X_OK) else None

    core = find_core()
    core_file = getattr(core, "__file__", None) if core is not None else None
    if core_file:
        cand = Path(core_file).resolve().parents[2] / "engine" / "cli" / "evident"
        if os.access(cand, os.X_OK):
            return str(cand)
    return shutil.which("evident")


@dataclass
class Keys:
    """The trusted keys of a merge or a check, and how to pass them to ``evident verify``."""
    keys: List[Any]
    cli_args: List[str]

    @property
    def ids(self) -> List[str]:
        return sorted({k.key_id for k in self.keys})


def load_keys(key_files: Sequence[str] = (), trusted_keys_dir: Optional[str] = None
              ) -> Optional[Keys]:
    """None without key options; raises envelope.KeyUsageError for unusable ones."""
    if not key_files and not trusted_keys_dir:
        return None

    keys = E.load_trusted_keys(list(key_files), trusted_keys_dir)
    args: List[str] = []
    for k in key_files:
        args += ["--key", os.path.abspath(k)]
    if trusted_keys_dir:
        args += ["--trusted-keys", os.path.abspath(trusted_keys_dir)]
    return Keys(keys, args)


def authenticate_receipt(path: Path, envelope: Path, frames_dir: Path, keys: Keys,
                         verifier: str) -> Dict[str, Any]:
    """Checks one receipt's envelope with the trusted keys: the Python verifier always, the C++
    ``evident verify --key`` too when ``verifier`` includes cpp (their check names and outcomes
    must agree). Returns ``{"authenticated", "key_id", "failed": [...], "verifiers": [...]}``."""
    failed: List[str] = []
    ran: List[str] = []
    data = path.read_bytes()
    try:
        receipt = parse_strict(data)
    except ReceiptFormatError:
        receipt = None
    py = E.verify_receipt_envelope(data, receipt, str(envelope), keys.keys)
    ran.append("python")
    py_checks = [(c["name"], c["ok"]) for c in py["checks"]]
    failed += [f"python:{n}" for n, ok in py_checks if not ok]
    key_id = py["key_id"] if py["authenticated"] else None
    authenticated = py["authenticated"]
    if verifier in ("both", "cpp"):
        cli = evident_cli()
        if cli is None:
            if verifier == "cpp":
                failed.append("cpp:unavailable")
                authenticated = False
        else:
            import subprocess

            p = subprocess.run([cli, "verify", str(path), "--frames", str(frames_dir),
                                "--envelope", str(envelope), *keys.cli_args, "--json"],
                               capture_output=True, text=True, timeout=120)
            try:
                doc = json.loads(p.stdout)
            except ValueError:
                doc = {}
            ran.append("cpp")
            cpp_checks = [(c.get("name"), c.get("ok")) for c in doc.get("checks", [])
                          if c.get("name") in E.ENVELOPE_CHECKS]
            failed += [f"cpp:{n}" for n, ok in cpp_checks if not ok]
            if cpp_checks != py_checks:
                failed.append("verifiers-disagree")
            if not doc.get("authenticated") or doc.get("key_id") != key_id:
                authenticated = False
    if failed:
        authenticated = False
    return {"authenticated": bool(authenticated), "key_id": key_id if authenticated else None,
            "failed": failed, "verifiers": ran}


def _host_id(receipt: Dict[str, Any], entry: Dict[str, Any]) -> Optional[str]:
    """engine.host_id of a v3 receipt; else what shard.json recorded; else None."""
    engine = receipt.get("engine")
    if isinstance(engine, dict) and isinstance(engine.get("host_id"), str):
        return str(engine["host_id"])
    host = entry.get("host_id")
    return host if isinstance(host, str) else None


def check_bundles(dirs: Sequence[str], *, verifier: str = "both",
                  options: Optional[Dict[str, Any]] = None, keys: Optional[Keys] = None
                  ) -> Tuple[List[MergeCheck], List[_Bundle], Dict[str, Any]]:
    """Runs every merge check; writes nothing. Returns (checks, bundles, facts)."""
    options = options or {}
    checks: List[MergeCheck] = []
    facts: Dict[str, Any] = {"verifiers": set()}

    def add(name: str, ok: bool, detail: str, bundle: Optional[_Bundle] = None) -> None:
        checks.append(MergeCheck(name, bool(ok), detail, bundle.label if bundle else None))

    bundles = [_Bundle(Path(d), d) for d in dirs]
    # 1. each bundle's shard.json, strictly, with its exact shape
    for b in bundles:
        shard_file = b.dir / SHARD_FILE
        try:
            if not shard_file.is_file():
                raise ShardError("merge-bundle", "no shard.json in the bundle")
            b.shard_bytes = shard_file.read_bytes()[:MAX_SHARD_FILE_BYTES + 1]
            value = load_json_strict(str(shard_file), MAX_SHARD_FILE_BYTES, "merge-bundle",
                                     "shard.json")
        except (ShardError, OSError) as e:
            add("bundle-readable", False, getattr(e, "message", "cannot read shard.json"), b)
            continue
        add("bundle-readable", True, "shard.json read", b)
        problem = _shard_problem(value)
        if problem:
            add("shard-schema", False, problem, b)
            continue
        add("shard-schema", True, SHARD_SCHEMA, b)
        try:
            digest = plan_sha256(value["plan"])
        except ShardError:
            digest = None
        ok = digest == value["plan_sha256"]
        add("plan-digest", ok, "plan_sha256 = H(evident/plan/v1, plan)" if ok
            else "plan_sha256 is not the digest of the plan it carries", b)
        if ok:
            b.shard = value
    good = [b for b in bundles if b.shard is not None]
    if not good:
        add("one-plan", False, "no bundle with a valid shard.json")
        return checks, bundles, facts

    # 2. one plan: the plan most bundles carry (ties: the first given) is the run's plan
    counts: Dict[str, int] = {}
    for b in good:
        counts[b.doc["plan_sha256"]] = counts.get(b.doc["plan_sha256"], 0) + 1
    first_seen = [b.doc["plan_sha256"] for b in good]
    run_plan = max(counts, key=lambda d: (counts[d], -first_seen.index(d)))
    plan = next(b.doc["plan"] for b in good if b.doc["plan_sha256"] == run_plan)
    foreign = [b for b in good if b.doc["plan_sha256"] != run_plan]
    add("one-plan", not foreign,
        f"plan {run_plan} ({len(plan['tests'])} tests, {plan['n']} shards)" if not foreign
        else "bundles of another plan: " + _name_list([b.label for b in foreign]))
    facts.update(plan=plan, plan_sha256=run_plan)
    members = [b for b in good if b.doc["plan_sha256"] == run_plan]
    n = plan["n"]
    expected = assign(plan)
    plan_tests = set(plan["tests"])

    # 3. shard indices: each of 1..n exactly once
    by_index: Dict[int, List[_Bundle]] = {}
    for b in members:
        s = b.doc
        if s["total"] != n or not 1 <= s["index"] <= n:
            add("shard-index", False, f"index {s['index']}/{s['total']} does not fit a plan of "
                f"{n} shards", b)
            continue
        by_index.setdefault(s["index"], []).append(b)
    dup_idx = sorted(i for i, bs in by_index.items() if len(bs) > 1)
    missing_idx = sorted(set(range(1, n + 1)) - set(by_index))
    detail = []
    if dup_idx:
        detail.append("shards given more than once: " + ", ".join(f"{i}/{n}" for i in dup_idx))
    if missing_idx:
        detail.append("shards missing: " + ", ".join(f"{i}/{n}" for i in missing_idx[:MAX_NAMED])
                      + (f" (+{len(missing_idx) - MAX_NAMED} more)"
                         if len(missing_idx) > MAX_NAMED else ""))
    add("shard-index", not detail, "; ".join(detail) or f"shards 1..{n} once each")

    # 4. each shard ran exactly the tests the plan assigns to it, each with an outcome
    for b in members:
        s = b.doc
        if not 1 <= s["index"] <= n:
            continue
        want = expected[s["index"] - 1]
        if s["tests"] != want:
            extra = sorted(set(s["tests"]) - set(want))
            lack = sorted(set(want) - set(s["tests"]))
            parts = []
            if extra:
                parts.append("tests the plan assigns elsewhere or nowhere: " + _name_list(extra))
            if lack:
                parts.append("assigned tests it does not list: " + _name_list(lack))
            add("shard-assignment", False, "; ".join(parts), b)
        else:
            add("shard-assignment", True, f"shard {s['index']}/{n}: the plan's {len(want)} tests", b)
        no_outcome = [t for t in s["tests"] if t not in s["outcomes"]]
        stray = sorted(set(s["outcomes"]) - set(s["tests"]))
        if no_outcome or stray:
            parts = []
            if no_outcome:
                parts.append("tests without an outcome (did not run): " + _name_list(no_outcome))
            if stray:
                parts.append("outcomes for tests it does not list: " + _name_list(stray))
            add("outcomes", False, "; ".join(parts), b)
        else:
            add("outcomes", True, f"{len(s['tests'])} outcomes", b)

    # 5. exact cover: nothing missing, nothing doubled, nothing foreign
    seen: Dict[str, int] = {}
    for b in members:
        for t in b.doc["tests"]:
            seen[t] = seen.get(t, 0) + 1
    missing = sorted(plan_tests - set(seen))
    doubled = sorted(t for t, k in seen.items() if k > 1)
    alien = sorted(set(seen) - plan_tests)
    for b in foreign:   # every test a bundle of another plan ran is foreign to this run
        alien = sorted(set(alien) | set(b.doc["tests"]))
    parts = []
    if missing:
        parts.append(f"missing {len(missing)}: " + _name_list(missing))
    if doubled:
        parts.append(f"duplicated {len(doubled)}: " + _name_list(doubled))
    if alien:
        parts.append(f"foreign {len(alien)}: " + _name_list(alien))
    add("cover", not parts, "; ".join(parts) or f"all {len(plan_tests)} planned tests exactly once")

    # 6. receipts: listed inside the bundle, the same bytes, and verified
    ids_seen: Dict[str, str] = {}
    doubled_receipts: List[str] = []
    for b in members:
        s = b.doc
        listed_ok, digest_problems, verify_problems, extra_problems = [], [], [], []
        sig_problems: List[str] = []
        for r in s["receipts"]:
            if r["test"] not in s["tests"]:
                listed_ok.append(f"a receipt of a test the shard does not list ({r['path'][:80]})")
                continue
            path = _inside(b.dir, r["path"])
            if path is None or not path.is_file():
                listed_ok.append(f"{r['path'][:120]} is missing or outside the bundle")
                continue
            data = path.read_bytes()
            if hashlib.sha256(data).hexdigest() != r["sha256"]:
                digest_problems.append(f"{r['path'][:120]} is not the file shard.json lists")
                continue
            try:
                parsed = json.loads(data.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                parsed = None
            if not isinstance(parsed, dict) or parsed.get("receipt_id") != r["receipt_id"]:
                digest_problems.append(f"{r['path'][:120]}: receipt_id differs from shard.json")
                continue
            ok, failed, ran = _verify_receipt(path, verifier)
            facts["verifiers"].update(ran)
            if not ok:
                verify_problems.append(f"{r['path'][:120]} ({', '.join(failed)})")
                continue
            for fn in RECEIPT_CHECKS:
                for name, cok, cdetail in fn(path, parsed, options):
                    if not cok:
                        extra_problems.append((name, f"{r['path'][:120]}: {cdetail}"))
            envelope = path.parent / "receipt.dsse.json"
            auth: Dict[str, Any] = {"authenticated": False, "key_id": None}
            if keys is not None:
                auth = authenticate_receipt(path, envelope, path.parent, keys, verifier)
                facts.setdefault("signature_verifiers", set()).update(auth["verifiers"])
                if not auth["authenticated"]:
                    sig_problems.append(f"{r['path'][:120]} ({', '.join(auth['failed'])})")
            if r["receipt_id"] in ids_seen:
                doubled_receipts.append(r["receipt_id"])
            ids_seen[r["receipt_id"]] = b.label
            b.receipts.append({**r, "_path": path, "_parsed": parsed,
                               "_authenticated": auth["authenticated"],
                               "_key_id": auth["key_id"],
                               "_envelope": envelope if envelope.is_file()
                               and not envelope.is_symlink() else None})
        total = len(s["receipts"])
        add("receipt-listed", not listed_ok, "; ".join(listed_ok[:MAX_NAMED])
            or f"{total} receipts inside the bundle", b)
        add("receipt-digest", not digest_problems, "; ".join(digest_problems[:MAX_NAMED])
            or "every file is the one listed (SHA-256, receipt_id)", b)
        add("receipt-verify", not verify_problems,
            "failed: " + "; ".join(verify_problems[:MAX_NAMED]) if verify_problems
            else f"{len(b.receipts)} receipts verified with their frames", b)
        if keys is not None:
            add("receipt-signature", not sig_problems,
                "not authenticated by a trusted key: " + "; ".join(sig_problems[:MAX_NAMED])
                if sig_problems else f"{len(b.receipts)} receipts signed by a trusted key "
                "(envelope, signature, statement, subjects, log inclusion)", b)
        names = sorted({n for n, _ in extra_problems})
        for name in names:
            add(name, False, "; ".join(d for n, d in extra_problems if n == name)[:2000], b)
    add("receipt-unique", not doubled_receipts,
        "receipts listed more than once: " + _name_list(sorted(set(doubled_receipts)))
        if doubled_receipts else f"{len(ids_seen)} distinct receipts")
    facts["members"] = members
    return checks, bundles, facts


# ------------------------------------------------------------------------------------------------
# outputs

def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _frame_digests(receipt: Dict[str, Any]) -> List[str]:
    found = {e.get("frame_sha256") for e in receipt.get("transcript", []) if isinstance(e, dict)}
    found.add(receipt.get("observation", {}).get("sha256"))
    return sorted(str(h) for h in found if _is_hex64(h))


def _copy_durable(src: Path, dst: Path) -> int:
    data = src.read_bytes()
    fsync_write(str(dst), data)
    return len(data)


def _junit(manifest: Dict[str, Any]) -> bytes:
    tests = manifest["tests"]
    counts = manifest["outcomes"]
    suite = ET.Element("testsuite", {
        "name": "evident-merged", "tests": str(len(tests)),
        "failures": str(counts.get("failed", 0) + counts.get("xpassed", 0)),
        "errors": str(counts.get("error", 0)),
        "skipped": str(counts.get("skipped", 0) + counts.get("xfailed", 0)),
        "time": "%.3f" % (sum(t["duration_ms"] or 0 for t in tests) / 1000)})
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", {"name": "evident_plan_sha256",
                                      "value": manifest["plan_sha256"]})
    ET.SubElement(props, "property", {"name": "evident_manifest_id",
                                      "value": manifest["manifest_id"]})
    for t in tests:
        nodeid = t["test"]
        path, _, rest = nodeid.partition("::")
        parts = rest.split("::") if rest else [nodeid]
        module = path[:-3] if path.endswith(".py") else path
        classname = ".".join([module.replace("/", ".")] + parts[:-1])
        case = ET.SubElement(suite, "testcase", {
            "classname": classname, "name": parts[-1], "file": path,
            "time": "%.3f" % ((t["duration_ms"] or 0) / 1000)})
        outcome = t["outcome"]
        # Only the outcome travels in a bundle (messages could hold typed text).
        if outcome == "failed":
            ET.SubElement(case, "failure", {"message": "failed (see the shard's own log)"})
        elif outcome == "xpassed":
            ET.SubElement(case, "failure", {"message": "passed unexpectedly (strict xfail)"})
        elif outcome == "error":
            ET.SubElement(case, "error", {"message": "error in setup or teardown"})
        elif outcome in ("skipped", "xfailed"):
            ET.SubElement(case, "skipped", {"message": outcome})
        cprops = ET.SubElement(case, "properties")
        ET.SubElement(cprops, "property", {"name": "evident_shard", "value": str(t["shard"])})
        for r in t["receipts"]:
            ET.SubElement(cprops, "property", {"name": "evident_receipt",
                                               "value": f"receipts/{r['receipt_id']}.json"})
    root = ET.Element("testsuites")
    root.append(suite)
    return bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True)) + b"\n"


def _report_md(manifest: Dict[str, Any], checks: List[MergeCheck]) -> bytes:
    lines = ["# Evident merged run", "",
             f"- manifest: `{manifest['manifest_id']}` ({manifest['signature']['state']})",
             f"- plan: `{manifest['plan_sha256']}`: {len(manifest['plan']['tests'])} tests in "
             f"{manifest['plan']['n']} shards ({manifest['plan']['config']['split']})",
             "- outcomes: " + ", ".join(f"{k} {v}" for k, v in manifest["outcomes"].items()),
             f"- receipts: {manifest['receipt_count']} verified "
             f"({', '.join(manifest['verification']['verifiers'])}); frames: "
             f"{manifest['frames']['unique']} unique of {manifest['frames']['references']} "
             "referenced",
             f"- authentication: {manifest['authentication']['authenticated']} of "
             f"{manifest['authentication']['receipts']} receipts signed by a trusted key"
             if manifest["authentication"]["required"] else
             "- authentication: " + manifest["authentication"]["note"], "", "## Checks", ""]
    for c in checks:
        where = f" [{c.bundle}]" if c.bundle else ""
        lines.append(f"- {'ok' if c.ok else 'FAIL'} `{c.name}`{where}: {c.detail}")
    lines += ["", "## Tests", "", "| test | shard | outcome | receipts |", "|---|---|---|---|"]
    for t in manifest["tests"]:
        rs = " ".join(f"[{r['receipt_id'][:16]}…](receipts/{r['receipt_id']}.json)"
                      for r in t["receipts"]) or "—"
        name = t["test"].replace("|", "\\|")
        lines.append(f"| `{name}` | {t['shard']} | {t['outcome']} | {rs} |")
    return ("\n".join(lines) + "\n").encode("utf-8")


def _build(tmp: Path, checks: List[MergeCheck], facts: Dict[str, Any],
           keys: Optional[Keys] = None, signer: Any = None) -> Dict[str, Any]:
    members: List[_Bundle] = sorted(facts["members"], key=lambda b: int(b.doc["index"]))
    (tmp / "receipts").mkdir()
    (tmp / "frames").mkdir()
    (tmp / "shards").mkdir()
    frame_refs = 0
    frames: Dict[str, int] = {}
    tests: Dict[str, Dict[str, Any]] = {}
    shards = []
    for b in members:
        s = b.doc
        fsync_write(str(tmp / "shards" / f"{s['index']}.shard.json"), b.shard_bytes)
        shards.append({"index": s["index"], "total": s["total"],
                       "shard_json_sha256": hashlib.sha256(b.shard_bytes).hexdigest(),
                       "tests": len(s["tests"]), "exit_status": s["exit_status"],
                       "runner": s["runner"]})
        for t in s["tests"]:
            tests[t] = {"test": t, "shard": s["index"], "outcome": s["outcomes"][t],
                        "duration_ms": s["durations_ms"].get(t), "receipts": []}
        for r in b.receipts:
            path: Path = r["_path"]
            _copy_durable(path, tmp / "receipts" / f"{r['receipt_id']}.json")
            for side, suffix in (("receipt.dsse.json", "dsse.json"),
                                 ("actions.json", "actions.json")):
                extra = path.parent / side   # the envelope and the action log travel along
                if extra.is_file() and not extra.is_symlink():
                    _copy_durable(extra, tmp / "receipts" / f"{r['receipt_id']}.{suffix}")
            for h in _frame_digests(r["_parsed"]):
                frame_refs += 1
                if h not in frames:
                    frames[h] = _copy_durable(path.parent / f"{h}.png",
                                              tmp / "frames" / f"{h}.png")
            env = r["_envelope"]
            entry = {"receipt_id": r["receipt_id"], "sha256": r["sha256"],
                     "attempt_id": r["_parsed"].get("binding", {}).get("attempt_id"),
                     "job_sha256": r["_parsed"].get("binding", {}).get("job_sha256"),
                     "authenticated": r["_authenticated"], "key_id": r["_key_id"],
                     "host_id": _host_id(r["_parsed"], r),
                     "envelope_sha256": hashlib.sha256(env.read_bytes()).hexdigest()
                     if env is not None else None}
            tests[r["test"]]["receipts"].append(entry)
    counts = {k: 0 for k in OUTCOMES}
    for t in tests.values():
        counts[t["outcome"]] += 1
    manifest: Dict[str, Any] = {
        "schema": MANIFEST_SCHEMA,
        "plan_sha256": facts["plan_sha256"],
        "plan": facts["plan"],
        "shards": shards,
        "tests": [tests[t] for t in sorted(tests)],
        "outcomes": counts,
        "receipt_count": sum(len(t["receipts"]) for t in tests.values()),
        "frames": {"unique": len(frames), "references": frame_refs,
                   "bytes": sum(frames.values())},
        "verification": {"verifiers": sorted(facts["verifiers"]),
                         "checks": sorted({c.name for c in checks})},
        "authentication": _authentication(tests, keys, facts),
        "signature": ({"state": "signed", "key_id": signer.key_id,
                       "envelope": MANIFEST_ENVELOPE, "predicate_type": MANIFEST_PREDICATE_TYPE,
                       "subjects": list(SIGNED_OUTPUTS)} if signer is not None else
                      {"state": "unsigned",
                       "reason": "no --signing-key or --state-dir was given; the manifest is "
                                 "integrity-protected by manifest_id only"}),
        "merger": {"evident": __version__, "hostname": socket.gethostname()},
        "merged_at": _now(),
    }
    manifest["manifest_id"] = "erm-" + domain_digest(DOMAIN_MANIFEST, manifest)
    fsync_write(str(tmp / "manifest.json"),
                (json.dumps(manifest, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
                .encode("utf-8"))
    fsync_write(str(tmp / "junit.xml"), _junit(manifest))
    fsync_write(str(tmp / "report.md"), _report_md(manifest, checks))
    durations = {t["test"]: t["duration_ms"] / 1000 for t in manifest["tests"]
                 if t["duration_ms"] is not None}
    fsync_write(str(tmp / "durations.json"),
                (json.dumps(durations, indent=1, sort_keys=True) + "\n").encode("utf-8"))
    if signer is not None:
        sign_outputs(tmp, signer, SIGNED_OUTPUTS, MANIFEST_PREDICATE_TYPE,
                     {"manifest_id": manifest["manifest_id"],
                      "plan_sha256": manifest["plan_sha256"]})
    for d in ("receipts", "frames", "shards", "."):
        fsync_dir(str(tmp / d))
    return manifest


def _authentication(tests: Dict[str, Dict[str, Any]], keys: Optional[Keys],
                    facts: Dict[str, Any]) -> Dict[str, Any]:
    rs = [r for t in tests.values() for r in t["receipts"]]
    n_auth = sum(1 for r in rs if r["authenticated"])
    return {"required": keys is not None,
            "trusted_keys": keys.ids if keys is not None else [],
            "verifiers": sorted(facts.get("signature_verifiers", set())),
            "receipts": len(rs), "authenticated": n_auth,
            "signing_keys": sorted({r["key_id"] for r in rs if r["key_id"]}),
            "host_ids": sorted({r["host_id"] for r in rs if r["host_id"]}),
            "note": ("every receipt's envelope verified with a trusted key" if keys is not None
                     else "NOT AUTHENTICATED: no --key or --trusted-keys was given; the receipts "
                          "are internally consistent, which proves nothing about who made "
                          "them")}


def sign_outputs(root: Path, signer: Any, names: Sequence[str], predicate_type: str,
                 predicate: Dict[str, Any]) -> Dict[str, Any]:
    """Writes ``root/manifest.dsse.json``: a DSSE envelope (in-toto Statement v1 of
    ``predicate_type``) whose subjects are ``names`` with the SHA-256 of their bytes."""
    subjects = [{"name": n, "digest": {"sha256": hashlib.sha256((root / n).read_bytes())
                                       .hexdigest()}} for n in names]
    statement = {"_type": E.STATEMENT_TYPE, "subject": subjects, "predicateType": predicate_type,
                 "predicate": predicate}
    env = E.sign_statement(signer, statement)
    fsync_write(str(root / MANIFEST_ENVELOPE), E.envelope_bytes(env))
    return env


def check_signed_outputs(root: Path, keys: Optional[Keys], predicate_type: str,
                         manifest: Dict[str, Any], id_key: str) -> Tuple[bool, str, Optional[str]]:
    """(ok, detail, signer key id): ``root/manifest.dsse.json`` verifies with a trusted key, is
    about this manifest (``predicate[id_key]``) and its subjects are exactly the files the
    manifest's ``signature.subjects`` lists, with their bytes."""
    if keys is None:
        return False, "no --key or --trusted-keys was given", None
    path = root / MANIFEST_ENVELOPE
    if not path.is_file():
        return False, "no manifest.dsse.json (the manifest is unsigned)", None
    checks, st, signer = E.open_envelope(str(path), keys.keys, predicate_type)
    bad = [c["name"] for c in checks if not c["ok"]]
    if bad:
        return False, "failed: " + ", ".join(bad), None
    assert isinstance(st, dict) and signer is not None  # what open_envelope's checks passed on
    raw_sig = manifest.get("signature")
    sig: Dict[str, Any] = raw_sig if isinstance(raw_sig, dict) else {}
    names = sig.get("subjects")
    pred = st.get("predicate")
    if not (isinstance(pred, dict) and pred.get(id_key) == manifest.get(id_key)):
        return False, "the envelope is about another manifest", None
    if sig.get("key_id") != signer.key_id:
        return False, "the manifest names another signing key", None
    if not isinstance(names, list) or not names:
        return False, "the manifest lists no signed files", None
    subj = st.get("subject")
    want = [{"name": n, "digest": {"sha256": hashlib.sha256((root / n).read_bytes())
                                   .hexdigest() if (root / n).is_file() else None}}
            for n in names if isinstance(n, str) and "/" not in n]
    if subj != want:
        return False, "the signed subjects are not these files' bytes (changed after " \
                      "signing?)", None
    return True, f"signed by {signer.key_id}: " + ", ".join(names), signer.key_id


def load_signer(signing_key: Optional[str], state_dir: Optional[str]
                ) -> Optional[E.SigningKey]:
    """The merging key: ``--signing-key`` (PKCS#8 PEM Ed25519), else ``--state-dir``'s
    ``keys/signing.key``, else None (unsigned). Raises envelope.KeyUsageError."""
    if signing_key:
        return E.load_signing_key(signing_key)
    if state_dir:
        return E.load_signing_key(os.path.join(state_dir, "keys", "signing.key"))
    return None


def merge(dirs: Sequence[str], out: str, *, verifier: str = "both",
          require_passed: bool = False, key_files: Sequence[str] = (),
          trusted_keys_dir: Optional[str] = None, signing_key: Optional[str] = None,
          state_dir: Optional[str] = None) -> MergeResult:
    """Checks the bundles and, only when every check passes, writes ``out`` in one step."""
    try:
        keys = load_keys(key_files, trusted_keys_dir)
        signer = load_signer(signing_key, state_dir)
    except E.KeyUsageError as e:
        return MergeResult(False, [], error_code=e.code, message=e.message)
    if not dirs or len(dirs) > MAX_BUNDLES:
        return MergeResult(False, [], error_code="merge-usage",
                           message=f"give 1..{MAX_BUNDLES} bundle directories")
    if verifier not in ("both", "python", "cpp"):
        return MergeResult(False, [], error_code="merge-usage",
                           message="--verifier is both, python or cpp")
    out_path = Path(out)
    if out_path.exists() and (not out_path.is_dir() or any(out_path.iterdir())):
        return MergeResult(False, [], error_code="merge-output-exists",
                           message="the output exists and is not an empty directory")
    checks, _bundles, facts = check_bundles(dirs, verifier=verifier, keys=keys)
    if require_passed and facts.get("members"):
        bad = sorted(t for b in facts["members"] for t, o in b.doc["outcomes"].items()
                     if o in ("failed", "error", "xpassed"))
        checks.append(MergeCheck("tests-passed", not bad, "tests that did not pass: "
                                 + _name_list(bad) if bad else "no test failed"))
    failed = [c for c in checks if not c.ok]
    if failed:
        names = sorted({c.name for c in failed})
        return MergeResult(False, checks, error_code="merge-refused",
                           message="merge refused; failed checks: " + ", ".join(names))
    parent = out_path.resolve().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_path.name}.partial-", dir=str(parent)))
    except OSError as e:
        return MergeResult(False, checks, error_code="merge-write-failed",
                           message=f"cannot create the output: {e.strerror}")
    try:
        manifest = _build(tmp, checks, facts, keys, signer)
        if out_path.exists():
            out_path.rmdir()  # empty (checked above)
        os.rename(tmp, out_path)
        fsync_dir(str(parent))
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        return MergeResult(False, checks, error_code="merge-write-failed",
                           message=f"cannot write the output: {e.strerror}")
    return MergeResult(True, checks, manifest, str(out_path))


# ------------------------------------------------------------------------------------------------
# re-checking a merged output

def check_output(out: str, *, verifier: str = "both", keys: Optional[Keys] = None
                 ) -> List[MergeCheck]:
    """Re-runs, on a merged output alone, every check that its files allow: the manifest's id,
    the plan digest and exact cover, the shards' shard.json digests and assignments, each
    receipt's digest and verification against ``frames/``; with ``keys``, the signed manifest
    (``manifest-signature``) and the envelope of every receipt whose recorded signing key is
    among them (``receipt-signatures``)."""
    root = Path(out)
    checks: List[MergeCheck] = []

    def add(name: str, ok: bool, detail: str) -> None:
        checks.append(MergeCheck(name, bool(ok), detail))

    try:
        m = load_json_strict(str(root / "manifest.json"), MAX_SHARD_FILE_BYTES, "merge-output",
                             "manifest.json")
    except ShardError as e:
        add("manifest-readable", False, e.message)
        return checks
    if not isinstance(m, dict) or m.get("schema") != MANIFEST_SCHEMA or not isinstance(
            m.get("manifest_id"), str):
        add("manifest-readable", False, "not an evident.run-manifest/v1 with a manifest_id")
        return checks
    add("manifest-readable", True, MANIFEST_SCHEMA)
    body = {k: v for k, v in m.items() if k != "manifest_id"}
    try:
        ok = m["manifest_id"] == "erm-" + domain_digest(DOMAIN_MANIFEST, body)
    except ReceiptFormatError:
        ok = False
    add("manifest-id", ok, "manifest_id = H(evident/run-manifest/v1, manifest)" if ok
        else "manifest_id is not the digest of the manifest")
    try:
        plan, tests, shards = m["plan"], m["tests"], m["shards"]
        ok = check_plan(plan) is None and plan_sha256(plan) == m["plan_sha256"]
    except (KeyError, TypeError, ShardError):
        add("plan-digest", False, "the manifest has no well-formed plan")
        return checks
    add("plan-digest", ok, "plan_sha256 matches the plan" if ok else "plan_sha256 differs")
    if not ok:
        return checks
    expected = assign(plan)
    listed = [t.get("test") for t in tests] if isinstance(tests, list) else []
    add("cover", listed == plan["tests"], f"all {len(listed)} planned tests once"
        if listed == plan["tests"] else "the tests listed are not exactly the plan's")
    problems = []
    for sh in shards if isinstance(shards, list) else []:
        path = root / "shards" / f"{sh.get('index')}.shard.json"
        try:
            data = path.read_bytes()
        except OSError:
            problems.append(f"shard {sh.get('index')}: shards/ copy missing")
            continue
        if hashlib.sha256(data).hexdigest() != sh.get("shard_json_sha256"):
            problems.append(f"shard {sh.get('index')}: shard.json differs from its digest")
            continue
        s = json.loads(data.decode("utf-8"))
        if s.get("plan_sha256") != m["plan_sha256"] or s.get("tests") != expected[
                sh["index"] - 1]:
            problems.append(f"shard {sh.get('index')}: not the plan's assignment")
    if [sh.get("index") for sh in shards] != list(range(1, plan["n"] + 1)):
        problems.append("the shards are not 1..N once each")
    add("shards", not problems, "; ".join(problems) or f"{len(shards)} shard.json copies match")
    problems = []
    n = 0
    for t in tests:
        for r in t.get("receipts", []):
            n += 1
            path = root / "receipts" / f"{r['receipt_id']}.json"
            if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != r["sha256"]:
                problems.append(f"{r['receipt_id'][:20]}… missing or not the listed bytes")
                continue

            try:
                v = verify_receipt(str(path), frames_dir=str(root / "frames"), use=verifier)
                if not v.ok:
                    problems.append(f"{r['receipt_id'][:20]}… fails "
                                    + ", ".join(sorted({f"{c.verifier}:{c.name}"
                                                        for c in v.failed})))
            except ReceiptError as e:
                problems.append(f"{r['receipt_id'][:20]}… {e.code}")
    add("receipts", not problems, "; ".join(problems[:MAX_NAMED])
        or f"{n} receipts are the listed bytes and verify against frames/")
    if keys is not None:
        ok, detail, _ = check_signed_outputs(root, keys, MANIFEST_PREDICATE_TYPE, m,
                                             "manifest_id")
        add("manifest-signature", ok, detail)
        problems, rechecked, resting = [], 0, 0
        for t in tests:
            for r in t.get("receipts", []):
                if not r.get("authenticated"):
                    if (m.get("authentication") or {}).get("required"):
                        problems.append(f"{r['receipt_id'][:20]}… recorded as not authenticated")
                    continue
                if r.get("key_id") not in keys.ids:
                    resting += 1
                    continue
                base = root / "receipts" / r["receipt_id"]
                auth = authenticate_receipt(Path(f"{base}.json"), Path(f"{base}.dsse.json"),
                                            root / "frames", keys, verifier)
                rechecked += 1
                if not auth["authenticated"] or auth["key_id"] != r["key_id"]:
                    problems.append(f"{r['receipt_id'][:20]}… ({', '.join(auth['failed'])})")
        add("receipt-signatures", not problems, "; ".join(problems[:MAX_NAMED]) or
            f"{rechecked} receipt envelopes re-verified with the given keys; {resting} signed by "
            "keys not given here (their authentication rests on the signed manifest)")
    return checks


# ------------------------------------------------------------------------------------------------
# command line

def main(argv: Optional[List[str]] = None, out: Optional[IO[str]] = None) -> int:
    sink: IO[str] = out or sys.stdout
    parser = argparse.ArgumentParser(
        prog="evident merge", description="Verify shard bundles and merge them into one run.")
    parser.add_argument("bundles", nargs="*", metavar="DIR")
    parser.add_argument("-o", "--out", metavar="OUT", help="output directory (must not exist "
                        "or be empty)")
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object")
    parser.add_argument("--require-passed", action="store_true",
                        help="also refuse when a test failed, errored or xpassed")
    parser.add_argument("--verifier", default="both", choices=("both", "python", "cpp"))
    parser.add_argument("--check", metavar="OUT", help="re-check a merged output instead")
    parser.add_argument("--key", metavar="PUB.pem", action="append", default=[],
                        help="a trusted public key (repeatable): receipts must be signed by one "
                             "(with --check: the manifest's signer, and receipts signed by it)")
    parser.add_argument("--trusted-keys", metavar="DIR", help="a directory of trusted keys")
    parser.add_argument("--signing-key", metavar="KEY.pem",
                        help="sign manifest.dsse.json with this Ed25519 PKCS#8 PEM key")
    parser.add_argument("--state-dir", metavar="DIR",
                        help="sign with DIR/keys/signing.key (when no --signing-key)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    if args.check:
        try:
            keys = load_keys(args.key, args.trusted_keys)
        except E.KeyUsageError as e:
            if args.json:
                sink.write(json.dumps({"ok": False, "error": {
                    "code": e.code, "message": e.message, "retryable": False}}) + "\n")
            else:
                sys.stderr.write(f"evident: error [{e.code}]: {e.message}\n")
            return 2
        checks = check_output(args.check, verifier=args.verifier, keys=keys)
        ok = bool(checks) and all(c.ok for c in checks)
        authenticated = ok and keys is not None
        if args.json:
            answer: Dict[str, Any] = {"ok": ok, "checks": [c.as_json() for c in checks],
                                      "authenticated": authenticated}
            if not ok:
                answer["error"] = {"code": "merge-refused", "message": "failed checks: " +
                                   ", ".join(c.name for c in checks if not c.ok),
                                   "retryable": False}
            sink.write(json.dumps(answer, ensure_ascii=False) + "\n")
        else:
            for c in checks:
                sink.write(f"  {'ok  ' if c.ok else 'FAIL'}  {c.name}: {c.detail}\n")
            sink.write("merged output verified\n" if ok else "merged output does NOT verify\n")
            if ok and not authenticated:
                sink.write("NOT AUTHENTICATED: no --key or --trusted-keys was given; the output "
                          "is consistent, which proves nothing about who merged it\n")
        return 0 if ok else 1
    if not args.out or not args.bundles:
        result = MergeResult(False, [], error_code="merge-usage",
                             message="usage: evident merge DIR... -o OUT")
    else:
        result = merge(args.bundles, args.out, verifier=args.verifier,
                       require_passed=args.require_passed, key_files=args.key,
                       trusted_keys_dir=args.trusted_keys, signing_key=args.signing_key,
                       state_dir=args.state_dir)
    status = 0 if result.ok else (1 if result.error_code == "merge-refused" else 2)
    if args.json:
        doc: Dict[str, Any] = {"ok": result.ok, "checks": [c.as_json() for c in result.checks]}
        if result.ok:
            assert result.manifest is not None  # a merge that succeeded wrote one
            m = result.manifest
            doc.update(out=result.out, manifest_id=m["manifest_id"],
                       plan_sha256=m["plan_sha256"], outcomes=m["outcomes"],
                       signature=m["signature"]["state"],
                       authenticated=m["authentication"]["authenticated"] ==
                       m["receipt_count"] and m["authentication"]["required"])
        else:
            doc["error"] = {"code": result.error_code, "message": result.message,
                            "retryable": False}
        sink.write(json.dumps(doc, ensure_ascii=False) + "\n")
        return status
    for c in result.checks:
        where = f" [{c.bundle}]" if c.bundle else ""
        sink.write(f"  {'ok  ' if c.ok else 'FAIL'}  {c.name}{where}: {c.detail}\n")
    if result.ok:
        assert result.manifest is not None  # a merge that succeeded wrote one
        m = result.manifest
        sink.write(f"merged {len(m['shards'])} shards, {len(m['tests'])} tests, "
                  f"{m['receipt_count']} verified receipts, {m['frames']['unique']} frames "
                  f"into {result.out}\nmanifest {m['manifest_id']} ({m['signature']['state']})\n")
        a = m["authentication"]
        sink.write(f"receipts authenticated: {a['authenticated']} of {a['receipts']} by "
                  f"{', '.join(a['signing_keys']) or 'no key'}\n" if a["required"]
                  else a["note"] + "\n")
    else:
        sys.stderr.write(f"evident: error [{result.error_code}]: {result.message}\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
