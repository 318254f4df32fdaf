"""Signed receipts and the run log of real sessions (the in-process engine on real Xvfb): the
envelope written at close, `evident verify --key`, the plain-tools recipe of docs/receipts.md run
by bash exactly as written there, and the run log checked by an independent pure-Python RFC 9162
implementation (rfc9162.py: recursive MTH / PATH / SUBPROOF from the RFC's definitions, hashlib only)."""
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess

import pytest

import evident
from evident import actions as a
from evident import verify as V
from evident_bin import find_evident_bin
from rfc9162 import leaf_hash, mth, path, root_from_path, subproof

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
XMESSAGE = ["xmessage", "-geometry", "200x80+0+0", "evident"]
JOB = hashlib.sha256(b"signed evidence test").hexdigest()




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


# ---- fixtures -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One engine, one state dir: a closed session, an aborted one and a second closed one."""
    state = str(tmp_path_factory.mktemp("state"))
    out = {"state": state}
    with evident.Engine(state_dir=state) as engine:
        with engine.create_display(width=320, height=200) as display:
            app = display.launch(XMESSAGE, wait_window_ms=10000)
            for name, abort in (("closed", False), ("aborted", True), ("closed2", False)):
                s = display.session(app, attempt_id="signed-1", job_sha256=JOB)
                s.actions([a.move_mouse(5, 5), a.click(50, 50)])
                if abort:
                    s.abort()
                else:
                    s.freeze()
                    s.observe()
                    s.finish({"saw": "xmessage"})
                    reply = s.close()
                    assert reply["log"]["tree_head"]["tree_size"] == reply["log"]["index"] + 1
                out[name] = s
    return out


def test_close_signs_and_verify_key_authenticates(runs):
    s = runs["closed"]
    env_path = os.path.join(s.evidence_dir, "receipt.dsse.json")
    assert os.stat(env_path).st_mode & 0o777 == 0o600
    pub = os.path.join(runs["state"], "keys", "signing.pub")
    _, key = cli("key", "show", "--state-dir", runs["state"], check_exit=0)
    rc, out = cli("verify", s.receipt_path, "--frames", s.evidence_dir, "--key", pub, check_exit=0)
    assert out["authenticated"] is True and out["key_id"] == key["key_id"]
    names = [c["name"] for c in out["checks"]]
    assert names[-6:] == ["envelope", "payload_type", "signature", "statement", "subjects", "log_inclusion"]
    # The statement's first subject is the exact bytes of receipt.json.
    env = read_json(env_path)
    statement = json.loads(base64.b64decode(env["payload"]))
    with open(s.receipt_path, "rb") as f:
        assert statement["subject"][0] == {"name": "receipt.json",
                                           "digest": {"sha256": hashlib.sha256(f.read()).hexdigest()}}
    # Without a key: consistent, not authenticated, and the human output says what that means.
    rc, out = cli("verify", s.receipt_path, check_exit=0)
    assert out["authenticated"] is False and out["key_id"] is None
    p = subprocess.run([EVIDENT, "verify", s.receipt_path], capture_output=True, text=True)
    assert "NOT AUTHENTICATED" in p.stdout and "proves nothing about who made it" in p.stdout


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


def forge(src_dir, dst_dir):
    """Issue #12's forgery: claims, actor and job changed, every digest recomputed."""
    shutil.copytree(src_dir, dst_dir)
    path = os.path.join(dst_dir, "receipt.json")
    r = read_json(path)
    r["claims"] = {"background": "red", "forged": True}
    r["actor"]["uid"] = 4242
    r["binding"]["job_sha256"] = "f" * 64
    c = V.domain_digest("evident/claims/v2", r["claims"])
    r["claims_sha256"] = c
    r["transcript"][-1]["claims_sha256"] = c
    r["stage_transcript_sha256"] = V.domain_digest(
        "evident/stage-transcript/v2", [e for e in r["transcript"][: len(r["transcript"]) - 2]])
    r["transcript_sha256"] = V.domain_digest("evident/transcript/v2", r["transcript"])
    del r["receipt_id"]
    r["receipt_id"] = "ecr-" + V.domain_digest("evident/receipt/v2", r)
    with open(path, "wb") as f:
        f.write(V.jcs(r) + b"\n")
    return path


