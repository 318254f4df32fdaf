"""The task lane in-process from Python: `Engine.request("task", {"request": text})` reaches the
engine's `task` op (docs/agents.md "The lane") on real Xvfb with xmessage as the app. A stage
task is begun, takes one screenshot turn, gets a retry prompt for an invalid final answer and
ends with a valid one in a task receipt; refusals come back as the task codes; a task request
larger than the 256 KiB envelope of other ops is admitted (its bound is the task op's)."""
import json
import os

import pytest

import evident

XMESSAGE = ["xmessage", "-geometry", "200x80+0+0", "evident"]
TASK_SHA = "c" * 64


def task(engine, request):
    text = request if isinstance(request, str) else json.dumps(request)
    return engine.request("task", {"request": text})


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    state = str(tmp_path_factory.mktemp("state"))
    with evident.Engine(state_dir=state) as engine:
        with engine.create_display(width=320, height=200) as display:
            app = display.launch(XMESSAGE, wait_window_ms=10000)
            yield engine, display, app, state


def begin(engine, display, app, attempt):
    return task(engine, {"op": "begin", "mode": "stage", "display_id": display.id,
                         "generation": display.generation, "app_id": app.id,
                         "attempt_id": attempt, "task_sha256": TASK_SHA,
                         "policy": {"adapter": "evident", "provider": "scripted", "model": "none"}})


def test_a_stage_task_runs_from_python_and_ends_in_a_signed_receipt(world):
    engine, display, app, state = world
    b = begin(engine, display, app, "py-1")
    assert b["ok"] is True, b
    tid = b["task_id"]
    assert tid.startswith("tsk-") and b["phase"] == "running" and b["sequence"] == 0
    assert b["turns_left"] == 12 and b["actions_left"] == 64
    assert os.path.isfile(b["frame"]["path"])

    t = task(engine, {"op": "turn", "task_id": tid, "sequence": 0,
                      "response": {"calls": [{"id": "shot", "actions": [{"type": "screenshot"}]}]}})
    assert t["ok"] is True, t
    assert t["tool_results"]["results"][0]["status"] == "ok"
    assert t["turn_count"] == 1 and t["actions_left"] == 63

    r = task(engine, {"op": "turn", "task_id": tid, "sequence": 1, "response": {"result": [1, 2]}})
    assert r["ok"] is True, r
    assert r["result_error"]["code"] == "task-result-invalid"
    assert r["retry_prompt"] == {"retry": {"code": "task-result-invalid",
                                           "message": r["retry_prompt"]["retry"]["message"]}}

    f = task(engine, {"op": "turn", "task_id": tid, "sequence": 2,
                      "response": {"result": {"seen": "xmessage"}}})
    assert f["ok"] is True, f
    assert f["phase"] == "finished" and f["cleanup_complete"] is True
    receipt = f["receipt"]
    assert receipt["schema"] == "evident.task-receipt/v1"
    assert receipt["receipt_id"].startswith("etr-") and receipt["receipt_id"] == f["receipt_id"]
    with open(f["receipt_path"], "rb") as fh:
        assert json.loads(fh.read()) == receipt
    with open(f["envelope_path"]) as fh:
        envelope = json.load(fh)
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    assert task(engine, {"op": "status", "task_id": tid})["phase"] == "finished"


def test_refusals_are_task_codes_and_a_large_turn_passes_the_envelope(world):
    engine, display, app, _ = world
    assert task(engine, "{")["error"]["code"] == "task-json"
    assert task(engine, {"op": "status", "task_id": "tsk-" + "0" * 32})["error"]["code"] == "task-not-found"
    b = begin(engine, display, app, "py-2")
    tid = b["task_id"]
    assert task(engine, {"op": "turn", "task_id": tid, "sequence": 5,
                         "response": {"result": {}}})["error"]["code"] == "task-sequence"
    # Above the 256 KiB envelope of every other op, within the task op's: the task layer judges
    # it (a 300 KiB result is over the 16 KiB result bound: an invalid final answer, counted).
    big = {"op": "turn", "task_id": tid, "sequence": 0, "response": {"result": {"pad": "x" * 300_000}}}
    r = task(engine, big)
    assert r["ok"] is True, r.get("error")
    assert r["result_error"]["code"] == "task-result-invalid"
    # A session request that large is still request-too-large.
    s = engine.request("session", {"request": "x" * 300_000})
    assert s["error"]["code"] == "request-too-large"
    a = task(engine, {"op": "abort", "task_id": tid, "sequence": 1})
    assert a["ok"] is True and a["phase"] == "aborted"


def test_settle_chosen_at_begin_reaches_every_frame_after_input(world):
    """task.begin `settle`: off takes each frame straight after its action (results say "off"),
    a chosen quiet time and cap wait for the real display's quiet (settled or still_loading),
    the default is on; a bad value is task-command and begins nothing (the display stays free)."""
    engine, display, app, _ = world
    move = {"calls": [{"id": "m", "actions": [{"type": "move_mouse", "x": 300, "y": 190}]}]}

    def run(attempt, settle):
        request = {"op": "begin", "mode": "stage", "display_id": display.id,
                   "generation": display.generation, "app_id": app.id, "attempt_id": attempt,
                   "task_sha256": TASK_SHA,
                   "policy": {"adapter": "evident", "provider": "scripted", "model": "none"}}
        if settle is not None:
            request["settle"] = settle
        b = task(engine, request)
        assert b["ok"] is True, b
        t = task(engine, {"op": "turn", "task_id": b["task_id"], "sequence": 0, "response": move})
        assert t["ok"] is True, t
        a = task(engine, {"op": "abort", "task_id": b["task_id"], "sequence": 1})
        assert a["ok"] is True
        return b["settle"], t["results"][0]["actions"][0]["settle"]

    assert run("py-settle-off", False) == (False, "off")
    shown, outcome = run("py-settle-ms", {"quiet_ms": 20, "cap_ms": 200})
    assert shown == {"quiet_ms": 20, "cap_ms": 200} and outcome in ("settled", "still_loading")
    shown, outcome = run("py-settle-default", None)
    assert shown == {"quiet_ms": 300, "cap_ms": 2000} and outcome in ("settled", "still_loading")
    for bad in ({"quiet_ms": 0}, {"cap_ms": 5001}, {"quiet_ms": 50, "cap_ms": 10}, "off", 300):
        r = task(engine, {"op": "begin", "mode": "stage", "display_id": display.id,
                          "generation": display.generation, "app_id": app.id, "attempt_id": "py-bad",
                          "task_sha256": TASK_SHA, "settle": bad,
                          "policy": {"adapter": "evident", "provider": "scripted", "model": "none"}})
        assert r["error"]["code"] == "task-command", (bad, r)
    assert run("py-settle-after", False) == (False, "off")   # nothing was left holding the display
