"""``run_task`` end to end on the real engine's task lane: the provider transports against a
loopback server that speaks each provider's endpoint and replays a recorded-style exchange
(Anthropic Messages, OpenAI Responses, Gemini generateContent), the OCR policy in every adapter's
format (behind the loopback server as the provider's model for the six formats a transport
speaks, directly for the other two), and refusals. The server asserts what the transports send: every call of a turn is answered in the
next request, and every image sent is one of the engine's issued frames (a file of the task's
evidence dir, named by its digest). The form fixture app's log proves what arrived.

Where to click comes from the app's own ``ready`` line (ground truth), never from the code under
test."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from ctrl_c import python_handles_sigint  # noqa: F401  (a fixture)
from provider_server import ProviderServer

from evident import TaskError, wait_for
from evident.agent import (AnthropicTransport, CassetteHttp, GeminiTransport, Observation, OcrFormPolicy,
                           OpenAITransport, ScriptedPolicy, Task, UrllibHttp, run_task)

REPO = Path(__file__).resolve().parents[3]
FORM_APP = REPO / "fixtures" / "form" / "form_app.py"
WIDTH, HEIGHT = 960, 360
KEY = "sk-loopback-test-key"
TASK = "Type Ada into Name and submit the form"


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    s = ProviderServer()
    yield s
    s.close()


def read_log(path: Path) -> List[Dict[str, Any]]:
    try:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    except FileNotFoundError:
        return []


@pytest.fixture
def form(evident_display, evident_app, tmp_path):
    log = tmp_path / "form.jsonl"
    app = evident_app([sys.executable, str(FORM_APP), "--log", str(log)], wait_window_ms=10000)
    # polled closely, so a test starts as soon as the form says it is drawn (the guarantee
    # test_the_form_is_drawn_as_it_stays_once_it_says_ready checks)
    ready = wait_for(lambda: next((e for e in read_log(log) if e["event"] == "ready"), None),
                     timeout=10, what="the form's ready line", interval=0.001)
    centres = {name: (w["x"] + w["width"] // 2, w["y"] + w["height"] // 2)
               for name, w in ready["widgets"].items()}
    return app, log, centres


@pytest.mark.evident_display(width=WIDTH, height=HEIGHT)
def test_the_form_is_drawn_as_it_stays_once_it_says_ready(evident_display, form):
    """The form's "ready" line means its window is drawn as it stays: a frame taken as soon as the
    line is there equals the frame once the display has been still for 300 ms. The form used to
    write it after `update idletasks`, before its entries drew their borders, so a task begun at
    once could issue a first frame without them (a recorded run's replay then saw a different
    first frame: test_cassette_recorded_through_the_lane_replays_offline, once in a campaign)."""
    at_ready = evident_display.screenshot()  # `form` returns as soon as the line is there
    assert evident_display.wait_stable(quiet_ms=300).outcome == "stable"
    assert evident_display.screenshot().sha256 == at_ready.sha256


def submits(log: Path) -> List[Dict[str, str]]:
    return [e["fields"] for e in read_log(log) if e["event"] == "submit"]


def issued(run, png: bytes) -> bool:
    """``png`` is one of the engine's issued frames of this task (its evidence dir holds frames
    as <sha256>.png)."""
    path = Path(run.evidence_dir) / (hashlib.sha256(png).hexdigest() + ".png")
    return path.is_file() and path.read_bytes() == png


def final_text(obj: Dict[str, Any]) -> str:
    return json.dumps(obj)


@pytest.mark.evident_display(width=WIDTH, height=HEIGHT)
def test_anthropic_transport_through_the_lane(evident_display, form, server):
    app, log, at = form
    calls = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test",
             "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
             "content": [
                 {"type": "text", "text": "Filling in the name."},
                 {"type": "tool_use", "id": "toolu_A", "name": "computer",
                  "input": {"action": "left_click", "coordinate": list(at["Name"])}},
                 {"type": "tool_use", "id": "toolu_B", "name": "computer", "input": {"action": "type", "text": "Ada"}},
                 {"type": "tool_use", "id": "toolu_C", "name": "computer",
                  "input": {"action": "left_click", "coordinate": list(at["Submit"])}}]}
    final = {"id": "msg_02", "type": "message", "role": "assistant", "model": "claude-test",
             "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
             "content": [{"type": "text", "text": final_text({"name": "Ada"})}]}
    server.reply(calls)
    server.reply(final)
    policy = AnthropicTransport(TASK, "claude-test", KEY, display=(WIDTH, HEIGHT), base_url=server.url)
    run = run_task(evident_display, app, policy, task=TASK)
    assert run.receipt["result"] == {"name": "Ada"}
    assert run.receipt["policy"] == {"adapter": "anthropic-computer-20250124", "provider": "anthropic",
                                     "model": "claude-test"}
    assert submits(log) == [{"Name": "Ada", "Email": ""}]
    first, second = server.requests
    image0 = base64.b64decode(first["body"]["messages"][0]["content"][1]["source"]["data"])
    assert issued(run, image0)
    answer = second["body"]["messages"][2]
    assert [r["tool_use_id"] for r in answer["content"]] == ["toolu_A", "toolu_B", "toolu_C"]
    for r in answer["content"]:
        assert r["is_error"] is False
        assert issued(run, base64.b64decode(r["content"][-1]["source"]["data"]))
    assert [hashlib.sha256(image0).hexdigest()] == run.shown[:1]


@pytest.mark.evident_display(width=WIDTH, height=HEIGHT)
def test_anthropic_toolset_transport_through_the_lane(evident_display, form, server):
    """computer_toolset_20260801 in the shape Anthropic's SDK types give it: member-named
    tool_use blocks with toolset_name; the engine answers each with a tool_result naming the
    family, and the request declares the toolset by its type alone."""
    app, log, at = form
    calls = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test",
             "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
             "content": [
                 {"type": "text", "text": "Filling in the name."},
                 {"type": "tool_use", "id": "toolu_A", "name": "left_click", "toolset_name": "computer",
                  "input": {"coordinate": list(at["Name"])}},
                 {"type": "tool_use", "id": "toolu_B", "name": "type", "toolset_name": "computer",
                  "input": {"text": "Ada"}},
                 {"type": "tool_use", "id": "toolu_C", "name": "left_click", "toolset_name": "computer",
                  "input": {"coordinate": list(at["Submit"])}}]}
    final = {"id": "msg_02", "type": "message", "role": "assistant", "model": "claude-test",
             "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
             "content": [{"type": "text", "text": final_text({"name": "Ada"})}]}
    server.reply(calls)
    server.reply(final)
    policy = AnthropicTransport(TASK, "claude-test", KEY, tool="computer_toolset_20260801", base_url=server.url)
    run = run_task(evident_display, app, policy, task=TASK)
    assert run.receipt["result"] == {"name": "Ada"}
    assert run.receipt["policy"]["adapter"] == "anthropic-toolset-20260801"
    assert submits(log) == [{"Name": "Ada", "Email": ""}]
    first, second = server.requests
    assert first["body"]["tools"] == [{"type": "computer_toolset_20260801"}]
    answer = second["body"]["messages"][2]
    assert [(r["tool_use_id"], r["toolset_name"], r["is_error"]) for r in answer["content"]] == [
        ("toolu_A", "computer", False), ("toolu_B", "computer", False), ("toolu_C", "computer", False)]
    for r in answer["content"]:
        assert issued(run, base64.b64decode(r["content"][-1]["source"]["data"]))


@pytest.mark.evident_display(width=WIDTH, height=HEIGHT)
def test_openai_transport_through_the_lane(evident_display, form, server):
    app, log, at = form
    calls = {"id": "resp_01", "object": "response", "status": "completed", "model": "computer-use-test",
             "output": [{"type": "computer_call", "id": "cu_01", "call_id": "call_01", "status": "completed",
                         "pending_safety_checks": [],
                         "actions": [{"type": "click", "button": "left", "x": at["Name"][0], "y": at["Name"][1]},
                                     {"type": "type", "text": "Ada"},
                                     {"type": "click", "button": "left", "x": at["Submit"][0], "y": at["Submit"][1]}]}]}
    final = {"id": "resp_02", "object": "response", "status": "completed", "model": "computer-use-test",
             "output": [{"type": "message", "id": "msg_01", "role": "assistant", "status": "completed",
                         "content": [{"type": "output_text", "text": final_text({"name": "Ada"}), "annotations": []}]}]}
    server.reply(calls)
    server.reply(final)
    policy = OpenAITransport(TASK, "computer-use-test", KEY, display=(WIDTH, HEIGHT), base_url=server.url)
    run = run_task(evident_display, app, policy, task=TASK)
    assert run.receipt["result"] == {"name": "Ada"}
    assert submits(log) == [{"Name": "Ada", "Email": ""}]
    first, second = server.requests
    url = first["body"]["input"][0]["content"][1]["image_url"]
    assert issued(run, base64.b64decode(url.split(",", 1)[1]))
    assert second["body"]["previous_response_id"] == "resp_01"
    outputs = second["body"]["input"]
    assert [o["call_id"] for o in outputs] == ["call_01"]
    assert outputs[0]["output"]["type"] == "computer_screenshot"
    assert issued(run, base64.b64decode(outputs[0]["output"]["image_url"].split(",", 1)[1]))


@pytest.mark.evident_display(width=WIDTH, height=HEIGHT)
def test_gemini_transport_through_the_lane(evident_display, form, server):
    app, log, at = form

    def grid(point):   # Google's 0..999 grid: the engine maps v to floor(v * D / 1000)
        return {"x": (point[0] * 1000) // WIDTH + 1, "y": (point[1] * 1000) // HEIGHT + 1}

    calls = {"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"id": "fc_1", "name": "type_text_at",
                          "args": {**grid(at["Name"]), "text": "Ada", "press_enter": False}}},
        {"functionCall": {"id": "fc_2", "name": "click_at", "args": grid(at["Submit"])}}]},
        "finishReason": "STOP"}], "modelVersion": "gemini-test"}
    final = {"candidates": [{"content": {"role": "model", "parts": [{"text": final_text({"name": "Ada"})}]},
                             "finishReason": "STOP"}], "modelVersion": "gemini-test"}
    server.reply(calls)
    server.reply(final)
    policy = GeminiTransport(TASK, "gemini-test", KEY, base_url=server.url)
    run = run_task(evident_display, app, policy, task=TASK)
    assert run.receipt["result"] == {"name": "Ada"}
    assert submits(log) == [{"Name": "Ada", "Email": ""}]
    first, second = server.requests
    assert issued(run, base64.b64decode(first["body"]["contents"][0]["parts"][1]["inlineData"]["data"]))
    answer = second["body"]["contents"][2]
    names = [p["functionResponse"]["name"] for p in answer["parts"]]
    assert names == ["type_text_at", "click_at"]
    for p in answer["parts"]:
        assert issued(run, base64.b64decode(p["functionResponse"]["parts"][0]["inlineData"]["data"]))


OCR_VALUES = {"Name": "Grace Hopper", "Email": "grace@example.org"}
OCR_LINE = "Submitted: Grace Hopper / grace@example.org"


@pytest.mark.evident_display(width=WIDTH, height=HEIGHT)
@pytest.mark.parametrize("adapter", ["evident", "anthropic-toolset-20260801"])
def test_ocr_policy_stage_and_attest_through_the_lane(evident_display, form, adapter):
    """The OCR policy as the caller's policy, in the plain format and the toolset's member calls."""
    app, log, _ = form
    stage = run_task(evident_display, app, OcrFormPolicy(OCR_VALUES, adapter=adapter), task="fill the form")
    assert stage.receipt["result"] == {"result_line": OCR_LINE, "confirmed": True}
    assert stage.receipt["policy"]["adapter"] == adapter
    assert submits(log) == [OCR_VALUES]
    attest = run_task(evident_display, app, OcrFormPolicy(OCR_VALUES, adapter=adapter), task="prove it",
                      mode="attest", prior=stage)
    assert attest.receipt["result"] == stage.receipt["result"]
    assert attest.receipt["prior_receipt_id"] == stage.receipt_id
    assert attest.turn_count == 2 and submits(log) == [OCR_VALUES]


def _walk(obj: Any) -> Iterator[Any]:
    yield obj
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _walk(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _walk(v)


def images_in(obj: Any) -> List[bytes]:
    """Every PNG in a provider request body, where each format puts it: Anthropic image blocks'
    ``source.data``, OpenAI ``data:`` URLs, Gemini ``inlineData.data``."""
    out = []
    for v in _walk(obj):
        if isinstance(v, dict) and isinstance(v.get("source"), dict) and v.get("type") == "image":
            out.append(base64.b64decode(v["source"]["data"]))
        elif isinstance(v, dict) and isinstance(v.get("inlineData"), dict):
            out.append(base64.b64decode(v["inlineData"]["data"]))
        elif isinstance(v, str) and v.startswith("data:image/png;base64,"):
            out.append(base64.b64decode(v.split(",", 1)[1]))
    return out


def calls_in(response: Dict[str, Any]) -> List[str]:
    """The call ids of a provider response (Anthropic tool_use, OpenAI computer_call, Gemini functionCall)."""
    out = []
    for v in _walk(response):
        if isinstance(v, dict) and v.get("type") == "tool_use":
            out.append(v["id"])
        elif isinstance(v, dict) and v.get("type") == "computer_call":
            out.append(v["call_id"])
        elif isinstance(v, dict) and isinstance(v.get("functionCall"), dict):
            out.append(v["functionCall"]["id"])
    return out


def answers_in(message: Any) -> List[str]:
    """The call ids a provider request answers (tool_result, computer_call_output, functionResponse)."""
    out = []
    for v in _walk(message):
        if isinstance(v, dict) and v.get("type") == "tool_result":
            out.append(v["tool_use_id"])
        elif isinstance(v, dict) and v.get("type") == "computer_call_output":
            out.append(v["call_id"])
        elif isinstance(v, dict) and isinstance(v.get("functionResponse"), dict):
            out.append(v["functionResponse"]["id"])
    return out


class OcrModel:
    """The provider's model behind the loopback server, played by the OCR policy: each request's
    latest image (the frame the transport sent, found where the provider's format puts it) is
    what the model sees; its reply is the OCR policy's native response."""

    def __init__(self, adapter: str, mode: str, max_turns: int) -> None:
        self.policy = OcrFormPolicy(OCR_VALUES, adapter=adapter)
        self.mode, self.max_turns, self.turn = mode, max_turns, 0
        self.responses: List[Dict[str, Any]] = []

    def __call__(self, body: Dict[str, Any]) -> Dict[str, Any]:
        latest = body.get("messages", body.get("contents", body.get("input")))
        if isinstance(latest, list) and "input" not in body:
            latest = latest[-1]          # Anthropic / Gemini: the last user message
        png = images_in(latest)[-1]
        width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
        obs = Observation(png=png, sha256=hashlib.sha256(png).hexdigest(), width=width, height=height,
                          turn=self.turn, turns_left=self.max_turns - self.turn, actions_left=64,
                          deadline_ms_left=100000, mode=self.mode)
        self.turn += 1
        response = self.policy(obs)
        self.responses.append(response)
        return response


def transport_for(adapter: str, url: str):
    if adapter.startswith("anthropic-"):
        tool = "computer_" + adapter.rsplit("-", 1)[1]
        return AnthropicTransport(TASK, "claude-test", KEY, display=(WIDTH, HEIGHT), base_url=url, tool=tool)
    if adapter.startswith("openai-"):
        return OpenAITransport(TASK, "computer-use-test", KEY, display=(WIDTH, HEIGHT), base_url=url,
                               preview=adapter == "openai-computer-use-preview")
    return GeminiTransport(TASK, "gemini-test", KEY, base_url=url,
                           function_set="3.5" if adapter.endswith("3.5") else "2.5")


@pytest.mark.evident_display(width=WIDTH, height=HEIGHT)
@pytest.mark.parametrize("adapter", ["anthropic-computer-20250124", "anthropic-computer-20251124", "openai-computer",
                                     "openai-computer-use-preview", "gemini-computer-use", "gemini-computer-use-3.5"])
def test_ocr_policy_as_the_model_behind_each_transport(evident_display, form, adapter):
    """Stage then attest, end to end: transport -> loopback HTTP -> the OCR policy reading the
    frame the transport sent -> its native response -> the engine's adapter -> real input ->
    the form app. Every call of a response is answered in the next request, every image sent is
    one of the task's issued frames, and the app's log shows exactly the values typed."""
    app, log, _ = form
    runs = []
    for mode, prior in (("stage", None), ("attest", "stage")):
        model = OcrModel(adapter, mode, 12 if mode == "stage" else 2)
        server = ProviderServer(respond=model)
        try:
            transport = transport_for(adapter, server.url)
            assert transport.adapter == adapter
            run = run_task(evident_display, app, transport, task=TASK, mode=mode,
                           prior=runs[0] if prior else None)
        finally:
            server.close()
        assert not server.errors, server.errors
        assert run.receipt["policy"]["adapter"] == adapter
        assert run.receipt["result"] == {"result_line": OCR_LINE, "confirmed": True}
        bodies = [r["body"] for r in server.requests]
        assert len(bodies) == len(model.responses) == run.turn_count
        for png in (p for b in bodies for p in images_in(b)):
            assert issued(run, png)
        for response, nxt in zip(model.responses, bodies[1:]):
            latest = nxt.get("messages", nxt.get("contents", nxt.get("input")))
            latest = latest if "input" in nxt else latest[-1]
            assert answers_in(latest) == calls_in(response)
        runs.append(run)
    stage, attest = runs
    assert submits(log) == [OCR_VALUES]
    assert attest.receipt["prior_receipt_id"] == stage.receipt_id and attest.turn_count == 2


@pytest.mark.evident_display(width=WIDTH, height=HEIGHT)
def test_refused_turns_inject_nothing(evident_display, form):
    app, log, at = form
    name = {"type": "click", "x": at["Name"][0], "y": at["Name"][1]}
    submit = {"type": "click", "x": at["Submit"][0], "y": at["Submit"][1]}
    policy = {"adapter": "evident", "provider": "test", "model": "scripted"}
    # A valid call and a forbidden action in the same turn: the whole turn is refused.
    bad = {"calls": [{"id": "a", "actions": [name, {"type": "type", "text": "X"}, submit]},
                     {"id": "b", "actions": [{"type": "paste", "text": "Y"}]}]}
    with pytest.raises(TaskError) as info:
        run_task(evident_display, app, ScriptedPolicy([bad]), task=TASK, **policy)
    assert info.value.code == "task-action-forbidden"
    # Input in attest is refused (lineage from a real stage run first).
    stage = run_task(evident_display, app, ScriptedPolicy([{"result": {"stage": True}}]), task=TASK, **policy)
    typing = {"calls": [{"id": "a", "actions": [name, {"type": "type", "text": "X"}, submit]}]}
    with pytest.raises(TaskError) as info:
        run_task(evident_display, app, ScriptedPolicy([typing]), task=TASK, mode="attest", prior=stage, **policy)
    assert info.value.code == "task-attest-input-refused"
    assert submits(log) == []                          # nothing of either turn arrived


@pytest.mark.evident_display(width=WIDTH, height=HEIGHT)
def test_cassette_recorded_through_the_lane_replays_offline(evident_engine, evident_display, form,
                                                            server, tmp_path):
    """Record a run's provider exchanges through the loopback server, then replay them on a
    second display with a fresh app and no server: the replay sends byte-identical requests
    (frames included, which the cassette checks), so the same turns run again."""
    app, log, at = form
    calls = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test",
             "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
             "content": [
                 {"type": "tool_use", "id": "toolu_A", "name": "computer",
                  "input": {"action": "left_click", "coordinate": list(at["Name"])}},
                 {"type": "tool_use", "id": "toolu_B", "name": "computer", "input": {"action": "type", "text": "Ada"}},
                 {"type": "tool_use", "id": "toolu_C", "name": "computer",
                  "input": {"action": "left_click", "coordinate": list(at["Submit"])}}]}
    final = {"id": "msg_02", "type": "message", "role": "assistant", "model": "claude-test",
             "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
             "content": [{"type": "text", "text": final_text({"name": "Ada"})}]}
    server.reply(calls)
    server.reply(final)
    cassette = tmp_path / "run.cassette.json"
    recording = CassetteHttp(str(cassette), "record", inner=UrllibHttp())
    policy = AnthropicTransport(TASK, "claude-test", KEY, display=(WIDTH, HEIGHT), base_url=server.url,
                                http=recording)
    recorded = run_task(evident_display, app, policy, task=TASK)
    assert KEY not in cassette.read_text(encoding="utf-8")

    with evident_engine.create_display(width=WIDTH, height=HEIGHT) as second:
        log2 = tmp_path / "form2.jsonl"
        app2 = second.launch([sys.executable, str(FORM_APP), "--log", str(log2)], wait_window_ms=10000)
        wait_for(lambda: any(e["event"] == "ready" for e in read_log(log2)), timeout=10, what="the second form")
        replaying = CassetteHttp(str(cassette), "replay")
        policy2 = AnthropicTransport(TASK, "claude-test", "not-the-key", display=(WIDTH, HEIGHT),
                                     base_url="http://127.0.0.1:9", http=replaying)
        replayed = run_task(second, app2, policy2, task=TASK)
        assert replaying.finished
        assert replayed.shown == recorded.shown              # the same frames, turn by turn
        assert replayed.receipt["result"] == recorded.receipt["result"]
        assert submits(log2) == submits(log) == [{"Name": "Ada", "Email": ""}]
        app2.stop()