def test_plain_tools_recipe_accepts_the_signed_session_and_rejects_a_forgery(runs, tmp_path):
    for tool in ("openssl", "jq", "base64", "sha256sum"):
        assert shutil.which(tool), tool
    s = runs["closed"]
    pub = os.path.join(runs["state"], "keys", "signing.pub")
    p = run_recipe(s.evidence_dir, pub, str(tmp_path / "w1"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "signature and subjects verified" in p.stdout

    forged = forge(s.evidence_dir, str(tmp_path / "forged"))
    rc, out = cli("verify", forged, check_exit=0)        # integrity alone accepts it
    assert out["ok"] is True and out["authenticated"] is False
    rc, out = cli("verify", forged, "--key", pub, check_exit=1)
    assert out["authenticated"] is False
    assert {c["name"] for c in out["checks"] if not c["ok"]} == {"statement", "subjects", "log_inclusion"}
    p = run_recipe(str(tmp_path / "forged"), pub, str(tmp_path / "w2"))
    assert p.returncode != 0

    # Another key (a forger's own) does not verify the real envelope either.
    other = tmp_path / "other"
    cli("key", "init", "--state-dir", str(other), check_exit=0)
    p = run_recipe(s.evidence_dir, str(other / "keys" / "signing.pub"), str(tmp_path / "w3"))
    assert p.returncode != 0


def test_run_log_lists_every_run_and_an_independent_merkle_agrees(runs):
    state = runs["state"]
    _, shown = cli("log", "show", "--state-dir", state, "--attempt", "signed-1", check_exit=0)
    outcomes = [(e["entry"]["id"], e["entry"]["outcome"]) for e in shown["entries"]]
    assert outcomes == [(runs["closed"].session_id, "closed"),
                        (runs["aborted"].session_id, "aborted"),
                        (runs["closed2"].session_id, "closed")]
    assert shown["entries"][0]["entry"]["receipt_id"] == runs["closed"].receipt["receipt_id"]
    assert shown["entries"][1]["entry"]["receipt_id"] is None
    _, by_job = cli("log", "show", "--state-dir", state, "--job", JOB, check_exit=0)
    assert len(by_job["entries"]) == 3

    with open(os.path.join(state, "log", "entries.jsonl"), "rb") as f:
        lines = f.read().split(b"\n")[:-1]
    for line in lines:                                     # each line is JCS of its entry
        assert V.jcs(json.loads(line)) == line
    leaves = [leaf_hash(l) for l in lines]
    head = shown["tree_head"]
    assert head["tree_size"] == len(lines)
    assert head["root_hash"] == mth(leaves).hex()
    for n in range(1, len(leaves) + 1):
        for i in range(n):
            _, p = cli("log", "prove", str(i), "--tree-size", str(n), "--state-dir", state, check_exit=0)
            assert p["inclusion_proof"] == [h.hex() for h in path(i, leaves[:n])]
            assert p["root_hash"] == mth(leaves[:n]).hex()
        for m in range(1, n + 1):
            _, c = cli("log", "consistency", str(m), str(n), "--state-dir", state, check_exit=0)
            assert c["proof"] == [h.hex() for h in subproof(m, leaves[:n], True)]
    _, p = cli("log", "prove", runs["aborted"].session_id, "--state-dir", state, check_exit=0)
    assert p["index"] == 1
    _, v = cli("log", "verify", "--state-dir", state, check_exit=0)
    assert all(c["ok"] for c in v["checks"])

    # The envelope's own inclusion proof leads to its signed head's root.
    env = read_json(os.path.join(runs["closed2"].evidence_dir, "receipt.dsse.json"))
    log = json.loads(base64.b64decode(env["payload"]))["predicate"]["log"]
    assert log["index"] == 2
    proof = [bytes.fromhex(h) for h in log["inclusion_proof"]]
    assert root_from_path(2, 3, leaf_hash(V.jcs(log["entry"])), proof).hex() == log["tree_head"]["root_hash"]


def test_tree_head_signature_verifies_with_openssl(runs, tmp_path):
    _, shown = cli("log", "show", "--state-dir", runs["state"], check_exit=0)
    head = shown["tree_head"]
    msg = hashlib.sha256(b"evident/tree-head/v1\x00" + V.jcs(
        {k: head[k] for k in ("tree_size", "root_hash", "timestamp")})).digest()
    (tmp_path / "m").write_bytes(msg)
    (tmp_path / "s").write_bytes(base64.b64decode(head["signature"]))
    pub = os.path.join(runs["state"], "keys", "signing.pub")
    p = subprocess.run(["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", pub, "-rawin",
                        "-in", str(tmp_path / "m"), "-sigfile", str(tmp_path / "s")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_tampered_log_fails_log_verify(runs, tmp_path):
    state = str(tmp_path / "copy")
    shutil.copytree(runs["state"], state)
    path_ = os.path.join(state, "log", "entries.jsonl")
    with open(path_, "rb") as f:
        text = f.read().replace(b'"aborted"', b'"expired"', 1)
    with open(path_, "wb") as f:
        f.write(text)
    rc, out = cli("log", "verify", "--state-dir", state, check_exit=1)
    assert out["error"]["code"] == "log-verify-failed"
    assert [c["name"] for c in out["checks"] if not c["ok"]][0] == "log_entries"
