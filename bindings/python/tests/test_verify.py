"""The independent Python receipt verifier (evident/verify.py): JCS vectors, digest vectors computed
by npm canonicalize + sha256sum, golden receipts, strict parsing, tampering, its command line, and
agreement with the C++ `evident verify` on every golden, tampered and malformed receipt.

Run: /usr/bin/python3 -m pytest bindings/python/tests/test_verify.py
The agreement tests need the `evident` binary: $EVIDENT_BIN, else build/engine/cli/evident.
"""
from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest
from evident_bin import find_evident_bin

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VERIFY_PY = os.path.join(ROOT, "bindings", "python", "evident", "verify.py")
GOLDEN = os.path.join(ROOT, "receipts", "golden")
GOLDEN_NAMES = ["zero-actions", "three-actions", "sixty-four-actions"]
# A real receipt from a live session (no builder inputs), verified like the goldens.
ALL_NAMES = GOLDEN_NAMES + ["real-tk-form"]


def _load_verify():
    # Loaded from its file so these tests need neither the compiled engine nor the package.
    spec = importlib.util.spec_from_file_location("evident_verify_standalone", VERIFY_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


V = _load_verify()




EVIDENT = find_evident_bin()
needs_evident = pytest.mark.skipif(
    EVIDENT is None, reason="the evident binary is not built (set EVIDENT_BIN or build "
                            "build/engine/cli/evident): C++/Python agreement not checked here "
                            "(receipts_verify_test checks it from the C++ side)")


def golden(name):
    d = os.path.join(GOLDEN, name)
    with open(os.path.join(d, "receipt.json"), "rb") as f:
        data = f.read()
    return d, data, V.parse_strict(data)


def full_options(name, receipt):
    frames = os.path.join(GOLDEN, name, "frames")
    return {"frames_dir": frames,
            "png_path": os.path.join(frames, receipt["observation"]["sha256"] + ".png"),
            "expect_job_sha256": receipt["binding"]["job_sha256"],
            "expect_uid": receipt["actor"]["uid"]}


def failed(report):
    return [c["name"] for c in report["checks"] if not c["ok"]]


# ------------------------------------------------------------------------------------ JCS

def test_jcs_vectors():
    with open(os.path.join(ROOT, "receipts", "vectors", "jcs.json"), encoding="utf-8") as f:
        doc = json.load(f)
    assert len(doc["vectors"]) >= 10
    for v in doc["vectors"]:
        value = V.parse_strict(v["input"].encode("utf-8"))
        assert V.jcs(value) == v["expected"].encode("utf-8"), v["name"]
    for v in doc["refused"]:
        with pytest.raises(V.ReceiptFormatError):
            V.jcs(V.parse_strict(v["input"].encode("utf-8")))


def test_jcs_refuses_non_integer_content():
    for bad in [1.5, 0.0, [1, 2.5], {"a": float("nan")}, 2 ** 53, -(2 ** 53), "\ud800",
                {"\udc00": 1}, b"bytes", (1, 2), {1: 2}]:
        with pytest.raises(V.ReceiptFormatError) as e:
            V.jcs(bad)
        assert e.value.code == "receipt-noncanonical"
    assert V.jcs([2 ** 53 - 1, -(2 ** 53 - 1), True, None]) == \
        b"[9007199254740991,-9007199254740991,true,null]"


def test_utf16_key_order():
    value = {"\ue000": 1, "\U00010000": 2, "\uffff": 3, "a": 4}
    assert V.jcs(value) == '{"a":4,"\U00010000":2,"\ue000":1,"\uffff":3}'.encode("utf-8")


def test_digest_vectors_and_worked_example():
    with open(os.path.join(ROOT, "receipts", "vectors", "digests.json"), encoding="utf-8") as f:
        doc = json.load(f)
    for v in doc["vectors"]:
        assert V.jcs(v["value"]) == v["jcs"].encode("utf-8")
        assert V.domain_digest(v["domain"], v["value"]) == v["sha256"]
    # docs/receipts.md worked example; the digest comes from `printf ... | sha256sum`.
    assert V.domain_digest("evident/claims/v2", {"b": [1, "é"], "a": True}) == \
        "cce8204f1f3c48d7f5ad60f867cf456f23db6fa1fd28d76c935dadf6cc7dcb40"
    raw = b"evident/claims/v2\x00" + b'{"a":true,"b":[1,"\xc3\xa9"]}'
    assert hashlib.sha256(raw).hexdigest() == \
        "cce8204f1f3c48d7f5ad60f867cf456f23db6fa1fd28d76c935dadf6cc7dcb40"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_jcs_agrees_with_npm_canonicalize():
    values = []
    with open(os.path.join(ROOT, "receipts", "vectors", "jcs.json"), encoding="utf-8") as f:
        values += [json.loads(v["input"]) for v in json.load(f)["vectors"]]
    values += [golden(n)[2] for n in ALL_NAMES]
    lines = "".join(json.dumps(v, ensure_ascii=False) + "\n" for v in values).encode("utf-8")
    out = subprocess.run(["node", os.path.join(ROOT, "receipts", "tools", "jcs.mjs"), "--lines"],
                         input=lines, capture_output=True, check=True).stdout.split(b"\n")
    assert out[-1] == b"" and len(out) == len(values) + 1
    for v, o in zip(values, out):
        assert V.jcs(v) == o


# ------------------------------------------------------------------------------ parsing

@pytest.mark.parametrize("text", [
    b'{"a":1,"a":2}', b'{"x":{"a":1,"a":1}}', b"[1.0]", b"[1e2]", b"[NaN]", b"[Infinity]",
    b"[9007199254740992]", b"[-9007199254740992]", b'["\\ud800"]', b'{"\\udc00":1}', b"\xff",
    b"[1] [2]", b"[1,]", b"", b"{'a':1}", b'"\xed\xa0\x80"',
])
def test_strict_parse_refuses(text):
    with pytest.raises(V.ReceiptFormatError) as e:
        V.parse_strict(text)
    assert e.value.code == "receipt-json"


def test_strict_parse_accepts():
    assert V.parse_strict(b' {"a":[9007199254740991,-0,"\\u00e9"]} \n') == \
        {"a": [9007199254740991, 0, "é"]}


# ------------------------------------------------------------------------------ goldens

@pytest.mark.parametrize("name", ALL_NAMES)
def test_goldens_verify(name):
    _, data, receipt = golden(name)
    assert data == V.jcs(receipt) + b"\n"  # the documented file form
    report = V.verify_receipt(receipt, **full_options(name, receipt))
    assert report["ok"], failed(report)
    assert [c["name"] for c in report["checks"]] == [
        "schema", "receipt_id", "transcript_sha256", "stage_transcript_sha256", "claims_sha256",
        "event_order", "counters", "post_observation_input_event_count", "timestamps",
        "observation_digest", "frames", "png", "expect_job", "expect_uid"]
    assert report["receipt_id"] == receipt["receipt_id"]


def test_golden_has_no_secrets():
    _, data, _ = golden("three-actions")
    assert b"hunter2" not in data and b"ctrl+shift+t" not in data
    with open(os.path.join(GOLDEN, "three-actions", "input.json"), encoding="utf-8") as f:
        inp = json.load(f)
    assert inp["actions"][1]["action"]["text"].startswith("hunter2")


def leaves(v, path=()):
    if isinstance(v, dict):
        for k, x in v.items():
            yield from leaves(x, path + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from leaves(x, path + (i,))
    else:
        yield path


def mutate(v):
    if isinstance(v, bool):
        return not v
    if v is None:
        return 0
    if isinstance(v, int):
        return v + 1
    s = list(v)
    for i in range(len(s) - 1, -1, -1):
        c = s[i]
        if "0" <= c <= "9":
            s[i] = "0" if c == "9" else chr(ord(c) + 1)
        elif "a" <= c <= "f":
            s[i] = "0123456789abcdef"[("0123456789abcdef".index(c) + 1) % 16]
        elif "g" <= c <= "z":
            s[i] = "a" if c == "z" else chr(ord(c) + 1)
        elif "A" <= c <= "Z":
            s[i] = "A" if c == "Z" else chr(ord(c) + 1)
        else:
            continue
        return "".join(s)
    return v + "x"


def tampered(receipt, path):
    t = copy.deepcopy(receipt)
    target = t
    for p in path[:-1]:
        target = target[p]
    target[path[-1]] = mutate(target[path[-1]])
    return t


@pytest.mark.parametrize("name", ALL_NAMES)
def test_every_leaf_tamper_fails(name):
    _, _, receipt = golden(name)
    options = full_options(name, receipt)
    if name == "sixty-four-actions":
        options["frames_dir"] = None
    freeze = len(receipt["transcript"]) - 3
    count = 0
    for path in leaves(receipt):
        report = V.verify_receipt(tampered(receipt, path), **options)
        names = set(failed(report))
        assert not report["ok"], path
        count += 1
        if names == {"schema"}:
            continue
        assert "schema" not in names
        assert "receipt_id" in names, path
        if path[0] == "transcript":
            assert "transcript_sha256" in names
            if path[1] <= freeze:
                assert "stage_transcript_sha256" in names
        if path[0] == "claims":
            assert "claims_sha256" in names
    assert count > 40


# ------------------------------------------------------------------------------ CLI

def run_py_cli(*args):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "bindings", "python"))
    r = subprocess.run([sys.executable, VERIFY_PY, *args], capture_output=True, env=env)
    return r.returncode, r.stdout.decode("utf-8")


