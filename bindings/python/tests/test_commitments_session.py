"""Receipt v3 commitments of a real session (the in-process engine on real Xvfb, xmessage as the
app): `evident disclose` writes a 0600 disclosure that both verifiers accept with
`--disclosure`, wrong values, salts and indexes fail the same named checks in both, and the
typed text and key name appear in no file the engine wrote except the private record
(<state>/commitments/<session_id>.json)."""
import hashlib
import json
import os
import secrets
import subprocess
import sys

import pytest

import evident
from evident import actions as a
from evident_bin import find_evident_bin

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
VERIFY_PY = os.path.join(ROOT, "bindings", "python", "evident", "verify.py")
XMESSAGE = ["xmessage", "-geometry", "200x80+0+0", "evident"]




EVIDENT = find_evident_bin()
pytestmark = pytest.mark.skipif(EVIDENT is None, reason="the evident binary is not built")
TYPED = "Pa55-" + secrets.token_hex(6) + "-word"
KEY = "ctrl+shift+e"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    state = str(tmp_path_factory.mktemp("state"))
    with evident.Engine(state_dir=state) as engine:
        with engine.create_display(width=320, height=200) as display:
            app = display.launch(XMESSAGE, wait_window_ms=10000)
            s = display.session(app, attempt_id="commit-1",
                                job_sha256=hashlib.sha256(b"commitments").hexdigest())
            s.actions([a.click(50, 50), a.type(TYPED), a.key(KEY), a.screenshot()])
            s.freeze()
            s.observe()
            s.finish({"typed": "something"})
            s.close()
    return {"state": state, "session": s}


def cli(*args):
    p = subprocess.run([EVIDENT, *args, "--json"], capture_output=True, text=True, timeout=60)
    return p.returncode, json.loads(p.stdout)


def both(receipt, disclosure):
    c = subprocess.run([EVIDENT, "verify", receipt, "--disclosure", disclosure, "--json"],
                       capture_output=True, text=True)
    p = subprocess.run([sys.executable, VERIFY_PY, receipt, "--disclosure", disclosure, "--json"],
                       capture_output=True, text=True)
    out = []
    for proc in (c, p):
        doc = json.loads(proc.stdout)
        out.append((proc.returncode, [x["name"] for x in doc.get("checks", []) if not x["ok"]],
                    doc.get("error", {}).get("code")))
    assert out[0] == out[1]
    return out[0]


def test_receipt_is_v3_with_counters_and_commitments(run):
    r = run["session"].receipt
    assert r["schema"] == "evident.session-receipt/v3"
    assert r["engine"]["host_id"].startswith("hst-")
    acts = [e for e in r["transcript"] if e["kind"] == "action"]
    assert sum(e["input_events"] for e in acts) == r["input_event_count"] > 0
    assert [("commitment" in e) for e in acts] == [False, True, True, False]
    assert acts[3]["input_events"] == 0 and acts[3]["input"] is False
    rc, out = cli("verify", run["session"].receipt_path)
    assert rc == 0 and out["ok"], out


def test_disclose_writes_a_private_disclosure_that_both_verifiers_accept(run, tmp_path):
    s = run["session"]
    out_path = str(tmp_path / "d1.json")
    rc, out = cli("disclose", s.receipt_path, "--action", "1", "-o", out_path,
                  "--state-dir", run["state"])
    assert rc == 0, out
    assert out["action"] == "type" and out["action_index"] == 1 and TYPED not in json.dumps(out)
    assert os.stat(out_path).st_mode & 0o777 == 0o600
    with open(out_path, encoding="utf-8") as f:
        d = json.load(f)
    assert d["value"] == TYPED and d["receipt_id"] == s.receipt["receipt_id"]
    assert both(s.receipt_path, out_path) == (0, [], None)
    # The key, printed to stdout.
    rc, out = cli("disclose", s.receipt_path, "--action", "2", "--state-dir", run["state"])
    assert rc == 0 and out["disclosure"]["value"] == KEY
    # Wrong value, salt, index: the same named failing checks in both verifiers.
    for change, want in (({"value": TYPED + "!"}, ["disclosure_commitment"]),
                         ({"salt": secrets.token_hex(32)}, ["disclosure_commitment"]),
                         ({"action_index": 2}, ["disclosure_action", "disclosure_commitment"]),
                         ({"action_index": 0}, ["disclosure_action", "disclosure_commitment"])):
        bad = dict(d, **change)
        p = tmp_path / "bad.json"
        p.write_text(json.dumps(bad))
        assert both(s.receipt_path, str(p)) == (1, want, "verify-failed"), change


def test_disclose_refusals_have_stable_codes(run, tmp_path):
    s = run["session"]
    for args, code in ((["--action", "0"], "disclosure-action"),   # the click
                       (["--action", "3"], "disclosure-action"),   # the screenshot
                       (["--action", "9"], "disclosure-action"),
                       (["--action", "1", "--state-dir", str(tmp_path)], "disclosure-unavailable")):
        if "--state-dir" not in args:
            args = args + ["--state-dir", run["state"]]
        rc, out = cli("disclose", s.receipt_path, *args)
        assert rc == 1 and out["error"]["code"] == code, (args, out)
        assert TYPED not in json.dumps(out)
    rc, out = cli("disclose", str(tmp_path / "none.json"), "--action", "1")
    assert rc == 1 and out["error"]["code"] == "receipt-unreadable"


def test_typed_text_and_key_reach_no_file_but_the_private_record(run):
    s = run["session"]
    record = os.path.join(run["state"], "commitments", s.session_id + ".json")
    assert os.stat(record).st_mode & 0o777 == 0o600
    assert os.stat(os.path.dirname(record)).st_mode & 0o777 == 0o700
    assert not os.path.realpath(record).startswith(os.path.realpath(s.evidence_dir))
    scanned = 0
    for dirpath, _, files in os.walk(run["state"]):
        for name in files:
            path = os.path.join(dirpath, name)
            assert TYPED not in path
            if path == record:
                continue
            with open(path, "rb") as f:
                data = f.read()
            scanned += 1
            assert TYPED.encode() not in data, path
            assert KEY.encode() not in data, path
    assert scanned >= 6
    with open(record, "rb") as f:
        assert TYPED.encode() in f.read()
