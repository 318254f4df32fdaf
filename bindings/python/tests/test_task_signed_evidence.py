"""Signed task receipts and the run log of real agent tasks (the in-process engine on real Xvfb,
xmessage as the app), mirroring test_signed_evidence.py for sessions (docs/receipts.md §8, §9,
§12; docs/agents.md "The lane").

One engine and one state dir; two attempts of two jobs (task digests) on two displays:

- attempt A: a task aborted, one failed by a refused turn (``turn-refused``), one failed by an
  invalid final answer on its last turn (``result-invalid``), one finished (its stage receipt),
  a begin refused (never a task: no entry), and an attest task bound to that receipt that is
  left to expire: attest's deadline is 45 s from admission (protocol/evident.json
  ``task_attest_timeout_ms``), the shortest there is and the only expiry reachable without the
  stage's 180 s (task deadlines have no test-only override). The engine's reaper expires it; the
  test waits for that phase, never for a time;
- attempt B, run on the second display while A's attest waits: a finished stage, a finished
  attest bound to it and an aborted task.

`evident log show` lists every run: by attempt and by job (the task digest), in the order they
ended, failures and the expiry included, each with kind ``task``, its task id, the outcome and a
receipt id exactly when it closed; the log checks out against the independent RFC 9162 code of
rfc9162.py and `evident log verify`.

The plain-tools recipe of docs/receipts.md §8, extracted from the doc and run by bash exactly as
written there, accepts A's stage receipt and B's stage and attest receipts, and rejects each one
forged as in issue #12 (result, actor and attempt changed, every digest recomputed: both
verifiers still call it consistent, `--key` does not) and each real one against another key.
"""
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import evident
from evident import verify as V
from evident import wait_for
from evident_bin import find_evident_bin
from rfc9162 import leaf_hash, mth, path, root_from_path

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
XMESSAGE = ["xmessage", "-geometry", "200x80+0+0", "evident"]
JOB_A = hashlib.sha256(b"task run log test: job A").hexdigest()
JOB_B = hashlib.sha256(b"task run log test: job B").hexdigest()
POLICY = {"adapter": "evident", "provider": "scripted", "model": "none"}
SHOT = {"calls": [{"id": "shot", "actions": [{"type": "screenshot"}]}]}

EVIDENT = find_evident_bin()
pytestmark = pytest.mark.skipif(EVIDENT is None, reason="the evident binary is not built")


def read_json(path):
    with open(path, "rb") as f:
        return json.loads(f.read())


def cli(*args, check_exit=None):
    p = subprocess.run([EVIDENT, *args, "--json"], capture_output=True, text=True, timeout=60)
    out = json.loads(p.stdout)
    if check_exit is not None:
        assert p.returncode == check_exit, p.stdout + p.stderr
    return p.returncode, out


def task(engine, request):
    return engine.request("task", {"request": json.dumps(request)})


def begin(engine, display, app, attempt, job, mode="stage", prior=None, adapter="evident"):
    request = {"op": "begin", "mode": mode, "display_id": display.id, "generation": display.generation,
               "app_id": app.id, "attempt_id": attempt, "task_sha256": job,
               "policy": dict(POLICY, adapter=adapter)}
    if prior is not None:
        request["prior_receipt_id"] = prior
    b = task(engine, request)
    if adapter == "evident":
        assert b["ok"] is True, b
    return b


def turn(engine, tid, sequence, response):
    return task(engine, {"op": "turn", "task_id": tid, "sequence": sequence, "response": response})


