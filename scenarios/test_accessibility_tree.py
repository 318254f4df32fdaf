"""Scenario: find widgets by role and name in the accessibility tree of a GTK 3 app, a Qt 5 app
and a Chromium page, drive them with native input at the nodes' centres, and check the effect
both where the app records it and in the tree read again.

What it shows:
  * a display with its own accessibility stack (``@pytest.mark.evident_display(accessibility=
    True)``: a private D-Bus session bus, AT-SPI bus and registry, gone with the display;
    docs/accessibility.md),
  * ``display.accessibility(app).find(role=, name=)`` instead of coordinates, OCR or pixel
    markers: the node's ``center`` is where the click goes,
  * the same recipe for three toolkits: GTK 3 (``fixtures/gtk/ax_app.py``), Qt 5 through Debian's
    PyQt5 (``fixtures/qt/ax_app.py``) and Chromium as a browser workspace (``display.browser``,
    whose page is exposed on the display's bus),
  * the effect checked twice: in what the app itself received (its JSON-lines log, or the page's
    ``window.evidentForm`` with ``event.isTrusted``) and in a fresh read of the tree (the entry's
    value, the label's new name),
  * each in a session that ends in a verified receipt.
"""
import hashlib
import json

import pytest

import evident
from evident import actions as a

from scenario_support import REPO, WEB_ROOT, serve_directory, wait_for

NAME = "Zoë"
CITY = "Zürich — 東京"
HELLO = {"gtk": "Hello label", "qt": "Hello Qt"}  # each fixture's label before the click


def app_events(log):
    """The fixture's record of what it received (one JSON object per line)."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]


def logged(log, event):
    """The app's record once it holds ``event``, else None."""
    events = app_events(log)
    return events if event in events else None


def tree_with(display, app, role, name):
    """The app's tree once it holds a ``role``/``name`` node: a toolkit registers on the bus
    around the time its window maps (until then the read is ``accessibility-app-not-found``,
    retryable), and Chromium fills in a page's tree after the page loaded."""
    def read():
        try:
            tree = display.accessibility(app)
        except evident.AccessibilityError as e:
            if e.code != "accessibility-app-not-found":
                raise
            return None
        return tree if tree.find(role=role, name=name) is not None else None
    return wait_for(read, timeout=30, what=f"a {role} {name!r} in the accessibility tree")


@pytest.mark.parametrize("toolkit", ["gtk", "qt"])
@pytest.mark.evident_display(width=480, height=320, accessibility=True)
def test_toolkit_form_found_in_the_tree(toolkit, evident_display, evident_app, evident_evidence,
                                        tmp_path):
    log = tmp_path / "events.jsonl"
    app = evident_app(["/usr/bin/python3", str(REPO / "fixtures" / toolkit / "ax_app.py"),
                       "--log", str(log)], wait_window_ms=30000)
    wait_for(lambda: logged(log, {"event": "ready"}), timeout=30, what="the app's ready line")

    tree = tree_with(evident_display, app, "push button", "Press me")
    button = tree.find(role="push button", name="Press me")
    entry = tree.find(role="text", name="name")
    assert tree.find(role="label", name=HELLO[toolkit]) is not None
    assert entry is not None and entry.has("editable") and entry.value == ""
    assert button.has("showing") and button.center is not None
    password = tree.find(role="password text", name="password")
    assert password is not None and password.value is None and password.value_withheld

    job = hashlib.sha256(f"accessibility: {toolkit} form through the tree".encode()).hexdigest()
    with evident_evidence.session(app, job_sha256=job) as session:
        results = session.actions([a.click(*entry.center), a.type(NAME), a.key("Return"),
                                   a.click(*button.center)])
        assert all(r.ok for r in results), results

        # What the app received: the typed text once (on Return), and one click of the button.
        events = wait_for(lambda: logged(log, {"event": "clicked", "button": "Press me"}),
                          timeout=10, what="the click in the app's log")
        received = [e for e in events if e["event"] != "ready"]
        assert received == [{"event": "activated", "entry": "name", "text": NAME},
                            {"event": "clicked", "button": "Press me"}]

        # The tree, read again: the label now says Pressed, the entry holds the text.
        after = evident_display.accessibility(app)
        assert after.find(role="label", name="Pressed") is not None
        assert after.find(role="label", name=HELLO[toolkit]) is None
        assert after.find(role="text", name="name").value == NAME
        assert after.find(role="password text", name="password").value is None

        session.freeze()
        session.observe()
        receipt = session.finish({"scenario": f"accessibility-{toolkit}", "typed": NAME,
                                  "app_received": received, "label_after": "Pressed"})
    assert receipt["action_count"] == 4
    verification = evident_evidence.verify(session, expect_job_sha256=job)
    assert verification.ok, verification.failed


@pytest.fixture
def web_root_url():
    with serve_directory(WEB_ROOT) as url:
        yield url


@pytest.mark.evident_display(width=800, height=640, accessibility=True)
def test_chromium_form_found_in_the_tree(evident_display, evident_evidence, web_root_url):
    # A browser workspace on a display with the stack runs with renderer accessibility on.
    with evident_display.browser(f"{web_root_url}/form.html", viewport=(800, 600)) as browser:
        tree = tree_with(evident_display, browser.app, "push button", "Submit")
        name = tree.find(role="entry", name="Name")
        city = tree.find(role="entry", name="City")
        submit = tree.find(role="push button", name="Submit")
        assert name is not None and city is not None and name.value == city.value == ""
        # The tree's screen bounds and the engine's DevTools geometry agree on the button.
        box = browser.element_box("#submit")
        assert submit.bounds == (box.x, box.y, box.width, box.height), (submit.bounds, box)

        job = hashlib.sha256(b"accessibility: chromium form through the tree").hexdigest()
        with evident_evidence.session(browser.app, job_sha256=job) as session:
            results = session.actions([a.click(*name.center), a.type(NAME),
                                       a.click(*city.center), a.type(CITY),
                                       a.click(*submit.center)])
            assert all(r.ok for r in results), results

            # What the page received: the values, from trusted (native) input.
            state = wait_for(lambda: browser.evaluate("window.evidentForm.submitted"),
                             timeout=10, what="the page's submitted state")
            assert state == {"name": NAME, "city": CITY, "trusted": True}

            # The tree follows the page (Chromium sends its updates from the renderer).
            after = tree_with(evident_display, browser.app, "static", "Submitted")
            assert after.find(role="entry", name="Name").value == NAME
            assert after.find(role="entry", name="City").value == CITY
            assert after.find(role="document web", name="Submitted") is not None

            session.freeze()
            session.observe()
            receipt = session.finish({"scenario": "accessibility-chromium", "page_state": state,
                                      "tree_status": "Submitted"})
        assert receipt["action_count"] == 5
        verification = evident_evidence.verify(session, expect_job_sha256=job)
        assert verification.ok, verification.failed
