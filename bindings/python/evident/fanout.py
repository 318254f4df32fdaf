"""Fan-out of session jobs on a Dask cluster (docs/scale.md, "Fan-out on Dask").

    result = evident.fanout.run("tcp://127.0.0.1:8786", jobs, out_dir="fanout-out")
    result.ok, result.manifest            # evident.fanout-manifest/v1, also in out_dir

    python3 -m evident.fanout --scheduler ADDR JOBS.json -o OUT [--max-attempts 3] [--json]
    evident fanout --scheduler ADDR JOBS.json -o OUT        (the C++ CLI runs exactly this)

A job is ``{"id", "callable": "module:function", "args": {...}, "display": {"width", "height"}}``.
On a worker (one that declares the ``DESKTOP`` resource; every job takes one unit), the job runs
in that worker process's own in-process :class:`evident.Engine` (one per process, created on
first use, no daemon): a fresh display, then ``function(ctx)`` with a :class:`JobContext`
whose ``ctx.session(app)`` binds the session to this execution's ``attempt_id`` and the job's
``job_sha256``. Each execution gets a fresh attempt id and announces itself to the scheduler
(an acknowledged event) before it starts; its evidence is copied and fsynced on the worker
before it returns, and returned to the client, which writes it durably and verifies it.

Attempt ledger: every planned attempt and every execution, with its state — ``planned`` (never
started), ``started``, then ``closed`` (a receipt), ``aborted`` (the session was begun and
aborted), ``failed`` (an error, no receipt, or a receipt that did not verify) or ``lost`` (it
started but its result never reached the client: the worker died). **Counting rule**: a job's
counted attempt is the execution whose result reached the client as ``closed`` with a receipt
that verified at the client (both verifiers, its frames, its job digest and attempt id). The
client plans attempt k+1 only after attempt k ended without one, so at most one execution per
job is counted; every other execution stays in the ledger, uncounted. With trusted keys
(``key_files``/``trusted_keys_dir``, ``--key``/``--trusted-keys``) "verified" includes the
receipt's signed envelope (evident.merge.authenticate_receipt: both verifiers); a receipt that is
not signed by a trusted key fails (``fanout-unauthenticated``) and is not counted. Workers sign
with their engine's state dir key: ``$EVIDENT_FANOUT_STATE_DIR`` (one per machine, shared by its
worker processes; give it so the key can be pinned), else a temporary one per process. With a
signing key (``signing_key``/``state_dir``) the client writes ``manifest.dsse.json`` beside
``manifest.json`` (in-toto, ``urn:evident:fanout-manifest:v1``; docs/scale.md).
"""
from __future__ import annotations

import argparse
import atexit
import datetime
import hashlib
import importlib
import json
import os
import re
import secrets
import shutil
import socket
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union

from . import envelope as E
from ._version import __version__
from .app import App
from .display import Display
from .engine import Engine
from .errors import ReceiptError, UsageError
from .merge import Keys, authenticate_receipt, load_keys, load_signer, sign_outputs
from .plan import ShardError, fsync_dir, fsync_write, load_json_strict
from .verification import verify_receipt
from .session import Session
from .verify import ReceiptFormatError, domain_digest, jcs

__all__ = ["JobContext", "FanoutError", "FanoutResult", "run", "load_jobs", "job_sha256",
           "execute", "run_job", "main", "RESOURCE", "MANIFEST_SCHEMA"]

RESOURCE = "DESKTOP"
JOBS_SCHEMA = "evident.fanout-jobs/v1"
MANIFEST_SCHEMA = "evident.fanout-manifest/v1"
FANOUT_PREDICATE_TYPE = "urn:evident:fanout-manifest:v1"
DOMAIN_JOB = "evident/fanout-job/v1"
DOMAIN_PLAN = "evident/fanout-plan/v1"
DOMAIN_MANIFEST = "evident/fanout-manifest/v1"
MAX_JOBS = 10_000
MAX_ATTEMPTS = 10
MAX_JOB_CANONICAL_BYTES = 64 * 1024
MAX_EVIDENCE_BYTES = 64 * 1024 * 1024
MAX_JOBS_FILE_BYTES = 64 * 1024 * 1024
JOB_KEYS = frozenset({"id", "callable", "args", "display"})
_JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_CALLABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*")
STATES = ("planned", "started", "closed", "aborted", "failed", "lost")


