"""The object path of short calls (``_core.Engine.call_inline_object``, docs/python.md "The GIL
and Ctrl-C") answers exactly as the text path does.

The same requests go through two ``evident.Engine`` wrappers of one real in-process engine: one
offers them as Python objects (the default), the other only as JSON text (``call_inline`` with
``json`` encoding and decoding, as before the object path existed). Real Xvfb and the fixture app,
which logs every click it receives. Each reply is compared as the text ``json`` writes for it
(values, types, key order), and each case also says which path the object call took: converted
(a dict), or sent as text (False, nothing ran) for what only the strict parser or ``json`` may
judge: floats, integers beyond 2^53-1, non-str keys, subclasses, nesting past json_depth_max,
envelopes past request_max_bytes, lone surrogates, cycles.
"""
import enum
import json
import math
import os
import threading
from pathlib import Path

import pytest

import evident
from evident import _protocol
from evident import actions as a
from evident.engine import load_core

# The fixture app of the build tree the compiled engine comes from (<build>/bindings/core/_core).
FIXTURE_APP = (Path(load_core().__file__).resolve().parents[2] / "fixtures" / "app"
               / "evident-fixture-app")

pytestmark = pytest.mark.skipif(not FIXTURE_APP.exists(), reason="needs evident-fixture-app built")

LIMIT = _protocol.LIMITS["request_max_bytes"]
DEPTH = _protocol.LIMITS["json_depth_max"]
COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class TextOnly:
    """The same _core engine without the object path: what evident.Engine did before it."""

    def __init__(self, core):
        self.call, self.call_inline, self.close = core.call, core.call_inline, core.close


class Int(int):
    pass


class Str(str):
    pass


class Color(enum.IntEnum):
    RED = 1


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("object-path")
    log = tmp / "events.jsonl"
    with evident.Engine(state_dir=str(tmp / "state")) as engine:
        core = engine._backend
        text = evident.Engine(backend=TextOnly(core))
        with engine.create_display(width=640, height=480) as display:
            display.launch([str(FIXTURE_APP), "--events", str(log)], wait_window_ms=10000)
            evident.wait_for(lambda: _ready(log) is not None, 10, "the fixture app's ready event")
            yield engine, text, core, display, log


def _events(log):
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _ready(log):
    if not log.exists():
        return None
    return next((e for e in _events(log) if e.get("type") == "ready"), None)


def _clicks(log):
    return sum(1 for e in _events(log) if e.get("type") == "button_clicked")


def _same(engine, text, op, args):
    """Sends (op, args) through both wrappers; returns the object path's reply, after checking
    that both answered the same text (or raised the same exception type and message)."""
    outcomes = []
    for e in (engine, text):
        try:
            outcomes.append(("reply", COMPACT.encode(e.request(op, args))))
        except Exception as exc:  # noqa: BLE001 - compared below
            outcomes.append((type(exc).__name__, str(exc)))
    assert outcomes[0] == outcomes[1], (op, outcomes)
    return outcomes[0]


def _envelope(display, request, **extra):
    return {"op": "cu.actions", "args": {"display_id": display.id,
                                         "generation": display.generation,
                                         "request": request, **extra}}


def test_a_click_gives_the_same_reply_through_objects_and_text(world):
    engine, text, core, display, log = world
    ready = _ready(log)
    click = a.click(ready["x"] + 120, ready["y"] + 130)   # the middle of the fixture's button
    before = _clicks(log)
    env = _envelope(display, {"actions": [click], "observe": "none"})
    by_object = core.call_inline_object(env)
    assert isinstance(by_object, dict)    # converted, run inline, the reply as objects
    by_text = core.call_inline(COMPACT.encode(env))
    assert by_object["ok"] is True and by_object["results"][0]["status"] in ("ok", "injected")
    # Byte for byte: the reply text json writes for the objects is the engine's own reply text.
    assert COMPACT.encode(by_object) == by_text
    # Through the public API, both wrappers, and each click reached the app.
    for e in (engine, text):
        r = display.__class__(e, display.raw).actions([click], observe="none")
        assert r.ok and r.results[0].type == "click"
    evident.wait_for(lambda: _clicks(log) == before + 4, 10, "four clicks in the app's log")
    assert _clicks(log) == before + 4


