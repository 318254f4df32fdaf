"""Receipt v3 (`evident.session-receipt/v3`): the commitment digest computed by hand with
hashlib, the v3 goldens, the recomputable counters and constant projections, the v3 JSON Schema,
disclosures — and the C++ `evident verify` agreeing with the independent Python verifier on all
of it (same check names, same outcomes, same error codes).

Run: /usr/bin/python3 -m pytest bindings/python/tests/test_receipt_v3.py
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
V3_NAMES = ["v3-zero-actions", "v3-three-actions", "v3-sixty-four-actions",
            "v3-app-exit-settle", "v3-app-exit-observe", "v3-video"]
V2_NAMES = ["zero-actions", "three-actions", "sixty-four-actions", "real-tk-form"]


def _load_verify():
    spec = importlib.util.spec_from_file_location("evident_verify_standalone_v3", VERIFY_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


V = _load_verify()




EVIDENT = find_evident_bin()
needs_evident = pytest.mark.skipif(EVIDENT is None, reason="the evident binary is not built")


def golden(name):
    d = os.path.join(GOLDEN, name)
    with open(os.path.join(d, "receipt.json"), "rb") as f:
        data = f.read()
    return d, data, json.loads(data)


def golden_input(name):
    with open(os.path.join(GOLDEN, name, "input.json"), encoding="utf-8") as f:
        return json.load(f)


def names(report):
    return [c["name"] for c in report["checks"]]


def failed(report):
    return [c["name"] for c in report["checks"] if not c["ok"]]


def by_hand_commitment(salt, value):
    """sha256("evident/commitment/v1" 0x00 JCS({"salt","value"})), JCS written out by hand: two
    ASCII keys in order, the strings escaped as RFC 8785 does (json.dumps agrees for these)."""
    text = '{"salt":%s,"value":%s}' % (json.dumps(salt), json.dumps(value, ensure_ascii=False))
    return hashlib.sha256(b"evident/commitment/v1\x00" + text.encode("utf-8")).hexdigest()


# ------------------------------------------------------------------------------ digest

def test_commitment_vectors_by_hand_and_by_the_verifier():
    with open(os.path.join(ROOT, "receipts", "vectors", "commitments.json"), encoding="utf-8") as f:
        doc = json.load(f)
    assert len(doc["vectors"]) >= 4
    for v in doc["vectors"]:
        salt, value = v["value"]["salt"], v["value"]["value"]
        assert by_hand_commitment(salt, value) == v["sha256"]
        assert V.commitment_digest(salt, value) == v["sha256"]
        assert V.jcs(v["value"]).decode("utf-8") == v["jcs"]


def test_protocol_tables_agree_with_the_standalone_verifier():
    sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
    from evident import _protocol
    assert V.INPUT_ACTIONS == _protocol.INPUT_ACTION_KINDS
    assert V.CONSTANT_PROJECTION_ACTIONS == _protocol.CONSTANT_PROJECTION_KINDS
    assert V.COMMITTED_ACTIONS == _protocol.COMMITTED_ACTION_KINDS
    assert V.SETTLE_OUTCOMES == frozenset(_protocol.SETTLE_OUTCOMES)
    assert V.VIDEO_MAX_BYTES == _protocol.LIMITS["video_max_bytes"]
    assert V.BROWSER_VIEWPORT_MIN == _protocol.LIMITS["browser_viewport_min"]
    assert V.BROWSER_VIEWPORT_MAX == _protocol.LIMITS["browser_viewport_max"]


# ------------------------------------------------------------------------------ goldens

V3_CHECKS = ["schema", "receipt_id", "transcript_sha256", "stage_transcript_sha256",
             "claims_sha256", "event_order", "counters", "input_flags", "projections",
             "post_observation_input_event_count", "timestamps", "observation_digest", "frames"]


@pytest.mark.parametrize("name", V3_NAMES)
def test_v3_goldens_verify_and_commit_to_their_secrets(name):
    d, data, r = golden(name)
    assert data == V.jcs(r) + b"\n"
    report = V.verify_receipt(r, frames_dir=os.path.join(d, "frames"))
    assert report["ok"], failed(report)
    assert names(report) == V3_CHECKS + (["artifacts"] if "artifacts" in r else [])
    assert r["schema"] == "evident.session-receipt/v3" and r["engine"]["host_id"].startswith("hst-")
    inp = golden_input(name)
    events = [e for e in r["transcript"] if e["kind"] == "action"]
    assert sum(e["input_events"] for e in events) == r["input_event_count"]
    for a, e in zip(inp["actions"], events):
        act = a["action"]
        if act["type"] in ("type", "key", "hold_key"):
            secret = act.get("text", act.get("key"))
            assert e["commitment"] == by_hand_commitment(a["salt"], secret)
            if secret:
                assert secret.encode("utf-8") not in data
        else:
            assert "commitment" not in e


@pytest.mark.parametrize("name", V2_NAMES)
def test_v2_goldens_still_verify_with_the_v2_checks(name):
    d, _, r = golden(name)
    report = V.verify_receipt(r)
    assert report["ok"], failed(report)
    assert report["checks"][0]["detail"] == "evident.session-receipt/v2"
    assert "input_flags" not in names(report) and "projections" not in names(report)


def reseal(r):
    """Recomputes transcript, stage and receipt digests, as a forger would."""
    t = r["transcript"]
    freeze = next(i for i, e in enumerate(t) if e["kind"] == "freeze")
    r["stage_transcript_sha256"] = V.domain_digest(V.DOMAIN_STAGE_TRANSCRIPT, t[:freeze + 1])
    r["transcript_sha256"] = V.domain_digest(V.DOMAIN_TRANSCRIPT, t)
    body = {k: v for k, v in r.items() if k != "receipt_id"}
    r["receipt_id"] = "ecr-" + V.domain_digest(V.DOMAIN_RECEIPT, body)
    return r


def event_of(r, kind):
    return next(e for e in r["transcript"] if e.get("action") == kind)


def mutations():
    """(label, mutate(r), failing checks) on the 64-action v3 golden, every one re-sealed."""
    def m(label, fn, want):
        return label, fn, want

    def wait_sends(r):
        e = event_of(r, "wait")
        e["input_events"], e["input"] = 1, True
        r["input_event_count"] += 1

    def click_more(r):
        event_of(r, "click")["input_events"] += 1

    def click_more_counted(r):
        event_of(r, "click")["input_events"] += 1
        r["input_event_count"] += 1

    def flag_without_events(r):
        e = event_of(r, "click")
        r["input_event_count"] -= e["input_events"]
        e["input_events"] = 0

    def typed_projection(r):
        event_of(r, "type")["projection_sha256"] = V.domain_digest(
            V.DOMAIN_ACTION_PROJECTION, {"type": "type", "text": "hunter2"})

    def screenshot_projection(r):
        event_of(r, "screenshot")["projection_sha256"] = V.domain_digest(
            V.DOMAIN_ACTION_PROJECTION, {"type": "screenshot", "x": 1})

    def drop_commitment(r):
        del event_of(r, "type")["commitment"]

    def commit_click(r):
        event_of(r, "click")["commitment"] = "0" * 64

    def drop_input_events(r):
        del event_of(r, "wait")["input_events"]

    def drop_host(r):
        del r["engine"]["host_id"]

    def v2_shape_as_v3(r):
        for e in r["transcript"]:
            e.pop("input_events", None)
            e.pop("commitment", None)

    def host_upper(r):
        r["engine"]["host_id"] = r["engine"]["host_id"].upper()

    def type_read_back(r):
        # A type verified over accessibility (docs/accessibility.md, "Verified type"): ok.
        for e in r["transcript"]:
            if e.get("action") == "type":
                e["status"] = "ok"

    def type_failed(r):
        event_of(r, "type")["status"] = "failed"

    return [
        m("wait sends input", wait_sends, ["input_flags"]),
        m("click count not summed", click_more, ["counters"]),
        m("click count summed", click_more_counted, []),  # a forger can; only a signature stops it
        m("input flag without events", flag_without_events, ["input_flags"]),
        m("type projection with text", typed_projection, ["projections"]),
        m("screenshot projection", screenshot_projection, ["projections"]),
        m("type without commitment", drop_commitment, ["schema"]),
        m("click with commitment", commit_click, ["schema"]),
        m("no input_events", drop_input_events, ["schema"]),
        m("no host_id", drop_host, ["schema"]),
        m("v2 events under v3", v2_shape_as_v3, ["schema"]),
        m("host_id upper case", host_upper, ["schema"]),
        m("type read back ok", type_read_back, []),
        m("type failed in a receipt", type_failed, ["schema"]),
    ]


def _move_event(r, kind, to):
    """Moves the first `kind` event to position `to` and renumbers the transcript."""
    t = r["transcript"]
    e = t.pop(next(i for i, x in enumerate(t) if x["kind"] == kind))
    t.insert(to, e)
    for i, x in enumerate(t):
        x["index"] = i


def exit_mutations():
    """(label, mutate(r), failing checks) on the app_exit + settle golden, every one re-sealed."""
    def settle_unknown(r):
        event_of(r, "click")["settle"] = "done"

    def settle_changed(r):
        event_of(r, "click")["settle"] = "off"

    def settle_number(r):
        event_of(r, "click")["settle"] = 300

    def two_exits(r):
        t = r["transcript"]
        i = next(i for i, x in enumerate(t) if x["kind"] == "app_exit")
        t.insert(i, dict(t[i]))
        for j, x in enumerate(t):
            x["index"] = j

    def exit_event(r):
        return next(x for x in r["transcript"] if x["kind"] == "app_exit")

    def status_256(r):
        exit_event(r)["exit_status"] = 256

    def status_text(r):
        exit_event(r)["exit_status"] = "3"

    def status_null(r):
        exit_event(r)["exit_status"] = None

    def no_exit_frame(r):
        del exit_event(r)["frame_sha256"]

    def exit_extra_key(r):
        exit_event(r)["signal"] = 9

    def as_v2(r):
        r["schema"] = "evident.session-receipt/v2"

    return [
        ("settle not an outcome", settle_unknown, ["schema"]),
        ("settle a number", settle_number, ["schema"]),
        ("settle changed", settle_changed, []),  # a forger can; only a signature stops it
        ("two app_exit events", two_exits, ["event_order"]),
        ("app_exit before an action", lambda r: _move_event(r, "app_exit", 2), ["event_order"]),
        ("app_exit first", lambda r: _move_event(r, "app_exit", 0), ["event_order"]),
        ("app_exit after the observation", lambda r: _move_event(r, "app_exit", 6),
         ["event_order"]),
        ("app_exit last", lambda r: _move_event(r, "app_exit", 7), ["event_order"]),
        ("app_exit after the freeze", lambda r: _move_event(r, "app_exit", 5), []),
        ("exit status 256", status_256, ["schema"]),
        ("exit status a string", status_text, ["schema"]),
        ("exit status unknown", status_null, []),
        ("app_exit without frame", no_exit_frame, ["schema"]),
        ("app_exit with an extra key", exit_extra_key, ["schema"]),
        ("app_exit under v2", as_v2, ["schema"]),
    ]


def artifact_mutations():
    """Re-sealed changes of the v3-video golden's artifacts (docs/receipts.md §14) and the checks
    that must fail without the frames dir; a forger can re-seal a consistent change, and then
    only the files (--frames) or a signature catch it."""
    def art(r):
        return r["artifacts"][0]

    def setter(key, value):
        def fn(r):
            art(r)[key] = value
        return fn

    def two(r):
        r["artifacts"].append(dict(art(r)))

    def empty(r):
        r["artifacts"] = []

    def extra_key(r):
        art(r)["path"] = "/tmp/x"

    def no_key(r):
        del art(r)["fps"]

    def past_elapsed(r):
        art(r)["start_offset_ms"] = r["elapsed_ms"] + 1

    def as_v2(r):
        r["schema"] = "evident.session-receipt/v2"
        del r["engine"]["host_id"]

    def dropped(r):
        del r["artifacts"]

    return [
        ("two artifacts", two, ["schema"]),
        ("no artifact", empty, ["schema"]),
        ("an image kind", setter("kind", "image"), ["schema"]),
        ("a path for a name", setter("name", "../video.webm"), ["schema"]),
        ("another media type", setter("media_type", "video/mp4"), ["schema"]),
        ("an extra key", extra_key, ["schema"]),
        ("fps missing", no_key, ["schema"]),
        ("fps 0", setter("fps", 0), ["schema"]),
        ("fps 61", setter("fps", 61), ["schema"]),
        ("empty file", setter("byte_length", 0), ["schema"]),
        ("at the size bound", setter("byte_length", V.VIDEO_MAX_BYTES), ["schema"]),
        ("digest not hex", setter("sha256", "Z" * 64), ["schema"]),
        ("negative offset", setter("start_offset_ms", -1), ["schema"]),
        ("offset past elapsed", past_elapsed, ["schema"]),
        ("artifacts under v2", as_v2, ["schema"]),
        ("digest changed", setter("sha256", "0" * 64), []),  # --frames catches it (below)
        ("offset changed", setter("start_offset_ms", 0), []),
        ("artifacts dropped", dropped, []),  # only a signature stops it
    ]


@pytest.mark.parametrize("label,fn,want", artifact_mutations(), ids=[x[0] for x in artifact_mutations()])
def test_artifact_checks_catch_resealed_mutations(label, fn, want):
    d, _, r = golden("v3-video")
    r = copy.deepcopy(r)
    fn(r)
    reseal(r)
    assert failed(V.verify_receipt(r)) == want
    if not want and "artifacts" in r and label == "digest changed":
        assert failed(V.verify_receipt(r, frames_dir=os.path.join(d, "frames"))) == ["artifacts"]


def test_the_video_file_is_checked_with_the_frames(tmp_path):
    d, _, r = golden("v3-video")
    frames = tmp_path / "frames"
    shutil.copytree(os.path.join(d, "frames"), frames)
    assert V.verify_receipt(r, frames_dir=str(frames))["ok"]
    video = frames / "video.webm"
    data = video.read_bytes()
    video.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # same size, one bit
    assert failed(V.verify_receipt(r, frames_dir=str(frames))) == ["artifacts"]
    video.unlink()
    assert failed(V.verify_receipt(r, frames_dir=str(frames))) == ["artifacts"]


# A session that bound a browser workspace (begin's "browser", docs/receipts.md section 15):
# a golden with a well-formed member added and re-sealed is the base of every mutation.
BROWSER_MEMBER = {"workspace_id": "browser-" + "0123456789abcdef" * 2,
                  "browser_version": "Chrome/140.0.7339.185",
                  "target_id": "0F1E2D3C4B5A69788796A5B4C3D2E1F0",
                  "profile_sha256": "ab" * 32,
                  "viewport": {"width": 320, "height": 240}}


def browser_receipt():
    _, _, r = golden("v3-three-actions")
    r = copy.deepcopy(r)
    r["browser"] = copy.deepcopy(BROWSER_MEMBER)
    return r


def browser_mutations():
    def setter(key, value):
        def fn(r):
            r["browser"][key] = value
        return fn

    def viewport(key, value):
        def fn(r):
            r["browser"]["viewport"][key] = value
        return fn

    def no_key(r):
        del r["browser"]["target_id"]

    def extra_key(r):
        r["browser"]["profile_dir"] = "/tmp/p"

    def viewport_extra(r):
        r["browser"]["viewport"]["scale"] = 1

    def not_object(r):
        r["browser"] = "browser-" + "0" * 32

    def as_v2(r):
        r["schema"] = "evident.session-receipt/v2"
        del r["engine"]["host_id"]

    def dropped(r):
        del r["browser"]

    return [
        ("well formed", lambda r: None, []),
        ("longest version and target", lambda r: r["browser"].update(
            browser_version="v" * 256, target_id="A" * 128), []),
        ("a key missing", no_key, ["schema"]),
        ("an extra key", extra_key, ["schema"]),
        ("not an object", not_object, ["schema"]),
        ("workspace id of an app", setter("workspace_id", "app-" + "0" * 32), ["schema"]),
        ("workspace id upper hex", setter("workspace_id", "browser-" + "A" * 32), ["schema"]),
        ("workspace id short", setter("workspace_id", "browser-" + "0" * 31), ["schema"]),
        ("empty version", setter("browser_version", ""), ["schema"]),
        ("version too long", setter("browser_version", "v" * 257), ["schema"]),
        ("version with a newline", setter("browser_version", "Chrome/1\n"), ["schema"]),
        ("version not ASCII", setter("browser_version", "Chrome/\u00e9"), ["schema"]),
        ("version a number", setter("browser_version", 140), ["schema"]),
        ("empty target", setter("target_id", ""), ["schema"]),
        ("target with a slash", setter("target_id", "../x"), ["schema"]),
        ("target too long", setter("target_id", "A" * 129), ["schema"]),
        ("profile digest upper hex", setter("profile_sha256", "AB" * 32), ["schema"]),
        ("profile digest short", setter("profile_sha256", "ab" * 31), ["schema"]),
        ("viewport too narrow", viewport("width", 63), ["schema"]),
        ("viewport too tall", viewport("height", 8193), ["schema"]),
        ("viewport a string", viewport("width", "320"), ["schema"]),
        ("viewport extra key", viewport_extra, ["schema"]),
        ("browser under v2", as_v2, ["schema"]),
        ("target changed", setter("target_id", "1" * 32), []),  # only a signature stops these
        ("browser dropped", dropped, []),
    ]


@pytest.mark.parametrize("label,fn,want", browser_mutations(), ids=[x[0] for x in browser_mutations()])
def test_browser_checks_catch_resealed_mutations(label, fn, want):
    r = browser_receipt()
    fn(r)
    reseal(r)
    assert failed(V.verify_receipt(r)) == want
    # The member is part of the receipt: changed and not re-sealed, the receipt id fails.
    if not want and "browser" in r:
        r["browser"]["viewport"]["width"] += 1
        assert failed(V.verify_receipt(r)) == ["receipt_id"]


@pytest.mark.parametrize("label,fn,want", exit_mutations(), ids=[x[0] for x in exit_mutations()])
def test_app_exit_and_settle_checks_catch_resealed_mutations(label, fn, want):
    _, _, r = golden("v3-app-exit-settle")
    r = copy.deepcopy(r)
    fn(r)
    reseal(r)
    assert failed(V.verify_receipt(r)) == want


@pytest.mark.parametrize("label,fn,want", mutations(), ids=[x[0] for x in mutations()])
def test_v3_recomputed_checks_catch_resealed_mutations(label, fn, want):
    _, _, r = golden("v3-sixty-four-actions")
    r = copy.deepcopy(r)
    fn(r)
    reseal(r)
    assert failed(V.verify_receipt(r)) == want


def test_v3_json_schema_matches_the_schema_check():
    jsonschema = pytest.importorskip("jsonschema", reason="python3-jsonschema is not installed")
    with open(os.path.join(ROOT, "receipts", "schema", "session-receipt-v3.schema.json")) as f:
        validator = jsonschema.Draft202012Validator(json.load(f))
    for name in V3_NAMES:
        validator.validate(golden(name)[2])
    for golden_name, cases in (("v3-sixty-four-actions", mutations()),
                               ("v3-app-exit-settle", exit_mutations()),
                               ("v3-video", [m for m in artifact_mutations() if m[0] != "offset past elapsed"]),
                               ("browser", browser_mutations())):
        for label, fn, want in cases:
            if golden_name == "browser":
                r = browser_receipt()
            else:
                _, _, r = golden(golden_name)
                r = copy.deepcopy(r)
            fn(r)
            assert validator.is_valid(r) == ("schema" not in want), label
    with open(os.path.join(ROOT, "receipts", "schema", "session-receipt-v2.schema.json")) as f:
        v2 = jsonschema.Draft202012Validator(json.load(f))
    assert not v2.is_valid(golden("v3-three-actions")[2])


# ------------------------------------------------------------------------------ disclosures

def disclosure(name, index, **changes):
    _, _, r = golden(name)
    a = golden_input(name)["actions"][index]
    act = a["action"]
    d = {"schema": "evident.disclosure/v1", "receipt_id": r["receipt_id"], "action_index": index,
         "action": act["type"], "salt": a.get("salt", "0" * 64),
         "value": act.get("text", act.get("key", ""))}
    d.update(changes)
    return d


DISCLOSURES = [
    ("type", disclosure("v3-three-actions", 1), []),
    ("key", disclosure("v3-three-actions", 2), []),
    ("wrong value", disclosure("v3-three-actions", 1, value="hunter2 secret"),
     ["disclosure_commitment"]),
    ("wrong salt", disclosure("v3-three-actions", 1, salt="1" * 64), ["disclosure_commitment"]),
    ("wrong index", disclosure("v3-three-actions", 1, action_index=2),
     ["disclosure_action", "disclosure_commitment"]),
    ("wrong index and kind", disclosure("v3-three-actions", 1, action_index=2, action="key"),
     ["disclosure_commitment"]),
    ("click", disclosure("v3-three-actions", 0), ["disclosure_action", "disclosure_commitment"]),
    ("beyond", disclosure("v3-three-actions", 1, action_index=3),
     ["disclosure_action", "disclosure_commitment"]),
    ("other receipt", disclosure("v3-three-actions", 1, receipt_id="ecr-" + "e" * 64),
     ["disclosure_receipt"]),
]


@pytest.mark.parametrize("label,d,want", DISCLOSURES, ids=[x[0] for x in DISCLOSURES])
def test_disclosure_checks(label, d, want):
    _, _, r = golden("v3-three-actions")
    report = V.verify_receipt(r, disclosure=d)
    assert failed(report) == want
    assert names(report)[-3:] == ["disclosure_receipt", "disclosure_action",
                                  "disclosure_commitment"]


def test_hold_key_disclosure_on_the_sixty_four_action_golden():
    inp = golden_input("v3-sixty-four-actions")
    i = next(i for i, a in enumerate(inp["actions"]) if a["action"]["type"] == "hold_key")
    _, _, r = golden("v3-sixty-four-actions")
    assert failed(V.verify_receipt(r, disclosure=disclosure("v3-sixty-four-actions", i))) == []
    # An empty typed text is committed too, and discloses as "".
    j = next(i for i, a in enumerate(inp["actions"]) if a["action"] == {"type": "type", "text": ""})
    assert failed(V.verify_receipt(r, disclosure=disclosure("v3-sixty-four-actions", j))) == []


def run_py(*args):
    p = subprocess.run([sys.executable, VERIFY_PY, *args], capture_output=True, text=True)
    return p.returncode, p.stdout


def run_both(*args):
    c = subprocess.run([EVIDENT, "verify", *args, "--json"], capture_output=True, text=True)
    p_status, p_out = run_py(*args, "--json")
    docs = [json.loads(c.stdout), json.loads(p_out)]
    for doc in docs:
        for check in doc.get("checks", []):
            check.pop("detail")
        if "error" in doc and doc["error"]["code"] != "verify-failed":
            doc["error"].pop("message")
    return (c.returncode, docs[0]), (p_status, docs[1])


BAD_FILES = [
    ("not json", b"{", "disclosure-invalid"),
    ("array", b"[]", "disclosure-invalid"),
    ("duplicate key", b'{"schema":"evident.disclosure/v1","schema":"x"}', "disclosure-invalid"),
    ("extra member", None, "disclosure-invalid"),
    ("upper-case salt", None, "disclosure-invalid"),
    ("too large", b" " * (64 * 1024 + 1), "disclosure-unreadable"),
]


@needs_evident
def test_both_verifiers_agree_on_disclosures_and_bad_files(tmp_path):
    receipt = os.path.join(GOLDEN, "v3-three-actions", "receipt.json")
    jobs = []
    for i, (label, d, _) in enumerate(DISCLOSURES):
        p = tmp_path / ("d%d.json" % i)
        p.write_bytes(V.jcs(d))
        jobs.append((label, str(p), None))
    for i, (label, data, code) in enumerate(BAD_FILES):
        if data is None:
            d = disclosure("v3-three-actions", 1)
            if label == "extra member":
                d["extra"] = 1
            else:
                d["salt"] = d["salt"].upper()
            data = json.dumps(d).encode()
        p = tmp_path / ("bad%d.json" % i)
        p.write_bytes(data)
        jobs.append((label, str(p), code))
    jobs.append(("missing", str(tmp_path / "missing.json"), "disclosure-unreadable"))
    for label, path, code in jobs:
        (c_status, c_doc), (p_status, p_doc) = run_both(receipt, "--disclosure", path)
        assert c_status == p_status, label
        assert c_doc == p_doc, label
        if code:
            assert c_status == 1 and c_doc["error"]["code"] == code, label
            assert "checks" not in c_doc
            assert "hunter2" not in json.dumps(c_doc)


@needs_evident
def test_both_verifiers_agree_on_v3_goldens_and_resealed_mutations(tmp_path):
    jobs = [(os.path.join(GOLDEN, n, "receipt.json"), ["--frames", os.path.join(GOLDEN, n, "frames")])
            for n in V3_NAMES + V2_NAMES]
    for i, (label, fn, _) in enumerate(mutations()):
        _, _, r = golden("v3-sixty-four-actions")
        r = copy.deepcopy(r)
        fn(r)
        p = tmp_path / ("m%d.json" % i)
        p.write_bytes(V.jcs(reseal(r)))
        jobs.append((str(p), []))
    for i, (label, fn, _) in enumerate(exit_mutations()):
        _, _, r = golden("v3-app-exit-settle")
        r = copy.deepcopy(r)
        fn(r)
        p = tmp_path / ("x%d.json" % i)
        p.write_bytes(V.jcs(reseal(r)))
        jobs.append((str(p), []))
    for i, (label, fn, _) in enumerate(artifact_mutations()):
        _, _, r = golden("v3-video")
        r = copy.deepcopy(r)
        fn(r)
        p = tmp_path / ("a%d.json" % i)
        p.write_bytes(V.jcs(reseal(r)))
        jobs.append((str(p), ["--frames", os.path.join(GOLDEN, "v3-video", "frames")]))
    for i, (label, fn, _) in enumerate(browser_mutations()):
        r = browser_receipt()
        fn(r)
        p = tmp_path / ("b%d.json" % i)
        p.write_bytes(V.jcs(reseal(r)))
        jobs.append((str(p), ["--frames", os.path.join(GOLDEN, "v3-three-actions", "frames")]))
    for path, extra in jobs:
        (c_status, c_doc), (p_status, p_doc) = run_both(path, *extra)
        assert c_status == p_status, path
        assert c_doc == p_doc, path
