"""The OCR policy (evident.agent.ocr) with the real tesseract on the real form fixture app
(fixtures/form) on an engine display: what it finds is checked against where the app itself says
its widgets are (its ``ready`` log line), the calls it emits are run with real input, and the
app's log proves what arrived. The task lane is not needed here: the ``evident``-format calls are
plain §4 actions, run with ``display.actions``; the lane runs the same policy in
test_agent_task_lane.py and scenarios/test_agent_form.py. Bounds and failures of the tesseract
call are tested with stand-in executables."""
from __future__ import annotations

import hashlib
import json
import stat
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from evident import wait_for
from evident.agent import AgentError, Observation, OcrFormPolicy
from evident.agent.ocr import (Line, Word, field_right_of, find_line_with, find_phrase, group_lines,
                               locate_form, ocr_words, parse_tsv, tesseract_version)

REPO = Path(__file__).resolve().parents[3]
FORM_APP = REPO / "fixtures" / "form" / "form_app.py"
VALUES = {"Name": "Ada Lovelace", "Email": "ada@example.org"}
EXPECTED_LINE = "Submitted: Ada Lovelace / ada@example.org"
WIDTH, HEIGHT = 960, 360

HEADER = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"


def row(text: str, left: int, top: int, width: int = 40, height: int = 20, conf: str = "95.1") -> str:
    return f"5\t1\t1\t1\t1\t1\t{left}\t{top}\t{width}\t{height}\t{conf}\t{text}"


# -- pure parts ------------------------------------------------------------------------------
def test_parse_tsv_keeps_words_with_text_and_confidence():
    tsv = "\n".join([HEADER, "1\t1\t0\t0\t0\t0\t0\t0\t900\t300\t-1\t", row("Name", 30, 40),
                     row(" ", 80, 40), row("Email", 30, 100, conf="-1"), row("Submit:", 170, 190)])
    words = parse_tsv(tsv)
    assert [w.text for w in words] == ["Name", "Submit:"]
    assert (words[0].left, words[0].top, words[0].right, words[0].bottom) == (30, 40, 70, 60)


@pytest.mark.parametrize("tsv", ["", "not tsv", HEADER + "\n5\t1\t1\t1\t1\t1\tx\t0\t1\t1\t9\tword"])
def test_parse_tsv_refuses_what_is_not_tesseracts_tsv(tsv):
    with pytest.raises(AgentError) as info:
        parse_tsv(tsv)
    assert info.value.code == "agent-ocr-failed"


def test_lines_phrases_and_markers():
    words = [Word("Email", 30, 100, 80, 22, 90), Word("Name", 30, 40, 86, 22, 90),
             Word("Lovelace", 280, 262, 130, 24, 90), Word("Submitted:", 30, 263, 160, 23, 90),
             Word("Ada", 205, 264, 56, 22, 90)]
    lines = group_lines(words)
    assert [l.text for l in lines] == ["Name", "Email", "Submitted: Ada Lovelace"]
    assert find_phrase(lines, "email") == (30, 100, 80, 22)
    assert find_phrase(lines, "Ada Lovelace") == (205, 262, 205, 24)
    assert find_phrase(lines, "Phone") is None and find_phrase(lines, " ") is None
    marked = find_line_with(lines, "Submitted:")
    assert isinstance(marked, Line) and marked.box == (30, 262, 380, 24)
    assert find_line_with(lines, "Name Email") is None


def test_field_right_of_a_label_in_pixels():
    from PIL import Image, ImageDraw
    img = Image.new("RGB", (400, 100), (242, 242, 242))
    d = ImageDraw.Draw(img)
    for x in range(20, 60, 5):                                 # the "label": glyph-like strokes
        d.rectangle((x, 40, x + 1, 58), fill=(0, 0, 0))
    d.rectangle((70, 46, 74, 50), fill=(0, 0, 0))              # a stray glyph: too narrow
    d.rectangle((100, 30, 350, 70), fill=(255, 255, 255), outline=(0, 0, 0))   # the field
    assert field_right_of(img, (20, 40, 41, 19)) == (100, 30, 251, 41)
    assert field_right_of(img, (100, 80, 20, 10)) is None       # nothing to its right