def test_module_cli_runs_as_package():
    # `python3 -m evident.verify` must work without the compiled engine.
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "bindings", "python"))
    path = os.path.join(GOLDEN, "zero-actions", "receipt.json")
    r = subprocess.run([sys.executable, "-m", "evident.verify", path, "--json"],
                       capture_output=True, env=env, cwd="/")
    assert r.returncode == 0, r.stderr.decode()
    assert json.loads(r.stdout)["ok"] is True


def test_file_run_by_path_refuses_key_options_without_the_package():
    # verify.py run as a single file has no signature checks (they live in evident.envelope):
    # --key is a usage error (exit 2) before the receipt is read, not a crash.
    path = os.path.join(GOLDEN, "zero-actions", "receipt.json")
    status, out = run_py_cli(path, "--key", "/nonexistent.pub", "--json")
    assert status == 2
    assert json.loads(out)["error"]["code"] == "verify-usage"


def test_cli_output_shapes(tmp_path):
    path = os.path.join(GOLDEN, "three-actions", "receipt.json")
    status, out = run_py_cli(path, "--json", "--expect-uid", "7", "--expect-job", "0" * 64)
    assert status == 1
    doc = json.loads(out)
    assert doc["ok"] is False
    assert doc["error"] == {"code": "verify-failed",
                            "message": "failed checks: expect_job, expect_uid",
                            "retryable": False}
    assert doc["receipt_id"].startswith("ecr-")
    status, out = run_py_cli(str(tmp_path / "missing.json"), "--json")
    assert status == 1 and json.loads(out)["error"]["code"] == "receipt-unreadable"
    (tmp_path / "dup.json").write_bytes(b'{"a":1,"a":2}')
    status, out = run_py_cli(str(tmp_path / "dup.json"), "--json")
    assert status == 1 and json.loads(out)["error"]["code"] == "receipt-json"
    status, out = run_py_cli(path, "--json", "--expect-job", "nothex")
    assert status == 2 and json.loads(out)["error"]["code"] == "verify-usage"
    status, out = run_py_cli(path)
    assert status == 0 and "verified: all 10 checks passed" in out


