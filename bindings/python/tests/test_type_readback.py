"""Verified `type` (docs/accessibility.md, "Verified type"; contract §11) against the real
in-process engine, a real Xvfb with the display's own accessibility stack and a real GTK 3 app
(fixtures/gtk/ax_app.py --readback): `ok` when the focused entry holds exactly what typing should
make of it (an empty entry, a pre-filled one with the caret in the middle, a selection replaced,
non-ASCII text, a text view); `failed` with lengths and the first differing position when the
app rewrites the text (upper-cases it, or cuts it at a maximum length); `injected` with the
reason for a password field, a focused button or label, a text with a newline or tab, and on a
display without the stack. Every expected text here is written out by hand and checked against
the app's own tree read afterwards, not taken from the engine's verdict. The typed text is in
no reply, error, receipt, evidence file or daemon log. A session's verified type is `ok` in its
receipt with the projection {"type"}, and both verifiers accept it."""
import hashlib
import json
import os
import subprocess
import sys

import pytest

import evident
from evident import actions as a
from daemon_proc import running_daemon
from evident_bin import find_evident_bin

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "gtk", "ax_app.py")
SECRET = "s3cret-Typed-9"
OK_DETAIL = "read back: the focused widget holds exactly the expected text"

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/lib/python3/dist-packages/gi"),
                                reason="python3-gi is not installed (ci/packages.txt)")


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with evident.Engine(state_dir=str(tmp_path_factory.mktemp("state"))) as e:
        yield e


def _events(log):
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [json.loads(line) for line in f if line.strip()]


def _launch(display, log):
    app = display.launch(["/usr/bin/python3", os.path.abspath(FIXTURE), "--log", str(log), "--readback"],
                         wait_window_ms=30000)
    evident.wait_for(lambda: {"event": "ready"} in _events(log), 30, "the fixture's ready line")
    return app


def _widgets(display, app):
    tree = display.accessibility(app)
    found = {
        "name": tree.find(role="text", name="name"),
        "prefilled": tree.find(role="text", name="prefilled"),
        "upper": tree.find(role="text", name="upper"),
        "short": tree.find(role="text", name="short"),
        "notes": tree.find(role="text", name="notes"),
        "password": tree.find(role="password text", name="password"),
        "button": tree.find(role="push button", name="Press me"),
        "label": tree.find(role="label", name="Selectable label"),
    }
    for k, node in found.items():
        assert node is not None and node.center is not None, (k, node)
    return found


def _value(display, app, role, name):
    return display.accessibility(app).find(role=role, name=name).value


def test_type_is_ok_when_the_focused_entry_holds_exactly_the_typed_text(engine, tmp_path):
    log = tmp_path / "events.jsonl"
    with engine.create_display(width=480, height=640, accessibility=True) as display:
        app = _launch(display, log)
        w = _widgets(display, app)

        # An empty entry.
        batch = display.actions([a.click(*w["name"].center), a.type("hello")])
        typed = batch.results[1]
        assert typed.status == "ok", typed
        assert typed.detail == f"5 character(s) typed; {OK_DETAIL} (5 characters)"
        assert _value(display, app, "text", "name") == "hello"

        # Non-ASCII text after it (End: the caret at the end whatever the click did).
        batch = display.actions([a.click(*w["name"].center), a.key("End"), a.type("Zoë 世界")])
        assert batch.results[2].status == "ok", batch.results[2]
        assert batch.results[2].detail.endswith(f"{OK_DETAIL} (11 characters)")
        assert _value(display, app, "text", "name") == "helloZoë 世界"

        # A pre-filled entry, the caret in the middle: the text goes in there.
        assert w["prefilled"].value == "hello world"
        batch = display.actions([a.click(*w["prefilled"].center), a.key("Home"), a.key("Right"),
                                 a.key("Right"), a.type("XY")])
        assert [r.status for r in batch.results] == ["injected"] * 4 + ["ok"], batch.results
        assert batch.results[4].detail.endswith(f"{OK_DETAIL} (13 characters)")
        assert _value(display, app, "text", "prefilled") == "heXYllo world"

        # A selection (the two characters just typed, selected backwards) is replaced.
        batch = display.actions([a.key("shift+Left"), a.key("shift+Left"), a.type("Z")])
        assert [r.status for r in batch.results] == ["injected", "injected", "ok"], batch.results
        assert batch.results[2].detail.endswith(f"{OK_DETAIL} (12 characters)")
        assert _value(display, app, "text", "prefilled") == "heZllo world"

        # All of it selected and replaced.
        batch = display.actions([a.key("ctrl+a"), a.type("new")])
        assert batch.results[1].status == "ok", batch.results[1]
        assert _value(display, app, "text", "prefilled") == "new"

        # A multi-line text view without a newline is verified like an entry.
        batch = display.actions([a.click(*w["notes"].center), a.type("one line")])
        assert batch.results[1].status == "ok", batch.results[1]
        assert _value(display, app, "text", "notes") == "one line"


