"""Benchmark row: fan-out throughput on Dask against the same jobs run one after another.

    PYTHONPATH=bindings/python:build/bindings/core /usr/bin/python3 bench/fanout_bench.py \
        [--jobs 12] [--workers 2] [--out bench/results/fanout.json]

Jobs: real sessions against the fixture app (``bindings/python/tests/fanout_jobs.py``:
launch, one click, the app's log read back, freeze, observe, finish), each on a fresh display.

* sequential: the jobs one after another in this process (``evident.fanout.run_job``: the same
  code a worker runs, without Dask), with one engine;
* fan-out: ``evident.fanout.run`` on a ``LocalCluster`` of ``--workers`` processes (one
  ``DESKTOP`` each), timed from submission to the verified manifest (cluster start-up reported
  separately), including the client's durable writes and verification.

Reported: sessions per minute for both, the speed-up, and Dask's per-job overhead: the workers'
time not spent inside an execution, per job (``(wall x workers - sum of execution times) / jobs``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "bindings" / "python" / "tests"


def _ts(s: str) -> float:
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=12)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "fanout.json"))
    ap.add_argument("--app", default=str(ROOT / "build" / "fixtures" / "app" /
                                         "evident-fixture-app"))
    args = ap.parse_args()
    os.environ["PYTHONPATH"] = os.pathsep.join([str(TESTS)] + [p for p in sys.path if p])
    sys.path.insert(0, str(TESTS))
    from distributed import Client, LocalCluster

    from evident import fanout

    jobs = [{"id": f"bench-{i}", "callable": "fanout_jobs:click_fixture",
             "args": {"app": args.app, "clicks": 1}, "display": {"width": 640, "height": 480}}
            for i in range(args.jobs)]
    work = Path(tempfile.mkdtemp(prefix="evident-fanout-bench-"))
    try:
        # Sequential: one engine, one job after another (first job warms the engine up).
        fanout.run_job(jobs[0], fanout.job_sha256(jobs[0]), "warm-up", str(work / "seq"))
        t0 = time.monotonic()
        seq_exec = []
        for j in jobs:
            r = fanout.run_job(j, fanout.job_sha256(j), f"seq.{j['id']}", str(work / "seq"))
            assert r["state"] == "closed", r
            seq_exec.append(_ts(r["ended_at"]) - _ts(r["started_at"]))
        seq_wall = time.monotonic() - t0

        t0 = time.monotonic()
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                               resources={"DESKTOP": 1}, host="127.0.0.1",
                               dashboard_address="127.0.0.1:0", silence_logs=40)
        startup = time.monotonic() - t0
        with cluster, Client(cluster) as client:
            # Warm every worker's engine first (one job per worker), as the sequential run was.
            fanout.run(client, [dict(jobs[0], id=f"warm-{k}") for k in range(args.workers)],
                       out_dir=str(work / "warm"))
            t0 = time.monotonic()
            result = fanout.run(client, jobs, out_dir=str(work / "fan"),
                                evidence_root=str(work / "workers"))
            fan_wall = time.monotonic() - t0
        assert result.ok, json.dumps(result.manifest, indent=1)
        counted = [e for e in result.manifest["ledger"] if e["counted"]]
        fan_exec = [_ts(e["ended_at"]) - _ts(e["started_at"]) for e in counted]
        overhead = (fan_wall * args.workers - sum(fan_exec)) / len(jobs)
        row = {
            "name": "fanout_throughput",
            "what": f"{len(jobs)} real fixture-app sessions; sequential in one process vs "
                    f"evident.fanout on a LocalCluster of {args.workers} worker processes "
                    "(DESKTOP=1 each); both warmed up",
            "sequential_sessions_per_min": round(len(jobs) / seq_wall * 60, 1),
            "fanout_sessions_per_min": round(len(jobs) / fan_wall * 60, 1),
            "speedup": round(seq_wall / fan_wall, 2),
            "sequential_wall_s": round(seq_wall, 2),
            "fanout_wall_s": round(fan_wall, 2),
            "median_execution_ms_sequential": round(statistics.median(seq_exec) * 1000),
            "median_execution_ms_fanout": round(statistics.median(fan_exec) * 1000),
            "dask_overhead_per_job_ms": round(overhead * 1000),
            "cluster_startup_s": round(startup, 2),
            "machine": {"cpus": os.cpu_count()},
            "at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(row, indent=1))
    Path(args.out).write_text(json.dumps(row, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
