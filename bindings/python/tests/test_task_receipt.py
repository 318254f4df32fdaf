"""Task receipts (`evident.task-receipt/v1`, docs/receipts.md §12) through the independent Python
verifier and both command lines: the linked stage/attest vectors of receipts/task/ (made by
receipts/task/make_task_vectors.py, independently of both verifiers) verify with every option and
`--prior`; the JSON Schema agrees with the `schema` check; the constants equal protocol/evident.json;
`--prior` file errors have their codes; and `evident verify` (C++) agrees with
`python3 -m evident.verify` on exit status and check names. The large mutation corpus (every
leaf, 50+ re-sealed semantic mutations, both verifiers) is the C++ test receipts_task_test.

Run: /usr/bin/python3 -m pytest bindings/python/tests/test_task_receipt.py
"""
from __future__ import annotations

import copy
import importlib.util
import json
import os
import subprocess
import sys

import pytest
from evident_bin import find_evident_bin

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VERIFY_PY = os.path.join(ROOT, "bindings", "python", "evident", "verify.py")
VECTORS = os.path.join(ROOT, "receipts", "task")


def _load_verify():
    spec = importlib.util.spec_from_file_location("evident_verify_standalone_task", VERIFY_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


V = _load_verify()
EVIDENT = find_evident_bin()
needs_evident = pytest.mark.skipif(EVIDENT is None, reason="the evident binary is not built")


def vector(name):
    path = os.path.join(VECTORS, name, "receipt.json")
    with open(path, "rb") as f:
        return path, json.loads(f.read())


def options(name, r):
    frames = os.path.join(VECTORS, name, "frames")
    return {"frames_dir": frames, "png_path": os.path.join(frames, r["observation"]["sha256"] + ".png"),
            "expect_job_sha256": r["task_sha256"], "expect_uid": r["actor"]["uid"]}


def failed(report):
    return [c["name"] for c in report["checks"] if not c["ok"]]


def test_vectors_verify_with_every_option_and_lineage():
    _, stage = vector("stage")
    _, attest = vector("attest")
    s = V.verify_receipt(stage, **options("stage", stage))
    assert s["ok"], failed(s)
    assert [c["name"] for c in s["checks"]] == [
        "schema", "receipt_id", "transcript_sha256", "stage_transcript_sha256", "result_sha256",
        "event_order", "turns", "turn_frames", "counters", "input_flags", "projections", "limits",
        "attest_input", "lineage", "post_observation_input_event_count", "timestamps",
        "observation_digest", "frames", "png", "expect_task", "expect_uid"]
    a = V.verify_receipt(attest, prior=stage, **options("attest", attest))
    assert a["ok"], failed(a)
    assert [c["name"] for c in a["checks"]][-4:] == [
        "prior_receipt", "prior_binding", "prior_chronology", "prior_transcript"]
    assert attest["prior_receipt_id"] == stage["receipt_id"]
    # The attest transcript digest chains the stage's.
    assert V.domain_digest("evident/task-transcript/v1", {
        "prior_transcript_sha256": stage["transcript_sha256"],
        "events": attest["transcript"]}) == attest["transcript_sha256"]


def test_vector_digests_file_matches():
    with open(os.path.join(VECTORS, "digests.json"), encoding="utf-8") as f:
        digests = json.load(f)
    for name in ("stage", "attest"):
        _, r = vector(name)
        assert r["receipt_id"] == digests[name]["receipt_id"]
        assert r["transcript_sha256"] == digests[name]["transcript_sha256"]
        assert r["result_sha256"] == digests[name]["result_sha256"]


def test_nothing_secret_in_the_vectors():
    with open(os.path.join(VECTORS, "stage", "input.json"), encoding="utf-8") as f:
        inp = json.load(f)
    with open(os.path.join(VECTORS, "stage", "receipt.json"), encoding="utf-8") as f:
        text = f.read()
    secrets = [a["action"].get("text", a["action"].get("key")) for a in inp["actions"]
               if a["action"]["type"] in ("type", "key")]
    secrets += [i for t in inp["turns"] for i in t["call_ids"]]
    assert len(secrets) == 8
    for s in secrets:
        assert json.dumps(s)[1:-1] not in text, s


def test_constants_equal_the_protocol():
    from evident import _protocol as P
    L = P.LIMITS
    assert V.TASK_LIMITS["stage"] == {
        "max_turns": L["task_stage_max_turns"], "deadline_ms": L["task_stage_timeout_ms"],
        "input_sealed": False, "max_actions_per_turn": L["actions_per_batch_max"],
        "max_actions": L["actions_per_session_max"]}
    assert V.TASK_LIMITS["attest"] == {
        "max_turns": L["task_attest_max_turns"], "deadline_ms": L["task_attest_timeout_ms"],
        "input_sealed": True, "max_actions_per_turn": L["actions_per_batch_max"],
        "max_actions": L["actions_per_session_max"]}
    assert V.TASK_CALLS_PER_TURN_MAX == L["task_calls_per_turn_max"]
    assert V.TASK_MAX_EVENTS == 1 + L["task_stage_max_turns"] + L["actions_per_session_max"] + 3
    assert V.TASK_ACTIONS == P.SESSION_ACTION_KINDS | {"zoom"}


SCHEMA_MUTATIONS = [
    ("extra member", lambda r: r.update(model_text="I will click"), True),
    ("missing member", lambda r: r.pop("policy"), True),
    ("job in binding", lambda r: r["binding"].update(job_sha256="a" * 64), True),
    ("unknown event kind", lambda r: r["transcript"][1].update(kind="thinking"), True),
    ("paste action", lambda r: r["transcript"][3].update(action="paste"), True),
    ("raw call ids", lambda r: r["transcript"][1].update(call_ids=["toolu_01A"]), True),
    ("turn 0", lambda r: r["transcript"][1].update(turn=0), True),
    ("native action with a space", lambda r: r["transcript"][1]["native_actions"].append("left click"), True),
    ("bad mode", lambda r: r.update(mode="replay"), True),
    ("session execution", lambda r: r["execution"].update(kind="external-actions"), True),
    ("ecr id", lambda r: r.update(receipt_id="ecr-" + "a" * 64), True),
    ("short transcript", lambda r: r.update(transcript=r["transcript"][:4]), True),
    ("digest changed (not a shape problem)", lambda r: r.update(result_sha256="0" * 64), False),
    ("turn numbers (not a shape problem)", lambda r: r["transcript"][4].update(turn=7), False),
]


@pytest.mark.parametrize("label,fn,is_schema", SCHEMA_MUTATIONS, ids=[m[0] for m in SCHEMA_MUTATIONS])
def test_json_schema_agrees_with_the_schema_check(label, fn, is_schema):
    jsonschema = pytest.importorskip("jsonschema", reason="python3-jsonschema is not installed")
    with open(os.path.join(ROOT, "receipts", "schema", "task-receipt-v1.schema.json")) as f:
        validator = jsonschema.Draft202012Validator(json.load(f))
    for name in ("stage", "attest"):
        validator.validate(vector(name)[1])
    r = copy.deepcopy(vector("stage")[1])
    fn(r)
    assert validator.is_valid(r) == (not is_schema)
    assert ("schema" in failed(V.verify_receipt(r))) == is_schema


def run_py_cli(*args):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "bindings", "python"))
    return subprocess.run([sys.executable, "-m", "evident.verify", *args, "--json"],
                          capture_output=True, text=True, env=env)


