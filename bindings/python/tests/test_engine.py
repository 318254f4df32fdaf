"""The Python API against the real in-process engine: real Xvfb displays, real X clients, PNGs
decoded by Pillow (independent of the engine's encoder), the exact-generation rule, app
liveness, action batches, the session protocol to a verified receipt, the GIL released during
long calls, and Ctrl-C during a long session call."""
import hashlib
import io
import json
import os
import signal
import subprocess
import threading
import time

import pytest
from PIL import Image

import evident
from evident import _call
from evident import actions as a
from ctrl_c import python_handles_sigint  # noqa: F401  (a fixture)

XMESSAGE = ["xmessage", "-geometry", "200x80+0+0", "evident"]
DEADLINE_S = 20


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with evident.Engine(state_dir=str(tmp_path_factory.mktemp("state"))) as e:
        yield e


def test_version_comes_from_the_version_file(engine):
    top = os.path.join(os.path.dirname(__file__), "..", "..", "..", "VERSION")
    with open(top) as f:
        expected = f.read().strip()
    assert evident.__version__ == expected
    assert engine.ping()["version"] == expected


def test_display_lifecycle_and_exact_generation(engine):
    with engine.create_display(width=320, height=240, dpi=120) as display:
        assert (display.width, display.height) == (320, 240)
        assert display.name == f":{display.id}"
        assert display.generation.startswith("gen-") and len(display.generation) == 36
        assert display.status().ready
        assert display.id in [d.id for d in engine.displays()]
        # A foreign generation is refused and the display keeps running.
        stale = evident.Display(engine, {**display.raw, "generation": "gen-" + "0" * 32})
        with pytest.raises(evident.DisplayError) as info:
            stale.destroy()
        assert info.value.code == "display-generation-mismatch"
        assert display.status().ready
    assert display.destroyed
    assert display.id not in [d.id for d in engine.displays()]
    with pytest.raises(evident.DisplayError):
        display.status()