class FanoutError(Exception):
    """An expected failure with a stable code (docs/errors.md)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


# ------------------------------------------------------------------------------------------------
# jobs

def _check_job(job: Any) -> None:
    if not isinstance(job, dict) or not {"id", "callable"} <= set(job) or not set(job) <= JOB_KEYS:
        raise FanoutError("fanout-jobs", "a job is {id, callable[, args][, display]}")
    if not isinstance(job["id"], str) or not _JOB_ID.fullmatch(job["id"]):
        raise FanoutError("fanout-jobs", "a job id is 1..128 characters of A-Z a-z 0-9 . _ - "
                          "(starting with a letter or digit)")
    if not isinstance(job["callable"], str) or not _CALLABLE.fullmatch(job["callable"]):
        raise FanoutError("fanout-jobs", "a job's callable is module:function")
    if "args" in job and not isinstance(job["args"], dict):
        raise FanoutError("fanout-jobs", "a job's args is an object")
    if "display" in job:
        d = job["display"]
        if not (isinstance(d, dict) and set(d) <= {"width", "height"}
                and all(type(v) is int and 64 <= v <= 8192 for v in d.values())):
            raise FanoutError("fanout-jobs", "a job's display is {width, height} in 64..8192")
    try:
        size = len(jcs(job))
    except ReceiptFormatError:
        raise FanoutError("fanout-jobs", "a job is not canonical JSON (no floats, valid "
                          "Unicode)") from None
    if size > MAX_JOB_CANONICAL_BYTES:
        raise FanoutError("fanout-jobs", "a job is larger than %d bytes" % MAX_JOB_CANONICAL_BYTES)


def job_sha256(job: Mapping[str, Any]) -> str:
    """H("evident/fanout-job/v1", job): what the job's receipts bind as ``job_sha256``."""
    return domain_digest(DOMAIN_JOB, dict(job))


def validate_jobs(jobs: Sequence[Any]) -> List[Dict[str, Any]]:
    if not isinstance(jobs, (list, tuple)) or not 1 <= len(jobs) <= MAX_JOBS:
        raise FanoutError("fanout-jobs", "give 1..%d jobs" % MAX_JOBS)
    seen = set()
    out = []
    for job in jobs:
        _check_job(job)
        if job["id"] in seen:
            raise FanoutError("fanout-jobs", "two jobs have the same id")
        seen.add(job["id"])
        out.append(dict(job))
    return out


def load_jobs(path: str) -> List[Dict[str, Any]]:
    """JOBS.json: ``{"schema": "evident.fanout-jobs/v1", "jobs": [...]}`` or a bare list."""
    try:
        doc = load_json_strict(path, MAX_JOBS_FILE_BYTES, "fanout-jobs", "jobs file")
    except ShardError as e:
        raise FanoutError(e.code, e.message) from None
    if isinstance(doc, dict):
        if doc.get("schema") != JOBS_SCHEMA or set(doc) != {"schema", "jobs"}:
            raise FanoutError("fanout-jobs", "the jobs file is {schema: %s, jobs} or a list"
                              % JOBS_SCHEMA)
        doc = doc["jobs"]
    return validate_jobs(doc)


# ------------------------------------------------------------------------------------------------
# the worker side

_ENGINE_LOCK = threading.Lock()
_ENGINE: Dict[str, Engine] = {}