def test_not_inline_requests_run_nothing_and_take_the_worker(world):
    engine, text, core, display, log = world
    before = _clicks(log)
    ready = _ready(log)
    click = a.click(ready["x"] + 120, ready["y"] + 130)
    for request in ({"actions": [click], "observe": "none", "settle": True},
                    {"actions": [click, a.wait(1)], "observe": "none"}):
        assert core.call_inline_object(_envelope(display, request)) is None
    assert core.call_inline_object({"op": "display.list", "args": {}}) is None
    # Nothing ran: a click sent after them is the only one the app sees.
    assert display.actions([click], observe="none").ok
    evident.wait_for(lambda: _clicks(log) >= before + 1, 10, "the click")
    assert _clicks(log) == before + 1
    # Through Engine.request the same requests still run, on the worker, and agree.
    for op, args in (("display.list", {}), ("app.list", {})):
        _same(engine, text, op, args)


def _nest(k):
    v = 0
    for _ in range(k):
        v = [v]
    return v


def _cycle():
    v = []
    v.append(v)
    return v


def bad_cases(display):
    """(name, op, args, how the object path takes it: "object" or "text")."""
    ref = {"display_id": display.id, "generation": display.generation}
    ok_click = {"type": "click", "x": 5, "y": 5}

    def batch(*actions, **extra):
        return {**ref, "request": {"actions": list(actions), "observe": "none", **extra}}

    return [
        ("unknown op", "no.such.op", {}, "object"),
        ("op not a string", 7, {}, "object"),
        ("ping with an unknown field", "ping", {"x": 1}, "object"),
        ("display not found", "cu.actions", {**batch(ok_click), "display_id": display.id + 7},
         "object"),
        ("display id out of range", "cu.actions", {**batch(ok_click), "display_id": 99999},
         "object"),
        ("generation mismatch", "cu.actions", {**batch(ok_click), "generation": "gen-" + "0" * 32},
         "object"),
        ("missing request", "cu.actions", dict(ref), "object"),
        ("unknown action type", "cu.actions", batch({"type": "teleport", "x": 1, "y": 1}),
         "object"),
        ("x out of range", "cu.actions", batch({"type": "click", "x": 100000, "y": 1}), "object"),
        ("x a string", "cu.actions", batch({"type": "click", "x": "1", "y": 1}), "object"),
        ("x a bool", "cu.actions", batch({"type": "click", "x": True, "y": 1}), "object"),
        ("x null", "cu.actions", batch({"type": "click", "x": None, "y": 1}), "object"),
        ("x = 2^53-1", "cu.actions", batch({"type": "click", "x": 2 ** 53 - 1, "y": 1}), "object"),
        ("x = -(2^53-1)", "cu.actions", batch({"type": "click", "x": -(2 ** 53 - 1), "y": 1}),
         "object"),
        ("no actions", "cu.actions", batch(), "object"),
        ("too many actions", "cu.actions", batch(*[ok_click] * 1000), "object"),
        ("actions a tuple", "cu.actions", {**ref, "request": {"actions": (dict(ok_click, x=400),),
                                                              "observe": "none"}}, "object"),
        ("a NUL in a string", "cu.actions", batch({"type": "cl\x00ick", "x": 1, "y": 1}), "object"),
        ("escapes and non-ASCII in a key", "cu.actions",
         batch({"type": "click", "x": 1, "y": 1, "é\"\\\n\x01": 1}), "object"),
        ("unknown observe", "cu.actions", batch(ok_click, observe="everything"), "object"),
        ("unknown batch field", "cu.actions", batch(ok_click, extra={"a": [1, {"b": None}]}),
         "object"),
        # Only the strict parser or json may judge these: the object path sends them as text.
        ("a float", "cu.actions", batch({"type": "click", "x": 1.0, "y": 1}), "text"),
        ("NaN", "cu.actions", batch({"type": "click", "x": math.nan, "y": 1}), "text"),
        ("2^53", "cu.actions", batch({"type": "click", "x": 2 ** 53, "y": 1}), "text"),
        ("-(2^53)", "cu.actions", batch({"type": "click", "x": -(2 ** 53), "y": 1}), "text"),
        ("2^64", "cu.actions", batch({"type": "click", "x": 2 ** 64, "y": 1}), "text"),
        ("an int key", "ping", {1: "a"}, "text"),
        ("keys that collide as text", "ping", {1: "a", "1": "b"}, "text"),
        ("a bool key", "ping", {True: 1}, "text"),
        ("an int subclass", "cu.actions", batch({"type": "click", "x": Int(3), "y": 1}), "text"),
        ("an IntEnum", "cu.actions", batch({"type": "click", "x": Color.RED, "y": 1}), "text"),
        ("a str subclass", "cu.actions", batch({"type": Str("click"), "x": 1, "y": 1}), "text"),
        ("a lone surrogate", "cu.actions", batch({"type": "click\ud800", "x": 1, "y": 1}), "text"),
        ("bytes", "cu.actions", batch({"type": b"click", "x": 1, "y": 1}), "text"),
        ("a set", "ping", {"x": {1}}, "text"),
        ("a cycle", "ping", {"x": _cycle()}, "text"),
        # json_depth_max: the envelope and args are 2 levels, the nested lists the rest.
        ("depth = json_depth_max", "ping", {"x": _nest(DEPTH - 2)}, "object"),
        ("depth = json_depth_max + 1", "ping", {"x": _nest(DEPTH - 1)}, "text"),
        ("depth far past the limit", "ping", {"x": _nest(DEPTH * 4)}, "text"),
    ]