def run_cpp_cli(*args):
    return subprocess.run([EVIDENT, "verify", *args, "--json"], capture_output=True, text=True)


def summary(proc):
    out = json.loads(proc.stdout)
    return (proc.returncode, out.get("error", {}).get("code"),
            [(c["name"], c["ok"]) for c in out.get("checks", [])])


def cli_cases(tmp_path):
    stage_path, stage = vector("stage")
    attest_path, attest = vector("attest")
    bad = copy.deepcopy(attest)
    bad["binding"]["attempt_id"] = "other"
    bad_path = tmp_path / "bad.json"
    bad_path.write_text(json.dumps(bad))
    not_json = tmp_path / "prior.json"
    not_json.write_text('{"a":1,"a":2}')
    frames = os.path.join(VECTORS, "attest", "frames")
    return [
        ([stage_path, "--frames", os.path.join(VECTORS, "stage", "frames")], 0, None),
        ([attest_path, "--prior", stage_path, "--frames", frames,
          "--expect-job", attest["task_sha256"].upper()], 0, None),
        ([attest_path, "--prior", attest_path], 1, "verify-failed"),
        ([stage_path, "--prior", stage_path], 1, "verify-failed"),
        ([str(bad_path), "--prior", stage_path], 1, "verify-failed"),
        ([attest_path, "--expect-job", "0" * 64], 1, "verify-failed"),
        ([attest_path, "--prior", str(tmp_path / "missing.json")], 1, "verify-prior-unreadable"),
        ([attest_path, "--prior", str(tmp_path)], 1, "verify-prior-unreadable"),
        ([attest_path, "--prior", str(not_json)], 1, "verify-prior-json"),
    ]


def test_python_cli(tmp_path):
    for args, status, code in cli_cases(tmp_path):
        got = summary(run_py_cli(*args))
        assert got[:2] == (status, code), args


