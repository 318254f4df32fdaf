"""Fan-out on Dask (evident/fanout.py), real on one machine, loopback only: a scheduler and two
workers started as separate ``dask scheduler``/``dask worker`` processes run real sessions
against the fixture app; one worker is killed (SIGKILL) while it runs a job, and every job still
ends with exactly one counted attempt whose receipt re-verifies with the C++ ``evident verify``,
the killed execution staying in the ledger as lost. A LocalCluster run shows the retry rule (a
failing job is tried max_attempts times, never counted) and the ``evident fanout`` CLI; bad job
lists are refused before anything runs."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from distributed import Client, LocalCluster

from evident import fanout, wait_for

ROOT = Path(__file__).resolve().parents[3]
TESTS = Path(__file__).resolve().parent
EVIDENT_BIN = os.environ.get("EVIDENT_BIN", str(ROOT / "build" / "engine" / "cli" / "evident"))
FIXTURE_APP = os.environ.get("EVIDENT_FIXTURE_APP",
                             str(ROOT / "build" / "fixtures" / "app" / "evident-fixture-app"))
DASK = shutil.which("dask") or "/usr/bin/dask"

# Debian's Dask 2022.12 on Python 3.11 uses tornado APIs that warn (make_current, get_event_loop)
# and leaks a probe socket while starting its HTTP server; the project's filterwarnings=error
# would turn those into errors of this module's in-process client and LocalCluster.
pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::ResourceWarning"),
              pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS)] + [p for p in sys.path if p])
    return env


def click_job(i: int, **extra) -> dict:
    # A job on an unbuilt fixture app would only fail on the worker, after the waits time out.
    missing = [p for p in (EVIDENT_BIN, FIXTURE_APP) if not os.access(p, os.X_OK)]
    if missing:
        pytest.fail(f"needs {', '.join(missing)} built (cmake --build build)", pytrace=False)
    return {"id": f"job-{i}", "callable": "fanout_jobs:click_fixture",
            "args": {"app": FIXTURE_APP, "clicks": i % 3 + 1, **extra},
            "display": {"width": 640, "height": 480}}


def cpp_verify(out: Path, receipt: dict, job_sha256: str) -> dict:
    path = out / receipt["path"]
    r = subprocess.run([EVIDENT_BIN, "verify", str(path), "--frames", str(path.parent),
                        "--expect-job", job_sha256, "--json"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout
    return json.loads(path.read_text())


@pytest.fixture
def dask_processes(tmp_path):
    """A scheduler and two workers (DESKTOP=1 each, no nanny) as separate processes; the
    workers share this machine's kept state dir, whose signing key the client trusts."""
    env = _env()
    state = tmp_path / "worker-state"
    r = subprocess.run([EVIDENT_BIN, "key", "init", "--state-dir", str(state), "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    env["EVIDENT_FANOUT_STATE_DIR"] = str(state)
    logs = tmp_path / "logs"
    logs.mkdir()
    sched_file = tmp_path / "scheduler.json"
    procs = []

    def start(name, argv):
        out = open(logs / f"{name}.log", "w")
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                             cwd=tmp_path, start_new_session=True)
        out.close()
        procs.append(p)
        return p

    client = None
    try:
        # Loopback only: the scheduler's HTTP routes (health, metrics) too.
        start("scheduler", [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0",
                            "--no-dashboard", "--dashboard-address", "127.0.0.1:0",
                            "--scheduler-file", str(sched_file)])
        address = wait_for(lambda: sched_file.exists() and json.loads(
            sched_file.read_text() or "{}").get("address"), 60, "the scheduler file")
        workers = [start(f"worker-{i}", [DASK, "worker", address, "--host", "127.0.0.1",
                                         "--nthreads", "1", "--no-nanny", "--no-dashboard",
                                         "--dashboard-address", "127.0.0.1:0",
                                         "--resources", "DESKTOP=1", "--name", f"w{i}",
                                         "--death-timeout", "60"]) for i in range(2)]
        client = Client(address, timeout=30)
        wait_for(lambda: len(client.scheduler_info()["workers"]) == 2, 60, "two workers")
        yield client, workers, logs, state
    finally:
        if client is not None:
            client.close()
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=30)


