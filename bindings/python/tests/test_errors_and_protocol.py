"""Unit tests of the pure-Python layer against a scripted backend: error codes map to one
exception hierarchy, Session tracks the sequence exactly like a careful CLI caller would, and
Ctrl-C during a long call returns control promptly and aborts the session once the in-flight
request completes."""
import ast
import json
import os
import pickle
import signal
import threading

import pytest

import evident
from evident import actions as a
from evident.display import Display
from evident.errors import error_from_reply

from fake_backend import FakeBackend, FakeSessions
from ctrl_c import python_handles_sigint  # noqa: F401  (a fixture)

DEADLINE_S = 10
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


@pytest.mark.parametrize("code,cls", [
    ("session-sequence", evident.SessionError),
    ("session-action-forbidden", evident.SessionError),
    ("display-generation-mismatch", evident.DisplayError),
    ("app-not-live", evident.AppError),
    ("receipt-json", evident.ReceiptError),
    ("verify-failed", evident.ReceiptError),
    ("engine-closed", evident.EngineError),
    ("request-json", evident.UsageError),
    ("something-new", evident.EvidentError),
])
def test_error_codes_map_to_families(code, cls):
    err = error_from_reply({"ok": False, "error": {"code": code, "message": "m", "retryable": True}})
    assert type(err) is cls
    assert isinstance(err, evident.EvidentError)
    assert (err.code, err.message, err.retryable) == (code, "m", True)
    back = pickle.loads(pickle.dumps(err))   # xdist ships exceptions between processes
    assert type(back) is cls and back.code == code and back.retryable is True


def test_malformed_reply_is_an_engine_error():
    assert error_from_reply({"ok": False}).code == "engine-reply"


def test_builders_produce_the_protocol_json():
    assert a.click(1, 2) == {"type": "click", "x": 1, "y": 2}
    assert a.click(1, 2, "right") == {"type": "click", "x": 1, "y": 2, "button": "right"}
    assert a.drag(1, 2, 3, 4) == {"type": "drag", "start_x": 1, "start_y": 2, "end_x": 3,
                                  "end_y": 4}
    assert a.scroll(5, 6, "down", 2) == {"type": "scroll", "x": 5, "y": 6, "direction": "down",
                                         "amount": 2}
    assert a.type("Zoë\n") == {"type": "type", "text": "Zoë\n"}
    assert a.key("ctrl+a") == {"type": "key", "key": "ctrl+a"}
    assert a.hold_key("shift", 50) == {"type": "hold_key", "key": "shift", "ms": 50}
    assert a.zoom(0, 0, 10, 10) == {"type": "zoom", "x": 0, "y": 0, "width": 10, "height": 10}


def _engine_and_display():
    backend = FakeBackend()
    engine = evident.Engine(backend=backend)
    display = Display(engine, {"id": 7, "name": ":7", "generation": "gen-" + "0" * 32,
                               "width": 8, "height": 8})
    return backend, engine, display


def test_app_alive_is_exactly_the_alive_field_of_app_list():
    backend, engine, _ = _engine_and_display()
    listed = []
    backend.on("app.list", lambda args: {"ok": True, "apps": list(listed)})
    app = evident.App(engine, {"app_id": "app-1", "display_id": 7, "generation": "g", "pid": 5})
    assert app.alive is False                                   # not listed: stopped or gone
    listed[:] = [{"app_id": "app-2", "alive": True}]
    assert app.alive is False                                   # another app
    listed[:] = [{"app_id": "app-1", "alive": True}]
    assert app.alive is True
    listed[:] = [{"app_id": "app-1", "alive": False, "exit_status": 3}]
    assert app.alive is False and app.exit_status == 3         # exited on its own
    listed[:] = [{"app_id": "app-1", "running": True, "state": "running", "live": True}]
    assert app.alive is False                                   # no other field is guessed at
    assert {r["op"] for r in backend.requests} == {"app.list"}


def test_session_tracks_sequence_and_finishes_with_observed_digest():
    backend, engine, display = _engine_and_display()
    fake = FakeSessions(backend)
    with display.session("app-1", attempt_id="att", job_sha256="f" * 64) as s:
        assert s.sequence == 0 and s.phase == "stage"
        results = s.actions([a.click(1, 1), a.type("x")])
        assert [r.status for r in results] == ["injected", "injected"]
        assert s.sequence == 1
        s.freeze()
        s.observe()
        receipt = s.finish({"ok": True})
        assert receipt["claims"] == {"ok": True}
    assert s.closed_reply["cleanup_complete"] is True
    assert [op for op, _ in fake.ops] == ["begin", "actions", "freeze", "observe", "finish",
                                          "close"]
    assert [seq for _, seq in fake.ops][1:] == [0, 1, 2, 3, 4]
    begin = [r for r in backend.requests if r["op"] == "session"][0]
    assert '"attempt_id":"att"' in begin["args"]["request"]


