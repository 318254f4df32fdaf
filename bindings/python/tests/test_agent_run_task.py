"""``evident.agent.run_task``'s pure logic against a scripted task lane (the engine's ``task`` op
stood in by tests/fake_backend.py's FakeBackend): the requests it sends (begin's fields, each
turn's exact sequence and the policy's response as given), what the policy is shown (the frame
files and the tool-result images the lane issued, byte for byte), how it stops (a receipt, a
refusal, a task ended without a receipt), and what it aborts (a policy error, Ctrl-C). The lane
itself runs against the real engine in test_agent_task_lane.py."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import threading
import time
import zlib
from typing import Any, Dict, List, Optional

import pytest

from evident import Engine, TaskError
from evident.agent import (AgentError, AnthropicTransport, Observation, ScriptedPolicy, Task,
                           TaskRun, run_task, task_sha256)
from evident.errors import EvidentError

from fake_backend import FakeBackend
from ctrl_c import python_handles_sigint  # noqa: F401  (a fixture)

TASK = "fill in the form"
POLICY = {"adapter": "evident", "provider": "test", "model": "scripted-1"}


def png_of(width: int, height: int, shade: int) -> bytes:
    """A real PNG (grey, ``shade``) of the given size."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (len(data).to_bytes(4, "big") + kind + data
                + zlib.crc32(kind + data).to_bytes(4, "big"))
    raw = b"".join(b"\x00" + bytes([shade]) * width for _ in range(height))
    ihdr = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 0, 0, 0, 0])
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))


class FakeTaskLane:
    """Enough of the task lane to exercise run_task: begin → running with frame 0 as a file;
    each turn with calls answers frame n as the evident adapter's tool result; a final answer
    finishes with a receipt. ``refuse`` maps a turn index to an error code (the lane ends the
    task, as the engine does); ``end_phase`` maps a turn index to a phase ended in an ok reply."""

    def __init__(self, backend: FakeBackend, tmp_path: Any, *, refuse: Optional[Dict[int, str]] = None,
                 end_phase: Optional[Dict[int, str]] = None, block: Any = None,
                 ended_error: Optional[Dict[str, Any]] = None, paths: bool = True) -> None:
        self.tmp = tmp_path
        self.ended_error = ended_error
        self.paths = paths      # False: frames after begin name no file (a remote daemon's)
        self.refuse = refuse or {}
        self.end_phase = end_phase or {}
        self.block = block
        self.requests: List[Dict[str, Any]] = []
        self.issued: List[bytes] = []       # every image the lane issued, in order
        self.phase = ""
        self.sequence = 0
        self.turns = 0
        self.begin_req: Dict[str, Any] = {}
        backend.on("task", self.handle)

    def frame(self) -> Dict[str, Any]:
        png = png_of(8 + len(self.issued), 6, 40 + len(self.issued))
        self.issued.append(png)
        path = self.tmp / f"frame-{len(self.issued):03d}.png"
        path.write_bytes(png)
        return {"sha256": hashlib.sha256(png).hexdigest(), "width": 8 + len(self.issued) - 1,
                "height": 6, "path": str(path)}

    def snap(self, **extra: Any) -> Dict[str, Any]:
        base = {"ok": True, "task_id": "tsk-" + "b" * 32, "sequence": self.sequence,
                "mode": self.begin_req.get("mode"), "phase": self.phase, "turn_count": self.turns,
                "turns_left": 12 - self.turns, "actions_left": 64, "deadline_ms_left": 170000,
                "results": None, "tool_results": None, "retry_prompt": None, "receipt": None}
        base.update(extra)
        return base

    @staticmethod
    def err(code: str) -> Dict[str, Any]:
        return {"ok": False, "error": {"code": code, "message": "refused", "retryable": False}}

    def handle(self, args: Dict[str, Any]) -> Dict[str, Any]:
        req = json.loads(args["request"])
        self.requests.append(req)
        op = req["op"]
        if op == "begin":
            self.begin_req = req
            self.phase, self.sequence = "running", 0
            return self.snap(frame=self.frame())
        if op == "status":
            return self.snap()
        if req.get("sequence") != self.sequence:
            return self.err("task-sequence")
        if op == "abort":
            if self.phase != "running":
                return self.err("task-phase")
            self.phase = "aborted"
            self.sequence += 1
            return self.snap()
        assert op == "turn" and self.phase == "running"
        index = self.turns
        if self.block is not None:
            self.block()
        if index in self.refuse:
            self.phase = "failed"
            return self.err(self.refuse[index])
        self.turns += 1
        self.sequence += 1
        if index in self.end_phase:
            self.phase = self.end_phase[index]
            return self.snap(deadline_ms_left=None, ended={"reason": "failed", "error": self.ended_error,
                                                            "cleanup_error": None})
        response = req["response"]
        if "result" in response:
            self.phase = "finished"
            return self.snap(frame=self.frame(), receipt={
                "receipt_id": "etr-" + "c" * 64, "schema": "evident.task-receipt/v1",
                "result": response["result"], "binding": {"attempt_id": self.begin_req["attempt_id"]}},
                receipt_path=str(self.tmp / "receipt.json"), evidence_dir=str(self.tmp))
        frame = self.frame()
        if not self.paths:
            del frame["path"]
        # Each call answers with the frame, except a zoom call, which answers with its crop.
        crop = png_of(3, 3, 200)
        tool_results = {"results": [{"id": c["id"], "status": "ok", "detail": "",
                                     "png_base64": base64.b64encode(
                                         crop if c["actions"][-1]["type"] == "zoom" else self.issued[-1]).decode()}
                                    for c in response["calls"]]}
        results = [{"call": i, "native_actions": [a["type"] for a in c["actions"]], "status": "ok",
                    "actions": []} for i, c in enumerate(response["calls"])]
        return self.snap(frame=frame, tool_results=tool_results, results=results)


