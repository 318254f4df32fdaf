"""The shard planner: a deterministic split of a test plan into ``n`` shards (docs/scale.md).

Pure functions, standard library only (no pytest), shared by the pytest plugin (which selects a
shard's tests) and by ``evident merge`` (which recomputes the split to check every shard)::

    plan = make_plan(test_ids, n=4, durations_ms=None)     # {"tests", "n", "config"}
    plan_sha256(plan)                                       # H("evident/plan/v1", plan)
    assign(plan)                                            # [[ids of shard 1], ..., [shard n]]
    shard_tests(plan, 2)                                    # the ids of shard 2 (1-based)

Two split rules, named in ``plan["config"]["split"]`` so the split is recomputable from the plan
alone:

* ``hash/v1`` (no durations): order the tests by SHA-256 of ``"evident/shard-order/v1" 0x00 id``
  (ties by id), deal them round-robin to shards 1..n. Shard sizes differ by at most one.
* ``durations/v1`` (a durations table was given): the table, restricted to the plan's tests, is
  stored in the plan (``durations_ms``, integer milliseconds). Tests without a recorded duration
  count as the mean of the recorded ones (1000 ms when none is recorded). Longest first (ties by
  id), each test goes to the shard with the smallest total so far (ties: lowest index).

Each shard's list is sorted. Every test is in exactly one shard.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from . import verify as _v
from .verify import ReceiptFormatError, domain_digest

__all__ = ["ShardError", "DOMAIN_PLAN", "SPLIT_HASH", "SPLIT_DURATIONS", "MAX_TESTS", "MAX_SHARDS",
           "MAX_TEST_ID_BYTES", "parse_spec", "resolve_shard", "load_durations", "make_plan",
           "plan_sha256", "assign", "shard_tests", "check_plan", "load_json_strict"]

DOMAIN_PLAN = "evident/plan/v1"
DOMAIN_ORDER = "evident/shard-order/v1"
SPLIT_HASH = "hash/v1"
SPLIT_DURATIONS = "durations/v1"
MAX_TESTS = 100_000
MAX_SHARDS = 1024
MAX_TEST_ID_BYTES = 4096
MAX_DURATION_MS = 2 ** 53 - 1
MAX_DURATIONS_FILE_BYTES = 32 * 1024 * 1024
DEFAULT_DURATION_MS = 1000


class ShardError(Exception):
    """An expected failure of the planner or the shard plugin; ``code`` is stable (docs/errors.md)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message


# ------------------------------------------------------------------------------------------------
# which shard am I?

def parse_spec(text: str) -> Tuple[int, int]:
    """``"i/n"`` (1-based) -> (i, n); ``shard-spec`` when malformed or out of range."""
    parts = text.strip().split("/")
    if len(parts) != 2 or not all(p.isdigit() and len(p) <= 6 for p in parts):
        raise ShardError("shard-spec", "a shard is I/N with integers 1 <= I <= N <= %d"
                         % MAX_SHARDS)
    i, n = int(parts[0]), int(parts[1])
    if not (1 <= n <= MAX_SHARDS and 1 <= i <= n):
        raise ShardError("shard-spec", "a shard is I/N with integers 1 <= I <= N <= %d"
                         % MAX_SHARDS)
    return i, n


def _env_int(environ: Mapping[str, str], name: str) -> Optional[int]:
    value = environ.get(name)
    if value is None or value.strip() == "":
        return None
    value = value.strip()
    if not value.isdigit() or len(value) > 6:
        raise ShardError("shard-spec", "%s is not a small non-negative integer" % name)
    return int(value)