# ------------------------------------------------------------------------------ agreement

def run_both(path, options):
    args = [path, "--json"]
    if options.get("frames_dir"):
        args += ["--frames", options["frames_dir"]]
    if options.get("png_path"):
        args += ["--png", options["png_path"]]
    if options.get("expect_job_sha256"):
        args += ["--expect-job", options["expect_job_sha256"]]
    if options.get("expect_uid") is not None:
        args += ["--expect-uid", str(options["expect_uid"])]
    c = subprocess.run([EVIDENT, "verify", *args], capture_output=True)
    py_status, py_out = run_py_cli(*args)
    c_doc, p_doc = json.loads(c.stdout), json.loads(py_out)
    for d in (c_doc, p_doc):
        for check in d.get("checks", []):
            check.pop("detail")
        if "error" in d and d["error"]["code"] != "verify-failed":
            d["error"].pop("message")  # for people; "failed checks: ..." must match exactly
    return c.returncode, c_doc, py_status, p_doc


@needs_evident
def test_agreement_on_goldens_and_tampers(tmp_path):
    jobs = []
    for name in ALL_NAMES:
        d, _, receipt = golden(name)
        opts = full_options(name, receipt)
        jobs.append((os.path.join(d, "receipt.json"), opts))
        if name in ("three-actions", "real-tk-form"):  # every leaf, through both command lines
            for i, path in enumerate(leaves(receipt)):
                p = tmp_path / ("t%d.json" % i)
                p.write_bytes(V.jcs(tampered(receipt, path)))
                jobs.append((str(p), opts))
    (tmp_path / "dup.json").write_bytes(b'{"a":1,"a":2}')
    jobs.append((str(tmp_path / "dup.json"), {}))
    jobs.append((str(tmp_path / "missing.json"), {}))
    for path, opts in jobs:
        c_status, c_doc, p_status, p_doc = run_both(path, opts)
        assert c_status == p_status, path
        assert c_doc == p_doc, path


# ------------------------------------------------------------------------------ JSON Schema

def test_json_schema_matches_the_schema_check():
    jsonschema = pytest.importorskip("jsonschema", reason="python3-jsonschema is not installed")
    with open(os.path.join(ROOT, "receipts", "schema", "session-receipt-v2.schema.json")) as f:
        schema = json.load(f)
    validator = jsonschema.Draft202012Validator(schema)
    for name in ALL_NAMES:
        _, _, receipt = golden(name)
        validator.validate(receipt)
    # For every single-leaf tamper, the JSON Schema and the verifier's "schema" check agree.
    _, _, receipt = golden("three-actions")
    disagreements = []
    for path in leaves(receipt):
        t = tampered(receipt, path)
        report = V.verify_receipt(t)
        schema_ok = report["checks"][0]["ok"]
        if path[0] in V.TIMESTAMP_KEYS:
            # The JSON Schema also holds the timestamp pattern, which the verifiers report
            # under the "timestamps" check instead.
            schema_ok = schema_ok and "timestamps" not in failed(report)
        if validator.is_valid(t) != schema_ok:
            disagreements.append(path)
    assert disagreements == []