def test_ocr_bounds_and_failures(tmp_path):
    with pytest.raises(AgentError) as info:
        ocr_words(b"GIF89a" + b"\0" * 40)
    assert info.value.code == "agent-ocr-input"
    huge = b"\x89PNG\r\n\x1a\n" + b"\0\0\0\rIHDR" + (5000).to_bytes(4, "big") * 2 + b"\0" * 16
    with pytest.raises(AgentError) as info:
        ocr_words(huge)
    assert info.value.code == "agent-ocr-input"
    png = (REPO / "receipts" / "golden" / "v3-three-actions" / "frames").glob("*.png").__next__().read_bytes()
    with pytest.raises(AgentError) as info:
        ocr_words(png, tesseract=str(tmp_path / "no-such-tesseract"))
    assert info.value.code == "agent-ocr-unavailable"

    def stand_in(name: str, body: str) -> str:
        path = tmp_path / name
        path.write_text("#!/bin/sh\n" + body + "\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        return str(path)

    for exe, timeout in [(stand_in("fails", "exit 3"), 30.0), (stand_in("garbage", "echo garbage"), 30.0),
                         (stand_in("hangs", "exec sleep 30"), 0.5)]:
        with pytest.raises(AgentError) as info:
            ocr_words(png, tesseract=exe, timeout_s=timeout)
        assert info.value.code == "agent-ocr-failed", exe
    assert tesseract_version().startswith("tesseract ")


def test_policy_arguments():
    for kwargs in [{"values": VALUES, "adapter": "openai-computer-use"}, {"values": {}},
                   {"values": {"": "x"}}, {"values": {"Name": 3}}]:
        with pytest.raises(AgentError) as info:
            OcrFormPolicy(**kwargs)  # type: ignore[arg-type]
        assert info.value.code == "agent-policy-args"
    p = OcrFormPolicy(VALUES, model="tesseract test")
    assert p.policy == {"adapter": "evident", "provider": "evident-ocr", "model": "tesseract test"}
    assert OcrFormPolicy(VALUES).model.startswith("tesseract ")


# -- on a real display with the form app -----------------------------------------------------
def launch_form(evident_app, tmp_path) -> Dict[str, Any]:
    log = tmp_path / "form.jsonl"
    evident_app([sys.executable, str(FORM_APP), "--log", str(log)], wait_window_ms=10000)
    return wait_for(lambda: next((e for e in read_log(log) if e["event"] == "ready"), None),
                    timeout=10, what="the form's ready line")


def read_log(path: Path) -> List[Dict[str, Any]]:
    try:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    except FileNotFoundError:
        return []


def box(widget: Dict[str, int]):
    return (widget["x"], widget["y"], widget["width"], widget["height"])


def inside(point, b) -> bool:
    x, y, w, h = b
    return x <= point[0] < x + w and y <= point[1] < y + h


def observe(display, turn: int) -> Observation:
    png = bytes(display.screenshot())
    return Observation(png=png, sha256=hashlib.sha256(png).hexdigest(), width=WIDTH, height=HEIGHT,
                       turn=turn, turns_left=12 - turn, actions_left=64, deadline_ms_left=100000)


@pytest.mark.evident_display(width=WIDTH, height=HEIGHT)
def test_finds_the_fields_where_the_app_drew_them(evident_display, evident_app, tmp_path):
    ready = launch_form(evident_app, tmp_path)
    layout = locate_form(bytes(evident_display.screenshot()), list(VALUES), "Submit")
    widgets = ready["widgets"]
    # The fields are exactly the entries' boxes (border included), as Tk reports them.
    assert layout.fields == {"Name": box(widgets["Name"]), "Email": box(widgets["Email"])}
    cx, cy = layout.submit[0] + layout.submit[2] // 2, layout.submit[1] + layout.submit[3] // 2
    assert inside((cx, cy), box(widgets["Submit"]))
    with pytest.raises(AgentError) as info:
        locate_form(bytes(evident_display.screenshot()), ["Name", "Phone"], "Submit")
    assert info.value.code == "agent-ocr-target-missing" and "field 2" in info.value.message
    assert "Phone" not in info.value.message


@pytest.mark.evident_display(width=WIDTH, height=HEIGHT)
def test_policy_fills_submits_and_reads_back(evident_display, evident_app, tmp_path):
    ready = launch_form(evident_app, tmp_path)
    log = tmp_path / "form.jsonl"
    policy = OcrFormPolicy(VALUES)
    first = policy(observe(evident_display, 0))
    calls = first["calls"]
    assert [[a["type"] for a in c["actions"]] for c in calls] == [
        ["triple_click", "type"], ["triple_click", "type"], ["click"]]
    for call, name in zip(calls, ["Name", "Email", "Submit"]):
        assert inside((call["actions"][0]["x"], call["actions"][0]["y"]), box(ready["widgets"][name]))
    assert [c["actions"][1]["text"] for c in calls[:2]] == [VALUES["Name"], VALUES["Email"]]
    assert len({c["id"] for c in calls}) == 3
    # The same image in the Anthropic format: the same points, one tool_use block per action.
    anthropic = OcrFormPolicy(VALUES, adapter="anthropic-computer-20250124", model="tesseract test")
    message = anthropic(observe(evident_display, 0))
    assert (message["type"], message["role"], message["stop_reason"]) == ("message", "assistant", "tool_use")
    blocks = message["content"]
    assert [b["input"]["action"] for b in blocks] == ["triple_click", "type", "triple_click", "type", "left_click"]
    assert all(b["type"] == "tool_use" and b["name"] == "computer" for b in blocks)
    assert [b["input"].get("coordinate") for b in blocks if "coordinate" in b["input"]] == \
        [[c["actions"][0]["x"], c["actions"][0]["y"]] for c in calls]
    assert len({b["id"] for b in blocks}) == len(blocks)

    for call in calls:
        batch = evident_display.actions(call["actions"], settle=True)
        assert batch.ok, batch.results
    submits = wait_for(lambda: [e for e in read_log(log) if e["event"] == "submit"], timeout=10,
                       what="the form's submit line")
    assert submits == [{"event": "submit", "n": 1, "fields": VALUES}]     # exactly what was typed

    final = policy(observe(evident_display, 1))
    assert final == {"result": {"result_line": EXPECTED_LINE, "confirmed": True}}
    final = anthropic(observe(evident_display, 1))
    assert anthropic.submitted and final["stop_reason"] == "end_turn"
    assert json.loads(final["content"][0]["text"]) == {"result_line": EXPECTED_LINE, "confirmed": True}


@pytest.mark.evident_display(width=WIDTH, height=HEIGHT)
def test_attest_never_types(evident_display, evident_app, tmp_path):
    launch_form(evident_app, tmp_path)
    policy = OcrFormPolicy(VALUES)
    obs = observe(evident_display, 0)
    attest0 = Observation(**{**obs.__dict__, "mode": "attest"})
    assert policy(attest0) == {"calls": [{"id": "ocr-0-0", "actions": [{"type": "screenshot"}]}]}
    attest1 = Observation(**{**obs.__dict__, "mode": "attest", "turn": 1})
    # Nothing was submitted: the answer says so rather than claiming the result.
    assert policy(attest1) == {"result": {"result_line": None, "confirmed": False}}
    assert not policy.submitted


def test_looks_again_while_the_form_is_not_on_screen_then_gives_up():
    import io
    from PIL import Image
    buf = io.BytesIO()
    Image.new("RGB", (320, 200), (0, 0, 0)).save(buf, "PNG")       # an empty Xvfb screen
    obs = Observation.first(buf.getvalue(), 320, 200)
    policy = OcrFormPolicy(VALUES, patience=2, model="tesseract test")
    look = {"calls": [{"id": "ocr-0-0", "actions": [{"type": "wait", "ms": 1000}, {"type": "screenshot"}]}]}
    assert policy(obs) == look and policy(obs) == look
    with pytest.raises(AgentError) as info:
        policy(obs)
    assert info.value.code == "agent-ocr-target-missing" and not policy.submitted
    # Never when too few turns remain to fill in the form and answer.
    late = Observation.first(buf.getvalue(), 320, 200, turns_left=2)
    with pytest.raises(AgentError):
        OcrFormPolicy(VALUES, model="tesseract test")(late)
    anthropic = OcrFormPolicy(VALUES, adapter="anthropic-computer-20250124", model="tesseract test")
    assert [b["input"] for b in anthropic(obs)["content"]] == [{"action": "wait", "duration": 1},
                                                              {"action": "screenshot"}]


def test_every_adapter_format_and_a_fill_spread_over_turns():
    """No display: the steps of a fill in each format (Gemini on its 0..999 grid), and a fill
    whose calls exceed one turn's bounds (16 calls, 16 actions) spread over turns, the submit
    last. The engine parsing each format is test_agent_task_lane.py's."""
    from evident.agent.ocr import ADAPTERS, calls_response, final_response
    assert len(ADAPTERS) == 8
    call = [[("select", 10, 20), ("type", "x", 10, 20)], [("click", 5, 5)]]
    ev = calls_response("evident", call, "m", 1, 0, (1000, 500))
    assert [[a["type"] for a in c["actions"]] for c in ev["calls"]] == [["triple_click", "type"], ["click"]]
    for a in ("anthropic-computer-20250124", "anthropic-computer-20251124"):
        msg = calls_response(a, call, "m", 1, 0, (1000, 500))
        assert [b["name"] for b in msg["content"]] == ["computer"] * 3
        assert [b["input"]["action"] for b in msg["content"]] == ["triple_click", "type", "left_click"]
        assert all("toolset_name" not in b for b in msg["content"])
    ts = calls_response("anthropic-toolset-20260801", call, "m", 1, 0, (1000, 500))["content"]
    assert [(b["name"], b["toolset_name"]) for b in ts] == [("triple_click", "computer"), ("type", "computer"),
                                                           ("left_click", "computer")]
    assert ts[0]["input"] == {"coordinate": [10, 20]} and ts[2]["input"] == {"coordinate": [5, 5]}
    ga = calls_response("openai-computer", call, "m", 1, 0, (1000, 500))
    assert [[x["type"] for x in item["actions"]] for item in ga["output"]] == [
        ["click", "keypress", "keypress", "type"], ["click"]]
    assert ga["output"][0]["actions"][2]["keys"] == ["SHIFT", "HOME"]
    pre = calls_response("openai-computer-use-preview", call, "m", 1, 0, (1000, 500))
    assert [item["action"]["type"] for item in pre["output"]] == ["click", "keypress", "keypress", "type", "click"]
    assert len({item["call_id"] for item in pre["output"]}) == 5
    g35 = calls_response("gemini-computer-use-3.5", call, "m", 1, 0, (1000, 500))
    fcs = [p["functionCall"] for p in g35["candidates"][0]["content"]["parts"]]
    assert [f["name"] for f in fcs] == ["triple_click", "type", "click"]
    assert fcs[0]["args"] == {"x": 10, "y": 41}   # pixel centres on the grid: (2v+1)*1000 // (2*size)
    assert final_response("openai-computer", {"a": 1}, "m", 2)["output"][0]["content"][0]["text"] == '{"a": 1}'
    assert final_response("gemini-computer-use", {"a": 1}, "m", 2)["candidates"][0]["content"]["parts"] == [
        {"text": '{"a": 1}'}]

    p = OcrFormPolicy({"A": "x", "B": "y", "C": "z"}, adapter="gemini-computer-use", model="tesseract test")
    p.image = (1000, 500)
    p.pending = [[("select", 10, 20), ("type", v, 10, 20)] for v in "xyz"] + [[("click", 5, 5)]]
    field = ["click_at", "key_combination", "key_combination", "key_combination", "type_text_at"]
    first = [x["functionCall"]["name"] for x in p._next_pack(0)["candidates"][0]["content"]["parts"]]
    assert first == field * 2 and not p.submitted        # 12 actions; a third field would make 18
    second = [x["functionCall"]["name"] for x in p._next_pack(1)["candidates"][0]["content"]["parts"]]
    assert second == field + ["click_at"] and p.submitted and not p.pending