def finish(engine, tid, sequence, result):
    f = turn(engine, tid, sequence, {"result": result})
    assert f["ok"] is True and f["phase"] == "finished", f
    return f


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    state = str(tmp_path_factory.mktemp("state"))
    out = {"state": state, "A": [], "B": []}   # per attempt: (task_id, outcome, snapshot), in ending order
    with evident.Engine(state_dir=state) as engine:
        with engine.create_display(width=320, height=200) as d1, \
                engine.create_display(width=320, height=200) as d2:
            app1 = d1.launch(XMESSAGE, wait_window_ms=10000)
            app2 = d2.launch(XMESSAGE, wait_window_ms=10000)

            # A1 aborted after one turn.
            b = begin(engine, d1, app1, "att-A", JOB_A)
            assert turn(engine, b["task_id"], 0, SHOT)["ok"] is True
            a = task(engine, {"op": "abort", "task_id": b["task_id"], "sequence": 1})
            assert a["ok"] is True and a["phase"] == "aborted"
            out["A"].append((b["task_id"], "aborted", a))

            # A2 failed: a refused turn (paste is forbidden to tasks) ends it fail-closed.
            b = begin(engine, d1, app1, "att-A", JOB_A)
            r = turn(engine, b["task_id"], 0, {"calls": [{"id": "p", "actions": [{"type": "paste", "text": "x"}]}]})
            assert r["ok"] is False and r["error"]["code"] == "task-action-forbidden", r
            s = task(engine, {"op": "status", "task_id": b["task_id"]})
            assert s["phase"] == "failed" and s["ended"]["reason"] == "turn-refused", s
            assert s["ended"]["error"]["code"] == "task-action-forbidden"
            out["A"].append((b["task_id"], "failed", s))

            # A3 failed: every turn an invalid final answer (a retry prompt each time); the one
            # on the last turn is the task's end, answered as an error.
            b = begin(engine, d1, app1, "att-A", JOB_A)
            invalid = {"result": ["not", "an", "object"]}
            for seq in range(b["turns_left"] - 1):
                r = turn(engine, b["task_id"], seq, invalid)
                assert r["ok"] is True and r["result_error"]["code"] == "task-result-invalid", r
            r = turn(engine, b["task_id"], b["turns_left"] - 1, invalid)
            assert r["ok"] is False and r["error"]["code"] == "task-result-invalid", r
            s = task(engine, {"op": "status", "task_id": b["task_id"]})
            assert s["phase"] == "failed" and s["ended"]["reason"] == "result-invalid", s
            assert s["invalid_result_count"] == s["turn_count"] == 12
            out["A"].append((b["task_id"], "failed", s))

            # A4 finished: its stage receipt.
            b = begin(engine, d1, app1, "att-A", JOB_A)
            assert turn(engine, b["task_id"], 0, SHOT)["ok"] is True
            f = finish(engine, b["task_id"], 1, {"seen": "xmessage"})
            out["A"].append((b["task_id"], "closed", f))
            out["A_stage"] = f

            # A refused begin is no task and no entry.
            r = begin(engine, d1, app1, "att-A", JOB_A, adapter="no-such-adapter")
            assert r["error"]["code"] == "task-adapter-unknown"

            # A5: an attest task bound to A4, left to expire (45 s from admission).
            attest = begin(engine, d1, app1, "att-A", JOB_A, mode="attest", prior=f["receipt_id"])
            assert attest["limits"]["deadline_ms"] == 45000 and attest["deadline_ms_left"] <= 45000

            # Meanwhile attempt B on the second display: stage, attest, aborted.
            b = begin(engine, d2, app2, "att-B", JOB_B)
            assert turn(engine, b["task_id"], 0, SHOT)["ok"] is True
            fb = finish(engine, b["task_id"], 1, {"seen": "xmessage", "attempt": "B"})
            out["B"].append((b["task_id"], "closed", fb))
            out["B_stage"] = fb
            b = begin(engine, d2, app2, "att-B", JOB_B, mode="attest", prior=fb["receipt_id"])
            assert turn(engine, b["task_id"], 0, SHOT)["ok"] is True
            fa = finish(engine, b["task_id"], 1, {"seen": "xmessage", "attested": True})
            out["B"].append((b["task_id"], "closed", fa))
            out["B_attest"] = fa
            b = begin(engine, d2, app2, "att-B", JOB_B)
            a = task(engine, {"op": "abort", "task_id": b["task_id"], "sequence": 0})
            assert a["phase"] == "aborted"
            out["B"].append((b["task_id"], "aborted", a))

            # Now A5's expiry, by the engine's reaper.
            tid = attest["task_id"]
            expired = wait_for(lambda: (lambda s: s if s["phase"] != "running" else None)(
                task(engine, {"op": "status", "task_id": tid})),
                timeout=attest["deadline_ms_left"] / 1000 + 30, what="the attest task to expire", interval=0.5)
            assert expired["phase"] == "expired" and expired["ended"]["reason"] == "expired", expired
            r = turn(engine, tid, 0, SHOT)
            assert r["error"]["code"] == "task-deadline", r
            out["A"].append((tid, "expired", expired))
    return out


def show(state, *filters):
    _, shown = cli("log", "show", "--state-dir", state, *filters, check_exit=0)
    return shown