def calls(*types: str) -> Dict[str, Any]:
    return {"calls": [{"id": f"c{i}", "actions": [{"type": t}]} for i, t in enumerate(types)]}


class FakeDisplay:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.id = 7
        self.generation = "gen-" + "d" * 32


@pytest.fixture
def lane_setup(tmp_path):
    backend = FakeBackend()
    engine = Engine(backend=backend)
    yield backend, engine, FakeDisplay(engine), tmp_path
    engine.close()


def test_begin_turns_and_receipt(lane_setup):
    backend, engine, display, tmp = lane_setup
    lane = FakeTaskLane(backend, tmp)
    script = ScriptedPolicy([calls("screenshot"), calls("screenshot", "screenshot"), {"result": {"done": True}}])
    run = run_task(display, "app-1", script, task=TASK, attempt_id="att-1", **POLICY)
    assert isinstance(run, TaskRun)
    begin = lane.requests[0]
    assert begin == {"op": "begin", "mode": "stage", "display_id": 7, "generation": display.generation,
                     "app_id": "app-1", "attempt_id": "att-1", "task_sha256": hashlib.sha256(TASK.encode()).hexdigest(),
                     "policy": POLICY}
    assert "prior_receipt_id" not in begin
    assert "settle" not in begin          # the engine's default unless asked
    turns = [r for r in lane.requests if r["op"] == "turn"]
    assert [t["sequence"] for t in turns] == [0, 1, 2]
    assert [t["response"] for t in turns] == script._responses        # exactly as the policy gave them
    # The policy saw the lane's images byte for byte: frame 0 (a file), then each turn's tool image.
    assert [o.png for o in script.observations] == lane.issued[:3]
    assert run.shown == [hashlib.sha256(p).hexdigest() for p in lane.issued[:3]]
    first, second = script.observations[0], script.observations[1]
    assert (first.turn, first.tool_results, first.mode, first.width, first.height) == (0, None, "stage", 8, 6)
    assert second.turn == 1 and second.tool_results["results"][0]["id"] == "c0"
    assert second.results[0]["native_actions"] == ["screenshot"]
    assert second.frame_sha256 == hashlib.sha256(lane.issued[1]).hexdigest()
    assert run.result == {"done": True} and run.receipt_id == "etr-" + "c" * 64
    assert run.receipt_path == str(tmp / "receipt.json") and run.evidence_dir == str(tmp)
    assert (run.mode, run.turn_count, run.attempt_id, run.policy) == ("stage", 3, "att-1", POLICY)
    assert not [r for r in lane.requests if r["op"] == "abort"]


def test_settle_is_sent_in_begin_as_given(lane_setup):
    backend, engine, display, tmp = lane_setup
    for settle in (False, True, {"quiet_ms": 50, "cap_ms": 400}):
        lane = FakeTaskLane(backend, tmp)
        run_task(display, "app-1", ScriptedPolicy([{"result": {}}]), task=TASK, settle=settle, **POLICY)
        assert lane.begin_req["settle"] == settle