def _engine() -> Engine:
    """This worker process's engine (created on first use; closed when the process exits)."""
    with _ENGINE_LOCK:
        engine = _ENGINE.get("engine")
        if engine is None or engine.closed:
            state = os.environ.get("EVIDENT_FANOUT_STATE_DIR")
            if state:   # this machine's kept state dir: its key can be pinned
                os.makedirs(state, mode=0o700, exist_ok=True)
            else:
                state = tempfile.mkdtemp(prefix=f"evident-fanout-engine-{os.getpid()}-")
            engine = Engine(state_dir=state)
            _ENGINE["engine"] = engine
            atexit.register(engine.close)
        return engine


class JobContext:
    """What a job function gets: ``job_id``, ``args``, ``attempt_id``, ``job_sha256``,
    ``engine`` (this process's), ``display`` (fresh, destroyed after the job), ``scratch``
    (a private directory, removed after the job); ``launch(argv)`` and ``session(app)``."""

    def __init__(self, job: Dict[str, Any], attempt_id: str, digest: str, engine: Engine,
                 display: Display, scratch: Path) -> None:
        self.job = job
        self.job_id: str = job["id"]
        self.args: Dict[str, Any] = dict(job.get("args") or {})
        self.attempt_id = attempt_id
        self.job_sha256 = digest
        self.engine = engine
        self.display = display
        self.scratch = scratch
        self.sessions: List[Session] = []
        self.apps: List[App] = []

    def launch(self, argv: Sequence[str], wait_window_ms: Optional[int] = 5000) -> App:
        app = self.display.launch(list(argv), wait_window_ms=wait_window_ms)
        self.apps.append(app)
        return app

    def session(self, app: Union[App, str]) -> Session:
        """Begins the job's session, bound to this execution's attempt id and the job digest.
        One per execution: the session's receipt is the execution's evidence."""
        if self.sessions:
            raise UsageError("fanout-one-session", "a fan-out job runs one session")
        s = self.display.session(app, attempt_id=self.attempt_id, job_sha256=self.job_sha256)
        self.sessions.append(s)
        return s


def _durable_copy_dir(src: Path, dst: Path) -> Dict[str, bytes]:
    """Copies the regular files of ``src`` into ``dst`` (fsynced) and returns their bytes."""
    dst.mkdir(parents=True, exist_ok=True)
    files: Dict[str, bytes] = {}
    total = 0
    for entry in sorted(src.iterdir()):
        if not entry.is_file() or entry.is_symlink():
            continue
        data = entry.read_bytes()
        total += len(data)
        if total > MAX_EVIDENCE_BYTES:
            raise FanoutError("fanout-evidence-too-large",
                              "a job's evidence is larger than %d bytes" % MAX_EVIDENCE_BYTES)
        fsync_write(str(dst / entry.name), data, 0o600)
        files[entry.name] = data
    fsync_dir(str(dst))
    fsync_dir(str(dst.parent))
    return files


def _error_code(e: BaseException) -> str:
    code = getattr(e, "code", None)
    # Only codes and type names: an exception's message can hold typed text.
    return code if isinstance(code, str) else type(e).__name__


