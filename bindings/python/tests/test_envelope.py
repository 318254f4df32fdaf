"""The Python envelope verifier (evident/envelope.py, `python3 -m evident.verify --key`) against
the C++ `evident verify --key` on real signed receipts of real sessions (in-process engine on
real Xvfb): the same exit status, check names and outcomes, `authenticated` and `key_id`, on the
good envelope and on every kind of bad one — another key, a flipped signature, a swapped payload
type, a missing or malformed envelope, non-canonical base64, a forged receipt, and statements
re-signed with the real key but wrong in one place (subjects, predicate, log entry, proof, tree
head) so each later check is reached and fails alone."""
import base64
import contextlib
import copy
import io
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest

import evident
from evident import actions as a
from evident import envelope as E
from evident import verify as V
from evident_bin import find_evident_bin

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
JOB = hashlib.sha256(b"envelope agreement test").hexdigest()




EVIDENT = find_evident_bin()
pytestmark = pytest.mark.skipif(EVIDENT is None, reason="the evident binary is not built")


@pytest.fixture(scope="module")
def signed(tmp_path_factory):
    """Two closed sessions signed by one state dir's key, and a second (forger's) key."""
    state = str(tmp_path_factory.mktemp("state"))
    sessions = []
    with evident.Engine(state_dir=state) as engine:
        with engine.create_display(width=320, height=200) as display:
            app = display.launch(["xmessage", "-geometry", "200x80+0+0", "evident"],
                                 wait_window_ms=10000)
            for i in range(2):
                s = display.session(app, attempt_id=f"env-{i}", job_sha256=JOB)
                s.actions([a.move_mouse(5 + i, 5), a.click(50, 50)])
                s.freeze()
                s.observe()
                s.finish({"case": i})
                s.close()
                sessions.append(s.evidence_dir)
    other = str(tmp_path_factory.mktemp("other"))
    p = subprocess.run([EVIDENT, "key", "init", "--state-dir", other, "--json"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    return {"state": state, "dirs": sessions,
            "pub": os.path.join(state, "keys", "signing.pub"),
            "key": os.path.join(state, "keys", "signing.key"),
            "other": os.path.join(other, "keys", "signing.pub")}


def run_both(receipt, *args):
    """(C++ result, Python result), each (exit status, parsed JSON). The C++ CLI as a process;
    the Python command's main() in this process, given the signature checks as
    ``python3 -m evident.verify`` gives them (the process form is run in
    test_good_envelope_authenticates_in_both), which keeps this module's CI time small."""
    p = subprocess.run([EVIDENT, "verify", receipt, *args, "--json"], capture_output=True,
                       text=True, timeout=60)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        status = V.main([receipt, *args, "--json"], signatures=E)
    return [(p.returncode, json.loads(p.stdout)), (status, json.loads(buf.getvalue()))]


def summary(result):
    status, doc = result
    return {"status": status, "ok": doc.get("ok"), "error": (doc.get("error") or {}).get("code"),
            "checks": [(c["name"], c["ok"]) for c in doc.get("checks", [])],
            "authenticated": doc.get("authenticated"), "key_id": doc.get("key_id")}


def agree(receipt, *args):
    cpp, py = run_both(receipt, *args)
    assert summary(cpp) == summary(py), (cpp, py)
    return summary(cpp)


def failed(s):
    return {n for n, ok in s["checks"] if not ok}


def clone(signed, tmp_path, i=0):
    dst = str(tmp_path / f"copy{i}")
    shutil.copytree(signed["dirs"][i], dst)
    return dst


def load_env(d):
    with open(os.path.join(d, "receipt.dsse.json"), "rb") as f:
        return json.loads(f.read())


def write_env(d, env):
    with open(os.path.join(d, "receipt.dsse.json"), "wb") as f:
        f.write(json.dumps(env).encode())


def statement_of(env):
    return json.loads(base64.b64decode(env["payload"]))


def resign(signed, d, fn):
    """Changes the statement with ``fn`` and signs it again with the real key."""
    st = statement_of(load_env(d))
    fn(st)
    key = E.load_signing_key(signed["key"])
    with open(os.path.join(d, "receipt.dsse.json"), "wb") as f:
        f.write(E.envelope_bytes(E.sign_statement(key, st)))


def test_good_envelope_authenticates_in_both(signed):
    d = signed["dirs"][0]
    r = os.path.join(d, "receipt.json")
    s = agree(r, "--frames", d, "--key", signed["pub"])
    assert s["status"] == 0 and s["authenticated"] is True
    assert s["key_id"] == E.load_public_key(signed["pub"]).key_id
    assert [n for n, _ in s["checks"][-6:]] == list(E.ENVELOPE_CHECKS)
    # the key id: "ed25519:" + SHA-256 of the SPKI DER, as openssl prints it
    der = subprocess.run(["openssl", "pkey", "-pubin", "-in", signed["pub"], "-outform", "DER"],
                         capture_output=True, check=True).stdout
    assert s["key_id"] == "ed25519:" + hashlib.sha256(der).hexdigest()
    # the private key file works as a trusted key too; a trusted-keys dir with both keys
    assert agree(r, "--key", signed["key"])["authenticated"] is True
    s = agree(r, "--key", signed["other"], "--key", signed["pub"])
    assert s["authenticated"] is True and s["key_id"] == E.load_public_key(signed["pub"]).key_id
    # no key: consistent, not authenticated
    s = agree(r)
    assert s["status"] == 0 and s["authenticated"] is False and s["key_id"] is None
    p = subprocess.run([sys.executable, "-m", "evident.verify", r], capture_output=True,
                       text=True)
    assert "NOT AUTHENTICATED" in p.stdout and "proves nothing about who made it" in p.stdout
    # the command as a process, with a key: the same JSON as the in-process main()
    p = subprocess.run([sys.executable, "-m", "evident.verify", r, "--key", signed["pub"],
                        "--json"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and summary((0, json.loads(p.stdout))) == agree(r, "--key",
                                                                             signed["pub"])
    p = subprocess.run([sys.executable, "-m", "evident.verify", r, "--key", signed["pub"]],
                       capture_output=True, text=True, timeout=60)
    assert "authenticated: signed by " + E.load_public_key(signed["pub"]).key_id in p.stdout


def test_trusted_keys_dir_and_key_usage_errors(signed, tmp_path):
    r = os.path.join(signed["dirs"][0], "receipt.json")
    keys = tmp_path / "trusted"
    keys.mkdir()
    shutil.copy(signed["other"], keys / "forger.pub")
    assert agree(r, "--trusted-keys", str(keys))["authenticated"] is False
    shutil.copy(signed["pub"], keys / "ci.pem")
    assert agree(r, "--trusted-keys", str(keys))["authenticated"] is True
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "junk.pem").write_text("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
    for args, code in ((["--trusted-keys", str(empty)], "verify-usage"),
                       (["--trusted-keys", str(tmp_path / "absent")], "verify-usage"),
                       (["--key", str(tmp_path / "absent.pub")], "key-unreadable"),
                       (["--key", str(tmp_path / "junk.pem")], "key-invalid")):
        s = agree(r, *args)
        assert s["status"] == 2 and s["error"] == code, (args, s)


def test_wrong_key_and_broken_signatures(signed, tmp_path):
    d = clone(signed, tmp_path)
    r = os.path.join(d, "receipt.json")
    s = agree(r, "--key", signed["other"])
    assert s["status"] == 1 and failed(s) == {"signature", "log_inclusion"}
    good = load_env(d)
    cases = {
        "flipped": lambda e: e["signatures"][0].update(sig=base64.b64encode(bytes(
            [base64.b64decode(e["signatures"][0]["sig"])[0] ^ 1]) + base64.b64decode(
            e["signatures"][0]["sig"])[1:]).decode()),
        "short": lambda e: e["signatures"][0].update(sig=base64.b64encode(b"x" * 63).decode()),
        "two": lambda e: e["signatures"].append(dict(e["signatures"][0])),
        "type": lambda e: e.update(payloadType="application/json"),
        "keyid-lie": lambda e: e["signatures"][0].update(keyid="ed25519:" + "0" * 64),
    }
    want = {"flipped": {"signature", "log_inclusion"}, "short": {"signature", "log_inclusion"},
            "two": {"signature", "log_inclusion"},
            "type": {"payload_type", "signature", "log_inclusion"}, "keyid-lie": set()}
    for name, fn in cases.items():
        env = copy.deepcopy(good)
        fn(env)
        write_env(d, env)
        s = agree(r, "--key", signed["pub"])
        assert failed(s) == want[name], (name, s)


def test_unusable_envelopes(signed, tmp_path):
    d = clone(signed, tmp_path)
    r = os.path.join(d, "receipt.json")
    good = load_env(d)
    envelope = os.path.join(d, "receipt.dsse.json")
    os.unlink(envelope)
    s = agree(r, "--key", signed["pub"])
    assert s["status"] == 1 and failed(s) == set(E.ENVELOPE_CHECKS)
    for text in (b"not json", b'{"payload":"","payloadType":"x"}', b"[]",
                 json.dumps({**good, "extra": 1}).encode(),
                 json.dumps({**good, "signatures": []}).encode(),
                 json.dumps({**good, "payload": good["payload"].rstrip("=")}).encode(),
                 json.dumps({**good, "payload": "e31="}).encode(),      # pad bits set
                 json.dumps({**good, "payload": "e3=0"}).encode(),      # data after '='
                 json.dumps({**good, "payload": "e30=\n"}).encode(),
                 json.dumps({**good, "payload": "e3-_"}).encode(),      # URL alphabet
                 b'{"payload":"a","payload":"b","payloadType":"x","signatures":[]}'):
        with open(envelope, "wb") as f:
            f.write(text)
        s = agree(r, "--key", signed["pub"])
        assert s["status"] == 1 and "envelope" in failed(s), (text, s)
    # a payload that is base64 of something that is not JSON: later checks run and fail
    with open(envelope, "w") as f:
        json.dump({**good, "payload": base64.b64encode(b"\xff not json").decode()}, f)
    s = agree(r, "--key", signed["pub"])
    assert {"signature", "statement", "subjects", "log_inclusion"} <= failed(s)
    # another session's envelope beside this receipt
    shutil.copy(os.path.join(signed["dirs"][1], "receipt.dsse.json"), envelope)
    s = agree(r, "--key", signed["pub"])
    assert failed(s) == {"statement", "subjects", "log_inclusion"}
    # --envelope names the right one explicitly
    s = agree(r, "--key", signed["pub"], "--envelope",
              os.path.join(signed["dirs"][0], "receipt.dsse.json"))
    assert s["authenticated"] is True


def test_forged_receipt_and_changed_frame(signed, tmp_path):
    d = clone(signed, tmp_path)
    r = os.path.join(d, "receipt.json")
    doc = V.load_receipt_file(r)
    doc["claims"] = {"case": 99}
    c = V.domain_digest("evident/claims/v2", doc["claims"])
    doc["claims_sha256"] = c
    doc["transcript"][-1]["claims_sha256"] = c
    doc["transcript_sha256"] = V.domain_digest("evident/transcript/v2", doc["transcript"])
    del doc["receipt_id"]
    doc["receipt_id"] = "ecr-" + V.domain_digest("evident/receipt/v2", doc)
    with open(r, "wb") as f:
        f.write(V.jcs(doc) + b"\n")
    assert agree(r)["status"] == 0                       # consistent, so integrity accepts it
    s = agree(r, "--key", signed["pub"])
    assert failed(s) == {"statement", "subjects", "log_inclusion"}
    # receipt.json re-serialized (same values, other bytes): only the subject digest differs
    d2 = clone(signed, tmp_path, 1)
    r2 = os.path.join(d2, "receipt.json")
    values = V.load_receipt_file(r2)
    with open(r2, "w") as f:
        json.dump(values, f, indent=1)
    s = agree(r2, "--key", signed["pub"])
    assert failed(s) == {"subjects"}
    # a frame changed after signing: the frames check with --frames
    d3 = str(tmp_path / "frame")
    shutil.copytree(signed["dirs"][0], d3)
    frame = sorted(glob.glob(os.path.join(d3, "*.png")))[0]
    with open(frame, "r+b") as f:
        f.seek(-20, 2)
        b = f.read(1)
        f.seek(-20, 2)
        f.write(bytes([b[0] ^ 0xFF]))
    s = agree(os.path.join(d3, "receipt.json"), "--frames", d3, "--key", signed["pub"])
    assert failed(s) == {"frames"} and s["authenticated"] is False


def test_validly_signed_but_wrong_statements(signed, tmp_path):
    """Statements signed with the real key, each wrong in one place."""
    def set_(path, value):
        def fn(st):
            obj = st
            for k in path[:-1]:
                obj = obj[k]
            obj[path[-1]] = value
        return fn

    log = ("predicate", "log")
    cases = [
        (set_(("_type",), "https://in-toto.io/Statement/v0.1"), {"statement"}),
        (set_(("predicateType",), "urn:evident:session-receipt:v2"), {"statement"}),
        (set_(("predicate", "extra"), 1), {"statement"}),
        (set_(("predicate", "receipt_id"), "ecr-" + "0" * 64), {"statement"}),
        (lambda st: st["subject"].pop(), {"subjects"}),
        (lambda st: st["subject"].reverse(), {"subjects"}),
        (set_(("subject", 0, "digest", "sha256"), "0" * 64), {"subjects"}),
        (set_(("subject", 1, "name"), "x.png"), {"subjects"}),
        (set_(("subject", 1, "digest", "sha512"), "0"), {"subjects"}),
        (set_(log, None), {"log_inclusion"}),
        (set_(log + ("index",), 5), {"log_inclusion"}),
        (set_(log + ("index",), -1), {"log_inclusion"}),
        (set_(log + ("index",), True), {"log_inclusion"}),
        (set_(log + ("inclusion_proof",), ["0" * 64]), {"log_inclusion"}),
        (set_(log + ("inclusion_proof",), ["zz"]), {"log_inclusion"}),
        (set_(log + ("entry", "outcome"), "aborted"), {"log_inclusion"}),
        (set_(log + ("entry", "attempt_id"), "other"), {"log_inclusion"}),
        (set_(log + ("entry", "ended_at"), "2026-02-30T00:00:00.000Z"), {"log_inclusion"}),
        (set_(log + ("tree_head", "root_hash"), "0" * 64), {"log_inclusion"}),
        (set_(log + ("tree_head", "tree_size"), 99), {"log_inclusion"}),
        (set_(log + ("tree_head", "key_id"), "ed25519:" + "0" * 64), {"log_inclusion"}),
        (set_(log + ("tree_head", "timestamp"), "yesterday"), {"log_inclusion"}),
    ]
    for i, (fn, want) in enumerate(cases):
        d = clone(signed, tmp_path, 1)
        resign(signed, d, fn)
        s = agree(os.path.join(d, "receipt.json"), "--key", signed["pub"])
        assert failed(s) == want, (i, s)
        shutil.rmtree(d)
    # the unchanged statement re-signed by Python verifies in both (PAE and base64 agree)
    d = clone(signed, tmp_path, 1)
    resign(signed, d, lambda st: None)
    assert agree(os.path.join(d, "receipt.json"), "--key", signed["pub"])["authenticated"]