def test_protocol_errors_raise_session_error_and_block_aborts():
    backend, engine, display = _engine_and_display()
    fake = FakeSessions(backend)
    with pytest.raises(evident.SessionError) as info:
        with display.session("app-1") as s:
            s.observe("0" * 64)           # wrong phase: still staging
    assert info.value.code == "session-phase"
    assert fake.ops[-1][0] == "abort" and s.aborted
    with pytest.raises(evident.SessionError) as info:
        s.actions([])
    assert info.value.code == "session-actions"


def test_closed_engine_refuses_calls():
    backend, engine, display = _engine_and_display()
    engine.close()
    assert backend.closed
    with pytest.raises(evident.EngineError) as info:
        engine.ping()
    assert info.value.code == "engine-closed"


def test_ctrl_c_interrupts_the_wait_and_aborts_after_the_call_completes(python_handles_sigint):
    started, release, aborted = threading.Event(), threading.Event(), threading.Event()

    def hold():
        started.set()
        assert release.wait(DEADLINE_S)

    backend, engine, display = _engine_and_display()
    fake = FakeSessions(backend, block=hold)
    original = fake.handle

    def handle(args):
        reply = original(args)
        if fake.ops[-1][0] == "abort":
            aborted.set()
        return reply

    backend.on("session", handle)
    s = display.session("app-1")

    def interrupt():
        assert started.wait(DEADLINE_S)
        os.kill(os.getpid(), signal.SIGINT)

    t = threading.Thread(target=interrupt)
    t.start()
    with pytest.raises(KeyboardInterrupt):
        s.actions([a.wait(5000)])
    t.join()
    # Control came back while the request is still in flight; the abort waits for it.
    assert not aborted.is_set()
    release.set()
    assert aborted.wait(DEADLINE_S)
    assert [op for op, _ in fake.ops] == ["begin", "actions", "status", "abort"]
    assert fake.ops[-1][1] == 1     # the abort carried the sequence the engine had reached
    engine.close()


def _protocol_file():
    # The source itself, not the generated _protocol module the code under test reads.
    with open(os.path.join(ROOT, "protocol", "evident.json"), encoding="utf-8") as f:
        return json.load(f)


def test_every_family_of_the_protocol_file_has_its_exported_class():
    doc = _protocol_file()
    for family, spec in doc["error_families"].items():
        cls = getattr(evident, spec["python_class"])
        assert issubclass(cls, evident.EvidentError) and cls is not evident.EvidentError
        assert cls.family == family
        assert spec["python_class"] in evident.__all__


def test_every_code_of_the_protocol_file_raises_the_class_of_its_family():
    doc = _protocol_file()
    assert len(doc["errors"]) > 100
    for code, spec in doc["errors"].items():
        want = getattr(evident, doc["error_families"][spec["family"]]["python_class"])
        err = error_from_reply({"ok": False, "error": {"code": code, "message": "m"}})
        assert type(err) is want, code
        assert evident.error_class_for(code) is want, code


@pytest.mark.parametrize("code,cls", [
    # codes that fell through to the base class when the classes were chosen by code prefix
    ("keymap-restore-failed", evident.ActionError),
    ("keymap-no-spare-keycode", evident.ActionError),
    ("paste-failed", evident.ActionError),
    ("text-invalid-utf8", evident.ActionError),
    ("fs-error", evident.EngineError),
    ("fs-too-large", evident.EngineError),
    ("agent-cassette", evident.TaskError),
])
def test_codes_without_a_family_prefix_raise_their_family_class(code, cls):
    assert type(error_from_reply({"ok": False, "error": {"code": code}})) is cls


@pytest.mark.parametrize("code", ["session-something-newer", "capture-something-newer",
                                  "something-new", "request-", "x"])
def test_an_undeclared_code_raises_the_base_class(code):
    assert code not in _protocol_file()["errors"]
    err = error_from_reply({"ok": False, "error": {"code": code, "message": "m"}})
    assert type(err) is evident.EvidentError and err.code == code