def run_job(job: Dict[str, Any], digest: str, attempt_id: str,
            evidence_root: Optional[str] = None) -> Dict[str, Any]:
    """Runs one execution of ``job`` in this process's engine, without Dask: a fresh display,
    the job function, then the session's evidence copied (fsynced) to
    ``<evidence_root>/<attempt_id>/``. Returns the outcome (state, error, files' bytes)."""
    root = Path(evidence_root or os.environ.get("EVIDENT_FANOUT_DIR")
                or os.path.join(tempfile.gettempdir(), f"evident-fanout-{os.getuid()}"))
    result: Dict[str, Any] = {"attempt_id": attempt_id, "started_at": _now(), "state": "failed",
                              "error": None, "files": {}, "evidence_dir": None}
    scratch = Path(tempfile.mkdtemp(prefix="evident-fanout-job-"))
    ctx: Optional[JobContext] = None
    try:
        module_name, _, func_name = job["callable"].partition(":")
        fn = getattr(importlib.import_module(module_name), func_name)
        engine = _engine()
        size = job.get("display") or {}
        with engine.create_display(width=size.get("width", 1024),
                                   height=size.get("height", 768)) as display:
            ctx = JobContext(job, attempt_id, digest, engine, display, scratch)
            try:
                fn(ctx)
            finally:
                for app in reversed(ctx.apps):
                    app.__exit__(None, None, None)
            s = ctx.sessions[0] if len(ctx.sessions) == 1 else None
            receipt = s.receipt if s is not None and s.closed_reply is not None else None
            evidence = s.evidence_dir if s is not None else None
            if not receipt or evidence is None:
                result["error"] = "fanout-no-receipt"
            else:
                dest = root / attempt_id
                result["files"] = _durable_copy_dir(Path(evidence), dest)
                result["evidence_dir"] = str(dest)
                result["receipt_id"] = receipt.get("receipt_id")
                host = (receipt.get("engine") or {}).get("host_id")
                if isinstance(host, str):
                    result["host_id"] = host
                result["state"] = "closed"
    except Exception as e:  # noqa: BLE001 - every failure is an outcome of this execution
        result["error"] = _error_code(e)
        if ctx is not None and ctx.sessions and ctx.sessions[0].aborted:
            result["state"] = "aborted"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    result["ended_at"] = _now()
    return result


def execute(job: Dict[str, Any], digest: str, attempt: int, run_id: str, topic: str,
            evidence_root: Optional[str] = None) -> Dict[str, Any]:
    """One execution of attempt ``attempt`` of ``job`` on a Dask worker (the task function)."""
    from distributed import get_client, get_worker

    exec_id = secrets.token_hex(8)
    attempt_id = f"{run_id}.{job['id']}.a{attempt}.{exec_id}"
    worker = get_worker()
    base = {"job": job["id"], "attempt": attempt, "attempt_id": attempt_id, "exec_id": exec_id,
            "worker": str(worker.address), "worker_name": str(worker.name),
            "hostname": socket.gethostname(), "pid": os.getpid()}
    # Acknowledged by the scheduler before anything starts: a lost execution is still known.
    get_client().log_event(topic, {**base, "state": "started", "at": _now()})
    root = Path(evidence_root or os.environ.get("EVIDENT_FANOUT_DIR")
                or os.path.join(tempfile.gettempdir(), f"evident-fanout-{os.getuid()}"))
    return {**base, **run_job(job, digest, attempt_id, str(root / run_id))}


# ------------------------------------------------------------------------------------------------
# the client side

@dataclass
class FanoutResult:
    ok: bool
    manifest: Dict[str, Any]
    out: str


def _connect(client_or_address: Any) -> Tuple[Any, bool]:
    from distributed import Client

    if isinstance(client_or_address, str):
        return Client(client_or_address, timeout=30), True
    return client_or_address, False


def _accept(out: Path, res: Dict[str, Any], job: Dict[str, Any], digest: str,
            verifier: str, keys: Any = None) -> Dict[str, Any]:
    """Writes a closed execution's evidence durably at the client and verifies it there."""
    files: Dict[str, bytes] = res.get("files") or {}
    if "receipt.json" not in files:
        return {"ok": False, "error": "fanout-no-receipt"}
    dest = out / "attempts" / res["attempt_id"]
    dest.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        if "/" in name or name in (".", ".."):
            return {"ok": False, "error": "fanout-evidence-name"}
        fsync_write(str(dest / name), data, 0o600)
    fsync_dir(str(dest))
    try:
        v = verify_receipt(str(dest / "receipt.json"), frames_dir=str(dest),
                           expect_job_sha256=digest, use=verifier)
    except ReceiptError as e:
        return {"ok": False, "error": e.code}
    receipt = json.loads(files["receipt.json"].decode("utf-8"))
    attempt_ok = receipt.get("binding", {}).get("attempt_id") == res["attempt_id"]
    failed = sorted({f"{c.verifier}:{c.name}" for c in v.failed})
    if not attempt_ok:
        failed.append("attempt_id")
    auth: Dict[str, Any] = {"authenticated": False, "key_id": None, "failed": [],
                            "verifiers": []}
    if keys is not None:
        auth = authenticate_receipt(dest / "receipt.json", dest / "receipt.dsse.json", dest,
                                    keys, verifier)
        failed += auth["failed"]
    engine = receipt.get("engine") if isinstance(receipt.get("engine"), dict) else {}
    host = engine.get("host_id") if isinstance(engine.get("host_id"), str) else None
    ok = v.ok and attempt_ok and (keys is None or auth["authenticated"])
    return {"ok": ok, "failed": failed, "verifiers": list(v.verifiers),
            "signature_verifiers": auth["verifiers"],
            "error": "fanout-unauthenticated" if v.ok and attempt_ok and not ok else None,
            "authenticated": auth["authenticated"], "key_id": auth["key_id"], "host_id": host,
            "receipt_id": receipt.get("receipt_id"),
            "sha256": hashlib.sha256(files["receipt.json"]).hexdigest(),
            "path": f"attempts/{res['attempt_id']}/receipt.json"}


