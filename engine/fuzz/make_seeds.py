#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses (engine/fuzz/corpus/<target>/) from the project's
own fixtures: the golden receipts and their inputs (receipts/golden), the JCS vectors
(receipts/vectors/jcs.json), the golden frames (real PNGs the engine wrote), and requests and
provider responses of the shapes docs/sessions.md, docs/actions.md and docs/agents.md document
(the same shapes the unit tests use). Deterministic: rerun after a format change and commit the
result. Python 3 standard library only."""
import hashlib
import json
import os
import shutil
import struct
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "engine", "fuzz", "corpus")
GOLDEN = os.path.join(ROOT, "receipts", "golden")
CASES = ["zero-actions", "three-actions", "sixty-four-actions", "real-tk-form"]
ADAPTERS = ["anthropic-computer-20250124", "anthropic-computer-20251124", "anthropic-toolset-20260801",
            "openai-computer", "openai-computer-use-preview", "gemini-computer-use",
            "gemini-computer-use-3.5", "evident"]

corpora = {}


def add(target, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    corpora.setdefault(target, []).append(data)


def compact(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def golden_actions():
    """Every action of the golden inputs, as sent (one list per case)."""
    out = []
    for case in CASES:
        p = os.path.join(GOLDEN, case, "input.json")
        if os.path.exists(p):
            out.append([a["action"] for a in json.load(open(p))["actions"]])
    return out


H = "974591316f1d1e1a259d1fade6a965a9716e0f910ba65fab66d563da85d3cd02"
SES = "ses-" + "0" * 32

# --- receipts: the verifier and the JSON parser
for case in CASES:
    receipt = read(os.path.join(GOLDEN, case, "receipt.json"))
    add("receipt_verify_fuzz", receipt)
    add("json_fuzz", receipt)
for v in json.load(open(os.path.join(ROOT, "receipts", "vectors", "jcs.json")))["vectors"]:
    add("json_fuzz", v["input"])
for text in ['{}', '[]', '0', '-9007199254740991', '"\\ud83d\\ude00"', '{"a":[1,{"b":null}],"c":true}',
             '[' * 64 + ']' * 64]:
    add("json_fuzz", text)

# --- session requests (docs/sessions.md)
begin = {"op": "begin", "display_id": 0, "generation": "gen-0374a7427f5908f7eed0d028042f7c57",
         "app_id": "app-14777413bbb74c45c5ce886ab39806ea", "attempt_id": "example-1", "job_sha256": H}
add("session_request_fuzz", compact(begin))
add("session_request_fuzz", compact({"op": "status", "session_id": SES}))
for op in ["freeze", "close", "abort"]:
    add("session_request_fuzz", compact({"op": op, "session_id": SES, "sequence": 3}))
add("session_request_fuzz", compact({"op": "observe", "session_id": SES, "sequence": 2, "pre_observation_sha256": H}))
add("session_request_fuzz", compact({"op": "finish", "session_id": SES, "sequence": 3, "observation_sha256": H,
                                     "claims": {"saved": True, "fields": {"name": "Ada"}, "n": [1, 2]}}))
for actions in golden_actions():
    session_ok = [a for a in actions if a["type"] not in ("paste", "mouse_down", "mouse_up", "zoom")]
    for i in range(0, len(session_ok), 16):
        add("session_request_fuzz", compact({"op": "actions", "session_id": SES, "sequence": 1,
                                             "actions": session_ok[i:i + 16]}))

# --- cu actions requests (docs/actions.md); 4 bytes of display size first (1280x800)
size = struct.pack(">HH", 1279, 799)
extra = [{"type": "paste", "text": "from the clipboard"}, {"type": "mouse_down", "x": 5, "y": 5, "button": "left"},
         {"type": "mouse_up", "x": 5, "y": 5, "button": "left"}, {"type": "zoom", "x": 0, "y": 0, "width": 64, "height": 48}]
for actions in golden_actions() + [extra]:
    add("actions_fuzz", size + compact({"actions": actions[:16]}).encode())
add("actions_fuzz", size + compact({"actions": [{"type": "click", "x": 500, "y": 500}], "coordinate_space": "normalized_1000",
                                    "settle": 800, "observe": "none"}).encode())
add("actions_fuzz", size + compact({"actions": [{"type": "wait", "ms": 10}], "settle": True, "observe": "pixels"}).encode())

# --- task requests (docs/agents.md "Requests")
TSK = "tsk-" + "1" * 32
for mode in ["stage", "attest"]:
    req = {"op": "begin", "mode": mode, "display_id": 0, "generation": begin["generation"], "app_id": begin["app_id"],
           "attempt_id": "task-1", "task_sha256": H,
           "policy": {"adapter": "anthropic-computer-20250124", "provider": "anthropic", "model": "claude-x"}}
    if mode == "attest":
        req["prior_receipt_id"] = "etr-" + H
    add("task_request_fuzz", compact(req))
add("task_request_fuzz", compact({"op": "status", "task_id": TSK}))
add("task_request_fuzz", compact({"op": "abort", "task_id": TSK, "sequence": 2}))

# --- provider responses (the shapes of docs/agents.md, as the adapter tests use them)
def anthropic(blocks):
    return {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-x", "stop_reason": "tool_use",
            "usage": {"input_tokens": 1, "output_tokens": 1}, "content": blocks}


def tool_use(i, inp):
    return {"type": "tool_use", "id": "toolu_%d" % i, "name": "computer", "input": inp}


anthropic_calls = anthropic([tool_use(i, a) for i, a in enumerate([
    {"action": "left_click", "coordinate": [100, 200]}, {"action": "type", "text": "hello\nworld"},
    {"action": "key", "text": "ctrl+a Delete"},
    {"action": "scroll", "coordinate": [10, 20], "scroll_direction": "down", "scroll_amount": 5},
    {"action": "left_click_drag", "start_coordinate": [1, 2], "coordinate": [30, 40]},
    {"action": "hold_key", "text": "shift", "duration": 2}, {"action": "wait", "duration": 1},
    {"action": "triple_click", "coordinate": [5, 6]}, {"action": "right_click", "coordinate": [7, 8]},
    {"action": "screenshot"}, {"action": "mouse_move", "coordinate": [9, 9]}, {"action": "double_click"},
    {"action": "zoom", "region": [0, 0, 100, 100]}])])
# Without the newer actions (zoom, a click at the pointer), which the 20250124 set refuses.
anthropic_basic = anthropic([tool_use(i, a) for i, a in enumerate([
    {"action": "left_click", "coordinate": [100, 200]}, {"action": "type", "text": "hello\nworld"},
    {"action": "key", "text": "Return"}, {"action": "screenshot"}])])
anthropic_final = anthropic([{"type": "thinking", "thinking": "...", "signature": "s"},
                             {"type": "text", "text": "```json\n{\"saved\": true}\n```"}])
openai_ga = {"id": "resp_1", "object": "response", "status": "completed", "output": [
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {"type": "computer_call", "id": "cu_1", "call_id": "call_1", "status": "completed", "pending_safety_checks": [],
     "actions": [{"type": "click", "button": "left", "x": 10, "y": 20}, {"type": "click", "button": "wheel", "x": 11, "y": 21},
                 {"type": "double_click", "x": 12, "y": 22}, {"type": "drag", "path": [{"x": 1, "y": 2}, {"x": 3, "y": 4}]},
                 {"type": "keypress", "keys": ["CTRL", "S"]}, {"type": "move", "x": 5, "y": 6},
                 {"type": "scroll", "x": 7, "y": 8, "scroll_x": -150, "scroll_y": 300}, {"type": "type", "text": "abc"},
                 {"type": "wait"}, {"type": "screenshot"}]}]}
openai_preview = {"id": "resp_1", "object": "response", "status": "completed", "output": [
    {"type": "computer_call", "id": "cu_1", "call_id": "call_9", "status": "completed", "pending_safety_checks": [],
     "action": {"type": "click", "button": "right", "x": 3, "y": 4}}]}
openai_final = {"id": "resp_1", "object": "response", "status": "completed", "output": [
    {"type": "message", "id": "m", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "{\"total\": 42}", "annotations": []}]}]}


def gemini(parts):
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}], "modelVersion": "m"}


gemini25 = gemini([{"text": "I will fill the form."}] + [{"functionCall": {"name": n, "args": a}} for n, a in [
    ("click_at", {"x": 500, "y": 500}), ("type_text_at", {"x": 100, "y": 999, "text": "Ada", "press_enter": True}),
    ("key_combination", {"keys": "control+s"}), ("scroll_at", {"x": 0, "y": 0, "direction": "down", "magnitude": 500}),
    ("drag_and_drop", {"x": 0, "y": 0, "destination_x": 999, "destination_y": 999}), ("wait_5_seconds", {}),
    ("scroll_document", {"direction": "up"})]])
gemini35 = gemini([{"functionCall": {"id": "fc%d" % i, "name": n, "args": a}} for i, (n, a) in enumerate([
    ("right_click", {"x": 10, "y": 10}), ("hotkey", {"keys": ["Control", "Shift", "t"]}), ("press_key", {"key": "Enter"}),
    ("wait", {"seconds": 2}), ("type", {"text": "x"}), ("take_screenshot", {}),
    ("scroll", {"x": 500, "y": 500, "direction": "left"})])])
gemini_final = gemini([{"text": "{\"done\": true}"}])
evident_calls = {"calls": [{"id": "c1", "actions": [{"type": "click", "x": 5, "y": 5},
                                                    {"type": "zoom", "x": 0, "y": 0, "width": 10, "height": 10}]}]}
evident_final = {"result": {"a": [1, 2]}}
by_adapter = {
    "anthropic-computer-20250124": [anthropic_calls, anthropic_basic, anthropic_final],
    "anthropic-computer-20251124": [anthropic_calls, anthropic_final],
    "anthropic-toolset-20260801": [anthropic_calls, anthropic_final],
    "openai-computer": [openai_ga, openai_final],
    "openai-computer-use-preview": [openai_preview, openai_final],
    "gemini-computer-use": [gemini25, gemini_final],
    "gemini-computer-use-3.5": [gemini35, gemini_final],
    "evident": [evident_calls, evident_final],
}
for index, name in enumerate(ADAPTERS):
    for response in by_adapter[name]:
        for pointer in (0, 1):
            add("agents_fuzz", bytes([index, pointer]) + compact(response).encode())
# One turn request per adapter family for the task parser too.
for response in (anthropic_calls, openai_ga, gemini35, evident_calls):
    add("task_request_fuzz", compact({"op": "turn", "task_id": TSK, "sequence": 1, "response": response}))

# --- PNGs: the golden frames (real captures the engine encoded), smallest first
pngs = []
for case in CASES:
    d = os.path.join(GOLDEN, case, "frames")
    for f in sorted(os.listdir(d)):
        pngs.append(read(os.path.join(d, f)))
for p in sorted(set(pngs), key=len)[:8]:
    add("png_decode_fuzz", p)

# --- the request envelope (Engine::call: docs/protocol.md), every op with plausible args
GEN = begin["generation"]
APP = begin["app_id"]
for env in [{"op": "ping"}, {"op": "ping", "args": {}}, {"op": "display.list", "args": {}},
            {"op": "display.status", "args": {"display_id": 0, "generation": GEN}},
            {"op": "display.destroy", "args": {"display_id": 3, "generation": GEN}},
            {"op": "display.env", "args": {"display_id": 0, "generation": GEN}},
            {"op": "display.screenshot", "args": {"display_id": 0, "generation": GEN, "out": "/tmp/x.png"}},
            {"op": "app.launch", "args": {"display_id": 0, "generation": GEN, "argv": ["xterm"], "wait_window_ms": 100}},
            {"op": "app.stop", "args": {"app_id": APP}}, {"op": "app.list"},
            {"op": "cu.actions", "args": {"display_id": 0, "generation": GEN,
                                          "request": {"actions": [{"type": "click", "x": 1, "y": 2}]}}},
            {"op": "session", "args": {"request": compact(begin)}},
            {"op": "session", "args": {"request": compact({"op": "status", "session_id": SES})}},
            {"op": "task", "args": {"request": compact({"op": "status", "task_id": "tsk-" + "1" * 32})}},
            {"op": "window.list", "args": {"display_id": 0, "generation": GEN}},
            {"op": "window.wait", "args": {"display_id": 0, "generation": GEN, "title": "x", "timeout_ms": 10}},
            {"op": "wait.stable", "args": {"display_id": 0, "generation": GEN, "quiet_ms": 10, "timeout_ms": 20}},
            {"op": "browser.list"}, {"op": "browser.status", "args": {"browser_id": "brw-" + "2" * 32}},
            {"op": "nope"}, {"op": "ping", "args": {"a" * 63 + "\u00e9": 1}}]:
    add("envelope_fuzz", compact(env))
add("envelope_fuzz", '{"op":"ping","op":"ping"}')
add("envelope_fuzz", '[]')

# --- DSSE envelopes, disclosures, commitments records and run logs about one v3 golden receipt,
# signed with the fuzz-only test key (engine/fuzz/keys/) by the openssl command
sys.path.insert(0, os.path.join(ROOT, "bindings", "python", "evident"))
import verify as pyverify  # noqa: E402  (the independent Python verifier: JCS and H(domain, v))
import base64  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

KEY = os.path.join(ROOT, "engine", "fuzz", "keys", "fuzz-signing.key")


def ed25519_sign(message):
    with tempfile.NamedTemporaryFile() as f:
        f.write(message)
        f.flush()
        return subprocess.run(["openssl", "pkeyutl", "-sign", "-rawin", "-inkey", KEY, "-in", f.name],
                              capture_output=True, check=True).stdout


def leaf_hash(line):
    return hashlib.sha256(b"\x00" + line).digest()


def node_hash(a, b):
    return hashlib.sha256(b"\x01" + a + b).digest()


def tree_head(size, root, timestamp):
    unsigned = {"tree_size": size, "root_hash": root.hex(), "timestamp": timestamp}
    digest = bytes.fromhex(pyverify.domain_digest("evident/tree-head/v1", unsigned))
    spki = subprocess.run(["openssl", "pkey", "-in", KEY, "-pubout", "-outform", "DER"],
                          capture_output=True, check=True).stdout
    head = dict(unsigned)
    head["key_id"] = "ed25519:" + hashlib.sha256(spki).hexdigest()
    head["signature"] = base64.b64encode(ed25519_sign(digest)).decode()
    return head


def compact_range(leaves):
    nodes = []
    for i, h in enumerate(leaves):
        s = i
        while s & 1:
            h = node_hash(nodes.pop(), h)
            s >>= 1
        nodes.append(h)
    return nodes


def root_of(nodes):
    if not nodes:
        return hashlib.sha256(b"").digest()
    r = nodes[-1]
    for n in reversed(nodes[:-1]):
        r = node_hash(n, r)
    return r


V3 = os.path.join(GOLDEN, "v3-three-actions")
v3_bytes = read(os.path.join(V3, "receipt.json"))
v3 = json.loads(v3_bytes)
v3_input = json.load(open(os.path.join(V3, "input.json")))
ENDED = "2026-12-02T10:00:00.000Z"
entry = {"kind": "session", "id": v3["session_id"], "attempt_id": v3["binding"]["attempt_id"],
         "job_sha256": v3["binding"]["job_sha256"], "outcome": "closed", "receipt_id": v3["receipt_id"],
         "ended_at": ENDED}
others = [{"kind": "session", "id": "ses-" + "%032x" % i, "attempt_id": "a%d" % i, "job_sha256": H,
           "outcome": ["failed", "aborted", "expired"][i % 3], "receipt_id": None, "ended_at": ENDED}
          for i in range(1, 5)]
log_entries = [pyverify.jcs(e) for e in others[:2] + [entry] + others[2:]]
leaves = [leaf_hash(line) for line in log_entries]
index = 2

# DSSE: the statement as the engine writes it (docs/receipts.md §8), the log proof for index 2 of 5.
frames = sorted({e["frame_sha256"] for e in v3["transcript"] if "frame_sha256" in e} |
                ({v3["observation"]["sha256"]} if "sha256" in v3.get("observation", {}) else set()))
proof = [leaves[3].hex(), node_hash(leaves[0], leaves[1]).hex(), leaves[4].hex()]
head5 = tree_head(5, root_of(compact_range(leaves)), ENDED)
statement = {"_type": "https://in-toto.io/Statement/v1",
             "subject": [{"name": "receipt.json", "digest": {"sha256": hashlib.sha256(v3_bytes).hexdigest()}}] +
                        [{"name": h + ".png", "digest": {"sha256": h}} for h in frames],
             "predicateType": "urn:evident:session-receipt:v3",
             "predicate": {"receipt_id": v3["receipt_id"],
                           "log": {"index": index, "tree_head": head5, "entry": entry, "inclusion_proof": proof}}}
payload = pyverify.jcs(statement)
ptype = b"application/vnd.in-toto+json"
pae = b"DSSEv1 %d %s %d %s" % (len(ptype), ptype, len(payload), payload)
spki = subprocess.run(["openssl", "pkey", "-in", KEY, "-pubout", "-outform", "DER"], capture_output=True,
                      check=True).stdout
keyid = "ed25519:" + hashlib.sha256(spki).hexdigest()
envelope = {"payload": base64.b64encode(payload).decode(), "payloadType": ptype.decode(),
            "signatures": [{"keyid": keyid, "sig": base64.b64encode(ed25519_sign(pae)).decode()}]}
add("dsse_fuzz", pyverify.jcs(envelope) + b"\n")
add("dsse_fuzz", pyverify.jcs(dict(envelope, signatures=envelope["signatures"] * 2)))
add("dsse_fuzz", pyverify.jcs(dict(envelope, payloadType="text/plain")))
add("dsse_fuzz", '{"payload":"","payloadType":"","signatures":[]}')

# Run logs: 0, 1, 3 and 5 entries (each head signed for its size); one with a crashed append's
# extra bytes beyond what state.json counts.
def log_seed(n, extra=b""):
    lines = log_entries[:n]
    state = b""
    if n > 0:
        nodes = compact_range(leaves[:n])
        state = compact_json({"tree_size": n, "entries_bytes": sum(len(x) + 1 for x in lines),
                              "compact": [h.hex() for h in nodes],
                              "head": tree_head(n, root_of(nodes), ENDED)}) + b"\n"
    ent = b"".join(x + b"\n" for x in lines) + extra
    return struct.pack(">HH", len(state), len(ent)) + state + ent + b"".join(leaves[:n]) + extra[:32]


def compact_json(v):
    return compact(v).encode()


for n in (0, 1, 3, 5):
    add("runlog_fuzz", log_seed(n))
add("runlog_fuzz", log_seed(3, extra=log_entries[3][:20]))

# Disclosures (byte 0 even) of the committed type and key actions, and the private record
# (byte 0 odd) of the same session.
actions = v3_input["actions"]
committed = []
for i, a in enumerate(actions):
    if "salt" in a:
        value = a["action"].get("text", a["action"].get("key"))
        committed.append({"action_index": i, "action": a["action"]["type"], "salt": a["salt"], "value": value,
                          "commitment": pyverify.domain_digest("evident/commitment/v1",
                                                               {"salt": a["salt"], "value": value})})
        add("disclosure_fuzz", b"\x00" + pyverify.jcs({"schema": "evident.disclosure/v1",
                                                       "receipt_id": v3["receipt_id"], "action_index": i,
                                                       "action": a["action"]["type"], "salt": a["salt"],
                                                       "value": value}) + b"\n")
record = {"schema": "evident.commitments/v1", "session_id": v3["session_id"], "receipt_id": v3["receipt_id"],
          "actions": committed}
add("disclosure_fuzz", b"\x01" + pyverify.jcs(record) + b"\n")
add("disclosure_fuzz", b"\x01" + pyverify.jcs(dict(record, receipt_id="ecr-" + H)))


def main():
    for target, items in sorted(corpora.items()):
        d = os.path.join(OUT, target)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for data in items:
            name = hashlib.sha1(data).hexdigest()  # libFuzzer's own corpus file naming
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        print("%s: %d seeds, %d bytes" % (target, len(set(items)), sum(len(x) for x in set(items))))


if __name__ == "__main__":
    sys.exit(main())
