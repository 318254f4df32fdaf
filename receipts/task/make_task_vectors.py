#!/usr/bin/python3
"""Writes the task receipt test vectors under receipts/task/ (run once; the output is committed).

Two linked receipts, `stage/` and `attest/`, each with frames/<sha256>.png (small real PNGs made
with zlib), input.json (what the C++ builder is given: TaskReceiptInput, secrets and raw call
ids included) and receipt.json (the expected receipt, JCS + "\\n"), plus digests.json (every
digest of both receipts, named).

Independence: nothing here imports evident. The receipt is assembled by this script from the
rules in docs/receipts.md ("Task receipts"), its JCS is this script's own (below) and every JCS
text is also checked against the npm `canonicalize` package (receipts/tools/jcs.mjs, run by
node); digests are hashlib's and are also checked with the `sha256sum` program. The C++ builder
must reproduce receipt.json byte for byte (receipts_task_test), and both verifiers must accept
both receipts.

Usage: /usr/bin/python3 receipts/task/make_task_vectors.py
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import struct
import subprocess
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NODE_JCS = os.path.join(ROOT, "receipts", "tools", "jcs.mjs")


# ------------------------------------------------------------------ JCS (RFC 8785), own copy

def _jcs_str(s: str) -> str:
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif c < 0x20:
            out.append({8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}.get(c, "\\u%04x" % c))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _utf16_key(s: str):
    return s.encode("utf-16-be")


def jcs_text(v) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        assert abs(v) <= 2 ** 53 - 1
        return str(v)
    if isinstance(v, str):
        return _jcs_str(v)
    if isinstance(v, list):
        return "[" + ",".join(jcs_text(x) for x in v) + "]"
    if isinstance(v, dict):
        keys = sorted(v, key=_utf16_key)
        return "{" + ",".join(_jcs_str(k) + ":" + jcs_text(v[k]) for k in keys) + "}"
    raise TypeError("not JCS content: %r" % type(v))


def jcs(v) -> bytes:
    return jcs_text(v).encode("utf-8")


def node_jcs(v) -> bytes:
    out = subprocess.run(["node", NODE_JCS, "--lines"],
                         input=(json.dumps(v, ensure_ascii=False) + "\n").encode("utf-8"),
                         capture_output=True, check=True).stdout
    assert out.endswith(b"\n")
    return out[:-1]


def H(domain: str, v) -> str:
    data = jcs(v)
    assert data == node_jcs(v), "JCS differs from npm canonicalize for " + domain
    h = hashlib.sha256(domain.encode() + b"\x00" + data).hexdigest()
    ext = subprocess.run(["sha256sum"], input=domain.encode() + b"\x00" + data,
                         capture_output=True, check=True).stdout.split()[0].decode()
    assert h == ext
    return h


# ------------------------------------------------------------------ frames

def png(width: int, height: int, seed: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b""
    for y in range(height):
        row = bytearray([0])
        for x in range(width):
            on = (x // 4 + y // 4 + seed) % 3 == 0
            row += bytes([(seed * 37) % 256 if on else 240, 240 - seed, 200 if on else 236])
        rows += bytes(row)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def rfc3339(ms: int) -> str:
    dt = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(milliseconds=ms)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ms % 1000)


# ------------------------------------------------------------------ the rules (docs/receipts.md)

SECRET_KINDS = {"type", "key", "paste"}      # projection {"type"}
COMMITTED = {"type", "key", "paste", "hold_key"}


def projection(action: dict) -> dict:
    t = action["type"]
    if t in SECRET_KINDS:
        return {"type": t}
    if t == "hold_key":
        return {"type": t, "ms": action["ms"]}
    return {k: v for k, v in action.items() if k not in ("text", "key")}


LIMITS = {
    "stage": {"max_turns": 12, "deadline_ms": 180000, "input_sealed": False,
              "max_actions_per_turn": 16, "max_actions": 64},
    "attest": {"max_turns": 2, "deadline_ms": 45000, "input_sealed": True,
               "max_actions_per_turn": 16, "max_actions": 64},
}


def build(inp: dict, digests: dict) -> dict:
    """The receipt of `inp` (input.json's shape), every digest recorded in `digests`."""
    events = [{"index": 0, "kind": "initial_frame", "frame_sha256": inp["initial_frame_sha256"]}]
    actions = iter(inp["actions"])
    call_count = 0
    for k, turn in enumerate(inp["turns"]):
        ids_sha = H("evident/task-call-ids/v1", turn["call_ids"])
        digests["turn%d.call_ids_sha256" % (k + 1)] = ids_sha
        call_count += len(turn["call_ids"])
        events.append({"index": len(events), "kind": "turn", "turn": turn["turn"],
                       "call_count": len(turn["call_ids"]), "call_ids_sha256": ids_sha,
                       "native_actions": turn["native_actions"],
                       "model_image_sha256": turn["model_image_sha256"],
                       "frame_sha256": turn["frame_sha256"]})
        for _ in range(turn["action_count"]):
            a = next(actions)
            proj = projection(a["action"])
            e = {"index": len(events), "kind": "action", "action": a["action"]["type"],
                 "projection_sha256": H("evident/action-projection/v2", proj),
                 "status": a["status"], "input": a["input"], "input_events": a["input_events"],
                 "frame_sha256": a["frame_sha256"]}
            if a["action"]["type"] in COMMITTED:
                secret = a["action"].get("text", a["action"].get("key"))
                e["commitment"] = H("evident/commitment/v1", {"salt": a["salt"], "value": secret})
            events.append(e)
    events.append({"index": len(events), "kind": "freeze", "frame_sha256": inp["freeze_frame_sha256"]})
    stage_events = list(events)
    result_sha = H("evident/task-result/v1", inp["result"])
    events.append({"index": len(events), "kind": "observation",
                   "frame_sha256": inp["observation"]["sha256"],
                   "pre_observation_sha256": inp["pre_observation_sha256"]})
    events.append({"index": len(events), "kind": "result", "result_sha256": result_sha,
                   "frame_sha256": inp["observation"]["sha256"]})
    lin = inp["lineage"]
    prior_tx = lin["prior_transcript_sha256"] if lin else None
    stage_sha = H("evident/task-stage-transcript/v1", stage_events)
    tx_sha = H("evident/task-transcript/v1", {"prior_transcript_sha256": prior_tx, "events": events})
    digests.update({"stage_transcript_sha256": stage_sha, "transcript_sha256": tx_sha,
                    "result_sha256": result_sha})
    r = {
        "schema": "evident.task-receipt/v1",
        "task_id": inp["task_id"],
        "mode": inp["mode"],
        "engine": {"name": "evident", "version": inp["engine_version"], "host_id": inp["host_id"]},
        "binding": inp["binding"],
        "actor": inp["actor"],
        "policy": inp["policy"],
        "task_sha256": inp["task_sha256"],
        "execution": {"kind": "caller-policy", "internal_model_calls": 0,
                      "claims_authority": "caller-policy"},
        "limits": LIMITS[inp["mode"]],
        "started_at": rfc3339(inp["started_wall_ms"]),
        "frozen_at": rfc3339(inp["frozen_wall_ms"]),
        "observed_at": rfc3339(inp["observed_wall_ms"]),
        "completed_at": rfc3339(inp["completed_wall_ms"]),
        "elapsed_ms": inp["elapsed_ms"],
        "turn_count": len(inp["turns"]),
        "call_count": call_count,
        "refused_call_count": inp["refused_call_count"],
        "invalid_result_count": inp["invalid_result_count"],
        "safety_check_count": inp["safety_check_count"],
        "action_count": len(inp["actions"]),
        "input_event_count": inp["input_event_count"],
        "post_observation_input_event_count": 0,
        "prior_receipt_id": lin["prior_receipt_id"] if lin else None,
        "prior_transcript_sha256": prior_tx,
        "prior_transcript_event_count": lin["prior_transcript_event_count"] if lin else None,
        "prior_completed_at": rfc3339(lin["prior_completed_wall_ms"]) if lin else None,
        "transcript": events,
        "stage_transcript_sha256": stage_sha,
        "transcript_sha256": tx_sha,
        "pre_observation_sha256": inp["pre_observation_sha256"],
        "observation": inp["observation"],
        "result": inp["result"],
        "result_sha256": result_sha,
    }
    r["receipt_id"] = "etr-" + H("evident/task-receipt/v1", r)
    digests["receipt_id"] = r["receipt_id"]
    return r


# ------------------------------------------------------------------ the two vectors

class Frames:
    def __init__(self, d: str, w: int, h: int):
        self.dir, self.w, self.h, self.files = d, w, h, {}

    def new(self, seed: int) -> str:
        data = png(self.w, self.h, seed)
        sha = hashlib.sha256(data).hexdigest()
        self.files[sha] = data
        return sha

    def write(self) -> None:
        os.makedirs(os.path.join(self.dir, "frames"), exist_ok=True)
        for sha, data in self.files.items():
            with open(os.path.join(self.dir, "frames", sha + ".png"), "wb") as f:
                f.write(data)


def salt(name: str, i: int) -> str:
    # Deterministic here (vectors must be reproducible); the engine draws each salt from the CSPRNG.
    return hashlib.sha256(("task-salt/%s/%d" % (name, i)).encode()).hexdigest()


BINDING = {"display_id": 7, "display_name": ":7", "generation": "gen-" + "3" * 32,
           "app_id": "app-" + "4" * 32, "app_pid": 4242,
           "app_argv_sha256": hashlib.sha256(b"form-app").hexdigest(), "attempt_id": "form-1"}
COMMON = {"host_id": "hst-" + "5" * 32, "engine_version": "0.9.0",
          "actor": {"kind": "local_user", "uid": 1000},
          "task_sha256": hashlib.sha256(b"Fill in the form: Name Ada, Email ada@example.org").hexdigest(),
          "refused_call_count": 0, "safety_check_count": 0}


def stage_input(fr: Frames) -> dict:
    f0 = fr.new(1)
    scaled0 = hashlib.sha256(b"a model image scaled from frame 1").hexdigest()
    acts = []

    def act(action, status, n, seed, i):
        a = {"action": action, "status": status, "input": n > 0, "input_events": n,
             "frame_sha256": fr.new(seed)}
        if action["type"] in COMMITTED:
            a["salt"] = salt("stage", i)
        acts.append(a)
        return a["frame_sha256"]

    # turn 1 (anthropic-style): click the Name field, type the name
    act({"type": "click", "x": 120, "y": 80}, "injected", 3, 2, 0)
    f2 = act({"type": "type", "text": "Ada Lovelace"}, "injected", 24, 3, 1)
    # turn 2: two calls: Tab via a key, type the email, then a zoom and click Submit
    act({"type": "key", "key": "Tab"}, "injected", 2, 4, 2)
    act({"type": "type", "text": "ada@example.org\n"}, "injected", 32, 5, 3)
    act({"type": "zoom", "x": 0, "y": 0, "width": 16, "height": 16}, "ok", 0, 6, 4)
    f5 = act({"type": "click", "x": 60, "y": 150, "button": "left"}, "injected", 3, 7, 5)
    obs = fr.new(8)
    return dict(COMMON, **{
        "task_id": "tsk-" + "a1" * 16, "mode": "stage", "binding": BINDING,
        "policy": {"adapter": "anthropic-computer-20250124", "provider": "anthropic",
                   "model": "claude-sonnet-4-5"},
        "started_wall_ms": 1780000000000, "frozen_wall_ms": 1780000009500,
        "observed_wall_ms": 1780000009620, "completed_wall_ms": 1780000009650, "elapsed_ms": 9650,
        "initial_frame_sha256": f0,
        "turns": [
            {"turn": 1, "call_ids": ["toolu_01A", "toolu_01B"], "native_actions": ["left_click", "type"],
             "model_image_sha256": scaled0, "frame_sha256": f0, "action_count": 2},
            {"turn": 2, "call_ids": ["toolu_02A", "toolu_02B", "toolu_02C"],
             "native_actions": ["key", "type", "zoom", "left_click"],
             "model_image_sha256": f2, "frame_sha256": f2, "action_count": 4},
            {"turn": 3, "call_ids": [], "native_actions": [], "model_image_sha256": f5,
             "frame_sha256": f5, "action_count": 0},
            {"turn": 4, "call_ids": [], "native_actions": [], "model_image_sha256": f5,
             "frame_sha256": f5, "action_count": 0},
        ],
        "actions": acts,
        "freeze_frame_sha256": f5,
        "input_event_count": sum(a["input_events"] for a in acts),
        "pre_observation_sha256": f5,
        "observation": {"sha256": obs, "byte_length": len(fr.files[obs]), "width": fr.w, "height": fr.h},
        "result": {"submitted": True, "fields_filled": 2, "note": "é ✓"},
        "invalid_result_count": 1,
        "lineage": None,
    })


def attest_input(fr: Frames, stage: dict) -> dict:
    f0 = fr.new(11)
    f1 = fr.new(12)
    obs = fr.new(13)
    return dict(COMMON, **{
        "task_id": "tsk-" + "b2" * 16, "mode": "attest", "binding": BINDING,
        "policy": {"adapter": "evident", "provider": "script", "model": "ocr-policy-1"},
        "started_wall_ms": 1780000012000, "frozen_wall_ms": 1780000013100,
        "observed_wall_ms": 1780000013200, "completed_wall_ms": 1780000013230, "elapsed_ms": 1230,
        "initial_frame_sha256": f0,
        "turns": [
            {"turn": 1, "call_ids": ["c1"], "native_actions": ["screenshot"],
             "model_image_sha256": f0, "frame_sha256": f0, "action_count": 1},
            {"turn": 2, "call_ids": [], "native_actions": [], "model_image_sha256": f1,
             "frame_sha256": f1, "action_count": 0},
        ],
        "actions": [{"action": {"type": "screenshot"}, "status": "ok", "input": False,
                     "input_events": 0, "frame_sha256": f1}],
        "freeze_frame_sha256": f1,
        "input_event_count": 0,
        "pre_observation_sha256": f1,
        "observation": {"sha256": obs, "byte_length": len(fr.files[obs]), "width": fr.w, "height": fr.h},
        "result": {"result_line_shown": True},
        "invalid_result_count": 0,
        "lineage": {"prior_receipt_id": stage["receipt_id"],
                    "prior_transcript_sha256": stage["transcript_sha256"],
                    "prior_transcript_event_count": len(stage["transcript"]),
                    "prior_completed_wall_ms": 1780000009650},
    })


def write(name: str, fr: Frames, inp: dict, receipt: dict) -> None:
    fr.write()
    with open(os.path.join(fr.dir, "input.json"), "w", encoding="utf-8") as f:
        json.dump(inp, f, indent=1, ensure_ascii=False)
        f.write("\n")
    data = jcs(receipt) + b"\n"
    assert data[:-1] == node_jcs(receipt)
    with open(os.path.join(fr.dir, "receipt.json"), "wb") as f:
        f.write(data)


def main() -> None:
    all_digests = {}
    sf = Frames(os.path.join(HERE, "stage"), 24, 16)
    sin = stage_input(sf)
    all_digests["stage"] = {}
    stage = build(sin, all_digests["stage"])
    write("stage", sf, sin, stage)
    af = Frames(os.path.join(HERE, "attest"), 24, 16)
    ain = attest_input(af, stage)
    all_digests["attest"] = {}
    attest = build(ain, all_digests["attest"])
    write("attest", af, ain, attest)
    all_digests["description"] = ("every digest of receipts/task/{stage,attest}/receipt.json, computed by "
                                  "make_task_vectors.py (own JCS checked against npm canonicalize; hashlib "
                                  "checked against sha256sum)")
    with open(os.path.join(HERE, "digests.json"), "w", encoding="utf-8") as f:
        json.dump(all_digests, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
