"""Accessibility (docs/accessibility.md) against the real in-process engine, a real Xvfb, the
display's own dbus-daemons and at-spi2-registryd, and a real GTK 3 app (fixtures/gtk/ax_app.py):
the tree's roles, names, states and screen bounds; a button found by role and name and clicked
at its centre with native input (the app records the click); typed text read back from the
entry while the password typed into the password field is absent from everything returned;
the bounds; the refusals with their codes; the stack gone with the display; and a cu actions
batch's `observe: "ax"` text observation (its centres, values, withheld password, bounds and
refusals)."""
import json
import os
import re
import select
import signal
import subprocess
import sys

import pytest

import evident
from evident import actions as a
from procs import alive

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "gtk", "ax_app.py")
SECRET = "s3cret-Typed-9"
STACK = ("dbus-daemon", "at-spi2-registr")  # comm names (15 bytes) of the stack's processes

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/lib/python3/dist-packages/gi"),
                                reason="python3-gi is not installed (ci/packages.txt)")


def _children_named(names):
    """Our own live child processes (the in-process engine spawns them) with those comm names."""
    me = os.getpid()
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        if comm in names and int(fields[1]) == me and fields[0] not in ("Z", "X"):
            out.append(int(pid))
    return sorted(out)


def _events(log):
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with evident.Engine(state_dir=str(tmp_path_factory.mktemp("state"))) as e:
        yield e


def _launch(display, log, *extra):
    return display.launch([sys.executable if sys.executable.startswith("/usr/bin/") else
                           "/usr/bin/python3", os.path.abspath(FIXTURE), "--log", str(log), *extra],
                          wait_window_ms=30000)


def test_tree_of_a_gtk_app_click_by_name_and_password_never_read(engine, tmp_path):
    before = _children_named(STACK)
    log = tmp_path / "events.jsonl"
    with engine.create_display(width=480, height=400, accessibility=True) as display:
        stack = sorted(set(_children_named(STACK)) - set(before))
        assert len(stack) == 3  # session bus, AT-SPI bus, registry
        app = _launch(display, log)
        with open(f"/proc/{app.pid}/environ", "rb") as f:
            env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
        assert env[b"AT_SPI_BUS_ADDRESS"].startswith(b"unix:path=")
        assert env[b"DBUS_SESSION_BUS_ADDRESS"].startswith(b"unix:path=")
        assert env[b"QT_ACCESSIBILITY"] == b"1"

        tree = display.accessibility(app)
        assert tree.root.role == "application" and tree.root.parent is None
        assert tree.pid == app.pid and not tree.truncated
        frame = tree.find(role="frame", name="AX fixture")
        assert frame is not None and frame.bounds is not None
        fx, fy, fw, fh = frame.bounds
        assert fw > 100 and fh > 100 and 0 <= fx < 480 and 0 <= fy < 400
        assert tree.find(role="label", name="Hello label") is not None
        button = tree.find(role="push button", name="Press me")
        assert button is not None and button.has("sensitive") and button.has("showing")
        bx, by, bw, bh = button.bounds
        assert fx <= bx and bx + bw <= fx + fw and fy <= by and by + bh <= fy + fh
        spin = tree.find(role="spin button")
        assert spin is not None and spin.value == "42"
        entries = tree.find_all(role="text")
        password = tree.find(role="password text")
        assert password is not None and password.value is None and password.value_withheld
        entry = next(e for e in entries if e.has("editable") and e.bounds is not None)
        assert entry.value == ""
        # Every node's parent/children links agree; indices are breadth first.
        for n in tree.nodes:
            for c in n.children:
                assert c.parent is n and c.depth == n.depth + 1 and c.index > n.index

        # Native input at the tree's coordinates: type into both entries, click the button.
        display.actions([a.click(*entry.center), a.type("visible text"),
                         a.click(*password.center), a.type(SECRET)], settle=True).check()
        display.actions([a.click(*button.center)], settle=True).check()
        assert {"event": "clicked", "button": "Press me"} in _events(log)

        after = display.accessibility(app)
        assert after.find(role="label", name="Pressed") is not None
        assert after.find(role="label", name="Hello label") is None
        typed = [e for e in after.find_all(role="text") if e.value == "visible text"]
        assert len(typed) == 1
        pw = after.find(role="password text")
        assert pw.value is None and pw.value_withheld and pw.has("editable")
        # The click moved the keyboard focus to the button: states are read fresh.
        assert after.find(role="push button", name="Press me").has("focused")
        assert not button.has("focused")
        # The password appears nowhere in what the engine returned.
        assert SECRET not in json.dumps(after.raw)
        assert SECRET not in json.dumps(tree.raw)
    # Destroying the display stopped its stack.
    assert sorted(set(_children_named(STACK)) - set(before)) == []