def _raised_codes():
    """(file:line, class name, code) of every ``SomeError("kebab-code", ...)`` in the package."""
    pkg = os.path.join(ROOT, "bindings", "python", "evident")
    for dirpath, _, names in os.walk(pkg):
        for name in sorted(n for n in names if n.endswith(".py")):
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Call) and node.args
                        and isinstance(node.args[0], ast.Constant)
                        and isinstance(node.args[0].value, str)):
                    continue
                cls = node.func.id if isinstance(node.func, ast.Name) else ""
                if isinstance(getattr(evident, cls, None), type) or cls == "AgentError":
                    yield f"{os.path.relpath(path, pkg)}:{node.lineno}", cls, node.args[0].value


def test_every_code_the_package_raises_is_declared_with_that_class_family():
    from evident.agent import AgentError
    doc = _protocol_file()
    seen = 0
    for where, cls_name, code in _raised_codes():
        cls = AgentError if cls_name == "AgentError" else getattr(evident, cls_name)
        if not issubclass(cls, evident.EvidentError):
            continue
        seen += 1
        assert code in doc["errors"], (where, code)
        family = doc["errors"][code]["family"]
        # the class of the family, or a subclass of it (WaitTimeout, AgentError)
        assert issubclass(cls, getattr(evident, doc["error_families"][family]["python_class"])), \
            (where, cls_name, code)
        assert cls.family == family, (where, cls_name, code)
    assert seen > 30


def test_standalone_verifier_agrees_with_the_protocol_file():
    # verify.py keeps its own copies so it runs as a single file; they must equal the protocol's.
    from evident import _protocol, verify
    assert verify.SESSION_ACTIONS == _protocol.SESSION_ACTION_KINDS
    assert verify.MAX_RECEIPT_FILE_BYTES == _protocol.LIMITS["receipt_file_max_bytes"]
    assert verify.MAX_FRAME_FILE_BYTES == _protocol.LIMITS["frame_file_max_bytes"]
    assert verify.MAX_CLAIMS_CANONICAL_BYTES == _protocol.LIMITS["claims_max_canonical_bytes"]
    assert verify.MAX_JSON_DEPTH == _protocol.LIMITS["json_depth_max"]


def test_action_builders_cover_every_declared_action_kind():
    from evident import _protocol
    for kind in _protocol.ACTION_KINDS:
        assert callable(getattr(a, kind)), kind
        assert kind in a.__all__


def test_batch_results_are_the_objects_their_init_builds():
    """BatchResult/ActionResult/Observation.from_json fill the frozen dataclasses without their
    __init__ (docs/performance.md, "The per-call cost"): the same fields, dict, equality, hash,
    repr, pickling and immutability as built by __init__; a subclass still gets its __init__."""
    from dataclasses import FrozenInstanceError, fields

    from evident._data import ActionResult, BatchResult, Observation, PngInfo

    png = {"path": "/f.png", "sha256": "ab" * 32, "byte_length": 9, "width": 3, "height": 2}
    reply = {"ok": True, "results": [
        {"index": 0, "type": "click", "status": "injected", "detail": "", "extra": 1},
        {"index": 1, "type": "screenshot", "status": "ok", "detail": "d", "png": png}],
        "observation": {"kind": "ax", "reason": "", "ax": {"text": "t", "truncated": False}},
        "settle": {"outcome": "off", "elapsed_ms": 0}}
    built = BatchResult.from_json(reply)
    results = [ActionResult(r["index"], r["type"], r["status"], r["detail"], dict(r))
               for r in reply["results"]]
    expected = BatchResult(results, Observation("ax", "", None, {"text": "t", "truncated": False}),
                           {"outcome": "off", "elapsed_ms": 0}, dict(reply))
    assert built == expected and repr(built) == repr(expected)
    for got, want in [(built, expected), (built.observation, expected.observation),
                      *zip(built.results, expected.results)]:
        assert type(got) is type(want) and vars(got) == vars(want)
        assert list(vars(got)) == [f.name for f in fields(want)]
        assert pickle.loads(pickle.dumps(got)) == want
        with pytest.raises(FrozenInstanceError):
            got.raw = {}  # type: ignore[misc]
    assert hash(built.results[0]) == hash(expected.results[0])
    assert built.results[1].png == PngInfo.from_json(png) and built.observation.text == "t"
    assert Observation.from_json(None) is None and Observation.from_json({}) is None

    seen = []

    class Mine(ActionResult):
        def __init__(self, *args, **kw):
            seen.append(kw)
            super().__init__(*args, **kw)

    mine = Mine.from_json(reply["results"][0])
    assert type(mine) is Mine and seen and vars(mine) == vars(results[0])