def test_every_refusal_is_the_same_through_objects_and_text(world):
    engine, text, core, display, log = world
    before = _clicks(log)
    seen_codes = set()
    for name, op, args, path in bad_cases(display):
        kind, answer = _same(engine, text, op, args)
        if kind == "reply":
            reply = json.loads(answer)
            if not reply["ok"]:
                seen_codes.add(reply["error"]["code"])
        # Which path the object call took (nothing here runs an action: all are refused). An
        # op that is not inline (an unknown one) runs nothing either way: None, as call_inline.
        env = {"op": op, "args": args}
        got = core.call_inline_object(env)
        if path == "text":
            assert got is False, name
            continue
        want = core.call_inline(COMPACT.encode(env))
        if want is None:
            assert got is None, name
        else:
            assert isinstance(got, dict) and COMPACT.encode(got) == want == answer, name
    assert {"request-unknown-op", "request-args", "request-json", "display-not-found",
            "display-generation-mismatch", "action-invalid", "actions-request"} <= seen_codes, \
        seen_codes
    # Envelopes evident.Engine never builds, straight to _core: the same answers too.
    for env in ({}, {"args": {}}, {"op": "ping"}, {"op": "ping", "args": [1]}, {"op": ""},
                {"op": "x" * 65, "args": {}}, {"op": "ping", "args": {}, "more": 1}):
        got = core.call_inline_object(env)
        want = core.call_inline(COMPACT.encode(env))
        assert got is None if want is None else COMPACT.encode(got) == want, env
    assert core.call_inline_object([]) == json.loads(core.call_inline("[]"))
    assert core.call_inline_object("ping")["error"]["code"] == "request-args"
    assert _clicks(log) == before   # no refused batch clicked


def _padded(pad_bytes):
    """A ping envelope whose json text is exactly ``pad_bytes`` long, its padding full of what
    json escapes (quote, backslash, control characters) and of multi-byte UTF-8."""
    unit = "é\"\\\n\x01世"
    args = {"pad": unit * ((pad_bytes - 200) // 20)}
    size = len(COMPACT.encode({"op": "ping", "args": args}).encode("utf-8"))
    args["pad"] += "x" * (pad_bytes - size)
    assert len(COMPACT.encode({"op": "ping", "args": args}).encode("utf-8")) == pad_bytes
    return args


def test_the_size_limit_is_that_of_the_text_envelope(world):
    engine, text, core, display, log = world
    at = _padded(LIMIT)
    over = _padded(LIMIT + 1)
    kind, answer = _same(engine, text, "ping", at)
    assert json.loads(answer)["error"]["code"] == "request-args"   # parsed: within the limit
    assert isinstance(core.call_inline_object({"op": "ping", "args": at}), dict)
    kind, answer = _same(engine, text, "ping", over)
    assert json.loads(answer)["error"]["code"] == "request-too-large"
    assert core.call_inline_object({"op": "ping", "args": over}) is False


def test_a_closed_engine_answers_the_same(tmp_path):
    core = load_core().Engine(str(tmp_path / "state"), "")
    core.close()
    envelope = {"op": "ping", "args": {}}
    by_object = core.call_inline_object(envelope)
    assert by_object["error"]["code"] == "engine-closed"
    assert COMPACT.encode(by_object) == core.call_inline(COMPACT.encode(envelope))


def test_calls_off_the_main_thread_keep_the_text_path(world):
    engine, text, core, display, log = world
    out = {}
    calls = []
    real = core.call_inline_object

    class Spy:
        def __init__(self):
            self.call, self.call_inline, self.close = core.call, core.call_inline, core.close

        def call_inline_object(self, envelope):
            calls.append(envelope)
            return real(envelope)

    spied = evident.Engine(backend=Spy())
    t = threading.Thread(target=lambda: out.setdefault("r", spied.ping()))
    t.start()
    t.join(20)
    assert out["r"]["ok"] is True and calls == []
    assert spied.ping()["ok"] is True and len(calls) == 1
    assert os.getpid() == out["r"]["pid"]