def test_the_run_log_lists_every_task_run_of_an_attempt_and_of_a_job(runs):
    state = runs["state"]
    for attempt, job, expected in (("att-A", JOB_A, runs["A"]), ("att-B", JOB_B, runs["B"])):
        by_attempt = show(state, "--attempt", attempt)["entries"]
        by_job = show(state, "--job", job)["entries"]
        assert by_attempt == by_job
        assert [(e["entry"]["id"], e["entry"]["outcome"]) for e in by_attempt] == \
            [(tid, outcome) for tid, outcome, _ in expected]
        for e, (tid, outcome, snap) in zip(by_attempt, expected):
            entry = e["entry"]
            assert set(entry) == {"kind", "id", "attempt_id", "task_sha256", "outcome", "receipt_id", "ended_at"}
            assert entry["kind"] == "task" and entry["attempt_id"] == attempt and entry["task_sha256"] == job
            if outcome == "closed":
                assert entry["receipt_id"] == snap["receipt_id"] and entry["receipt_id"].startswith("etr-")
                assert snap["log"]["index"] == e["index"]
            else:
                assert entry["receipt_id"] is None and snap["receipt_id"] is None
    everything = show(state)["entries"]
    assert len(everything) == len(runs["A"]) + len(runs["B"])    # the refused begin has none
    # The order is the order the runs ended: B's three before A's expiry.
    assert [e["entry"]["id"] for e in everything] == \
        [t for t, _, _ in runs["A"][:4]] + [t for t, _, _ in runs["B"]] + [runs["A"][4][0]]
    assert {e["entry"]["kind"] for e in everything} == {"task"}
    assert [e["index"] for e in everything] == list(range(len(everything)))


def test_the_task_log_checks_out_against_an_independent_merkle_tree(runs):
    state = runs["state"]
    with open(os.path.join(state, "log", "entries.jsonl"), "rb") as f:
        lines = f.read().split(b"\n")[:-1]
    for line in lines:                                     # each line is JCS of its entry
        assert V.jcs(json.loads(line)) == line
    leaves = [leaf_hash(line) for line in lines]
    shown = show(state)
    assert shown["tree_head"]["tree_size"] == len(lines)
    assert shown["tree_head"]["root_hash"] == mth(leaves).hex()
    assert [e["leaf_hash"] for e in shown["entries"]] == [h.hex() for h in leaves]
    for tid, outcome, _ in runs["A"]:                     # every run of A, by its task id
        _, p = cli("log", "prove", tid, "--state-dir", state, check_exit=0)
        assert p["entry"]["id"] == tid and p["entry"]["outcome"] == outcome
        assert p["inclusion_proof"] == [h.hex() for h in path(p["index"], leaves)]
        proof = [bytes.fromhex(h) for h in p["inclusion_proof"]]
        assert root_from_path(p["index"], len(leaves), leaves[p["index"]], proof).hex() == p["root_hash"]
    _, v = cli("log", "verify", "--state-dir", state, check_exit=0)
    assert all(c["ok"] for c in v["checks"])
    # A closed task's envelope carries its entry and an inclusion proof to its signed head.
    stage = runs["A_stage"]
    env = read_json(stage["envelope_path"])
    statement = json.loads(base64.b64decode(env["payload"]))
    assert statement["predicateType"] == "urn:evident:task-receipt:v1"
    log = statement["predicate"]["log"]
    assert log["entry"] == json.loads(lines[log["index"]]) and log["entry"]["outcome"] == "closed"
    proof = [bytes.fromhex(h) for h in log["inclusion_proof"]]
    size = log["tree_head"]["tree_size"]
    assert size == log["index"] + 1
    assert root_from_path(log["index"], size, leaf_hash(V.jcs(log["entry"])), proof).hex() == \
        log["tree_head"]["root_hash"] == mth(leaves[:size]).hex()


# ---- the plain-tools recipe of docs/receipts.md §8 on signed task receipts ------------------

def recipe_text():
    with open(os.path.join(ROOT, "docs", "receipts.md")) as f:
        doc = f.read()
    m = re.search(r"<!-- recipe:begin -->\n```bash\n(.*?)```\n<!-- recipe:end -->", doc, re.S)
    assert m, "the recipe block is missing from docs/receipts.md"
    return m.group(1)


def run_recipe(evidence_dir, pub, work):
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, DIR=evidence_dir, PUB=pub, W=work)
    return subprocess.run(["bash", "-c", recipe_text()], env=env, capture_output=True, text=True,
                          timeout=60)


def forge_task(src_dir, dst_dir):
    """Issue #12's forgery on a task receipt: the result, the actor and the attempt changed,
    every digest recomputed (the result's, the transcript's with its prior chain, the id), so
    the receipt is internally consistent again."""
    shutil.copytree(src_dir, dst_dir)
    receipt_path = os.path.join(dst_dir, "receipt.json")
    r = read_json(receipt_path)
    r["result"] = {"background": "red", "forged": True}
    r["actor"]["uid"] = 4242
    r["binding"]["attempt_id"] = "att-forged"
    digest = V.domain_digest("evident/task-result/v1", r["result"])
    r["result_sha256"] = digest
    assert r["transcript"][-1]["kind"] == "result"
    r["transcript"][-1]["result_sha256"] = digest
    r["transcript_sha256"] = V.domain_digest("evident/task-transcript/v1", {
        "events": r["transcript"], "prior_transcript_sha256": r["prior_transcript_sha256"]})
    del r["receipt_id"]
    r["receipt_id"] = "etr-" + V.domain_digest("evident/task-receipt/v1", r)
    with open(receipt_path, "wb") as f:
        f.write(V.jcs(r) + b"\n")
    return receipt_path