def run(client_or_address: Any, jobs: Sequence[Dict[str, Any]], *, out_dir: str,
        max_attempts: int = 3, timeout_s: float = 3600, verifier: str = "both",
        evidence_root: Optional[str] = None, key_files: Sequence[str] = (),
        trusted_keys_dir: Optional[str] = None, signing_key: Optional[str] = None,
        state_dir: Optional[str] = None) -> FanoutResult:
    """Runs ``jobs`` on the cluster; writes ``out_dir`` (evidence, manifest.json and, with a
    signing key, manifest.dsse.json); returns :class:`FanoutResult` (``ok`` iff every job has
    exactly one counted, verified — with keys: authenticated — attempt). Key problems raise
    FanoutError with the key-* / verify-usage code before anything runs."""
    from distributed import as_completed


    jobs = validate_jobs(jobs)
    try:
        keys = load_keys(key_files, trusted_keys_dir)
        signer = load_signer(signing_key, state_dir)
    except E.KeyUsageError as e:
        raise FanoutError(e.code, e.message) from None
    if not 1 <= max_attempts <= MAX_ATTEMPTS:
        raise FanoutError("fanout-usage", "max_attempts is 1..%d" % MAX_ATTEMPTS)
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FanoutError("fanout-output-exists", "the output exists and is not an empty "
                          "directory")
    out.mkdir(parents=True, exist_ok=True)
    digests = {j["id"]: job_sha256(j) for j in jobs}
    by_id = {j["id"]: j for j in jobs}
    run_id = "run-" + secrets.token_hex(6)
    topic = f"evident-fanout-{run_id}"
    plan = {"jobs": [{"id": j, "job_sha256": digests[j]} for j in sorted(digests)],
            "max_attempts": max_attempts}
    started_at = _now()
    client, owned = _connect(client_or_address)
    planned: List[Dict[str, Any]] = []     # one per planned attempt
    results: Dict[str, Dict[str, Any]] = {}   # attempt key -> the result that reached us
    counted: Dict[str, str] = {}            # job id -> counted attempt_id
    verifiers: Set[str] = set()
    sig_verifiers: Set[str] = set()
    cancelled: Set[str] = set()                # attempt keys still running at the deadline
    deadline = time.monotonic() + timeout_s
    try:
        def submit(job_id: str, attempt: int) -> Any:
            key = f"evident-fanout-{run_id}-{job_id}-a{attempt}"
            planned.append({"job": job_id, "attempt": attempt, "key": key, "planned_at": _now()})
            return client.submit(execute, by_id[job_id], digests[job_id], attempt, run_id, topic,
                                 evidence_root, key=key, pure=False, retries=0,
                                 resources={RESOURCE: 1})

        futures = [submit(j["id"], 1) for j in jobs]
        attempt_of = {f.key: (k_job, 1) for f, k_job in zip(futures, [j["id"] for j in jobs])}
        pending = as_completed(futures, with_results=True, raise_errors=False)
        for future, value in pending:
            job_id, attempt = attempt_of[future.key]
            if isinstance(value, dict) and "attempt_id" in value:
                results[future.key] = value
                if value["state"] == "closed":
                    verdict = _accept(out, value, by_id[job_id], digests[job_id], verifier,
                                      keys)
                    verifiers.update(verdict.get("verifiers", []))
                    sig_verifiers.update(verdict.get("signature_verifiers", []))
                    value["verification"] = {k: v for k, v in verdict.items()
                                             if k not in ("verifiers", "signature_verifiers")}
                    if verdict["ok"]:
                        counted[job_id] = value["attempt_id"]
                    else:
                        value["state"] = "failed"
                        value["error"] = verdict.get("error") or "fanout-verify-failed"
                value.pop("files", None)
            else:
                # No result from execute() (which returns every job failure as a value): Dask
                # gave up on the task — KilledWorker when workers died running it (lost).
                exc = value[1] if isinstance(value, tuple) and len(value) == 3 else value
                name = type(exc).__name__
                results[future.key] = {"job": job_id, "attempt": attempt,
                                       "state": "lost" if name == "KilledWorker" else "failed",
                                       "error": name}
            if job_id not in counted and attempt < max_attempts \
                    and time.monotonic() < deadline:
                f = submit(job_id, attempt + 1)
                attempt_of[f.key] = (job_id, attempt + 1)
                pending.add(f)
            if time.monotonic() >= deadline:
                # Out of time: what has not returned is cancelled and stays planned/started.
                cancelled.update(f.key for f in pending.futures)
                client.cancel(list(pending.futures))
                break
        events = [msg for _, msg in client.get_events(topic)]
    finally:
        if owned:
            client.close()
    manifest = _manifest(run_id, plan, planned, results, events, counted, verifiers,
                         started_at, digests, cancelled, keys, signer, sig_verifiers)
    fsync_write(str(out / "manifest.json"),
                (json.dumps(manifest, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
                .encode("utf-8"))
    if signer is not None:
        sign_outputs(out, signer, ["manifest.json"], FANOUT_PREDICATE_TYPE,
                     {"manifest_id": manifest["manifest_id"],
                      "plan_sha256": manifest["plan_sha256"]})
    return FanoutResult(manifest["ok"], manifest, str(out))


def _manifest(run_id: str, plan: Dict[str, Any], planned: List[Dict[str, Any]],
              results: Dict[str, Dict[str, Any]], events: List[Any], counted: Dict[str, str],
              verifiers: Set[str], started_at: str, digests: Dict[str, str], cancelled: Set[str],
              keys: Optional[Keys] = None, signer: Optional[E.SigningKey] = None,
              sig_verifiers: Iterable[str] = ()) -> Dict[str, Any]:
    started = {e["attempt_id"]: e for e in events
               if isinstance(e, dict) and e.get("state") == "started"}
    ledger: List[Dict[str, Any]] = []
    for p in planned:
        res = results.get(p["key"])
        returned_id = res.get("attempt_id") if res else None
        execs = [e for e in started.values() if e["job"] == p["job"]
                 and e["attempt"] == p["attempt"]]
        execs.sort(key=lambda e: str(e["at"]))
        if not execs and res is None:
            ledger.append({**p, "attempt_id": None, "state": "planned", "counted": False})
            continue
        if res is not None and returned_id is None:
            # Dask reported a failure for the attempt; the executions it started were lost.
            for e in execs:
                ledger.append(_entry(p, e, {"state": "lost", "error": res.get("error")}, False))
            if not execs:
                ledger.append({**p, "attempt_id": None, "state": "lost",
                               "error": res.get("error"), "counted": False})
            continue
        for e in execs:
            if e["attempt_id"] == returned_id:
                continue
            if res is None and p["key"] in cancelled:
                # Still running when the run's time was up: started, never ended here.
                ledger.append(_entry(p, e, {"state": "started", "error": "fanout-timeout"},
                                     False))
                continue
            # Started, but its result never reached the client (its worker died; Dask ran the
            # same attempt again elsewhere). Its evidence may exist on that worker's disk.
            ledger.append(_entry(p, e, {"state": "lost", "error": "worker-lost"}, False))
        if res is not None:
            ledger.append(_entry(p, started.get(returned_id, {}), res,
                                 counted.get(p["job"]) == returned_id))
    jobs_out = []
    for j in sorted(digests):
        entries = [e for e in ledger if e["job"] == j]
        c = next((e for e in entries if e["counted"]), None)
        jobs_out.append({"id": j, "job_sha256": digests[j],
                         "outcome": "closed" if c else "failed",
                         "counted_attempt_id": c["attempt_id"] if c else None,
                         "receipt": c.get("receipt") if c else None,
                         "attempts": len({e["attempt"] for e in entries}),
                         "executions": len([e for e in entries if e["state"] != "planned"])})
    ok = all(j["outcome"] == "closed" for j in jobs_out) and all(
        sum(1 for e in ledger if e["job"] == j["id"] and e["counted"]) == 1 for j in jobs_out)
    manifest: Dict[str, Any] = {
        "schema": MANIFEST_SCHEMA,
        "run_id": run_id,
        "plan_sha256": domain_digest(DOMAIN_PLAN, plan),
        "plan": plan,
        "ok": ok,
        "jobs": jobs_out,
        "ledger": ledger,
        "counting_rule": "the execution whose result reached the client as closed with a "
                         "receipt verified at the client; at most one per job",
        "verification": {"verifiers": sorted(verifiers)},
        "authentication": _authentication(ledger, keys, sig_verifiers),
        "signature": ({"state": "signed", "key_id": signer.key_id,
                       "envelope": "manifest.dsse.json", "predicate_type": FANOUT_PREDICATE_TYPE,
                       "subjects": ["manifest.json"]} if signer is not None else
                      {"state": "unsigned",
                       "reason": "no signing key was given; integrity by manifest_id only"}),
        "client": {"evident": __version__, "hostname": socket.gethostname()},
        "started_at": started_at,
        "finished_at": _now(),
    }
    manifest["manifest_id"] = "efm-" + domain_digest(DOMAIN_MANIFEST, manifest)
    return manifest


def _authentication(ledger: List[Dict[str, Any]], keys: Optional[Keys],
                    sig_verifiers: Iterable[str]) -> Dict[str, Any]:
    counted = [e for e in ledger if e["counted"]]
    return {"required": keys is not None,
            "trusted_keys": keys.ids if keys is not None else [],
            "verifiers": sorted(sig_verifiers),
            "counted": len(counted),
            "authenticated": sum(1 for e in counted if e.get("authenticated")),
            "signing_keys": sorted({e["key_id"] for e in counted if e.get("key_id")}),
            "host_ids": sorted({e["host_id"] for e in counted if e.get("host_id")}),
            "note": ("every counted receipt's envelope verified with a trusted key"
                     if keys is not None else
                     "NOT AUTHENTICATED: no trusted keys were given; the receipts are internally "
                     "consistent, which proves nothing about who made them")}


def _entry(p: Dict[str, Any], started: Dict[str, Any], res: Dict[str, Any],
           is_counted: bool) -> Dict[str, Any]:
    e: Dict[str, Any] = {
        "job": p["job"], "attempt": p["attempt"], "key": p["key"],
        "attempt_id": res.get("attempt_id") or started.get("attempt_id"),
        "state": res.get("state", "lost"), "counted": is_counted,
        "error": res.get("error"),
        "worker": res.get("worker") or started.get("worker"),
        "hostname": res.get("hostname") or started.get("hostname"),
        "pid": res.get("pid") or started.get("pid"),
        "started_at": started.get("at") or res.get("started_at"),
        "ended_at": res.get("ended_at"),
        "worker_evidence_dir": res.get("evidence_dir"),
    }
    ver = res.get("verification")
    e["authenticated"] = bool(ver and ver.get("authenticated"))
    e["key_id"] = ver.get("key_id") if ver else None
    e["host_id"] = (ver.get("host_id") if ver else None) or res.get("host_id")
    if ver:
        e["verification"] = {"ok": ver.get("ok"), "failed": ver.get("failed", [])}
        if ver.get("ok"):
            e["receipt"] = {"receipt_id": ver["receipt_id"], "sha256": ver["sha256"],
                            "path": ver["path"]}
    return e


# ------------------------------------------------------------------------------------------------
# command line

def main(argv: Optional[List[str]] = None, out: Optional[IO[str]] = None) -> int:
    sink: IO[str] = out or sys.stdout
    parser = argparse.ArgumentParser(prog="evident fanout",
                                     description="Run session jobs on a Dask cluster.")
    parser.add_argument("jobs", metavar="JOBS.json", nargs="?")
    parser.add_argument("--scheduler", metavar="ADDR", help="the Dask scheduler address")
    parser.add_argument("-o", "--out", metavar="OUT")
    parser.add_argument("--max-attempts", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=3600, metavar="S")
    parser.add_argument("--verifier", default="both", choices=("both", "python", "cpp"))
    parser.add_argument("--key", metavar="PUB.pem", action="append", default=[],
                        help="a trusted worker key (repeatable): count only receipts it signed")
    parser.add_argument("--trusted-keys", metavar="DIR", help="a directory of trusted keys")
    parser.add_argument("--signing-key", metavar="KEY.pem",
                        help="sign manifest.dsse.json with this Ed25519 PKCS#8 PEM key")
    parser.add_argument("--state-dir", metavar="DIR",
                        help="sign with DIR/keys/signing.key (when no --signing-key)")
    parser.add_argument("--json", action="store_true")
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0

    def fail(code: str, message: str, status: int) -> int:
        if args.json:
            sink.write(json.dumps({"ok": False, "error": {"code": code, "message": message,
                                                          "retryable": False}}) + "\n")
        else:
            sys.stderr.write(f"evident: error [{code}]: {message}\n")
        return status

    if not args.jobs or not args.scheduler or not args.out:
        return fail("fanout-usage", "usage: evident fanout --scheduler ADDR JOBS.json -o OUT", 2)
    try:
        jobs = load_jobs(args.jobs)
        result = run(args.scheduler, jobs, out_dir=args.out, max_attempts=args.max_attempts,
                     timeout_s=args.timeout, verifier=args.verifier, key_files=args.key,
                     trusted_keys_dir=args.trusted_keys, signing_key=args.signing_key,
                     state_dir=args.state_dir)
    except FanoutError as e:
        return fail(e.code, e.message, 2)
    except OSError as e:
        return fail("fanout-unavailable", f"cannot reach the scheduler: {type(e).__name__}", 1)
    m = result.manifest
    if args.json:
        sink.write(json.dumps({"ok": m["ok"], "out": result.out, "manifest_id": m["manifest_id"],
                              "jobs": m["jobs"]}, ensure_ascii=False) + "\n")
    else:
        for j in m["jobs"]:
            sink.write(f"  {'ok  ' if j['outcome'] == 'closed' else 'FAIL'}  {j['id']}: "
                      f"{j['outcome']} after {j['executions']} execution(s); counted "
                      f"{j['counted_attempt_id']}\n")
        sink.write(f"{'verified' if m['ok'] else 'incomplete'}: manifest {m['manifest_id']} "
                  f"({m['signature']['state']}) in {result.out}\n")
    return 0 if m["ok"] else 1


if __name__ == "__main__":
    # Run the imported module's main, so Dask pickles evident.fanout.execute by reference (the
    # workers import it) rather than this __main__ copy by value.
    from evident.fanout import main as _main

    sys.exit(_main())
