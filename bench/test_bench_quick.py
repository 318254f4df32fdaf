"""Runs the benchmark's quick mode end to end and checks the JSON shape and that every
delivery/correctness check passed (never timing: these machines are shared and noisy)."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ROW_IDS = ["display_create", "click", "type_ascii", "type_unicode", "screenshot", "settle",
           "session", "verify_cli", "verify_inprocess", "report_cli", "report_render",
           "daemon_memory"]


def test_quick_mode_json_shape_and_delivery(tmp_path):
    out = tmp_path / "quick.json"
    # EVIDENT_BENCH_BUILDS (colon-separated) overrides EVIDENT_BUILD (default build/)
    builds = os.environ.get("EVIDENT_BENCH_BUILDS") or os.environ.get("EVIDENT_BUILD", "build")
    argv = ["/usr/bin/python3", os.path.join(HERE, "bench.py"), "--quick", "--out", str(out)]
    for b in builds.split(":"):
        argv += ["--build", os.path.join(ROOT, b)]
    r = subprocess.run(argv,
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["schema"] == "evident.bench/v1"
    assert doc["quick"] is True
    assert [row["id"] for row in doc["rows"]] == ROW_IDS
    for row in doc["rows"]:
        assert row["status"] in ("pass", "fail", "not_available"), row
        for key in ("title", "target", "peers", "evident", "reference_peer", "ratio_permille"):
            assert key in row, (row["id"], key)
        for p in row["peers"]:
            assert isinstance(p["median_us"], int) and p["runs"] >= 0
            assert isinstance(p["check"]["ok"], bool) and p["check"]["detail"]
            if row["id"] in ("display_create", "screenshot"):
                # harness sanity: our own servers start, every grabber sees the same pixels
                assert p["check"]["ok"] is True, (row["id"], p)
        ev = row["evident"]
        if row["status"] == "not_available":
            assert ev["available"] is False and ev["reason"], row
        else:
            assert isinstance(ev["median_us"], int), row
            # delivery/correctness, not speed: a wrong result is a failure here
            assert ev["check"]["ok"] is True, (row["id"], ev["check"])
            assert row["delivery_ok"] is True
    # the peers' side must always be measured (it does not depend on evident's code)
    for rid in ("display_create", "click", "type_ascii", "type_unicode", "screenshot"):
        row = next(r for r in doc["rows"] if r["id"] == rid)
        assert row["peers"], rid
    # the table is printed too
    assert "summary:" in r.stdout
    sys.stdout.write(r.stdout)
