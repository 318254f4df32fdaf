"""CI shards in the pytest plugin (docs/scale.md): ``--evident-shard=I/N`` and the shard bundle.

Registered by :mod:`evident.pytest_plugin` (``pytest_plugins``), so it is active wherever the
plugin is. When a run is sharded (``--evident-shard=I/N``, ``CI_NODE_INDEX``/``CI_NODE_TOTAL``
or ``JOB_COMPLETION_INDEX`` + ``EVIDENT_SHARD_TOTAL``):

* after every other selection (``-k``, ``-m``, ...) the collected test ids form the plan
  (:mod:`evident.plan`), and only this shard's tests are kept (the others are deselected);
* the split is a pure function of the plan, so under pytest-xdist every worker computes the
  same selection from its own identical collection; each worker reports its plan digest and
  selection to the controller, which refuses a disagreement (``shard-inconsistent``);
* at the end, the reporting process (the xdist controller, or the only process) writes
  ``<evident-dir>/shard.json`` (``evident.shard/v1``) beside the tests' evidence dirs:
  the plan, its digest, I/N, the selected tests, their outcomes and durations, every receipt
  (path, receipt_id, SHA-256 of the file) and the runner.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import socket
from pathlib import Path
from typing import Any, Dict, Generator, List, Optional

import pytest

from ._version import __version__
from .plan import (ShardError, assign, fsync_write, load_durations, make_plan, plan_sha256,
                   resolve_shard)
from .pytest_plugin import _RECORDER_KEY, evidence_root, hookimpl

SHARD_SCHEMA = "evident.shard/v1"
SHARD_FILE = "shard.json"
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
# CI variables that identify the runner and the run (never secrets; no tokens are read).
CI_VARIABLES = ("GITHUB_RUN_ID", "GITHUB_RUN_ATTEMPT", "GITHUB_JOB", "GITHUB_SHA", "CI_JOB_ID",
                "CI_PIPELINE_ID", "CI_COMMIT_SHA", "CI_NODE_INDEX", "CI_NODE_TOTAL",
                "JOB_COMPLETION_INDEX", "EVIDENT_SHARD_TOTAL")

_STATE = pytest.StashKey["ShardState"]()


class ShardState:
    def __init__(self, index: int, total: int, source: str,
                 durations: Optional[Dict[str, int]]) -> None:
        self.index = index
        self.total = total
        self.source = source
        self.durations = durations
        self.plan: Optional[Dict[str, Any]] = None
        self.plan_sha256: Optional[str] = None
        self.selected: Optional[List[str]] = None
        self.outcomes: Dict[str, str] = {}
        self.durations_ms: Dict[str, int] = {}
        self.receipts: Dict[str, List[str]] = {}
        self.workers: Dict[str, str] = {}   # worker id -> plan digest it reported
        self.inconsistent = False
        self.started_at = _now()


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _usage(e: ShardError) -> pytest.UsageError:
    return pytest.UsageError(f"evident: error [{e.code}]: {e.message}")


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


# ------------------------------------------------------------------------------------------------
# options

def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evident", "Evident displays and evidence")
    group.addoption("--evident-shard", default=None, metavar="I/N",
                    help="run shard I of N (1-based) and write <evident-dir>/shard.json; 'off' "
                         "ignores CI_NODE_INDEX/CI_NODE_TOTAL/JOB_COMPLETION_INDEX")
    group.addoption("--evident-shard-total", default=None, type=int, metavar="N",
                    help="number of shards when the index comes from JOB_COMPLETION_INDEX "
                         "(default: $EVIDENT_SHARD_TOTAL)")
    group.addoption("--evident-durations", default=None, metavar="FILE",
                    help="JSON {test id: seconds} to balance shards by (e.g. a previous "
                         "merge's durations.json)")


def pytest_configure(config: pytest.Config) -> None:
    try:
        resolved = resolve_shard(config.getoption("evident_shard"),
                                 config.getoption("evident_shard_total"), os.environ)
        if resolved is None:
            return
        path = config.getoption("evident_durations")
        durations = load_durations(path) if path else None
    except ShardError as e:
        raise _usage(e) from None
    if config.getoption("evident_keep", "always") != "always":
        raise _usage(ShardError("shard-keep", "a shard bundle keeps every receipt: "
                                "--evident-keep=on-failure cannot be used with shards"))
    state = ShardState(resolved[0], resolved[1], resolved[2], durations)
    config.stash[_STATE] = state
    if not _is_worker(config):
        stale = _bundle_dir(config) / SHARD_FILE
        if stale.exists():
            stale.unlink()  # a previous run's bundle must not survive an interrupted one
    config.pluginmanager.register(ShardPlugin(config, state), "evident-shard-run")


def _bundle_dir(config: pytest.Config) -> Path:
    return evidence_root(config)


# ------------------------------------------------------------------------------------------------
# the run's hooks (registered only when the run is sharded)

def _outcome(report: pytest.TestReport, previous: Optional[str]) -> Optional[str]:
    """One outcome per test from its setup/call/teardown reports."""
    wasxfail = hasattr(report, "wasxfail")
    if report.when == "setup":
        if report.failed:
            return "error"
        if report.skipped:
            return "xfailed" if wasxfail else "skipped"
        return previous
    if report.when == "call":
        if report.failed:
            return "failed"
        if report.skipped:
            return "xfailed" if wasxfail else "skipped"
        return "xpassed" if wasxfail else "passed"
    if report.failed and previous != "failed":
        return "error"   # teardown failed
    return previous


def _receipt_entry(root: Path, test: str, rel: str) -> Dict[str, Any]:
    data = (root / rel).read_bytes()
    entry: Dict[str, Any] = {"test": test, "path": rel,
                             "sha256": hashlib.sha256(data).hexdigest(), "receipt_id": None}
    try:
        parsed = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return entry   # recorded as is; merge's verification names the problem
    if isinstance(parsed, dict):
        if isinstance(parsed.get("receipt_id"), str):
            entry["receipt_id"] = parsed["receipt_id"]
        engine = parsed.get("engine")
        if isinstance(engine, dict) and isinstance(engine.get("host_id"), str):
            entry["host_id"] = engine["host_id"]
    return entry


class ShardPlugin:
    def __init__(self, config: pytest.Config, state: ShardState) -> None:
        self.config = config
        self.state = state
        self.worker = _is_worker(config)

    # -- selection: in every process that collects, from its own collection ---------------
    @hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: List[pytest.Item]) -> None:
        state = self.state
        try:
            plan = make_plan([item.nodeid for item in items], state.total, state.durations)
            digest = plan_sha256(plan)
            mine = set(assign(plan)[state.index - 1])
        except ShardError as e:
            raise _usage(e) from None
        keep = [item for item in items if item.nodeid in mine]
        drop = [item for item in items if item.nodeid not in mine]
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep
        state.plan, state.plan_sha256, state.selected = plan, digest, sorted(mine)
        if self.worker:
            config.workeroutput["evident_shard"] = {  # type: ignore[attr-defined]
                "plan": plan, "plan_sha256": digest, "selected": state.selected}

    def pytest_report_header(self, config: pytest.Config) -> str:
        return f"evident shard: {self.state.index}/{self.state.total} (from {self.state.source})"

    @hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist controller: a worker finished; take its plan, or flag a disagreement."""
        state = self.state
        info = (getattr(node, "workeroutput", None) or {}).get("evident_shard")
        if not info:
            return
        state.workers[str(node.gateway.id)] = info["plan_sha256"]
        if state.plan_sha256 is None:
            state.plan, state.plan_sha256, state.selected = (info["plan"], info["plan_sha256"],
                                                             info["selected"])
        elif info["plan_sha256"] != state.plan_sha256 or info["selected"] != state.selected:
            state.inconsistent = True

    # -- receipts: known where the test ran (a worker), sent with the teardown report -------
    @hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: "pytest.CallInfo[None]"
                                  ) -> Generator[None, Any, None]:
        outcome = yield
        if call.when != "teardown":
            return
        rec = item.stash.get(_RECORDER_KEY, None)
        if rec is None:
            return
        root = _bundle_dir(self.config).resolve()
        paths = []
        for p in rec.receipts:
            try:
                paths.append(Path(p).resolve().relative_to(root).as_posix())
            except ValueError:
                continue  # outside the bundle: it cannot travel with it
        # A plain attribute travels with the report to the xdist controller (TestReport keeps
        # extra fields through its serialization).
        outcome.get_result().evident_receipts = paths

    # -- outcomes: in the reporting process (the xdist controller, or the only process) ----
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.worker:
            return
        state = self.state
        nodeid = report.nodeid
        new = _outcome(report, state.outcomes.get(nodeid))
        if new is not None:
            state.outcomes[nodeid] = new
        state.durations_ms[nodeid] = state.durations_ms.get(nodeid, 0) + int(
            round(max(0.0, report.duration) * 1000))
        if report.when == "teardown":
            state.receipts[nodeid] = list(getattr(report, "evident_receipts", None) or [])

    def _runner(self, receipts: List[Dict[str, Any]]) -> Dict[str, Any]:
        hosts = sorted({r["host_id"] for r in receipts if "host_id" in r})
        return {
            "hostname": socket.gethostname(),
            "host_id": hosts[0] if len(hosts) == 1 else None,
            "evident": __version__,
            "python": platform.python_version(),
            "pytest": pytest.__version__,
            "platform": platform.platform(),
            "pid": os.getpid(),
            "xdist_workers": len(self.state.workers),
            "shard_source": self.state.source,
            "ci": {k: os.environ[k] for k in CI_VARIABLES if k in os.environ},
            "started_at": self.state.started_at,
            "finished_at": _now(),
        }

    @hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        state = self.state
        if self.worker:
            return
        if state.inconsistent:
            self.problem = ("evident: error [shard-inconsistent]: the xdist workers computed "
                            "different shard plans (their collections differ); no bundle written")
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
            return
        if state.plan is None:
            return  # nothing was collected (an error came first, or --collect-only under xdist)
        root = _bundle_dir(self.config)
        root.mkdir(parents=True, exist_ok=True)
        selected = state.selected or []
        receipts: List[Dict[str, Any]] = []
        for test in selected:
            for rel in state.receipts.get(test, []):
                if (root / rel).is_file():
                    receipts.append(_receipt_entry(root, test, rel))
        bundle = {
            "schema": SHARD_SCHEMA,
            "plan_sha256": state.plan_sha256,
            "index": state.index,
            "total": state.total,
            "plan": state.plan,
            "tests": selected,
            "outcomes": {t: state.outcomes[t] for t in selected if t in state.outcomes},
            "durations_ms": {t: state.durations_ms[t] for t in selected
                             if t in state.durations_ms},
            "receipts": receipts,
            "runner": self._runner(receipts),
            "exit_status": int(exitstatus),
        }
        fsync_write(str(root / SHARD_FILE),
                    (json.dumps(bundle, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
                    .encode("utf-8"))
        self.written = root / SHARD_FILE

    problem: Optional[str] = None
    written: Optional[Path] = None

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        state = self.state
        if self.worker:
            return
        if self.problem:
            terminalreporter.write_line(self.problem, red=True)
            return
        if state.plan is None or self.written is None:
            return
        selected = state.selected or []
        ran = sum(1 for t in selected if t in state.outcomes)
        terminalreporter.write_line(
            f"evident shard {state.index}/{state.total}: {ran} of {len(selected)} selected "
            f"tests ran; plan {state.plan_sha256} ({len(state.plan['tests'])} tests); "
            f"bundle {self.written}")