def test_bounds_and_refusals(engine, tmp_path):
    log = tmp_path / "events.jsonl"
    with engine.create_display(width=480, height=400, accessibility=True) as display:
        app = _launch(display, log)
        cut = display.accessibility(app, max_nodes=3)
        assert len(cut) == 3 and cut.truncated and cut.truncated_by == "max_nodes"
        shallow = display.accessibility(app, max_depth=1)
        assert shallow.truncated and shallow.truncated_by == "max_depth"
        assert max(n.depth for n in shallow.nodes) == 1
        full = display.accessibility(app)
        assert len(shallow) == 2 and len(full) > 3 and not full.truncated  # the app and its frame
        for bad in ({"max_nodes": 0}, {"max_depth": 65}, {"timeout_ms": 0}):
            with pytest.raises(evident.UsageError):
                display.accessibility(app, **bad)
        # A process with no AT-SPI bridge: retryable app-not-found.
        plain = display.launch(["sleep", "60"])
        with pytest.raises(evident.AccessibilityError) as e:
            display.accessibility(plain)
        assert e.value.code == "accessibility-app-not-found" and e.value.retryable
        plain.stop()
        with pytest.raises(evident.AppError) as e:
            display.accessibility(plain)
        assert e.value.code == "app-not-found"
    with engine.create_display(width=480, height=400) as plain_display:
        app = _launch(plain_display, tmp_path / "plain.jsonl")
        with pytest.raises(evident.AccessibilityError) as e:
            plain_display.accessibility(app)
        assert e.value.code == "accessibility-off"


# One line of an observe="ax" text (docs/accessibility.md, "observe: ax").
_AX_LINE = re.compile(
    r'^(?P<indent> *)\[(?P<index>\d+)\] (?P<role>[a-z][a-z -]*?) (?P<name>"(?:[^"\\]|\\.)*")'
    r'(?: center=(?P<cx>-?\d+),(?P<cy>-?\d+) box=(?P<x>-?\d+),(?P<y>-?\d+),(?P<w>\d+)x(?P<h>\d+))?'
    r'(?: value=(?P<value>withheld|"(?:[^"\\]|\\.)*"))?(?: \{(?P<states>[a-z,-]+)\})?$')


def _ax_lines(text):
    """The node lines of an observation text as dicts; the closing "(truncated …)" line, if
    any, as the second value. Every other line must parse."""
    nodes, closing = [], None
    lines = text.split("\n")
    assert lines[-1] == ""
    for line in lines[:-1]:
        if line.startswith("(truncated by "):
            assert closing is None
            closing = line
            continue
        assert closing is None, "the closing line is the last"
        m = _AX_LINE.match(line)
        assert m, line
        value = m["value"]
        nodes.append({"depth": len(m["indent"]) // 2, "index": int(m["index"]), "role": m["role"],
                      "name": json.loads(m["name"]),
                      "center": (int(m["cx"]), int(m["cy"])) if m["cx"] else None,
                      "value": value if value in (None, "withheld") else json.loads(value),
                      "states": set(m["states"].split(",")) if m["states"] else set()})
    return nodes, closing


def _one(nodes, role, name=None):
    found = [n for n in nodes if n["role"] == role and (name is None or n["name"] == name)]
    assert len(found) == 1, (role, name, found)
    return found[0]