def test_attest_takes_lineage_and_attempt_from_the_stage_run(lane_setup):
    backend, engine, display, tmp = lane_setup
    FakeTaskLane(backend, tmp)
    stage = run_task(display, "app-1", ScriptedPolicy([{"result": {"a": 1}}]), task=TASK, **POLICY)
    assert stage.attempt_id.startswith("att-")
    lane = FakeTaskLane(backend, tmp)
    attest = run_task(display, "app-1", ScriptedPolicy([{"result": {"a": 1}}]), task=TASK,
                      mode="attest", prior=stage, **POLICY)
    assert lane.begin_req["mode"] == "attest"
    assert lane.begin_req["prior_receipt_id"] == stage.receipt_id
    assert lane.begin_req["attempt_id"] == stage.attempt_id == attest.attempt_id
    # A receipt object or a bare id work as prior too.
    lane = FakeTaskLane(backend, tmp)
    run_task(display, "app-1", ScriptedPolicy([{"result": {}}]), task=TASK, mode="attest",
             prior=stage.receipt, **POLICY)
    assert (lane.begin_req["prior_receipt_id"], lane.begin_req["attempt_id"]) == (stage.receipt_id, stage.attempt_id)
    lane = FakeTaskLane(backend, tmp)
    run_task(display, "app-1", ScriptedPolicy([{"result": {}}]), task=TASK, mode="attest",
             prior=stage.receipt_id, attempt_id="att-x", **POLICY)
    assert (lane.begin_req["prior_receipt_id"], lane.begin_req["attempt_id"]) == (stage.receipt_id, "att-x")


def test_refused_turn_raises_the_engines_code_and_sends_no_abort(lane_setup):
    backend, engine, display, tmp = lane_setup
    lane = FakeTaskLane(backend, tmp, refuse={1: "task-forbidden-tool-call"})
    script = ScriptedPolicy([calls("screenshot"), calls("screenshot"), {"result": {}}])
    with pytest.raises(TaskError) as info:
        run_task(display, "app-1", script, task=TASK, **POLICY)
    assert info.value.code == "task-forbidden-tool-call"
    ops = [r["op"] for r in lane.requests]
    assert ops == ["begin", "turn", "turn", "status"]    # the lane had ended it: status, no abort
    assert script.remaining == 1


def test_task_ended_without_receipt_in_an_ok_reply(lane_setup):
    backend, engine, display, tmp = lane_setup
    FakeTaskLane(backend, tmp, end_phase={0: "failed"})
    with pytest.raises(AgentError) as info:
        run_task(display, "app-1", ScriptedPolicy([calls("screenshot")]), task=TASK, **POLICY)
    assert info.value.code == "agent-task-ended" and "failed" in info.value.message
    # When the snapshot says why (ended.error), that error is raised with its class.
    FakeTaskLane(backend, tmp, end_phase={0: "failed"},
                 ended_error={"code": "task-action-failed", "message": "m", "retryable": False})
    with pytest.raises(TaskError) as err:
        run_task(display, "app-1", ScriptedPolicy([calls("screenshot")]), task=TASK, **POLICY)
    assert err.value.code == "task-action-failed"


def test_without_frame_files_the_policy_sees_the_tool_result_image_of_the_frame(lane_setup):
    backend, engine, display, tmp = lane_setup
    lane = FakeTaskLane(backend, tmp, paths=False)
    zoom_last = {"calls": [{"id": "a", "actions": [{"type": "screenshot"}]},
                           {"id": "b", "actions": [{"type": "zoom", "x": 0, "y": 0, "width": 3, "height": 3}]}]}
    script = ScriptedPolicy([zoom_last, {"result": {}}])
    run_task(display, "app-1", script, task=TASK, **POLICY)
    # Turn 1: not the zoom's crop (the last image) but the frame, found by its digest.
    assert script.observations[1].png == lane.issued[1]
    assert script.observations[1].sha256 == script.observations[1].frame_sha256


def test_policy_error_aborts_the_task(lane_setup):
    backend, engine, display, tmp = lane_setup
    lane = FakeTaskLane(backend, tmp)
    script = ScriptedPolicy([calls("screenshot")])          # exhausted on the second turn
    with pytest.raises(AgentError) as info:
        run_task(display, "app-1", script, task=TASK, **POLICY)
    assert info.value.code == "agent-script-exhausted"
    assert [r["op"] for r in lane.requests] == ["begin", "turn", "status", "abort"]
    assert lane.requests[-1]["sequence"] == 1 and lane.phase == "aborted"