def test_type_is_failed_when_the_app_rewrites_the_text(engine, tmp_path):
    log = tmp_path / "events.jsonl"
    with engine.create_display(width=480, height=640, accessibility=True) as display:
        app = _launch(display, log)
        w = _widgets(display, app)

        # Upper-cased by the app after each change: same length, different from the first character.
        batch = display.actions([a.click(*w["upper"].center), a.type("abc"), a.click(*w["button"].center)])
        assert [r.status for r in batch.results] == ["injected", "failed"], batch.results  # the batch ended
        assert batch.results[1].detail == (
            "3 character(s) typed; read back after 2000 ms without a text change: expected 3 "
            "characters, observed 3; "
            "first difference at character 0")
        assert _value(display, app, "text", "upper") == "ABC"
        assert {"event": "clicked", "button": "Press me"} not in _events(log)

        # Cut at the entry's maximum length (4): the secret typed is in no reply.
        batch = display.actions([a.click(*w["short"].center), a.type(SECRET)])
        assert batch.results[1].status == "failed", batch.results[1]
        assert batch.results[1].detail.endswith(
            f"expected {len(SECRET)} characters, observed 4; first difference at character 4")
        assert _value(display, app, "text", "short") == SECRET[:4]
        assert SECRET not in json.dumps(batch.raw) and SECRET[:4] not in json.dumps(batch.raw)
        with pytest.raises(evident.ActionError) as e:
            batch.check()
        assert SECRET not in str(e.value)


def test_type_is_injected_with_the_reason_when_it_cannot_be_read_back(engine, tmp_path):
    log = tmp_path / "events.jsonl"
    with engine.create_display(width=480, height=640, accessibility=True) as display:
        app = _launch(display, log)
        w = _widgets(display, app)

        # A password field is never read.
        batch = display.actions([a.click(*w["password"].center), a.type(SECRET)])
        assert batch.results[1].status == "injected", batch.results[1]
        assert batch.results[1].detail.endswith("; not verified: a password field is never read")
        assert SECRET not in json.dumps(batch.raw)
        assert display.accessibility(app).find(role="password text", name="password").value is None

        # A focused button and a focused selectable label hold no editable text.
        for widget, role, name in (("button", "push button", "Press me"),
                                   ("label", "label", "Selectable label")):
            display.actions([a.click(*w[widget].center)]).check()
            assert display.accessibility(app).find(role=role, name=name).has("focused"), widget
            batch = display.actions([a.type("x")])
            assert batch.results[0].status == "injected", (widget, batch.results[0])
            assert batch.results[0].detail == (
                "1 character(s) typed; not verified: the focused widget exposes no editable text")

        # A newline or a tab: a submit or a focus move, never read back.
        batch = display.actions([a.click(*w["name"].center), a.type("ab\ncd")])
        assert batch.results[1].status == "injected", batch.results[1]
        assert batch.results[1].detail.endswith("; not verified: the text has a newline or tab")
        evident.wait_for(lambda: [e for e in _events(log) if e.get("event") == "activated"], 10,
                         "the entry's activate (the newline reached it)")
        batch = display.actions([a.click(*w["notes"].center), a.type("line 1\nline 2"), a.type("a\tb")])
        assert [r.status for r in batch.results] == ["injected"] * 3, batch.results
        assert all(r.detail.endswith("; not verified: the text has a newline or tab")
                   for r in batch.results[1:])
        assert _value(display, app, "text", "notes").startswith("line 1\nline 2")

    # A display without the stack: injected as before, nothing read back.
    plain_log = tmp_path / "plain.jsonl"
    with engine.create_display(width=480, height=640) as plain:
        plain.launch(["/usr/bin/python3", os.path.abspath(FIXTURE), "--log", str(plain_log), "--readback"],
                     wait_window_ms=30000)
        evident.wait_for(lambda: {"event": "ready"} in _events(plain_log), 30, "the fixture's ready line")
        batch = plain.actions([a.click(*w["name"].center), a.type("hello")])
        assert batch.results[1].status == "injected", batch.results[1]
        assert batch.results[1].detail == "5 character(s) typed; delivery not read back"


