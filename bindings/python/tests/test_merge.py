"""``evident merge`` (evident/merge.py) on real bundles: two shards of a small suite with real
sessions run as separate pytest processes (one under -n 2), merged into a verified run whose
receipts re-verify with the C++ ``evident verify`` against the deduplicated frames; then every
kind of bad input refused by a named check with nothing written: a tampered receipt, a tampered
frame, a forged listing, a missing shard, a duplicated shard, a foreign shard, a shard that did
not finish, a path out of the bundle, an existing output. With the shards' pinned keys: every
receipt authenticated (both verifiers) and the manifest signed by the merging key, checked with
openssl and the plain-tools recipe; refused for an untrusted signer, a flipped signature, a
missing envelope, a changed frame and a re-sealed receipt; the manifest envelope failing with
another key and after a signed file changed."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from evident import merge as M
from evident.plan import assign
from evident.verify import jcs

ROOT = Path(__file__).resolve().parents[3]
EVIDENT_BIN = os.environ.get("EVIDENT_BIN", str(ROOT / "build" / "engine" / "cli" / "evident"))
PLUGIN_ARGS = ["-p", "no:evident", "-p", "evident.pytest_plugin", "-p", "no:cacheprovider"]
SHARD_ENV = ("CI_NODE_INDEX", "CI_NODE_TOTAL", "JOB_COMPLETION_INDEX", "EVIDENT_SHARD_TOTAL")

SUITE = '''
import pytest
from evident import actions as a

@pytest.mark.parametrize("i", range(4))
def test_session(i, evident_app, evident_evidence):
    app = evident_app(["xmessage", "-geometry", "200x80+0+0", "evident"])
    with evident_evidence.session(app) as s:
        s.actions([a.move_mouse(10 + i, 10)])
        s.freeze()
        s.observe()
        s.finish({"case": i})

def test_plain():
    pass

@pytest.mark.skip(reason="shown as skipped")
def test_skipped():
    pass
'''


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in SHARD_ENV}
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run([sys.executable, "-m", "pytest", *PLUGIN_ARGS, "-q", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    """Two real bundles of one plan, and a bundle of another plan."""
    base = tmp_path_factory.mktemp("bundles")
    suite = base / "suite"
    suite.mkdir()
    (suite / "test_suite.py").write_text(SUITE)
    # Each shard's engine keeps its state dir (its signing key) outside the bundle, as a CI
    # runner would; the xdist workers of shard 1 share one.
    r1 = _pytest(suite, "-n", "2", "--evident-shard=1/2", f"--evident-dir={base / 'b1'}",
                 f"--evident-state-dir={base / 'state1'}")
    r2 = _pytest(suite, "--evident-shard=2/2", f"--evident-dir={base / 'b2'}",
                 f"--evident-state-dir={base / 'state2'}")
    assert r1.returncode == 0, r1.stdout + r1.stderr
    assert r2.returncode == 0, r2.stdout + r2.stderr
    other = base / "other"
    other.mkdir()
    (other / "test_suite.py").write_text("def test_elsewhere():\n    pass\n"
                                         "def test_plain():\n    pass\n")
    r3 = _pytest(other, "--evident-shard=1/1", f"--evident-dir={base / 'foreign'}")
    assert r3.returncode == 0, r3.stdout + r3.stderr
    return base


def copy(bundles: Path, tmp_path: Path, *names: str):
    out = []
    for i, name in enumerate(names):
        dst = tmp_path / f"{i}-{name}"
        shutil.copytree(bundles / name, dst)
        out.append(dst)
    return out


def run_merge(*args: str):
    lines = []

    class W:
        def write(self, s):
            lines.append(s)

    status = M.main([*map(str, args), "--json"], out=W())
    return status, json.loads("".join(lines))


def failed_names(doc):
    return sorted({c["name"] for c in doc["checks"] if not c["ok"]})


def rewrite_shard(bundle: Path, fn):
    path = bundle / "shard.json"
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc))


def test_merge_of_two_real_shards_is_verified_and_exact(bundles, tmp_path):
    b1, b2 = copy(bundles, tmp_path, "b1", "b2")
    out = tmp_path / "merged"
    status, doc = run_merge(b1, b2, "-o", out)
    assert status == 0 and doc["ok"], doc
    assert doc["signature"] == "unsigned" and doc["authenticated"] is False
    m = json.loads((out / "manifest.json").read_text())
    # without keys: said plainly, per receipt and for the run
    assert m["authentication"]["required"] is False
    assert "NOT AUTHENTICATED" in m["authentication"]["note"]
    assert all(r["authenticated"] is False and r["key_id"] is None
               for t in m["tests"] for r in t["receipts"])
    assert not (out / "manifest.dsse.json").exists()
    assert m["schema"] == "evident.run-manifest/v1"
    # manifest_id and the plan digest, recomputed here from their definitions.
    body = {k: v for k, v in m.items() if k != "manifest_id"}
    assert m["manifest_id"] == "erm-" + hashlib.sha256(
        b"evident/run-manifest/v1\x00" + jcs(body)).hexdigest()
    assert m["plan_sha256"] == hashlib.sha256(b"evident/plan/v1\x00" + jcs(m["plan"])).hexdigest()
    assert [s["index"] for s in m["shards"]] == [1, 2]
    assert [t["test"] for t in m["tests"]] == m["plan"]["tests"]
    assert m["outcomes"]["passed"] == 5 and m["outcomes"]["skipped"] == 1
    for s in m["shards"]:
        src = (b1 if s["index"] == 1 else b2) / "shard.json"
        assert s["shard_json_sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    # Every receipt re-verifies with the C++ CLI against the merged, deduplicated frames.
    receipts = [r for t in m["tests"] for r in t["receipts"]]
    assert len(receipts) == m["receipt_count"] == 4
    for r in receipts:
        path = out / "receipts" / f"{r['receipt_id']}.json"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == r["sha256"]
        v = subprocess.run([EVIDENT_BIN, "verify", str(path), "--frames", str(out / "frames"),
                            "--json"], capture_output=True, text=True, timeout=60)
        assert v.returncode == 0 and json.loads(v.stdout)["ok"], v.stdout
    frames = list((out / "frames").iterdir())
    for f in frames:
        assert hashlib.sha256(f.read_bytes()).hexdigest() + ".png" == f.name
    assert m["frames"]["unique"] == len(frames) < m["frames"]["references"]  # deduplicated
    # JUnit XML: one testcase per planned test, the skip marked.
    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    assert suite.get("tests") == "6" and suite.get("skipped") == "1"
    assert len(suite.findall("testcase")) == 6
    durations = json.loads((out / "durations.json").read_text())
    assert sorted(durations) == m["plan"]["tests"]
    assert "## Tests" in (out / "report.md").read_text()
    # The output re-checks on its own; a tampered copy does not.
    status, doc = run_merge("--check", out)
    assert status == 0 and doc["ok"] and doc["authenticated"] is False, doc
    frame = sorted((out / "frames").iterdir())[0]
    frame.write_bytes(frame.read_bytes()[:-1] + b"\x00")
    (out / "manifest.json").write_text((out / "manifest.json").read_text().replace(
        '"passed": 5', '"passed": 6'))
    status, doc = run_merge("--check", out)
    assert status == 1 and set(failed_names(doc)) == {"manifest-id", "receipts"}, doc


def refused(tmp_path, *bundle_dirs, expect):
    out = tmp_path / "merged"
    status, doc = run_merge(*bundle_dirs, "-o", out)
    assert status == 1 and not doc["ok"], doc
    assert doc["error"]["code"] == "merge-refused"
    assert expect <= set(failed_names(doc)), failed_names(doc)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]
    return doc


def detail(doc, name):
    return " | ".join(c["detail"] for c in doc["checks"] if c["name"] == name and not c["ok"])


def first_receipt(bundle: Path):
    entry = json.loads((bundle / "shard.json").read_text())["receipts"][0]
    return entry, bundle / entry["path"]


def test_tampered_receipt_is_refused(bundles, tmp_path):
    b1, b2 = copy(bundles, tmp_path, "b1", "b2")
    entry, path = first_receipt(b1)
    doc = json.loads(path.read_text())
    doc["claims"]["case"] = 99
    path.write_text(json.dumps(doc))
    refused(tmp_path, b1, b2, expect={"receipt-digest"})


def test_tampered_receipt_with_a_forged_listing_fails_verification(bundles, tmp_path):
    b1, b2 = copy(bundles, tmp_path, "b1", "b2")
    entry, path = first_receipt(b1)
    doc = json.loads(path.read_text())
    doc["claims"]["case"] = 99
    data = json.dumps(doc).encode()
    path.write_bytes(data)
    rewrite_shard(b1, lambda s: s["receipts"][0].update(sha256=hashlib.sha256(data).hexdigest()))
    d = refused(tmp_path, b1, b2, expect={"receipt-verify"})
    assert "receipt_id" in detail(d, "receipt-verify")


def test_tampered_frame_is_refused(bundles, tmp_path):
    b1, b2 = copy(bundles, tmp_path, "b1", "b2")
    entry, path = first_receipt(b1)
    frame = sorted(path.parent.glob("*.png"))[0]
    data = bytearray(frame.read_bytes())
    data[-20] ^= 0xFF
    frame.write_bytes(bytes(data))
    d = refused(tmp_path, b1, b2, expect={"receipt-verify"})
    assert "frames" in detail(d, "receipt-verify")


def test_missing_shard_is_refused_and_its_tests_named(bundles, tmp_path):
    (b1,) = copy(bundles, tmp_path, "b1")
    d = refused(tmp_path, b1, expect={"shard-index", "cover"})
    plan = json.loads((b1 / "shard.json").read_text())["plan"]
    assert "shards missing: 2/2" in detail(d, "shard-index")
    for t in assign(plan)[1]:
        assert t in detail(d, "cover")


def test_duplicated_shard_is_refused(bundles, tmp_path):
    b1, b1again, b2 = copy(bundles, tmp_path, "b1", "b1", "b2")
    d = refused(tmp_path, b1, b1again, b2, expect={"shard-index", "cover", "receipt-unique"})
    assert "shards given more than once: 1/2" in detail(d, "shard-index")
    assert "duplicated" in detail(d, "cover")


def test_foreign_shard_is_refused(bundles, tmp_path):
    b1, b2, foreign = copy(bundles, tmp_path, "b1", "b2", "foreign")
    d = refused(tmp_path, b1, b2, foreign, expect={"one-plan", "cover"})
    assert foreign.name in detail(d, "one-plan")
    assert "test_suite.py::test_elsewhere" in detail(d, "cover")


def test_forged_test_list_is_refused(bundles, tmp_path):
    b1, b2 = copy(bundles, tmp_path, "b1", "b2")
    moved = {}

    def steal(s):   # shard 2 claims one of shard 1's tests as well
        plan = s["plan"]
        moved["t"] = assign(plan)[0][0]
        s["tests"] = sorted(s["tests"] + [moved["t"]])
        s["outcomes"][moved["t"]] = "passed"

    rewrite_shard(b2, steal)
    d = refused(tmp_path, b1, b2, expect={"shard-assignment", "cover"})
    assert moved["t"] in detail(d, "cover")


def test_forged_plan_is_refused(bundles, tmp_path):
    b1, b2 = copy(bundles, tmp_path, "b1", "b2")
    rewrite_shard(b2, lambda s: s["plan"]["tests"].append("zzz.py::test_added"))
    refused(tmp_path, b1, b2, expect={"plan-digest", "cover"})


def test_unfinished_shard_is_refused(bundles, tmp_path):
    b1, b2 = copy(bundles, tmp_path, "b1", "b2")
    gone = {}
    rewrite_shard(b2, lambda s: gone.setdefault("t", s["outcomes"].popitem()[0]))
    d = refused(tmp_path, b1, b2, expect={"outcomes"})
    assert gone["t"] in detail(d, "outcomes")


def test_receipt_path_out_of_the_bundle_is_refused(bundles, tmp_path):
    b1, b2 = copy(bundles, tmp_path, "b1", "b2")
    entry, path = first_receipt(b1)
    outside = tmp_path / "outside-receipt.json"
    shutil.copyfile(path, outside)
    rewrite_shard(b1, lambda s: s["receipts"][0].update(path="../outside-receipt.json"))
    refused(tmp_path, b1, b2, expect={"receipt-listed"})
    os.symlink(outside, path.parent / "link.json")
    rewrite_shard(b1, lambda s: s["receipts"][0].update(
        path=entry["path"].rsplit("/", 1)[0] + "/link.json"))
    refused(tmp_path, b1, b2, expect={"receipt-listed"})


def test_malformed_bundles_are_refused(bundles, tmp_path):
    b1, b2 = copy(bundles, tmp_path, "b1", "b2")
    (b2 / "shard.json").write_text('{"schema": "evident.shard/v1", "schema": 1}')
    refused(tmp_path, b1, b2, expect={"bundle-readable", "cover"})
    (b2 / "shard.json").write_text('{"schema": "evident.shard/v1"}')
    refused(tmp_path, b1, b2, expect={"shard-schema", "cover"})
    (b2 / "shard.json").unlink()
    refused(tmp_path, b1, b2, expect={"bundle-readable", "cover"})


def test_usage_errors_change_nothing(bundles, tmp_path):
    b1, b2 = copy(bundles, tmp_path, "b1", "b2")
    out = tmp_path / "merged"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    status, doc = run_merge(b1, b2, "-o", out)
    assert status == 2 and doc["error"]["code"] == "merge-output-exists"
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    status, doc = run_merge("-o", tmp_path / "x")
    assert status == 2 and doc["error"]["code"] == "merge-usage"


def test_require_passed_refuses_a_failed_test(bundles, tmp_path):
    b1, b2 = copy(bundles, tmp_path, "b1", "b2")
    status, doc = run_merge(b1, b2, "-o", tmp_path / "ok", "--require-passed")
    assert status == 0, doc
    victim = {}

    def fail_one(s):
        victim["t"] = s["tests"][0]
        s["outcomes"][victim["t"]] = "failed"

    rewrite_shard(b1, fail_one)
    d = refused(tmp_path, b1, b2, "--require-passed", expect={"tests-passed"})
    assert victim["t"] in detail(d, "tests-passed")


def test_cli_merge_runs_the_package_with_both_verifiers(bundles, keys, tmp_path):
    """`evident merge` (C++ CLI) finds the interpreter, this tree's package and itself (for
    the signature cross-check) by itself."""
    b1, b2 = copy(bundles, tmp_path, "b1", "b2")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EVIDENT_BIN")}
    r = subprocess.run([EVIDENT_BIN, "merge", str(b1), str(b2), "-o", str(tmp_path / "m"),
                        "--trusted-keys", str(keys["trusted"]), "--json"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["ok"] and doc["signature"] == "unsigned" and doc["authenticated"] is True
    m = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert m["verification"]["verifiers"] == ["cpp", "python"]
    assert m["authentication"]["verifiers"] == ["cpp", "python"]
    r = subprocess.run([EVIDENT_BIN, "--json", "merge", str(b1), "-o", str(tmp_path / "n")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["code"] == "merge-refused"
    assert not (tmp_path / "n").exists()


# ---- signed evidence: receipts' envelopes checked against trusted keys; a signed manifest ----

def _key_init(state: Path) -> Path:
    r = subprocess.run([EVIDENT_BIN, "key", "init", "--state-dir", str(state), "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return state / "keys"


@pytest.fixture(scope="module")
def keys(bundles, tmp_path_factory):
    if not os.path.exists(EVIDENT_BIN):
        pytest.skip("the evident CLI is not built")
    k = {"pub1": bundles / "state1" / "keys" / "signing.pub",
         "pub2": bundles / "state2" / "keys" / "signing.pub"}
    assert k["pub1"].is_file() and k["pub2"].is_file()
    k["merger"] = _key_init(tmp_path_factory.mktemp("merger"))
    k["forger"] = _key_init(tmp_path_factory.mktemp("forger"))
    trusted = tmp_path_factory.mktemp("trusted")
    shutil.copy(k["pub1"], trusted / "runner1.pub")
    shutil.copy(k["pub2"], trusted / "runner2.pub")
    k["trusted"] = trusted
    return k


def _key_id(pub: Path) -> str:
    from evident.envelope import load_public_key
    return load_public_key(str(pub)).key_id


def test_signed_merge_authenticates_every_receipt_and_signs_the_manifest(bundles, keys,
                                                                         tmp_path):
    b1, b2 = copy(bundles, tmp_path, "b1", "b2")
    out = tmp_path / "merged"
    status, doc = run_merge(b1, b2, "-o", out, "--trusted-keys", keys["trusted"],
                            "--signing-key", keys["merger"] / "signing.key")
    assert status == 0 and doc["ok"], doc
    assert doc["signature"] == "signed" and doc["authenticated"] is True
    assert "receipt-signature" in {c["name"] for c in doc["checks"]}
    m = json.loads((out / "manifest.json").read_text())
    ids = {1: _key_id(keys["pub1"]), 2: _key_id(keys["pub2"])}
    for t in m["tests"]:
        for r in t["receipts"]:
            assert r["authenticated"] is True and r["key_id"] == ids[t["shard"]]
            assert r["envelope_sha256"] == hashlib.sha256(
                (out / "receipts" / f"{r['receipt_id']}.dsse.json").read_bytes()).hexdigest()
            assert "host_id" in r      # engine.host_id once receipts carry it (v3), else null
    a = m["authentication"]
    assert a["required"] and a["authenticated"] == a["receipts"] == 4
    assert a["signing_keys"] == sorted(ids.values()) and a["trusted_keys"] == sorted(ids.values())
    assert a["verifiers"] == ["cpp", "python"]
    # manifest.dsse.json: an in-toto statement over the output files, by the merging key,
    # checked here with openssl (the DSSE PAE) and sha256, not with evident's code
    env = json.loads((out / "manifest.dsse.json").read_text())
    payload = base64.b64decode(env["payload"])
    t = env["payloadType"].encode()
    pae = b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)
    (tmp_path / "pae").write_bytes(pae)
    (tmp_path / "sig").write_bytes(base64.b64decode(env["signatures"][0]["sig"]))
    v = subprocess.run(["openssl", "pkeyutl", "-verify", "-pubin", "-inkey",
                        str(keys["merger"] / "signing.pub"), "-rawin", "-in", str(tmp_path / "pae"),
                        "-sigfile", str(tmp_path / "sig")], capture_output=True, text=True)
    assert v.returncode == 0, v.stdout + v.stderr
    st = json.loads(payload)
    assert st["_type"] == "https://in-toto.io/Statement/v1"
    assert st["predicateType"] == "urn:evident:run-manifest:v1"
    assert st["predicate"]["manifest_id"] == m["manifest_id"]
    assert [s["name"] for s in st["subject"]] == ["manifest.json", "junit.xml", "report.md",
                                                 "durations.json"]
    for s in st["subject"]:
        assert s["digest"]["sha256"] == hashlib.sha256((out / s["name"]).read_bytes()).hexdigest()
    assert m["signature"]["key_id"] == _key_id(keys["merger"] / "signing.pub")
    # docs/scale.md: steps 1, 2 and 4 of docs/receipts.md's plain-tools recipe, as written there,
    # verify the manifest envelope with env=merged/manifest.dsse.json
    recipe = (ROOT / "docs" / "receipts.md").read_text().split("<!-- recipe:begin -->\n```bash\n")[1]
    recipe = recipe.split("```")[0]
    steps = {}
    head, *parts = recipe.split("\n# ")
    for part in parts:
        steps[part[:1]] = "# " + part
    assert 'env="$DIR/receipt.dsse.json"' in head
    script = head.replace('env="$DIR/receipt.dsse.json"', 'env="$DIR/manifest.dsse.json"') + "\n" + \
        "\n".join(steps[k] for k in "124")
    (tmp_path / "w").mkdir()
    v = subprocess.run(["bash", "-c", script], env=dict(os.environ, DIR=str(out), W=str(tmp_path / "w"),
                       PUB=str(keys["merger"] / "signing.pub")), capture_output=True, text=True)
    assert v.returncode == 0, v.stdout + v.stderr
    # --check: the merging key verifies it (and the runners' keys re-verify the receipts) ...
    status, doc = run_merge("--check", out, "--key", keys["merger"] / "signing.pub",
                            "--trusted-keys", keys["trusted"])
    assert status == 0 and doc["ok"] and doc["authenticated"], doc
    assert "4 receipt envelopes re-verified" in detail_ok(doc, "receipt-signatures")
    status, doc = run_merge("--check", out, "--key", keys["merger"] / "signing.pub")
    assert status == 0 and "rests on the signed manifest" in detail_ok(doc, "receipt-signatures")
    # ... another key does not
    status, doc = run_merge("--check", out, "--key", keys["forger"] / "signing.pub")
    assert status == 1 and failed_names(doc) == ["manifest-signature"], doc
    # a signed output file changed after signing
    junit = out / "junit.xml"
    junit.write_bytes(junit.read_bytes().replace(b"evident-merged", b"evident-merged2"))
    status, doc = run_merge("--check", out, "--key", keys["merger"] / "signing.pub")
    assert status == 1 and failed_names(doc) == ["manifest-signature"], doc
    assert "changed after signing" in detail(doc, "manifest-signature")


def detail_ok(doc, name):
    return " | ".join(c["detail"] for c in doc["checks"] if c["name"] == name)


def test_merge_with_keys_refuses_an_untrusted_signer(bundles, keys, tmp_path):
    b1, b2 = copy(bundles, tmp_path, "b1", "b2")
    d = refused(tmp_path, b1, b2, "--key", keys["pub1"], expect={"receipt-signature"})
    bad = [c for c in d["checks"] if c["name"] == "receipt-signature" and not c["ok"]]
    assert [c["bundle"] for c in bad] == [str(b2)]
    assert "python:signature" in bad[0]["detail"] and "cpp:signature" in bad[0]["detail"]
    refused(tmp_path, b1, b2, "--key", keys["forger"] / "signing.pub",
            expect={"receipt-signature"})


def test_merge_with_keys_refuses_a_tampered_or_missing_envelope(bundles, keys, tmp_path):
    b1, b2 = copy(bundles, tmp_path, "b1", "b2")
    entry, path = first_receipt(b1)
    envelope = path.parent / "receipt.dsse.json"
    env = json.loads(envelope.read_text())
    sig = bytearray(base64.b64decode(env["signatures"][0]["sig"]))
    sig[0] ^= 1
    env["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    envelope.write_text(json.dumps(env))
    d = refused(tmp_path, b1, b2, "--trusted-keys", keys["trusted"],
                expect={"receipt-signature"})
    assert "signature" in detail(d, "receipt-signature")
    envelope.unlink()
    d = refused(tmp_path, b1, b2, "--trusted-keys", keys["trusted"],
                expect={"receipt-signature"})
    assert "python:envelope" in detail(d, "receipt-signature")
    # without keys the same bundles merge, and the manifest says they are not authenticated
    status, doc = run_merge(b1, b2, "-o", tmp_path / "nokeys")
    assert status == 0 and doc["authenticated"] is False
    # an unsigned output checked with a key: refused, it is not signed
    status, doc = run_merge("--check", tmp_path / "nokeys", "--key", keys["merger"] / "signing.pub")
    assert status == 1 and failed_names(doc) == ["manifest-signature"], doc
    assert "unsigned" in detail(doc, "manifest-signature")


def test_merge_with_keys_refuses_changes_after_signing(bundles, keys, tmp_path):
    # a frame changed after signing: its digest no longer matches the signed receipt's
    b1, b2 = copy(bundles, tmp_path, "b1", "b2")
    entry, path = first_receipt(b1)
    frame = sorted(path.parent.glob("*.png"))[0]
    data = bytearray(frame.read_bytes())
    data[-20] ^= 0xFF
    frame.write_bytes(bytes(data))
    d = refused(tmp_path, b1, b2, "--trusted-keys", keys["trusted"], expect={"receipt-verify"})
    assert "frames" in detail(d, "receipt-verify")
    # a receipt changed and re-sealed, its listing updated: only the signature catches it
    (tmp_path / "x").mkdir()
    b1, b2 = copy(bundles, tmp_path / "x", "b1", "b2")
    entry, path = first_receipt(b1)
    from evident.verify import domain_digest, load_receipt_file
    r = load_receipt_file(str(path))
    r["claims"] = {"case": 99}
    c = domain_digest("evident/claims/v2", r["claims"])
    r["claims_sha256"] = c
    r["transcript"][-1]["claims_sha256"] = c
    r["transcript_sha256"] = domain_digest("evident/transcript/v2", r["transcript"])
    del r["receipt_id"]
    r["receipt_id"] = "ecr-" + domain_digest("evident/receipt/v2", r)
    data = jcs(r) + b"\n"
    path.write_bytes(data)
    rewrite_shard(b1, lambda s: s["receipts"][0].update(
        sha256=hashlib.sha256(data).hexdigest(), receipt_id=r["receipt_id"]))
    status, doc = run_merge(b1, b2, "-o", tmp_path / "x" / "nokeys")
    assert status == 0                                # integrity alone accepts the forgery
    d = refused(tmp_path / "x", b1, b2, "--trusted-keys", keys["trusted"],
                expect={"receipt-signature"})
    assert "subjects" in detail(d, "receipt-signature")


def test_merge_key_usage_errors(bundles, keys, tmp_path):
    b1, b2 = copy(bundles, tmp_path, "b1", "b2")
    for args, code in ((["--key", tmp_path / "absent.pub"], "key-unreadable"),
                       (["--trusted-keys", tmp_path], "verify-usage"),
                       (["--signing-key", keys["merger"] / "signing.pub"], "key-invalid")):
        status, doc = run_merge(b1, b2, "-o", tmp_path / "m", *args)
        assert status == 2 and doc["error"]["code"] == code, (args, doc)
        assert not (tmp_path / "m").exists()
    loose = tmp_path / "loose.key"
    shutil.copy(keys["merger"] / "signing.key", loose)
    os.chmod(loose, 0o644)
    status, doc = run_merge(b1, b2, "-o", tmp_path / "m", "--signing-key", loose)
    assert status == 2 and doc["error"]["code"] == "key-permissions"
    # the state dir's key signs by default when --state-dir is given
    status, doc = run_merge(b1, b2, "-o", tmp_path / "m", "--state-dir",
                            keys["merger"].parent)
    assert status == 0 and doc["signature"] == "signed"