@pytest.mark.evident_display(width=WIDTH, height=HEIGHT)
def test_ctrl_c_during_a_turn_aborts_the_task_once_the_turn_returns(evident_display, form, monkeypatch,
                                                                   python_handles_sigint):
    app, log, at = form
    policy = {"adapter": "evident", "provider": "test", "model": "scripted"}
    script = ScriptedPolicy([{"calls": [{"id": "w", "actions": [{"type": "wait", "ms": 3000}]}]}, {"result": {}}])
    seen: List[Any] = []
    original = Task.turn

    def turn(self: Task, response: Dict[str, Any]) -> Dict[str, Any]:
        seen.append(self)
        return original(self, response)

    monkeypatch.setattr(Task, "turn", turn)     # only to learn the task's id
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        run_task(evident_display, app, script, task=TASK, **policy)
    timer.join()
    monkeypatch.undo()
    assert time.monotonic() - started < 2.5              # control came back while the wait ran
    task = seen[0]
    status = wait_for(lambda: (lambda s: s if s["phase"] != "running" else None)(task.status()),
                      timeout=10, what="the task to end")
    assert status["phase"] == "aborted" and task.aborted
    # The display is free again: a new task can begin on it.
    run = run_task(evident_display, app, ScriptedPolicy([{"result": {"after": True}}]), task=TASK, **policy)
    assert run.result == {"after": True}