def test_killed_worker_every_job_one_counted_verified_attempt(dask_processes, tmp_path):
    client, workers, logs, state = dask_processes
    merger = tmp_path / "client-state"
    r = subprocess.run([EVIDENT_BIN, "key", "init", "--state-dir", str(merger), "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    victim = workers[0]
    hold = tmp_path / "hold"
    hold.mkdir()
    jobs = [click_job(i, hold_dir=str(hold)) for i in range(6)]
    out = tmp_path / "out"
    box = {}

    def go():
        try:
            box["result"] = fanout.run(client, jobs, out_dir=str(out), timeout_s=300,
                                       key_files=[str(state / "keys" / "signing.pub")],
                                       state_dir=str(merger))
        except BaseException as e:  # noqa: BLE001 - reported by the assertion below
            box["error"] = e

    runner = threading.Thread(target=go)
    runner.start()
    try:
        # Wait until the victim has started a job (it announced itself; it holds before acting).
        def victim_marker():
            for m in hold.glob("*.started"):
                if json.loads(m.read_text())["pid"] == victim.pid:
                    return m.name[:-len(".started")]
            return None

        lost_attempt = wait_for(victim_marker, 120, "a job started on the victim worker")
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)
    finally:
        (hold / "release").write_text("go")
        runner.join(timeout=300)
    assert not runner.is_alive()
    assert "error" not in box, box.get("error")
    result = box["result"]
    m = result.manifest
    assert result.ok and m["ok"], json.dumps(m, indent=1)
    assert json.loads((out / "manifest.json").read_text()) == m
    ledger = m["ledger"]
    assert {e["state"] for e in ledger} <= set(fanout.STATES)
    # The execution that died with its worker is in the ledger, lost and not counted.
    lost = [e for e in ledger if e["attempt_id"] == lost_attempt]
    assert len(lost) == 1 and lost[0]["state"] == "lost" and not lost[0]["counted"], lost
    ids = [e["attempt_id"] for e in ledger if e["attempt_id"]]
    assert len(ids) == len(set(ids))            # every execution had its own attempt id
    for job in m["jobs"]:
        counted = [e for e in ledger if e["job"] == job["id"] and e["counted"]]
        assert len(counted) == 1, job
        assert counted[0]["state"] == "closed" and job["outcome"] == "closed"
        receipt = cpp_verify(out, job["receipt"], job["job_sha256"])
        assert receipt["binding"]["attempt_id"] == job["counted_attempt_id"]
        assert receipt["binding"]["job_sha256"] == job["job_sha256"]
        assert receipt["claims"]["clicks_received"] == receipt["claims"]["clicks_sent"]
    lost_job = lost[0]["job"]
    assert next(j for j in m["jobs"] if j["id"] == lost_job)["counted_attempt_id"] != lost_attempt
    # The surviving worker ran the rest.
    assert {e["pid"] for e in ledger if e["counted"]} == {workers[1].pid}
    # Every counted receipt was signed by the workers' pinned key (both verifiers) ...
    from evident import envelope as E
    from evident.merge import check_signed_outputs, load_keys
    worker_key = E.load_public_key(str(state / "keys" / "signing.pub")).key_id
    assert all(e["authenticated"] and e["key_id"] == worker_key for e in ledger if e["counted"])
    a = m["authentication"]
    assert a["required"] and a["authenticated"] == a["counted"] == len(jobs)
    assert a["verifiers"] == ["cpp", "python"] and a["signing_keys"] == [worker_key]
    # ... and the client signed the manifest: it verifies with the client's key only
    client_pub = str(merger / "keys" / "signing.pub")
    ok, why, key_id = check_signed_outputs(out, load_keys([client_pub]),
                                           fanout.FANOUT_PREDICATE_TYPE, m, "manifest_id")
    assert ok and key_id == m["signature"]["key_id"], why
    ok, why, _ = check_signed_outputs(out, load_keys([str(state / "keys" / "signing.pub")]),
                                      fanout.FANOUT_PREDICATE_TYPE, m, "manifest_id")
    assert not ok and "signature" in why


def test_local_cluster_retry_rule_and_cli(tmp_path):
    env_pp = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = _env()["PYTHONPATH"]   # the spawned workers import the jobs
    try:
        cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                               resources={"DESKTOP": 1}, host="127.0.0.1",
                               dashboard_address="127.0.0.1:0")
    finally:
        os.environ["PYTHONPATH"] = env_pp
    with cluster, Client(cluster) as client:
        jobs = [click_job(1), {"id": "bad", "callable": "fanout_jobs:fail_always"}]
        result = fanout.run(client, jobs, out_dir=str(tmp_path / "out"), max_attempts=2)
        m = result.manifest
        assert not result.ok and not m["ok"]
        bad = [e for e in m["ledger"] if e["job"] == "bad"]
        assert [(e["attempt"], e["state"], e["error"], e["counted"]) for e in bad] == \
            [(1, "failed", "RuntimeError", False), (2, "failed", "RuntimeError", False)]
        assert {j["id"]: j["outcome"] for j in m["jobs"]} == {"job-1": "closed", "bad": "failed"}
        good = next(j for j in m["jobs"] if j["id"] == "job-1")
        cpp_verify(tmp_path / "out", good["receipt"], good["job_sha256"])

        # Trusted keys that did not sign (these workers' keys are temporary): verified but not
        # authenticated, so not counted.
        forger = tmp_path / "forger"
        subprocess.run([EVIDENT_BIN, "key", "init", "--state-dir", str(forger)],
                       capture_output=True, check=True, timeout=60)
        result = fanout.run(client, [click_job(4)], out_dir=str(tmp_path / "untrusted"),
                            max_attempts=1, key_files=[str(forger / "keys" / "signing.pub")])
        (e,) = result.manifest["ledger"]
        assert not result.ok and e["state"] == "failed" and not e["counted"]
        assert e["error"] == "fanout-unauthenticated" and not e["authenticated"]
        assert "python:signature" in e["verification"]["failed"]
        with pytest.raises(fanout.FanoutError) as err:
            fanout.run(client, [click_job(4)], out_dir=str(tmp_path / "nokey"),
                       key_files=[str(tmp_path / "absent.pub")])
        assert err.value.code == "key-unreadable" and not (tmp_path / "nokey").exists()

        # The CLI, through the C++ binary, against the same cluster.
        jobs_file = tmp_path / "jobs.json"
        jobs_file.write_text(json.dumps({"schema": "evident.fanout-jobs/v1",
                                         "jobs": [click_job(2), click_job(3)]}))
        r = subprocess.run([EVIDENT_BIN, "fanout", "--scheduler", cluster.scheduler_address,
                            str(jobs_file), "-o", str(tmp_path / "cli"), "--json"],
                           capture_output=True, text=True, timeout=300, env=_env())
        assert r.returncode == 0, r.stdout + r.stderr
        doc = json.loads(r.stdout)
        assert doc["ok"] and [j["outcome"] for j in doc["jobs"]] == ["closed", "closed"]


@pytest.mark.parametrize("jobs", [
    [], [{"id": "a"}], [{"id": "a b", "callable": "m:f"}], [{"id": "a", "callable": "nocolon"}],
    [{"id": "a", "callable": "m:f"}, {"id": "a", "callable": "m:f"}],
    [{"id": "a", "callable": "m:f", "args": {"x": 1.5}}],
    [{"id": "a", "callable": "m:f", "display": {"width": 10, "height": 10}}],
    [{"id": "a", "callable": "m:f", "extra": 1}],
])
def test_bad_jobs_are_refused_before_anything_runs(jobs, tmp_path):
    with pytest.raises(fanout.FanoutError) as e:
        fanout.run("tcp://127.0.0.1:9", jobs, out_dir=str(tmp_path / "out"))
    assert e.value.code == "fanout-jobs"
    assert not (tmp_path / "out").exists()


def test_existing_output_is_refused(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine").write_text("x")
    with pytest.raises(fanout.FanoutError) as e:
        fanout.run("tcp://127.0.0.1:9", [{"id": "a", "callable": "m:f"}],
                   out_dir=str(tmp_path / "out"))
    assert e.value.code == "fanout-output-exists"