def _verify_both(path, evidence):
    c = subprocess.run([find_evident_bin(), "verify", path, "--frames", evidence, "--json"],
                       capture_output=True, text=True)
    assert c.returncode == 0 and json.loads(c.stdout)["ok"] is True, c.stdout + c.stderr
    p = subprocess.run([sys.executable, "-m", "evident.verify", path, "--frames", evidence, "--json"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and json.loads(p.stdout)["ok"] is True, p.stdout + p.stderr


@pytest.mark.skipif(not find_evident_bin(), reason="the evident CLI is not built (EVIDENT_BIN)")
def test_a_sessions_verified_type_is_ok_in_its_receipt_and_both_verifiers_accept_it(engine, tmp_path):
    log = tmp_path / "events.jsonl"
    with engine.create_display(width=480, height=640, accessibility=True) as display:
        app = _launch(display, log)
        w = _widgets(display, app)
        with display.session(app, attempt_id="verified-type") as s:
            results = s.actions([a.click(*w["name"].center), a.type(SECRET)])
            assert [r.status for r in results] == ["injected", "ok"], results
            assert _value(display, app, "text", "name") == SECRET
            s.freeze()
            s.observe()
            s.finish({"typed": "secret"})
        receipt = s.receipt
        events = [e for e in receipt["transcript"] if e["kind"] == "action"]
        assert [(e["action"], e["status"]) for e in events] == [("click", "injected"), ("type", "ok")]
        # The projection of type stays {"type"} (JCS of it, hashed here).
        assert events[1]["projection_sha256"] == hashlib.sha256(
            b'evident/action-projection/v2\x00{"type":"type"}').hexdigest()
        evidence = s.evidence_dir
        path = os.path.join(evidence, "receipt.json")
        _verify_both(path, evidence)
        for name in os.listdir(evidence):
            with open(os.path.join(evidence, name), "rb") as f:
                assert SECRET.encode() not in f.read(), name

        # A type the app contradicts ends the session without a receipt (as any failed action).
        s = display.session(app, attempt_id="contradicted-type")
        with pytest.raises(evident.SessionError) as e:
            s.actions([a.click(*w["upper"].center), a.type("hidden")])
        assert e.value.code == "session-action-failed"
        assert ("; read back after 2000 ms without a text change: expected 6 characters, observed 6; "
                "first difference at character 0; the session has ended without a receipt") in str(e.value)
        assert "hidden" not in str(e.value).lower()
        assert _value(display, app, "text", "upper") == "HIDDEN"


@pytest.mark.skipif(not find_evident_bin(), reason="the evident CLI is not built (EVIDENT_BIN)")
def test_through_a_daemon_the_typed_text_is_in_no_reply_or_log(tmp_path):
    binary = find_evident_bin()
    # running_daemon: the daemon's log is tmp_path/daemon.log, its state tmp_path/state; it is
    # ended with SIGTERM (clean exit asserted) when the block ends.
    with running_daemon(tmp_path) as (sock, _client):
        def run(*args):
            p = subprocess.run([binary, "--socket", sock, "--json", *args], capture_output=True, timeout=60,
                               text=True)
            assert SECRET not in p.stdout + p.stderr
            return p.returncode, json.loads(p.stdout)

        rc, out = run("display", "create", "--width", "480", "--height", "640", "--accessibility")
        assert rc == 0, out
        did, gen = str(out["display"]["id"]), out["display"]["generation"]
        events = tmp_path / "events.jsonl"
        rc, out = run("app", "launch", did, gen, "--wait-window-ms", "30000", "--", "/usr/bin/python3",
                      os.path.abspath(FIXTURE), "--log", str(events), "--readback")
        assert rc == 0, out
        app_id = out["app"]["app_id"]
        evident.wait_for(lambda: {"event": "ready"} in _events(events), 30, "the fixture's ready line")
        rc, tree = run("accessibility", "tree", app_id)
        assert rc == 0, tree
        nodes = {(n["role"], n["name"]): n for n in tree["nodes"]}

        def centre(role, name):
            b = nodes[(role, name)]["bounds"]
            return b["x"] + b["width"] // 2, b["y"] + b["height"] // 2

        for (role, name), status in ((("text", "name"), "ok"), (("text", "short"), "failed"),
                                     (("password text", "password"), "injected")):
            x, y = centre(role, name)
            request = {"actions": [{"type": "click", "x": x, "y": y}, {"type": "type", "text": SECRET}],
                       "observe": "none"}
            rc, out = run("cu", "actions", did, gen, "--request", json.dumps(request))
            assert rc == 0, out
            assert out["results"][1]["status"] == status, (name, out)
        rc, _ = run("display", "destroy", did, gen)
        assert rc == 0
    assert SECRET.encode() not in (tmp_path / "daemon.log").read_bytes()
    for root, _dirs, files in os.walk(tmp_path / "state"):
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                assert SECRET.encode() not in f.read(), name