def test_observe_ax_after_a_batch_clicks_where_it_says_and_never_shows_the_password(engine, tmp_path):
    """`observe: "ax"`: the display's apps as text after the batch; the centres it gives are
    where the widgets are (clicking one reaches the app, per its own log), the typed text is the
    entry's value, the password field says `value=withheld` and the secret is nowhere in the
    reply; a display without the stack, or whose stack died, refuses the batch before any action
    runs (the same click on a control display does reach the app)."""
    log = tmp_path / "events.jsonl"
    with engine.create_display(width=480, height=400, accessibility=True) as display:
        app = _launch(display, log)
        first = display.actions([a.wait(1)], observe="ax")
        obs = first.observation
        assert obs.kind == "ax" and obs.png is None and not obs.truncated, obs
        assert obs.ax["truncated_by"] is None and obs.ax["app_count"] == 1
        assert obs.ax["max_nodes"] == 500 and obs.ax["max_depth"] == 24
        nodes, closing = _ax_lines(obs.text)
        assert closing is None and len(nodes) == obs.ax["node_count"] == obs.ax["line_count"]
        assert nodes[0]["role"] == "desktop frame" and nodes[0]["depth"] == 0
        assert _one(nodes, "application")["depth"] == 1
        frame = _one(nodes, "frame", "AX fixture")
        assert frame["depth"] == 2 and frame["center"] is not None
        assert _one(nodes, "label", "Hello label")
        button = _one(nodes, "push button", "Press me")
        entry = _one(nodes, "text", "name")
        password = _one(nodes, "password text", "password")
        assert entry["value"] == "" and "editable" in entry["states"]
        assert password["value"] == "withheld"
        assert _one(nodes, "spin button")["value"] == "42"
        # Depth first: every node follows its parent, one level deeper at most.
        for before, after in zip(nodes, nodes[1:]):
            assert after["depth"] <= before["depth"] + 1

        batch = display.actions([a.click(*entry["center"]), a.type("visible text"),
                                 a.click(*password["center"]), a.type(SECRET),
                                 a.click(*button["center"])], observe="ax", settle=True).check()
        assert {"event": "clicked", "button": "Press me"} in _events(log)
        nodes, _ = _ax_lines(batch.observation.text)
        assert _one(nodes, "label", "Pressed") and not [n for n in nodes if n["name"] == "Hello label"]
        assert _one(nodes, "text", "name")["value"] == "visible text"
        assert _one(nodes, "password text", "password")["value"] == "withheld"
        assert "focused" in _one(nodes, "push button", "Press me")["states"]
        assert "focused" not in _one(nodes, "text", "name")["states"]
        assert SECRET not in json.dumps(batch.raw)

        # A stack that died: refused before the click (the app logs no second click).
        clicks = _events(log).count({"event": "clicked", "button": "Press me"})
        layer = next(l for l in display.status().layers if l["name"] == "accessibility")
        registry = int(re.search(r"at-spi2-registryd pid (\d+)", layer["detail"]).group(1))
        pidfd = os.pidfd_open(registry)
        try:
            os.kill(registry, signal.SIGKILL)
            assert select.select([pidfd], [], [], 10)[0], "the registry did not die"
        finally:
            os.close(pidfd)
        with pytest.raises(evident.AccessibilityError) as e:
            display.actions([a.click(*button["center"])], observe="ax")
        assert e.value.code == "accessibility-bus-gone"
        # The control: the same click without observe ax reaches the button.
        display.actions([a.click(*button["center"])], observe="none", settle=True).check()
        assert _events(log).count({"event": "clicked", "button": "Press me"}) == clicks + 1

    # No stack at all: refused with accessibility-off before the click; the control batch's
    # same click (the same fixture at the same place) reaches the button.
    plain_log = tmp_path / "plain.jsonl"
    with engine.create_display(width=480, height=400) as plain:
        _launch(plain, plain_log)
        with pytest.raises(evident.AccessibilityError) as e:
            plain.actions([a.click(*button["center"])], observe="ax")
        assert e.value.code == "accessibility-off" and not e.value.retryable
        assert {"event": "clicked", "button": "Press me"} not in _events(plain_log)
        plain.actions([a.click(*button["center"])], observe="none", settle=True).check()
        assert _events(plain_log).count({"event": "clicked", "button": "Press me"}) == 1


