#!/usr/bin/python3
"""Generates the golden receipts under receipts/golden/<name>/ (run once; the output is committed).

Each golden gets: frames/<sha256>.png (small real PNGs drawn with Pillow), input.json (the
inputs of the C++ builder, including the full actions with their secrets) and receipt.json.

The digests are NOT computed by the code under test alone: every digest is computed twice, with
the Python verifier's JCS + hashlib and with the npm `canonicalize` package (receipts/tools/,
run by node) + the `sha256sum` program, and nothing is written unless both paths agree. The
receipt file bytes (JCS + "\\n") are likewise compared with node's output.

Also writes receipts/vectors/digests.json (H(domain, v) vectors computed by node + sha256sum).

With --v3 it writes only the receipt v3 goldens (receipts/golden/v3-*: engine.host_id, each
action's input_events, and salted commitments whose salts are in input.json) and
receipts/vectors/commitments.json; the v2 goldens and digests.json are left as they are.

With --v3-exit it writes only the two app_exit/settle goldens (receipts/golden/v3-app-exit-*).

With --v3-video it writes only the golden of a recorded session (receipts/golden/v3-video: a real
one-second VP8 WebM made by ffmpeg's test source, frames/video.webm, bound as the receipt's one
artifact; its digest by hashlib and sha256sum).

Usage: /usr/bin/python3 receipts/golden/make_golden.py [--v3 | --v3-exit | --v3-video]
"""
from __future__ import annotations

import datetime
import hashlib
import io
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python", "evident"))
import verify as pyverify  # noqa: E402  (imported as a plain module: no compiled engine needed)

NODE_JCS = os.path.join(ROOT, "receipts", "tools", "jcs.mjs")


def node_jcs_many(values):
    """JCS bytes of each value, by the npm canonicalize package."""
    lines = "".join(json.dumps(v, ensure_ascii=False) + "\n" for v in values)
    out = subprocess.run(["node", NODE_JCS, "--lines"], input=lines.encode("utf-8"),
                         capture_output=True, check=True).stdout
    parts = out.split(b"\n")
    assert parts[-1] == b"" and len(parts) == len(values) + 1, "node output mismatch"
    return parts[:-1]


def sha256sum(data: bytes) -> str:
    out = subprocess.run(["sha256sum"], input=data, capture_output=True, check=True).stdout
    return out.split()[0].decode()


def digests(pairs):
    """[(domain, value)] -> [hex], computed both ways; raises if the two paths disagree."""
    node_bytes = node_jcs_many([v for _, v in pairs])
    result = []
    for (domain, value), nb in zip(pairs, node_bytes):
        py = pyverify.domain_digest(domain, value)
        assert pyverify.jcs(value) == nb, "JCS differs between Python and npm canonicalize"
        ext = sha256sum(domain.encode() + b"\x00" + nb)
        assert py == ext, "digest differs between Python and node+sha256sum"
        result.append(ext)
    return result


def rfc3339(ms: int) -> str:
    dt = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + \
        datetime.timedelta(milliseconds=ms)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ms % 1000)


def make_png(width: int, height: int, seed: int) -> bytes:
    from PIL import Image, ImageDraw
    img = Image.new("RGB", (width, height), (240, 240, 236))
    d = ImageDraw.Draw(img)
    d.rectangle([0, 0, width - 1, 9], fill=(40, 60, 120))  # a title bar
    x = (seed * 7) % (width - 12)
    y = 12 + (seed * 5) % (height - 24)
    d.rectangle([x, y, x + 10, y + 10], fill=((seed * 40) % 256, (seed * 90) % 256, 128))
    d.text((4, height - 12), "%02d" % (seed % 100), fill=(0, 0, 0))
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False, compress_level=9)
    return buf.getvalue()


class Golden:
    def __init__(self, name: str, width: int, height: int):
        self.name = name
        self.dir = os.path.join(HERE, name)
        self.frames_dir = os.path.join(self.dir, "frames")
        self.width, self.height = width, height
        self.frames = {}

    def frame(self, seed: int) -> str:
        data = make_png(self.width, self.height, seed)
        h = hashlib.sha256(data).hexdigest()
        self.frames[h] = data
        return h