def resolve_shard(option: Optional[str], total_option: Optional[int],
                  environ: Mapping[str, str]) -> Optional[Tuple[int, int, str]]:
    """(index, total, source) of this run, or None when it is not sharded.

    Order: ``--evident-shard=I/N`` (``off`` disables sharding even when the environment has
    values); ``CI_NODE_INDEX``/``CI_NODE_TOTAL`` (GitLab ``parallel:``, 1-based);
    ``JOB_COMPLETION_INDEX`` (Kubernetes Indexed Job, 0-based, so +1) with the total from
    ``--evident-shard-total`` or ``EVIDENT_SHARD_TOTAL``.
    """
    if option is not None:
        if option.strip().lower() == "off":
            return None
        i, n = parse_spec(option)
        return i, n, "option"
    idx, tot = _env_int(environ, "CI_NODE_INDEX"), _env_int(environ, "CI_NODE_TOTAL")
    if idx is not None or tot is not None:
        if idx is None or tot is None:
            raise ShardError("shard-spec", "CI_NODE_INDEX and CI_NODE_TOTAL must both be set")
        i, n = parse_spec(f"{idx}/{tot}")
        return i, n, "CI_NODE_INDEX"
    k8s = _env_int(environ, "JOB_COMPLETION_INDEX")
    if k8s is not None:
        total = total_option if total_option is not None else _env_int(environ,
                                                                       "EVIDENT_SHARD_TOTAL")
        if total is None:
            raise ShardError("shard-spec", "JOB_COMPLETION_INDEX is set but the total is not: "
                             "pass --evident-shard-total=N or set EVIDENT_SHARD_TOTAL")
        i, n = parse_spec(f"{k8s + 1}/{total}")
        return i, n, "JOB_COMPLETION_INDEX"
    return None


# ------------------------------------------------------------------------------------------------
# strict JSON files

def load_json_strict(path: str, limit: int, code: str, what: str) -> Any:
    """Reads ``path`` (at most ``limit`` bytes) as one strict JSON value (no duplicate keys, no
    NaN; floats allowed only where the caller accepts them). Raises ShardError(code)."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise ShardError(code, "cannot read the %s: %s" % (what, e.strerror)) from None
    if len(data) > limit:
        raise ShardError(code, "the %s is larger than %d bytes" % (what, limit))
    try:
        text = data.decode("utf-8")
        value = json.loads(text, object_pairs_hook=_v._no_duplicates,
                           parse_constant=_v._reject_constant)
        _v._check_unicode(value)
    except (UnicodeError, ValueError, RecursionError, ReceiptFormatError):
        raise ShardError(code, "the %s is not valid JSON (strict: UTF-8, no duplicate keys)"
                         % what) from None
    return value


def load_durations(path: str) -> Dict[str, int]:
    """A durations table: a JSON object {test id: seconds} (the format of pytest-split's
    ``.test_durations`` and of ``durations.json`` written by ``evident merge``). Returns integer
    milliseconds. ``shard-durations`` when unreadable or malformed."""
    value = load_json_strict(path, MAX_DURATIONS_FILE_BYTES, "shard-durations",
                             "durations file")
    if not isinstance(value, dict) or len(value) > MAX_TESTS:
        raise ShardError("shard-durations", "the durations file is not an object of at most "
                         "%d entries" % MAX_TESTS)
    out: Dict[str, int] = {}
    for k, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1e9:
            raise ShardError("shard-durations", "a duration is not a number of seconds in "
                             "0..1e9")
        out[k] = int(round(v * 1000))
    return out


# ------------------------------------------------------------------------------------------------
# the plan

def _check_ids(tests: Sequence[str]) -> None:
    if len(tests) > MAX_TESTS:
        raise ShardError("shard-plan", "more than %d tests" % MAX_TESTS)
    for t in tests:
        if not isinstance(t, str) or not t:
            raise ShardError("shard-plan", "a test id is not a non-empty string")
        try:
            size = len(t.encode("utf-8"))
        except UnicodeEncodeError:
            raise ShardError("shard-plan", "a test id is not valid Unicode") from None
        if size > MAX_TEST_ID_BYTES:
            raise ShardError("shard-plan", "a test id is longer than %d bytes"
                             % MAX_TEST_ID_BYTES)


def make_plan(tests: Iterable[str], n: int,
              durations_ms: Optional[Mapping[str, int]] = None) -> Dict[str, Any]:
    """The plan object hashed by :func:`plan_sha256`: sorted unique ids, n and the split config."""
    ids = list(tests)
    _check_ids(ids)
    if len(set(ids)) != len(ids):
        raise ShardError("shard-plan", "the collection has duplicate test ids")
    if not 1 <= n <= MAX_SHARDS:
        raise ShardError("shard-spec", "N is outside 1..%d" % MAX_SHARDS)
    ids.sort()
    if durations_ms is None:
        config: Dict[str, Any] = {"split": SPLIT_HASH}
    else:
        table = {t: int(durations_ms[t]) for t in ids if t in durations_ms}
        config = {"split": SPLIT_DURATIONS, "durations_ms": table}
    return {"tests": ids, "n": n, "config": config}


def plan_sha256(plan: Mapping[str, Any]) -> str:
    """H("evident/plan/v1", plan), the receipts' domain digest over JCS."""
    try:
        return domain_digest(DOMAIN_PLAN, dict(plan))
    except ReceiptFormatError:
        raise ShardError("shard-plan", "the plan is not canonical JSON") from None