def test_a_policy_returning_a_non_object_aborts(lane_setup):
    backend, engine, display, tmp = lane_setup
    lane = FakeTaskLane(backend, tmp)
    with pytest.raises(AgentError) as info:
        run_task(display, "app-1", lambda obs: [], task=TASK, **POLICY)  # type: ignore[arg-type,return-value]
    assert info.value.code == "agent-policy-response"
    assert lane.phase == "aborted" and not [r for r in lane.requests if r["op"] == "turn"]


def test_ctrl_c_in_the_policy_aborts_at_once(lane_setup):
    backend, engine, display, tmp = lane_setup
    lane = FakeTaskLane(backend, tmp)

    def policy(obs: Observation) -> Dict[str, Any]:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_task(display, "app-1", policy, task=TASK, **POLICY)
    assert [r["op"] for r in lane.requests] == ["begin", "status", "abort"]


def test_ctrl_c_during_a_turn_aborts_once_the_turn_returns(lane_setup, python_handles_sigint):
    backend, engine, display, tmp = lane_setup
    release = threading.Event()
    lane = FakeTaskLane(backend, tmp, block=lambda: release.wait(5))
    timer = threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        run_task(display, "app-1", ScriptedPolicy([calls("screenshot"), {"result": {}}]), task=TASK, **POLICY)
    timer.join()
    assert time.monotonic() - started < 2.5              # control came back while the turn ran
    assert [r["op"] for r in lane.requests] == ["begin", "turn"]   # nothing sent concurrently
    release.set()
    deadline = time.monotonic() + 5
    while lane.phase != "aborted" and time.monotonic() < deadline:
        threading.Event().wait(0.02)
    assert lane.phase == "aborted"
    assert [r["op"] for r in lane.requests] == ["begin", "turn", "status", "abort"]
    assert lane.requests[-1]["sequence"] == 1            # the sequence after the completed turn


def test_declared_policy_comes_from_the_policy_or_the_arguments(lane_setup):
    backend, engine, display, tmp = lane_setup
    lane = FakeTaskLane(backend, tmp)
    transport = AnthropicTransport(TASK, "claude-x", "sk-test", display=(8, 6))
    # A transport declares its adapter, provider and model; its HTTP is never reached here.
    with pytest.raises(AgentError):
        run_task(display, "app-1", transport, task=TASK, model="claude-y")
    assert lane.begin_req["policy"] == {"adapter": "anthropic-computer-20250124", "provider": "anthropic",
                                        "model": "claude-y"}
    with pytest.raises(AgentError) as info:
        run_task(display, "app-1", ScriptedPolicy([]), task=TASK, adapter="evident")
    assert info.value.code == "agent-task-args"
    with pytest.raises(AgentError) as info:
        run_task(display, "app-1", ScriptedPolicy([]), task="", **POLICY)
    assert info.value.code == "agent-task-args"
    with pytest.raises(AgentError) as info:
        run_task(display, "app-1", ScriptedPolicy([]), task=TASK, prior=3, **POLICY)  # type: ignore[arg-type]
    assert info.value.code == "agent-task-args"
    assert len([r for r in lane.requests if r["op"] == "begin"]) == 1   # refused before begin


def test_observation_refuses_a_frame_whose_file_differs(lane_setup):
    backend, engine, display, tmp = lane_setup
    lane = FakeTaskLane(backend, tmp)
    original = lane.frame

    def tampered() -> Dict[str, Any]:
        f = original()
        with open(f["path"], "ab") as out:
            out.write(b"x")
        return f

    lane.frame = tampered  # type: ignore[method-assign]
    with pytest.raises(AgentError) as info:
        run_task(display, "app-1", ScriptedPolicy([{"result": {}}]), task=TASK, **POLICY)
    assert info.value.code == "agent-frame"
    assert lane.phase == "aborted"


def test_task_sha256_and_task_repr():
    assert task_sha256("é") == hashlib.sha256("é".encode()).hexdigest()
    backend = FakeBackend()
    with Engine(backend=backend) as engine:
        t = Task(engine, {"task_id": "tsk-" + "a" * 32, "sequence": 3, "phase": "running"}, "stage")
        assert "seq=3" in repr(t) and not t.ended and t.receipt is None
        assert isinstance(EvidentError("x"), Exception)