def input_events_of(action: dict) -> int:
    """A plausible X event count per kind (the verifiers check sums and flags, not these)."""
    t = action["type"]
    return {"click": 3, "double_click": 5, "triple_click": 7, "move_mouse": 1, "drag": 4,
            "scroll": 1 + 2 * action.get("amount", 3), "key": 2 * (action.get("key", "").count("+") + 1),
            "hold_key": 2, "type": 2 * len(action.get("text", "")), "wait": 0,
            "screenshot": 0}[t]


def build(g: Golden, spec: dict) -> None:
    v3 = spec.get("v3", False)
    os.makedirs(g.frames_dir, exist_ok=True)
    initial = g.frame(0)
    actions = []
    seed = 1
    settles = spec.get("settle", {})  # action index -> settle outcome (v3 sessions)
    for a, status, has_input, new_frame in spec["actions"]:
        if new_frame:
            seed += 1
        actions.append({"action": a, "status": status, "input": has_input,
                        "frame_sha256": g.frame(seed)})
        if len(actions) - 1 in settles:
            assert v3 and settles[len(actions) - 1] in pyverify.SETTLE_OUTCOMES
            actions[-1]["settle"] = settles[len(actions) - 1]
        if v3:
            n = input_events_of(a)
            assert (n > 0) == has_input, "input flag differs from input_events"
            actions[-1]["input_events"] = n
            if a["type"] in pyverify.COMMITTED_ACTIONS:
                # Deterministic here (goldens must be reproducible); the engine draws each
                # salt from the CSPRNG.
                actions[-1]["salt"] = hashlib.sha256(
                    ("salt/%s/%d" % (g.name, len(actions) - 1)).encode()).hexdigest()
    freeze = actions[-1]["frame_sha256"] if actions else initial
    app_exit = None
    if spec.get("app_exit"):  # v3: the app's exit, recorded after every action
        assert v3
        seed += 1
        app_exit = dict(spec["app_exit"], after_actions=len(actions), frame_sha256=g.frame(seed))
        if not app_exit["after_freeze"]:
            freeze = app_exit["frame_sha256"]
    obs_seed = seed + 1
    observation = g.frame(obs_seed)
    obs_bytes = g.frames[observation]
    for h, data in g.frames.items():
        with open(os.path.join(g.frames_dir, h + ".png"), "wb") as f:
            f.write(data)

    t0 = spec["started_wall_ms"]
    inp = {
        "session_id": spec["session_id"],
        "engine_version": "0.1.0",
        "binding": spec["binding"],
        "actor": spec["actor"],
        "started_wall_ms": t0,
        "frozen_wall_ms": t0 + spec["stage_ms"],
        "observed_wall_ms": t0 + spec["stage_ms"] + 41,
        "completed_wall_ms": t0 + spec["stage_ms"] + 97,
        "elapsed_ms": spec["stage_ms"] + 96,
        "initial_frame_sha256": initial,
        "actions": actions,
        "freeze_frame_sha256": freeze,
        "input_event_count": (sum(a["input_events"] for a in actions) if v3
                              else spec["input_event_count"]),
        "pre_observation_sha256": spec["pre_observation_sha256"],
        "observation": {"sha256": observation, "byte_length": len(obs_bytes),
                        "width": g.width, "height": g.height},
        "claims": spec["claims"],
    }
    if app_exit:
        inp["app_exit"] = app_exit
    artifacts = None
    if spec.get("video"):  # v3: the session's video, bound as its one artifact
        assert v3
        video = spec["video"]
        with open(os.path.join(g.frames_dir, "video.webm"), "wb") as f:
            f.write(video["bytes"])
        vsha = sha256sum(video["bytes"])
        assert vsha == hashlib.sha256(video["bytes"]).hexdigest()
        artifacts = [{"kind": "video", "name": "video.webm", "media_type": "video/webm",
                      "sha256": vsha, "byte_length": len(video["bytes"]), "fps": video["fps"],
                      "start_offset_ms": video["start_offset_ms"]}]
        inp["artifacts"] = artifacts

    # Projections (secrets removed) and the claims digest.
    projections = [pyverify.project_action(a["action"]) for a in actions]
    for a, p in zip(actions, projections):
        assert "text" not in p and ("key" not in p), "projection leaks a secret"
    hashed = digests([(pyverify.DOMAIN_ACTION_PROJECTION, p) for p in projections] +
                     [(pyverify.DOMAIN_CLAIMS, inp["claims"])])
    projection_sha, claims_sha = hashed[:-1], hashed[-1]
    commitments = {}
    if v3:
        inp["schema_version"] = 3
        inp["host_id"] = hexid("hst-", spec["session_id"] + "host")
        committed = [(i, a) for i, a in enumerate(actions) if "salt" in a]
        values = [a["action"].get("text", a["action"].get("key")) for _, a in committed]
        hashed = digests([(pyverify.DOMAIN_COMMITMENT, {"salt": a["salt"], "value": v})
                          for (_, a), v in zip(committed, values)])
        commitments = {i: h for (i, _), h in zip(committed, hashed)}

    events = [{"index": 0, "kind": "initial_frame", "frame_sha256": initial}]
    for i, (a, psha) in enumerate(zip(actions, projection_sha)):
        events.append({"index": len(events), "kind": "action", "action": a["action"]["type"],
                       "projection_sha256": psha, "status": a["status"], "input": a["input"],
                       "frame_sha256": a["frame_sha256"]})
        if v3:
            events[-1]["input_events"] = a["input_events"]
            if i in commitments:
                events[-1]["commitment"] = commitments[i]
            if "settle" in a:
                events[-1]["settle"] = a["settle"]

    def exit_event():
        return {"index": len(events), "kind": "app_exit", "exit_status": app_exit["exit_status"],
                "frame_sha256": app_exit["frame_sha256"]}

    if app_exit and not app_exit["after_freeze"]:
        events.append(exit_event())
    events.append({"index": len(events), "kind": "freeze", "frame_sha256": freeze})
    stage = list(events)
    if app_exit and app_exit["after_freeze"]:
        events.append(exit_event())
    events.append({"index": len(events), "kind": "observation", "frame_sha256": observation,
                   "pre_observation_sha256": inp["pre_observation_sha256"]})
    events.append({"index": len(events), "kind": "claims", "claims_sha256": claims_sha,
                   "frame_sha256": observation})
    stage_sha, transcript_sha = digests([(pyverify.DOMAIN_STAGE_TRANSCRIPT, stage),
                                         (pyverify.DOMAIN_TRANSCRIPT, events)])
    receipt = {
        "schema": "evident.session-receipt/v3" if v3 else "evident.session-receipt/v2",
        "session_id": inp["session_id"],
        "engine": ({"name": "evident", "version": inp["engine_version"], "host_id": inp["host_id"]}
                   if v3 else {"name": "evident", "version": inp["engine_version"]}),
        "binding": inp["binding"],
        "actor": inp["actor"],
        "execution": {"kind": "external-actions", "internal_model_calls": 0,
                      "claims_authority": "external-caller"},
        "started_at": rfc3339(inp["started_wall_ms"]),
        "frozen_at": rfc3339(inp["frozen_wall_ms"]),
        "observed_at": rfc3339(inp["observed_wall_ms"]),
        "completed_at": rfc3339(inp["completed_wall_ms"]),
        "elapsed_ms": inp["elapsed_ms"],
        "action_count": len(actions),
        "input_event_count": inp["input_event_count"],
        "post_observation_input_event_count": 0,
        "transcript": events,
        "stage_transcript_sha256": stage_sha,
        "transcript_sha256": transcript_sha,
        "pre_observation_sha256": inp["pre_observation_sha256"],
        "observation": inp["observation"],
        "claims": inp["claims"],
        "claims_sha256": claims_sha,
    }
    if artifacts:
        receipt["artifacts"] = artifacts
    (receipt_sha,) = digests([(pyverify.DOMAIN_RECEIPT, receipt)])
    receipt["receipt_id"] = "ecr-" + receipt_sha

    (node_bytes,) = node_jcs_many([receipt])
    file_bytes = pyverify.jcs(receipt) + b"\n"
    assert file_bytes == node_bytes + b"\n"
    for a in spec["actions"]:
        secret = a[0].get("text") or a[0].get("key")
        if secret:
            assert secret.encode() not in file_bytes, "a secret reached the receipt"
    with open(os.path.join(g.dir, "receipt.json"), "wb") as f:
        f.write(file_bytes)
    with open(os.path.join(g.dir, "input.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(inp, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
    report = pyverify.verify_receipt(receipt, frames_dir=g.frames_dir)
    assert report["ok"], report
    print("%s: %s (%d actions, %d frames)" % (g.name, receipt["receipt_id"], len(actions),
                                              len(g.frames)))


def hexid(prefix: str, seed: str, n: int = 32) -> str:
    return prefix + hashlib.sha256(seed.encode()).hexdigest()[:n]


def binding(seed: str, display_id: int) -> dict:
    return {"display_id": display_id, "display_name": ":%d" % display_id,
            "generation": hexid("gen-", seed + "gen"), "app_id": hexid("app-", seed + "app"),
            "app_pid": 4242 + display_id, "app_argv_sha256": hexid("", seed + "argv", 64),
            "attempt_id": "attempt-" + seed, "job_sha256": hexid("", seed + "job", 64)}


def main() -> int:
    if "--v3" in sys.argv[1:]:
        return main_v3()
    if "--v3-exit" in sys.argv[1:]:
        return main_v3_exit()
    if "--v3-video" in sys.argv[1:]:
        return main_v3_video()
    zero = Golden("zero-actions", 48, 32)
    build(zero, {
        "session_id": hexid("ses-", "zero"), "binding": binding("zero", 7),
        "actor": {"kind": "local_user", "uid": 1000}, "started_wall_ms": 1767225600000,
        "stage_ms": 12, "actions": [], "input_event_count": 0,
        "pre_observation_sha256": hexid("", "zero-pre", 64),
        "claims": {"result": "nothing to do", "passed": True, "count": 0, "note": None}})

    three = Golden("three-actions", 64, 40)
    build(three, {
        "session_id": hexid("ses-", "three"), "binding": binding("three", 12),
        "actor": {"kind": "in_process", "uid": 1000, "pid": 31337},
        "started_wall_ms": 1767225600123, "stage_ms": 850,
        "actions": [
            ({"type": "click", "x": 20, "y": 15, "button": "left"}, "injected", True, True),
            ({"type": "type", "text": "hunter2 secret\n"}, "injected", True, True),
            ({"type": "key", "key": "ctrl+shift+t"}, "injected", True, True),
        ],
        "input_event_count": 3 + 30 + 6,
        "pre_observation_sha256": hexid("", "three-pre", 64),
        # Keys that sort differently in UTF-16 and UTF-8 (U+FB33 vs U+1F600), escapes, U+2028.
        "claims": {"\ufb33": "dalet", "\U0001F600": "grin", "text\u2028": "line\nsep\t\"q\"\\",
                   "ctrl\u001f": "\u007f", "answer": 42, "negative": -9007199254740991,
                   "list": [True, False, None, {"b": 1, "a": [2, "é"]}]}})

    many = Golden("sixty-four-actions", 80, 48)
    kinds = [
        ({"type": "click", "x": 10, "y": 20}, "injected", True, True),
        ({"type": "double_click", "x": 30, "y": 20, "button": "left"}, "injected", True, True),
        ({"type": "triple_click", "x": 30, "y": 22}, "injected", True, True),
        ({"type": "move_mouse", "x": 5, "y": 6}, "injected", True, False),
        ({"type": "drag", "start_x": 1, "start_y": 2, "end_x": 40, "end_y": 30,
          "button": "left"}, "injected", True, True),
        ({"type": "scroll", "x": 40, "y": 24, "direction": "down", "amount": 3}, "injected",
         True, True),
        ({"type": "type", "text": "héllo — 世界"}, "injected", True, True),
        ({"type": "key", "key": "Return"}, "injected", True, True),
        ({"type": "hold_key", "key": "shift", "ms": 120}, "injected", True, False),
        ({"type": "wait", "ms": 50}, "ok", False, False),
        ({"type": "screenshot"}, "ok", False, False),
    ]
    spec_actions = [kinds[i % len(kinds)] for i in range(64)]
    build(many, {
        "session_id": hexid("ses-", "many"), "binding": binding("many", 99),
        "actor": {"kind": "local_user", "uid": 0}, "started_wall_ms": 1767225659990,
        "stage_ms": 60999, "actions": spec_actions, "input_event_count": 64 * 9,
        "pre_observation_sha256": hexid("", "many-pre", 64),
        "claims": {"summary": "form submitted; confirmation visible",
                   "assertions": [{"name": "banner", "ok": True, "x": i, "y": 2 * i}
                                  for i in range(20)]}})

    # Digest vectors for receipts/vectors/digests.json, computed by node + sha256sum.
    values = [
        ("evident/claims/v2", {"b": [1, "é"], "a": True}),
        ("evident/claims/v2", {}),
        ("evident/action-projection/v2", {"type": "type"}),
        ("evident/action-projection/v2", {"type": "click", "x": 10, "y": 20}),
        ("evident/action-projection/v2", {"type": "hold_key", "ms": 120}),
        ("evident/transcript/v2", [{"index": 0, "kind": "initial_frame",
                                    "frame_sha256": "0" * 64}]),
        ("evident/stage-transcript/v2", []),
        ("evident/receipt/v2", {"\ufb33": 1, "\U0001F600": 2, "z": None, "ctl\u0001": "\u2028"}),
    ]
    hashed = digests(values)
    node_bytes = node_jcs_many([v for _, v in values])
    vectors = [{"domain": d, "value": v, "jcs": nb.decode("utf-8"), "sha256": h}
               for (d, v), nb, h in zip(values, node_bytes, hashed)]
    doc = {"description": "H(domain, v) = sha256(domain || 0x00 || JCS(v)); jcs by npm "
                          "canonicalize, sha256 by sha256sum (receipts/golden/make_golden.py)",
           "vectors": vectors}
    with open(os.path.join(ROOT, "receipts", "vectors", "digests.json"), "w",
              encoding="utf-8") as f:
        f.write(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
    return 0


V3_THREE = [
    ({"type": "click", "x": 20, "y": 15, "button": "left"}, "injected", True, True),
    ({"type": "type", "text": "hunter2 secret\n"}, "injected", True, True),
    ({"type": "key", "key": "ctrl+shift+t"}, "injected", True, True),
]


def main_v3() -> int:
    """The receipt v3 goldens (schema evident.session-receipt/v3) beside the v2 ones."""
    zero = Golden("v3-zero-actions", 48, 32)
    build(zero, {
        "v3": True, "session_id": hexid("ses-", "v3zero"), "binding": binding("v3zero", 7),
        "actor": {"kind": "local_user", "uid": 1000}, "started_wall_ms": 1796083200000,
        "stage_ms": 12, "actions": [],
        "pre_observation_sha256": hexid("", "v3zero-pre", 64),
        "claims": {"result": "nothing to do", "passed": True}})
    three = Golden("v3-three-actions", 64, 40)
    build(three, {
        "v3": True, "session_id": hexid("ses-", "v3three"), "binding": binding("v3three", 12),
        "actor": {"kind": "in_process", "uid": 1000, "pid": 31337},
        "started_wall_ms": 1796083200123, "stage_ms": 850, "actions": V3_THREE,
        "pre_observation_sha256": hexid("", "v3three-pre", 64),
        "claims": {"\ufb33": "dalet", "\U0001F600": "grin", "answer": 42}})
    many = Golden("v3-sixty-four-actions", 80, 48)
    kinds = [
        ({"type": "click", "x": 10, "y": 20}, "injected", True, True),
        ({"type": "double_click", "x": 30, "y": 20, "button": "left"}, "injected", True, True),
        ({"type": "triple_click", "x": 30, "y": 22}, "injected", True, True),
        ({"type": "move_mouse", "x": 5, "y": 6}, "injected", True, False),
        ({"type": "drag", "start_x": 1, "start_y": 2, "end_x": 40, "end_y": 30,
          "button": "left"}, "injected", True, True),
        ({"type": "scroll", "x": 40, "y": 24, "direction": "down", "amount": 3}, "injected",
         True, True),
        ({"type": "type", "text": "h\u00e9llo \u2014 \u4e16\u754c"}, "injected", True, True),
        ({"type": "key", "key": "Return"}, "injected", True, True),
        ({"type": "hold_key", "key": "shift", "ms": 120}, "injected", True, False),
        ({"type": "wait", "ms": 50}, "ok", False, False),
        ({"type": "screenshot"}, "ok", False, False),
        ({"type": "type", "text": ""}, "injected", False, False),
    ]
    build(many, {
        "v3": True, "session_id": hexid("ses-", "v3many"), "binding": binding("v3many", 99),
        "actor": {"kind": "local_user", "uid": 0}, "started_wall_ms": 1796083259990,
        "stage_ms": 60999, "actions": [kinds[i % len(kinds)] for i in range(64)],
        "pre_observation_sha256": hexid("", "v3many-pre", 64),
        "claims": {"summary": "form submitted; confirmation visible"}})

    main_v3_exit()

    # Commitment vectors: H("evident/commitment/v1", {"salt","value"}) by node + sha256sum.
    values = [
        {"salt": "00" * 32, "value": ""},
        {"salt": "ab" * 32, "value": "hunter2 secret\n"},
        {"salt": "0123456789abcdef" * 4, "value": "ctrl+shift+t"},
        {"salt": "f" * 64, "value": "h\u00e9llo \u2014 \u4e16\u754c \U0001F600 \"q\" \\ \u0001"},
    ]
    hashed = digests([(pyverify.DOMAIN_COMMITMENT, v) for v in values])
    node_bytes = node_jcs_many(values)
    doc = {"description": "commitment = H(\"evident/commitment/v1\", {\"salt\",\"value\"}) = "
                          "sha256(domain || 0x00 || JCS); jcs by npm canonicalize, sha256 by "
                          "sha256sum (receipts/golden/make_golden.py --v3)",
           "vectors": [{"domain": pyverify.DOMAIN_COMMITMENT, "value": v,
                        "jcs": nb.decode("utf-8"), "sha256": h}
                       for v, nb, h in zip(values, node_bytes, hashed)]}
    with open(os.path.join(ROOT, "receipts", "vectors", "commitments.json"), "w",
              encoding="utf-8") as f:
        f.write(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
    return 0


def main_v3_exit() -> int:
    """The receipt v3 goldens of a session begun with app_exit "record" whose batches carried
    settle: the exit before the freeze (v3-app-exit-settle) and after it (v3-app-exit-observe)."""
    before = Golden("v3-app-exit-settle", 56, 36)
    build(before, {
        "v3": True, "session_id": hexid("ses-", "v3exit"), "binding": binding("v3exit", 21),
        "actor": {"kind": "local_user", "uid": 1000}, "started_wall_ms": 1796083300456,
        "stage_ms": 1320, "actions": [
            ({"type": "click", "x": 12, "y": 30}, "injected", True, True),
            ({"type": "key", "key": "Return"}, "injected", True, True),
            ({"type": "wait", "ms": 20}, "ok", False, False),
        ], "settle": {0: "settled", 1: "still_loading", 2: "fixed"},
        "app_exit": {"after_freeze": False, "exit_status": 3},
        "pre_observation_sha256": hexid("", "v3exit-pre", 64),
        "claims": {"dialog": "closed", "answer": "OK"}})
    after = Golden("v3-app-exit-observe", 40, 30)
    build(after, {
        "v3": True, "session_id": hexid("ses-", "v3exitobs"), "binding": binding("v3exitobs", 22),
        "actor": {"kind": "in_process", "uid": 1000, "pid": 4321},
        "started_wall_ms": 1796083301000, "stage_ms": 77, "actions": [
            ({"type": "click", "x": 2, "y": 3}, "injected", True, True),
        ], "settle": {0: "off"},
        "app_exit": {"after_freeze": True, "exit_status": None},
        "pre_observation_sha256": hexid("", "v3exitobs-pre", 64),
        "claims": {"exited": True}})
    return 0


def main_v3_video() -> int:
    """The receipt v3 golden of a session begun with record_video: two actions with settle and
    the video bound as the receipt's artifact."""
    webm = subprocess.run(
        ["ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi",
         "-i", "testsrc=size=64x40:rate=10:duration=1", "-c:v", "libvpx", "-b:v", "100k",
         "-fflags", "+bitexact", "-flags:v", "+bitexact", "-f", "webm", "-"],
        capture_output=True, check=True).stdout
    assert webm[:4] == b"\x1a\x45\xdf\xa3", "not an EBML (WebM) file"
    g = Golden("v3-video", 64, 40)
    build(g, {
        "v3": True, "session_id": hexid("ses-", "v3video"), "binding": binding("v3video", 23),
        "actor": {"kind": "local_user", "uid": 1000}, "started_wall_ms": 1796083400789,
        "stage_ms": 640, "actions": [
            ({"type": "click", "x": 20, "y": 15}, "injected", True, True),
            ({"type": "type", "text": "zoë 42"}, "injected", True, True),
        ], "settle": {0: "settled", 1: "settled"},
        "video": {"bytes": webm, "fps": 10, "start_offset_ms": 412},
        "pre_observation_sha256": hexid("", "v3video-pre", 64),
        "claims": {"recorded": True}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
