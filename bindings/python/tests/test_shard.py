"""CI shards in the pytest plugin (evident/shard.py), proven with real inner pytest runs
(pytester subprocesses, real displays and sessions): two shards of one suite run as separate
processes (one of them with -n 2) select an exact cover of one plan and each write a bundle whose
receipts are the files on disk; the shard comes from the environment like in CI; bad shard
options are usage errors with stable codes."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import evident
from evident.plan import assign, plan_sha256

pytest_plugins = ["pytester"]

PLUGIN_ARGS = ("-p", "no:evident", "-p", "evident.pytest_plugin", "-p", "no:cacheprovider")
SHARD_ENV = ("CI_NODE_INDEX", "CI_NODE_TOTAL", "JOB_COMPLETION_INDEX", "EVIDENT_SHARD_TOTAL")

APP = "['xmessage', '-geometry', '200x80+0+0', 'evident']"

# A small suite with real sessions: 6 session tests, one plain test, one failing test.
SUITE = f'''
import pytest
from evident import actions as a

@pytest.mark.parametrize("i", range(6))
def test_session(i, evident_app, evident_evidence):
    app = evident_app({APP})
    with evident_evidence.session(app) as s:
        s.actions([a.move_mouse(10 + i, 10)])
        s.freeze()
        s.observe()
        s.finish({{"case": i}})
    assert s.verify().ok

def test_plain():
    assert True

def test_fails():
    assert False, "deliberate"
'''


@pytest.fixture(autouse=True)
def _no_ci_shard_env(monkeypatch):
    for name in SHARD_ENV:
        monkeypatch.delenv(name, raising=False)


def run(pytester, *args):
    return pytester.runpytest_subprocess(*PLUGIN_ARGS, *args, timeout=240)


def load(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def run_two_shards(pytester):
    """Shard 1/2 under -n 2 and shard 2/2 in one process; returns the two bundle dirs."""
    pytester.makepyfile(test_suite=SUITE)
    r1 = run(pytester, "-n", "2", "--evident-shard=1/2", "--evident-dir=bundle-1")
    r2 = run(pytester, "--evident-shard=2/2", "--evident-dir=bundle-2")
    for r in (r1, r2):
        assert r.ret in (0, 1), r.stdout.str()
    return pytester.path / "bundle-1", pytester.path / "bundle-2"


def test_two_shards_cover_the_plan_exactly_with_verified_receipts(pytester):
    b1, b2 = run_two_shards(pytester)
    s1, s2 = load(b1 / "shard.json"), load(b2 / "shard.json")
    all_ids = sorted([f"test_suite.py::test_session[{i}]" for i in range(6)]
                     + ["test_suite.py::test_plain", "test_suite.py::test_fails"])
    for s, i in ((s1, 1), (s2, 2)):
        assert s["schema"] == "evident.shard/v1"
        assert (s["index"], s["total"]) == (i, 2)
        assert s["plan"]["tests"] == all_ids and s["plan"]["n"] == 2
        assert s["plan_sha256"] == plan_sha256(s["plan"])
        assert s["tests"] == assign(s["plan"])[i - 1]
        assert sorted(s["outcomes"]) == s["tests"]
        assert s["runner"]["evident"] == evident.__version__
    assert s1["runner"]["xdist_workers"] == 2 and s2["runner"]["xdist_workers"] == 0
    assert s1["plan_sha256"] == s2["plan_sha256"]
    assert sorted(s1["tests"] + s2["tests"]) == all_ids
    assert not set(s1["tests"]) & set(s2["tests"])
    outcomes = {**s1["outcomes"], **s2["outcomes"]}
    assert outcomes["test_suite.py::test_fails"] == "failed"
    assert outcomes["test_suite.py::test_plain"] == "passed"
    assert all(outcomes[t] == "passed" for t in all_ids if "session" in t), outcomes
    # Every session test has exactly one receipt, listed with the digest of the file on disk.
    receipts = [(b1, r) for r in s1["receipts"]] + [(b2, r) for r in s2["receipts"]]
    assert sorted(r["test"] for _, r in receipts) == [t for t in all_ids if "session" in t]
    for bundle, r in receipts:
        path = bundle / r["path"]
        data = path.read_bytes()
        assert hashlib.sha256(data).hexdigest() == r["sha256"]
        assert json.loads(data)["receipt_id"] == r["receipt_id"]
        assert evident.verify_receipt(str(path), frames_dir=str(path.parent)).ok


def test_shard_from_the_ci_environment(pytester, monkeypatch):
    pytester.makepyfile(test_env='''
        import pytest

        @pytest.mark.parametrize("i", range(9))
        def test_t(i):
            pass
    ''')
    monkeypatch.setenv("CI_NODE_INDEX", "3")
    monkeypatch.setenv("CI_NODE_TOTAL", "3")
    r = run(pytester, "--evident-dir=ci")
    r.assert_outcomes(passed=3, deselected=6)
    assert "evident shard: 3/3 (from CI_NODE_INDEX)" in r.stdout.str()
    monkeypatch.delenv("CI_NODE_INDEX")
    monkeypatch.delenv("CI_NODE_TOTAL")
    monkeypatch.setenv("JOB_COMPLETION_INDEX", "0")
    monkeypatch.setenv("EVIDENT_SHARD_TOTAL", "3")
    r = run(pytester, "--evident-dir=k8s")
    r.assert_outcomes(passed=3, deselected=6)
    k8s, ci = load(pytester.path / "k8s" / "shard.json"), load(pytester.path / "ci" / "shard.json")
    assert k8s["index"] == 1 and ci["index"] == 3 and k8s["plan_sha256"] == ci["plan_sha256"]
    assert not set(k8s["tests"]) & set(ci["tests"])
    # --evident-shard=off wins over the environment: no bundle, nothing deselected.
    r = run(pytester, "--evident-shard=off", "--evident-dir=off")
    r.assert_outcomes(passed=9)
    assert not (pytester.path / "off" / "shard.json").exists()


def test_durations_balance_the_shards(pytester):
    pytester.makepyfile(test_dur='''
        import pytest

        @pytest.mark.parametrize("i", range(4))
        def test_t(i):
            pass
    ''')
    # One slow test alone in shard 1, the three fast ones in shard 2.
    ids = [f"test_dur.py::test_t[{i}]" for i in range(4)]
    (pytester.path / "durations.json").write_text(json.dumps(
        {ids[0]: 30.0, ids[1]: 1.0, ids[2]: 1.0, ids[3]: 1.0}))
    r = run(pytester, "--evident-shard=1/2", "--evident-durations=durations.json",
            "--evident-dir=d1")
    r.assert_outcomes(passed=1, deselected=3)
    s = load(pytester.path / "d1" / "shard.json")
    assert s["tests"] == [ids[0]] and s["plan"]["config"]["split"] == "durations/v1"


@pytest.mark.parametrize("args, code", [
    (("--evident-shard=3/2",), "shard-spec"),
    (("--evident-shard=1/2", "--evident-keep=on-failure"), "shard-keep"),
    (("--evident-shard=1/2", "--evident-durations=missing.json"), "shard-durations"),
])
def test_bad_shard_options_are_usage_errors(pytester, args, code):
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    r = run(pytester, *args, "--evident-dir=bad")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert f"[{code}]" in r.stderr.str()
    assert not (pytester.path / "bad").exists()


def test_kubernetes_indexed_job_manifest_matches_the_shard_contract():
    """ci/k8s/evident-shards.yaml cannot run here (no cluster); what it relies on is checked:
    an Indexed Job whose completion count is the EVIDENT_SHARD_TOTAL its pods get, each pod
    writing its own bundle, and a merge over all of them."""
    import yaml

    root = Path(__file__).resolve().parents[3]
    shards, merge = list(yaml.safe_load_all((root / "ci" / "k8s" / "evident-shards.yaml")
                                            .read_text()))
    spec = shards["spec"]
    assert spec["completionMode"] == "Indexed"
    container = spec["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert int(env["EVIDENT_SHARD_TOTAL"]) == spec["completions"]
    command = " ".join(container["args"])
    assert "--evident-dir=/bundles/shard-${JOB_COMPLETION_INDEX}" in command
    assert "--evident-shard" not in command      # the index comes from the environment
    assert "merge /bundles/shard-*" in " ".join(merge["spec"]["template"]["spec"]
                                                ["containers"][0]["args"])
