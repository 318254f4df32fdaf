"""Runs the benchmark's quick mode end to end and checks the JSON shape and that every
delivery/correctness check passed (never timing: these machines are shared and noisy).

It needs evident's side built (the CLI, the bench tools, the fixture app, ``_core``): without
them every row would be ``not_available`` and nothing would be checked, so a missing binary
fails the test (naming it), and so does any row that reports ``not_available``."""
import glob
import importlib.util
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# What bench.py runs on evident's side (it finds them with Evident.find, as here).
TOOLS = ["evident", "evident-bench-input", "evident-bench-capture", "evident-bench-session",
         "evident-bench-verify", "evident-bench-evidence", "evident-fixture-app"]


def _bench_module():
    spec = importlib.util.spec_from_file_location("evident_bench_under_test",
                                                  os.path.join(HERE, "bench.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
ROW_IDS = ["display_create", "click", "type_ascii", "type_unicode", "screenshot", "settle",
           "session", "turn", "verify_cli", "verify_inprocess", "sign_close", "verify_signed",
           "log_append", "report_cli", "report_render", "browser_create", "ax_tree",
           "daemon_memory", "daemon_soak"]


def test_quick_mode_json_shape_and_delivery(tmp_path):
    out = tmp_path / "quick.json"
    # EVIDENT_BENCH_BUILDS (colon-separated) overrides EVIDENT_BUILD (default build/)
    builds = os.environ.get("EVIDENT_BENCH_BUILDS") or os.environ.get("EVIDENT_BUILD", "build")
    argv = ["/usr/bin/python3", os.path.join(HERE, "bench.py"), "--quick", "--out", str(out)]
    dirs = [os.path.join(ROOT, b) for b in builds.split(":")]
    for d in dirs:
        argv += ["--build", d]
    ev = _bench_module().Evident(dirs)
    missing = [t for t in TOOLS if ev.find(t) is None]
    if not any(glob.glob(os.path.join(d, "bindings", "core", "_core*.so")) for d in dirs):
        missing.append("_core")
    if not any(os.path.isfile(os.path.join(d, "engine", "actions", "libevident-bench-click.so"))
               for d in dirs):
        missing.append("libevident-bench-click.so")
    if missing:
        pytest.fail(f"evident's side of the benchmark is not built in {dirs}: missing "
                    f"{', '.join(missing)} (cmake --build build)", pytrace=False)
    r = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["schema"] == "evident.bench/v1"
    assert doc["quick"] is True
    assert [row["id"] for row in doc["rows"]] == ROW_IDS
    for row in doc["rows"]:
        for key in ("title", "target", "peers", "evident", "reference_peer", "ratio_permille"):
            assert key in row, (row["id"], key)
        for p in row["peers"]:
            assert isinstance(p["median_us"], int) and p["runs"] >= 0
            assert isinstance(p["check"]["ok"], bool) and p["check"]["detail"]
            if row["id"] in ("display_create", "screenshot"):
                # harness sanity: our own servers start, every grabber sees the same pixels
                assert p["check"]["ok"] is True, (row["id"], p)
        ev = row["evident"]
        # everything is built (checked above), so every row measures evident's side
        assert row["status"] in ("pass", "fail"), (row["id"], ev.get("reason"))
        assert isinstance(ev["median_us"], int), row
        # delivery/correctness, not speed: a wrong result is a failure here
        assert ev["check"]["ok"] is True, (row["id"], ev["check"])
        assert row["delivery_ok"] is True
    # the in-process click was measured against the raw engine click in the same process,
    # alternating, and the whole row ran on one CPU (docs/performance.md, "CPU placement")
    click = next(r for r in doc["rows"] if r["id"] == "click")
    inproc = click["evident"]["cu_actions_variant"]
    assert inproc["tool"]["raw_clicks"] == inproc["runs"], inproc
    assert inproc["vs_raw_click"]["raw_click_median_us"] == inproc["tool"]["raw_click_median_us"]
    assert click["cpu_placement"].startswith("every process of the row on CPU "), click
    # display_create is judged against raw Xvfb that also read its first frame (through MIT-SHM,
    # as evident does); the ratio to the bare spawn is kept beside it (docs/performance.md,
    # "display_create: which reference")
    disp = next(r for r in doc["rows"] if r["id"] == "display_create")
    assert disp["reference_peer"] == "xvfb_displayfd_first_frame_shm", disp["reference_peer"]
    shm = next(p for p in disp["peers"] if p["name"] == disp["reference_peer"])
    assert shm["runs"] > 0 and shm["median_us"] > 0, shm
    assert disp["evident"]["vs_spawn_only"]["ratio_permille"] > 0, disp["evident"]
    # the soak's figures were read from the daemon's /proc entry, after the warm-up and the end
    soak = next(r for r in doc["rows"] if r["id"] == "daemon_soak")["evident"]
    assert soak["warm"]["fds"] > 0 and soak["end"]["rss_kib"] > 0, soak
    assert soak["series"][0] == soak["warm"] and soak["series"][-1] == soak["end"]
    # the peers' side must always be measured (it does not depend on evident's code)
    for rid in ("display_create", "click", "type_ascii", "type_unicode", "screenshot",
                "browser_create"):
        row = next(r for r in doc["rows"] if r["id"] == rid)
        assert row["peers"], rid
    # the table is printed too
    assert "summary:" in r.stdout
    sys.stdout.write(r.stdout)