def test_observe_ax_is_bounded_in_nodes_and_says_so(engine, tmp_path):
    """600 check buttons: the observation stops at ax_observe_max_nodes and its text ends with
    the line that says so."""
    with engine.create_display(width=480, height=400, accessibility=True) as display:
        _launch(display, tmp_path / "events.jsonl", "--widgets", "600")
        obs = display.actions([a.wait(1)], observe="ax").observation
        assert obs.kind == "ax" and obs.truncated and obs.ax["truncated_by"] == "max_nodes"
        assert obs.ax["node_count"] == 500
        nodes, closing = _ax_lines(obs.text)
        assert len(nodes) == 500
        assert closing == "(truncated by max_nodes: 500 nodes shown; the rest of the tree was not read)"
        assert len(obs.text.encode()) <= 65536


@pytest.mark.skipif(not os.environ.get("EVIDENT_BIN") or not os.path.exists(os.environ["EVIDENT_BIN"]),
                    reason="EVIDENT_BIN (the built CLI) is not set")
def test_cli_tree_and_nothing_left_after_the_daemon_is_killed(tmp_path):
    """`evident display create --accessibility`, `evident accessibility tree` and `evident cu
    actions` with `observe: "ax"` through a real daemon; then the daemon is SIGKILLed and the
    stack's processes (named by `display status`)
    die with it (PR_SET_PDEATHSIG), as do the app's."""
    import re
    import signal
    import subprocess
    binary = os.environ["EVIDENT_BIN"]
    sock_dir = tmp_path / "run"
    sock_dir.mkdir(mode=0o700)
    sock = str(sock_dir / "evident.sock")
    with open(tmp_path / "daemon.log", "wb") as log_file:
        daemon = subprocess.Popen([binary, "daemon", "--socket", sock, "--state-dir",
                                   str(tmp_path / "state")], stdout=log_file, stderr=subprocess.STDOUT)

    def run(*args, json_out=True):
        argv = [binary, "--socket", sock] + (["--json"] if json_out else []) + list(args)
        p = subprocess.run(argv, capture_output=True, timeout=60, text=True)
        return p.returncode, (json.loads(p.stdout) if json_out else p.stdout)

    try:
        evident.wait_for(lambda: daemon.poll() is None and run("display", "list")[0] == 0, 20,
                         "the daemon's socket")
        rc, out = run("display", "create", "--width", "480", "--height", "400", "--accessibility")
        assert rc == 0 and out["accessibility"] is True, out
        did, gen = str(out["display"]["id"]), out["display"]["generation"]
        rc, out = run("app", "launch", did, gen, "--wait-window-ms", "30000", "--", "/usr/bin/python3",
                      os.path.abspath(FIXTURE), "--log", str(tmp_path / "events.jsonl"))
        assert rc == 0, out
        app_id, app_pid = out["app"]["app_id"], out["app"]["pid"]
        rc, text = run("accessibility", "tree", app_id, json_out=False)
        assert rc == 0 and 'push button "Press me"' in text and "(value withheld)" in text, text
        assert 'spin button "" ' in text and '= "42"' in text, text
        rc, out = run("accessibility", "tree", app_id, "--max-nodes", "2")
        assert rc == 0 and out["node_count"] == 2 and out["truncated_by"] == "max_nodes"
        rc, out = run("accessibility", "tree", app_id, "--max-nodes", "0")
        assert rc != 0 and out["error"]["code"] == "request-args"
        rc, out = run("cu", "actions", did, gen, "--request",
                      '{"actions":[{"type":"wait","ms":1}],"observe":"ax"}')
        assert rc == 0 and out["observation"]["kind"] == "ax", out
        assert '] push button "Press me" center=' in out["observation"]["ax"]["text"], out
        rc, out = run("display", "status", did, gen)
        layer = next(l for l in out["layers"] if l["name"] == "accessibility")
        assert layer["state"] == "ready"
        pids = [int(p) for p in re.findall(r"pid (\d+)", layer["detail"])]
        assert len(pids) == 3 and all(alive(p) for p in pids)
    finally:
        daemon.send_signal(signal.SIGKILL)
        daemon.wait(timeout=30)
    evident.wait_for(lambda: not any(alive(p) for p in pids + [app_pid]), 10,
                     "the stack and the app to die with the daemon")