def check_plan(plan: Any) -> Optional[str]:
    """None when ``plan`` has the exact plan shape; else what is wrong (no content echoed)."""
    if not isinstance(plan, dict) or set(plan) != {"tests", "n", "config"}:
        return "plan is not {tests, n, config}"
    tests, n, config = plan["tests"], plan["n"], plan["config"]
    if type(n) is not int or not 1 <= n <= MAX_SHARDS:
        return "plan.n is not an integer in 1..%d" % MAX_SHARDS
    if not isinstance(tests, list):
        return "plan.tests is not an array"
    try:
        _check_ids(tests)
    except ShardError as e:
        return "plan.tests: " + e.message
    if tests != sorted(set(tests)):
        return "plan.tests is not sorted and unique"
    if not isinstance(config, dict):
        return "plan.config is not an object"
    split = config.get("split")
    if split == SPLIT_HASH:
        if set(config) != {"split"}:
            return "plan.config has unknown members"
    elif split == SPLIT_DURATIONS:
        if set(config) != {"split", "durations_ms"} or not isinstance(config["durations_ms"],
                                                                       dict):
            return "plan.config is not {split, durations_ms}"
        known = set(tests)
        for k, v in config["durations_ms"].items():
            if k not in known:
                return "plan.config.durations_ms names a test outside the plan"
            if type(v) is not int or not 0 <= v <= MAX_DURATION_MS:
                return "plan.config.durations_ms has a value that is not an integer >= 0"
    else:
        return "plan.config.split is not a known split rule"
    return None


def _order_key(test: str) -> Tuple[str, str]:
    h = hashlib.sha256(DOMAIN_ORDER.encode() + b"\x00" + test.encode("utf-8")).hexdigest()
    return h, test


def assign(plan: Mapping[str, Any]) -> List[List[str]]:
    """Every shard's tests (index 0 is shard 1), each list sorted; an exact cover of the plan."""
    problem = check_plan(plan)
    if problem:
        raise ShardError("shard-plan", problem)
    tests: List[str] = plan["tests"]
    n: int = plan["n"]
    config = plan["config"]
    shards: List[List[str]] = [[] for _ in range(n)]
    if config["split"] == SPLIT_HASH:
        for k, t in enumerate(sorted(tests, key=_order_key)):
            shards[k % n].append(t)
    else:
        table: Dict[str, int] = config["durations_ms"]
        known = list(table.values())
        default = (sum(known) // len(known)) if known else DEFAULT_DURATION_MS
        loads = [0] * n
        for t in sorted(tests, key=lambda t: (-table.get(t, default), t)):
            k = min(range(n), key=lambda j: (loads[j], j))
            shards[k].append(t)
            loads[k] += table.get(t, default)
    for s in shards:
        s.sort()
    return shards


def shard_tests(plan: Mapping[str, Any], index: int) -> List[str]:
    """The sorted test ids of shard ``index`` (1-based)."""
    n = plan.get("n") if isinstance(plan, Mapping) else None
    if type(n) is not int or not 1 <= index <= n:
        raise ShardError("shard-spec", "the shard index is outside 1..N")
    return assign(plan)[index - 1]


def fsync_write(path: str, data: bytes, mode: int = 0o644) -> None:
    """Writes ``data`` to ``path`` atomically and durably (temp file, fsync, rename, fsync dir)."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, ".%s.tmp-%d" % (os.path.basename(path), os.getpid()))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(directory)


def fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