@pytest.mark.parametrize("which", ["A_stage", "B_stage", "B_attest"])
def test_plain_tools_recipe_accepts_signed_task_receipts_and_rejects_forgeries(runs, which, tmp_path):
    for tool in ("openssl", "jq", "base64", "sha256sum"):
        assert shutil.which(tool), tool
    snap = runs[which]
    evidence_dir = os.path.dirname(snap["receipt_path"])
    assert snap["receipt"]["mode"] == ("attest" if which.endswith("attest") else "stage")
    pub = os.path.join(runs["state"], "keys", "signing.pub")
    p = run_recipe(evidence_dir, pub, str(tmp_path / "w1"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "signature and subjects verified" in p.stdout
    rc, out = cli("verify", snap["receipt_path"], "--frames", evidence_dir, "--key", pub, check_exit=0)
    assert out["authenticated"] is True

    forged = forge_task(evidence_dir, str(tmp_path / "forged"))
    for command in ([EVIDENT, "verify", forged, "--json"],
                    [sys.executable, "-m", "evident.verify", forged, "--json"]):
        q = subprocess.run(command, capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "bindings", "python")))
        out = json.loads(q.stdout)                       # integrity alone accepts it
        assert q.returncode == 0 and out["ok"] is True and out["authenticated"] is False, q.stdout
    rc, out = cli("verify", forged, "--key", pub, check_exit=1)
    assert out["authenticated"] is False
    assert {c["name"] for c in out["checks"] if not c["ok"]} == {"statement", "subjects", "log_inclusion"}
    p = run_recipe(str(tmp_path / "forged"), pub, str(tmp_path / "w2"))
    assert p.returncode != 0 and "signature and subjects verified" not in p.stdout

    # Another key (a forger's own) does not verify the real envelope either.
    other = tmp_path / "other"
    cli("key", "init", "--state-dir", str(other), check_exit=0)
    p = run_recipe(evidence_dir, str(other / "keys" / "signing.pub"), str(tmp_path / "w3"))
    assert p.returncode != 0 and "signature and subjects verified" not in p.stdout


def test_pinning_one_key_for_a_stage_and_its_attest(runs, tmp_path):
    """docs/receipts.md §10 "Pinning a key for tasks": both receipts verify against the one
    pinned key with equal key ids; `--prior` checks the stage receipt's consistency and lineage,
    not its signature (an unsigned copy passes as the prior), and a re-sealed stage receipt
    cannot stand in for the real one, because the signed attest names the real one's id."""
    pub = os.path.join(runs["state"], "keys", "signing.pub")
    stage, attest = runs["B_stage"], runs["B_attest"]
    _, s = cli("verify", stage["receipt_path"], "--key", pub, check_exit=0)
    _, a = cli("verify", attest["receipt_path"], "--key", pub, "--prior", stage["receipt_path"], check_exit=0)
    assert s["authenticated"] is True and a["authenticated"] is True and s["key_id"] == a["key_id"]
    assert [c["name"] for c in a["checks"] if c["name"].startswith("prior_")] == [
        "prior_receipt", "prior_binding", "prior_chronology", "prior_transcript"]
    envelopes = [read_json(x["envelope_path"])["signatures"][0]["keyid"] for x in (stage, attest)]
    assert envelopes == [s["key_id"]] * 2

    unsigned = tmp_path / "unsigned"
    shutil.copytree(os.path.dirname(stage["receipt_path"]), unsigned)
    os.remove(unsigned / "receipt.dsse.json")
    cli("verify", attest["receipt_path"], "--key", pub, "--prior", str(unsigned / "receipt.json"), check_exit=0)
    _, alone = cli("verify", str(unsigned / "receipt.json"), "--key", pub, check_exit=1)
    assert alone["authenticated"] is False

    forged = forge_task(os.path.dirname(stage["receipt_path"]), str(tmp_path / "forged"))
    _, out = cli("verify", attest["receipt_path"], "--key", pub, "--prior", forged, check_exit=1)
    assert [c["name"] for c in out["checks"] if not c["ok"]] == [
        "prior_receipt", "prior_binding", "prior_chronology", "prior_transcript"]