QT_FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "qt", "ax_app.py")


def test_qt_app_tree_with_qt_accessibility(engine, tmp_path):
    """Qt 5 finds the display's AT-SPI bus (root window AT_SPI_BUS, QT_ACCESSIBILITY): its
    widgets by role and name, the button clicked at its centre, the password never read (Qt
    names a password field's role "text"; the engine names the role number: password text)."""
    pytest.importorskip("PyQt5")
    log = tmp_path / "qt.jsonl"
    with engine.create_display(width=480, height=400, accessibility=True) as display:
        app = display.launch(["/usr/bin/python3", os.path.abspath(QT_FIXTURE), "--log", str(log)],
                             wait_window_ms=30000)
        # Qt's bridge registers its root after the window maps: accessibility-app-not-found is
        # retryable until it has (bounded here by 20 s).
        def registered():
            try:
                return display.accessibility(app)
            except evident.AccessibilityError as e:
                if e.code != "accessibility-app-not-found":
                    raise
                return None
        tree = evident.wait_for(registered, 20, "Qt's accessible root")
        assert tree.find(role="label", name="Hello Qt") is not None
        button = tree.find(role="push button", name="Press me")
        entry = tree.find(role="text", name="name")
        password = tree.find(role="password text", name="password")
        assert button is not None and entry is not None and password is not None
        batch = display.actions([a.click(*entry.center), a.type("qt text"), a.click(*password.center),
                                 a.type(SECRET), a.click(*button.center)], observe="ax", settle=True).check()
        assert {"event": "clicked", "button": "Press me"} in _events(log)
        # observe "ax" reads Qt's tree as it reads GTK's: the new label, the typed value, the
        # password withheld, and the secret nowhere in the reply.
        nodes, closing = _ax_lines(batch.observation.text)
        assert closing is None and batch.observation.ax["app_count"] == 1
        assert _one(nodes, "label", "Pressed")["center"] is not None
        assert _one(nodes, "text", "name")["value"] == "qt text"
        assert _one(nodes, "password text")["value"] == "withheld"
        assert SECRET not in json.dumps(batch.raw)
        after = display.accessibility(app)
        assert after.find(role="label", name="Pressed") is not None
        assert after.find(role="text", name="name").value == "qt text"
        pw = after.find(role="password text")
        assert pw.value is None and pw.value_withheld
        assert SECRET not in json.dumps(after.raw)


PAGE = ("data:text/html,<title>ax</title><body%20style='margin:0'>"
        "<button%20onclick='window.clicked=event.isTrusted'>Go</button>"
        "<input%20type=password%20aria-label=secret><input%20aria-label=plain></body>")


def test_chromium_page_tree(engine, tmp_path):
    """A browser workspace on an accessibility display (--force-renderer-accessibility): the
    page's button found in the tree and clicked at its centre (the page sees a trusted click),
    text typed into the plain input read back, the password typed never read."""
    with engine.create_display(width=500, height=440, accessibility=True) as display, \
            display.browser(PAGE, viewport=(480, 400)) as browser:
        tree = _chromium_page_tree(display, browser)
        button = tree.find(role="push button", name="Go")
        plain = tree.find(role="entry", name="plain")
        password = tree.find(role="password text", name="secret")
        assert button.bounds is not None and plain is not None and password.value_withheld
        batch = display.actions([a.click(*plain.center), a.type("web text"), a.click(*password.center),
                                 a.type(SECRET), a.click(*button.center)], observe="ax", settle=True).check()
        assert browser.evaluate("window.clicked") is True
        # observe "ax" over Chromium's renderer tree: the button where the tree said, the typed
        # value, the password withheld, the secret nowhere in the reply.
        nodes, _ = _ax_lines(batch.observation.text)
        assert _one(nodes, "push button", "Go")["center"] == tuple(button.center)
        assert _one(nodes, "entry", "plain")["value"] == "web text"
        assert _one(nodes, "password text", "secret")["value"] == "withheld"
        assert SECRET not in json.dumps(batch.raw)
        after = display.accessibility(browser.app)
        assert after.find(role="entry", name="plain").value == "web text"
        assert after.find(role="password text", name="secret").value is None
        assert SECRET not in json.dumps(after.raw)