@needs_evident
def test_cpp_cli_agrees_with_python_cli(tmp_path):
    for args, status, code in cli_cases(tmp_path):
        cpp = summary(run_cpp_cli(*args))
        py = summary(run_py_cli(*args))
        assert cpp[:2] == (status, code), args
        assert cpp == py, args


def test_disclosure_of_a_task_action():
    _, stage = vector("stage")
    with open(os.path.join(VECTORS, "stage", "input.json"), encoding="utf-8") as f:
        inp = json.load(f)
    a = inp["actions"][1]  # the typed name: the 2nd action, transcript[3] (after turn 1)
    d = {"schema": "evident.disclosure/v1", "receipt_id": stage["receipt_id"], "action_index": 1,
         "action": "type", "salt": a["salt"], "value": a["action"]["text"]}
    assert failed(V.verify_receipt(stage, disclosure=d)) == []
    assert failed(V.verify_receipt(stage, disclosure=dict(d, value="other"))) == ["disclosure_commitment"]
    assert failed(V.verify_receipt(stage, disclosure=dict(d, action_index=0))) == [
        "disclosure_action", "disclosure_commitment"]


def _seal_task_vector(tmp_path, name, predicate_type):
    """Copies a vector into an evidence dir and signs it as the engine does at close (a one-entry
    run log of kind "task"), written here with the cryptography package, not the engine."""
    crypto = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.ed25519")
    from cryptography.hazmat.primitives import serialization
    import base64
    import hashlib
    import shutil
    from evident import envelope as E
    d = tmp_path / name
    shutil.copytree(os.path.join(VECTORS, name, "frames"), d)
    shutil.copy(os.path.join(VECTORS, name, "receipt.json"), d / "receipt.json")
    data = (d / "receipt.json").read_bytes()
    r = json.loads(data)
    priv = crypto.Ed25519PrivateKey.generate()
    spki = priv.public_key().public_bytes(serialization.Encoding.DER,
                                          serialization.PublicFormat.SubjectPublicKeyInfo)
    key_id = "ed25519:" + hashlib.sha256(spki).hexdigest()
    pub = tmp_path / (name + ".pub")
    pub.write_bytes(priv.public_key().public_bytes(serialization.Encoding.PEM,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo))
    entry = {"kind": "task", "id": r["task_id"], "attempt_id": r["binding"]["attempt_id"],
             "task_sha256": r["task_sha256"], "outcome": "closed", "receipt_id": r["receipt_id"],
             "ended_at": r["completed_at"]}
    root = hashlib.sha256(b"\x00" + V.jcs(entry)).hexdigest()
    head = {"tree_size": 1, "root_hash": root, "timestamp": r["completed_at"]}
    sig = priv.sign(bytes.fromhex(V.domain_digest("evident/tree-head/v1", head)))
    head.update(key_id=key_id, signature=base64.b64encode(sig).decode())
    subjects = [{"name": "receipt.json", "digest": {"sha256": hashlib.sha256(data).hexdigest()}}] + [
        {"name": h + ".png", "digest": {"sha256": h}} for h in E.receipt_frame_digests(r)]
    statement = {"_type": "https://in-toto.io/Statement/v1", "subject": subjects,
                 "predicateType": predicate_type,
                 "predicate": {"receipt_id": r["receipt_id"],
                               "log": {"index": 0, "tree_head": head, "entry": entry,
                                       "inclusion_proof": []}}}
    payload = V.jcs(statement)
    pae = b"DSSEv1 %d %s %d %s" % (len(E.PAYLOAD_TYPE), E.PAYLOAD_TYPE.encode(), len(payload), payload)
    env = {"payload": base64.b64encode(payload).decode(), "payloadType": E.PAYLOAD_TYPE,
           "signatures": [{"keyid": key_id, "sig": base64.b64encode(priv.sign(pae)).decode()}]}
    (d / "receipt.dsse.json").write_bytes(V.jcs(env) + b"\n")
    return str(d / "receipt.json"), str(pub)


@pytest.mark.parametrize("predicate,ok", [("urn:evident:task-receipt:v1", True),
                                          ("urn:evident:session-receipt:v3", False)])
def test_signed_task_receipt_in_both_clis(tmp_path, predicate, ok):
    path, pub = _seal_task_vector(tmp_path, "stage", predicate)
    py = run_py_cli(path, "--key", pub)
    out = json.loads(py.stdout)
    assert out["authenticated"] is ok, out
    assert (py.returncode == 0) is ok
    if not ok:
        assert [c["name"] for c in out["checks"] if not c["ok"]] == ["statement"]
    if EVIDENT is not None:
        cpp = run_cpp_cli(path, "--key", pub)
        assert summary(cpp) == summary(py)
        assert json.loads(cpp.stdout)["authenticated"] is ok