def test_screenshot_is_png_bytes_decoded_by_pillow(engine):
    with engine.create_display(width=200, height=100) as display:
        png = display.screenshot()
        assert isinstance(png, bytes) and png[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.info.sha256 == hashlib.sha256(png).hexdigest()
        assert png.info.byte_length == len(png)
        img = Image.open(io.BytesIO(png))
        assert img.size == (200, 100)
        assert png.image().size == (200, 100)


def test_app_launch_alive_stop(engine):
    with engine.create_display(width=320, height=200) as display:
        app = display.launch(XMESSAGE, wait_window_ms=10000)
        assert app.app_id.startswith("app-") and app.pid > 0
        assert app.argv_sha256 and len(app.argv_sha256) == 64
        assert app.alive
        app.stop()
        assert not app.alive
        with pytest.raises(evident.AppError):
            display.launch(["/nonexistent/evident-no-such-program"], wait_window_ms=1000)


def test_actions_batch_and_helpers(engine):
    with engine.create_display(width=320, height=200) as display:
        batch = display.actions([a.move_mouse(10, 10), a.click(20, 20), a.wait(1)],
                                observe="pixels", settle=False)
        assert [r.type for r in batch] == ["move_mouse", "click", "wait"]
        assert all(r.ok for r in batch), batch.results
        assert batch.observation.kind == "pixels"
        r = display.click(30, 30)
        assert r.type == "click" and r.status in ("ok", "injected")
        with pytest.raises(evident.ActionError) as info:   # refused before anything runs
            display.actions([a.click(1, 1), {"type": "no-such-action"}])
        assert type(info.value) is evident.ActionError
        assert (info.value.code, info.value.retryable) == ("action-invalid", False)
        assert info.value.message == "actions[1]: unknown action type"


def test_session_to_verified_receipt(engine):
    with engine.create_display(width=320, height=200) as display:
        app = display.launch(XMESSAGE, wait_window_ms=10000)
        job = hashlib.sha256(b"python api test").hexdigest()
        with display.session(app, attempt_id="py-api-1", job_sha256=job) as s:
            assert s.session_id.startswith("ses-") and s.sequence == 0
            results = s.actions([a.move_mouse(5, 5), a.click(50, 50)])
            assert [r.type for r in results] == ["move_mouse", "click"]
            assert all(r.status in ("ok", "injected") for r in results), results
            assert s.sequence == 1
            with pytest.raises(evident.SessionError) as info:
                s.actions([a.paste("x")])
            assert info.value.code == "session-action-forbidden"
            s.freeze()
            s.observe()
            receipt = s.finish({"saw": "xmessage"})
            assert receipt["schema"] == "evident.session-receipt/v3"
            assert receipt["binding"]["job_sha256"] == job
            assert receipt["actor"] == {"kind": "in_process", "uid": os.getuid(),
                                        "pid": os.getpid()}
        assert s.closed_reply["cleanup_complete"] is True
        assert os.path.exists(s.receipt_path)
        result = s.verify(expect_job_sha256=job, expect_uid=os.getuid())
        assert result.ok, result.failed
        assert "cpp" in result.verifiers
        # A tampered receipt fails verification.
        bad = dict(receipt, claims={"saw": "something else"})
        assert not evident.verify_receipt(bad).ok


def test_session_records_the_apps_exit_and_settles(engine):
    # A dialog whose intended effect is to exit: Return presses its default button (value 3).
    dialog = ["xmessage", "-geometry", "+0+0", "-buttons", "OK:3", "-default", "OK", "evident"]
    with engine.create_display(width=320, height=200) as display:
        app = display.launch(dialog, wait_window_ms=10000)
        with display.session(app, attempt_id="py-app-exit", app_exit="record") as s:
            results = s.actions([a.move_mouse(10, 10), a.key("Return")], settle=True)
            # Nothing on xmessage animates: the pointer's move settles (DAMAGE quiet) before the cap.
            assert results[0].raw["settle"] == "settled"
            evident.wait_for(lambda: not app.alive, 10, "the dialog to exit")
            s.freeze()
            assert s.app_exit is not None and s.app_exit["exit_status"] == 3
            s.observe()
            receipt = s.finish({"dialog": "closed"})
        kinds = [e["kind"] for e in receipt["transcript"]]
        assert kinds == ["initial_frame", "action", "action", "app_exit", "freeze", "observation",
                         "claims"]
        assert receipt["transcript"][3]["exit_status"] == 3
        assert all("settle" in e for e in receipt["transcript"] if e["kind"] == "action")
        result = s.verify()
        assert result.ok, result.failed
        assert "cpp" in result.verifiers


def test_gil_is_released_during_long_calls(engine):
    with engine.create_display(width=128, height=128) as display:
        ticks = 0
        stop = threading.Event()

        def count():
            nonlocal ticks
            while not stop.is_set():
                ticks += 1

        t = threading.Thread(target=count)
        t.start()
        try:
            display.actions([a.wait(400)], observe="none")
        finally:
            stop.set()
            t.join()
        assert ticks > 1000


def test_ctrl_c_during_session_wait_aborts_and_releases_display(engine, python_handles_sigint):
    with engine.create_display(width=128, height=128) as display:
        app = display.launch(XMESSAGE, wait_window_ms=10000)
        s = display.session(app)
        timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
        started = time.monotonic()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            s.actions([a.wait(3000)])
        timer.join()
        assert time.monotonic() - started < 2.5   # control came back before the wait ended
        # Once the in-flight batch completes, the session is aborted and the display is free.
        deadline = time.monotonic() + DEADLINE_S
        while not s.aborted and time.monotonic() < deadline:
            threading.Event().wait(0.05)
        assert s.aborted
        assert display.actions([a.move_mouse(1, 1)], observe="none").ok


def _pointer(display):
    """The pointer's root position, read by xdotool on the display (not by the engine): one
    process with the display's environment, waited for (bounded) and read from its stdout."""
    r = subprocess.run(["xdotool", "getmouselocation", "--shell"],
                       env={**os.environ, **display.env()}, capture_output=True, text=True,
                       timeout=DEADLINE_S, check=True)
    fields = dict(line.split("=", 1) for line in r.stdout.split())
    return int(fields["X"]), int(fields["Y"])


def test_only_short_bounded_calls_run_inline_and_the_others_run_nothing(engine):
    core = engine._backend
    with engine.create_display(width=320, height=200) as display:
        ref = {"display_id": display.id, "generation": display.generation}

        def batch(actions, **extra):
            return json.dumps({"op": "cu.actions", "args": {**ref, "request": {
                "actions": actions, "observe": "none", **extra}}})

        start = _pointer(display)
        assert start != (11, 13)
        move = {"type": "move_mouse", "x": 11, "y": 13}
        for actions, extra in (([move, {"type": "wait", "ms": 1}], {}),
                               ([move, {"type": "type", "text": "x"}], {}),
                               ([move, {"type": "paste", "text": "x"}], {}),
                               ([move, {"type": "hold_key", "key": "a", "ms": 1}], {}),
                               ([move], {"settle": True}),
                               ([move], {"settle": 50})):
            assert core.call_inline(batch(actions, **extra)) is None, (actions, extra)
            assert _pointer(display) == start, "a deferred request must run nothing"
        assert core.call_inline(json.dumps({"op": "display.list", "args": {}})) is None
        assert core.call_inline(json.dumps({"op": "session", "args": {"request": "{}"}})) is None

        reply = json.loads(core.call_inline(batch([{"type": "move_mouse", "x": 21, "y": 23}])))
        assert reply["ok"] is True and reply["results"][0]["type"] == "move_mouse"
        assert _pointer(display) == (21, 23)
        assert json.loads(core.call_inline(json.dumps({"op": "ping", "args": {}})))["ok"] is True
        # Envelope errors are answered at once, on this thread.
        assert json.loads(core.call_inline('{"op":'))["error"]["code"] == "request-json"
        assert json.loads(core.call_inline("[]"))["error"]["code"] == "request-args"


def test_main_thread_hands_only_long_calls_to_a_worker(engine, monkeypatch):
    handed = []
    real_submit = _call._workers.submit

    def submit(job):
        handed.append(job)
        real_submit(job)

    monkeypatch.setattr(_call._workers, "submit", submit)
    with engine.create_display(width=128, height=128) as display:
        handed.clear()
        assert display.actions([a.click(5, 5)], observe="none").ok
        engine.ping()
        assert handed == []   # short: answered on the calling thread
        assert display.actions([a.wait(1)], observe="none").ok
        assert len(handed) == 1   # a wait: on a worker, so Ctrl-C interrupts it


def test_every_action_of_the_vocabulary_returns_a_result(engine):
    with engine.create_display(width=320, height=200) as display:
        display.launch(XMESSAGE, wait_window_ms=10000)
        batch = display.actions([
            a.move_mouse(10, 10), a.click(10, 10), a.click(10, 10, "right"),
            a.double_click(12, 12), a.triple_click(12, 12),
            a.mouse_down(20, 20), a.mouse_up(20, 20), a.drag(20, 20, 60, 40),
            a.scroll(30, 30, "down", 2), a.type("hé"), a.key("ctrl+a"),
            a.hold_key("shift", 20), a.wait(5), a.screenshot(), a.zoom(0, 0, 40, 30),
        ], observe="pixels", settle=5000)
        types = ["move_mouse", "click", "click", "double_click", "triple_click", "mouse_down",
                 "mouse_up", "drag", "scroll", "type", "key", "hold_key", "wait",
                 "screenshot", "zoom"]
        assert [r.type for r in batch] == types
        assert [r.index for r in batch] == list(range(len(types)))
        failed = [r for r in batch if r.status not in ("ok", "injected")]
        assert not failed, failed
        # xmessage is static once the input ends: quiet for 300 ms long before the 5 s cap
        assert batch.settle["outcome"] == "settled", batch.settle
        assert batch.observation.png is not None
        with open(batch.observation.png.path, "rb") as f:
            assert Image.open(f).size == (320, 200)
        # A cap below the 300 ms quiet window can only end at the cap; a batch that injected
        # nothing has nothing to settle (docs/protocol.md §4).
        assert display.actions([a.move_mouse(11, 11)], observe="none",
                               settle=100).settle["outcome"] == "still_loading"
        assert display.actions([a.wait(1)], observe="none",
                               settle=True).settle == {"outcome": "fixed", "elapsed_ms": 0}
        # xmessage never reads the clipboard: paste fails, and that is data, not an exception.
        pasted = display.paste("x")
        assert pasted.type == "paste" and pasted.status == "failed" and pasted.detail
        with pytest.raises(evident.ActionError) as info:
            pasted.check()
        assert info.value.code == "action-failed"
        # normalized_1000 coordinates are accepted as a batch option.
        assert display.actions([a.move_mouse(500, 500)], observe="none",
                               coordinate_space="normalized_1000").ok