class _RegistryMonitor:
    """dbus-monitor on the display's AT-SPI bus, watching RegisterEvent calls to the registry and
    this test's marker signal; once constructed it is monitoring. Its output is read from the
    pipe's fd (unbuffered), so that select() sees every byte not yet returned."""

    def __init__(self, address):
        self.address = address
        self.pending = b""
        self.proc = subprocess.Popen(
            ["dbus-monitor", "--address", address,
             "type='method_call',interface='org.a11y.atspi.Registry',member='RegisterEvent'",
             "type='signal',interface='evident.test',member='Marker'"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            assert "NameAcquired" in self.line()  # it is on the bus and monitoring
        except BaseException:
            self.close()
            raise

    def line(self, timeout=10):
        """The monitor's next line, waited for at most `timeout` seconds ("" at its end)."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.pending:
            assert select.select([fd], [], [], timeout)[0], "dbus-monitor said nothing in time"
            chunk = os.read(fd, 65536)
            if not chunk:
                return ""
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line.decode(errors="replace") + "\n"

    def calls_until_marker(self, n):
        """The RegisterEvent lines seen before marker `n`, which is sent now: the bus routes every
        message in order, so a call made before the marker is printed before it."""
        subprocess.run(["dbus-send", "--address=" + self.address, "--type=signal", "/evident/test",
                        "evident.test.Marker", "int32:%d" % n], check=True, timeout=10)
        seen = []
        while line := self.line():
            if "member=Marker" in line:
                return seen
            if "member=RegisterEvent" in line:
                seen.append(line)
        raise AssertionError("dbus-monitor ended before the marker")

    def close(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.proc.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _chromium_page_tree(display, browser):
    """The page's tree once Chromium exposes its button (bounded)."""
    def page_tree():
        t = display.accessibility(browser.app)
        return t if t.find(role="push button", name="Go") is not None else None
    return evident.wait_for(page_tree, 20, "the page's accessibility tree")


def test_verified_type_into_a_focused_password_field_registers_no_listener(engine):
    """Chromium 156's browser process crashed (SIGSEGV) when keys went into a focused password
    field while an AT-SPI listener was registered or being withdrawn (docs/accessibility.md,
    "Verified type": one run in five of test_chromium_page_tree, every run when the listener
    stayed registered). The read-back registers its focus listener only when a walk finds no
    focused widget, so a `type` into a password field that already has the focus tells the
    registry nothing; one into a plain field still registers for its text changes (verified)."""
    with engine.create_display(width=500, height=440, accessibility=True) as display, \
            display.browser(PAGE, viewport=(480, 400)) as browser:
        tree = _chromium_page_tree(display, browser)
        plain = tree.find(role="entry", name="plain")
        password = tree.find(role="password text", name="secret")
        # the display's AT-SPI bus, as the engine publishes it on the root window
        prop = subprocess.run(["xprop", "-root", "AT_SPI_BUS"], env={**os.environ, **display.env()},
                              capture_output=True, text=True, timeout=10, check=True).stdout
        address = re.fullmatch(r'AT_SPI_BUS\(STRING\) = "(unix:[^"]+)"\n', prop).group(1)
        display.actions([a.click(*password.center)]).check()
        evident.wait_for(lambda: display.accessibility(browser.app).find(
            role="password text", name="secret", state="focused"), 20, "the password field's focus")
        with _RegistryMonitor(address) as mon:
            typed = display.actions([a.type(SECRET)]).check().results[0]
            assert typed.status == "injected" and "a password field is never read" in typed.detail
            assert mon.calls_until_marker(1) == []
            display.actions([a.click(*plain.center)]).check()
            evident.wait_for(lambda: display.accessibility(browser.app).find(
                role="entry", name="plain", state="focused"), 20, "the plain field's focus")
            verified = display.actions([a.type("web text")]).check().results[0]
            assert verified.status == "ok", verified.detail
            calls = mon.calls_until_marker(2)
            assert calls, "the plain field's read-back registered for its text changes"
        assert browser.app.alive
        assert browser.evaluate("document.querySelector('input[type=password]').value") == SECRET
