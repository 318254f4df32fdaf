"""A session bound to a browser workspace (begin's ``browser``, docs/sessions.md "Browser"),
against the real in-process engine, real Xvfb displays and a real Chromium:

- a session binding a live workspace clicks in its page (the page's own handler sees a trusted
  click where element_box said), and its receipt binds the workspace (id, version, target, the
  profile digest recomputed here from Chromium's own /proc cmdline, viewport) and verifies with
  ``evident verify --frames`` and the independent Python verifier;
- Chromium SIGKILLed mid-session: the next batch is ``browser-not-live``, injects nothing (the
  pointer stays where it was, by xdotool), the session stays live and aborts cleanly, and the
  display is free again;
- a workspace of another display is ``browser-binding-mismatch``, an unknown id
  ``browser-not-found``, a malformed one ``session-command``: each begins nothing.
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys

import pytest

import evident
from evident import actions as a
from evident_bin import find_evident_bin
from procs import alive

EVIDENT = find_evident_bin()
pytestmark = pytest.mark.skipif(EVIDENT is None, reason="the evident binary is not built")

PAGE = ("<!doctype html><title>bound</title><body style=\"margin:0\">"
        "<button id=\"go\" style=\"position:absolute;left:40px;top:30px;width:120px;height:50px\""
        " onclick=\"(window.clicks = window.clicks || []).push("
        "{x: event.clientX, y: event.clientY, trusted: event.isTrusted})\">go</button></body>")


def _cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return [x.decode() for x in f.read().split(b"\0")[:-1]]


def _pointer(display):
    out = subprocess.run(["xdotool", "getmouselocation", "--shell"], env={**os.environ, **display.env()},
                         capture_output=True, text=True, check=True).stdout
    fields = dict(line.split("=", 1) for line in out.split())
    return int(fields["X"]), int(fields["Y"])


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with evident.Engine(state_dir=str(tmp_path_factory.mktemp("state"))) as e:
        yield e


@pytest.fixture
def page(tmp_path):
    p = tmp_path / "page.html"
    p.write_text(PAGE)
    return p.as_uri()


def test_a_session_binds_a_live_browser_and_its_receipt_binds_the_workspace(engine, page, tmp_path):
    with engine.create_display(width=480, height=360) as display:
        browser = display.browser(page, viewport=(320, 240))
        # The profile digest, recomputed from the process's own argv (docs/browsers.md
        # "Profile digest"): argv[1:], each + "\n", the profile path written as <profile>.
        argv = _cmdline(browser.pid)
        own = "--user-data-dir=" + browser.profile_dir
        assert own in argv
        text = "".join(("--user-data-dir=<profile>" if x == own else x) + "\n" for x in argv[1:])
        profile_sha256 = hashlib.sha256(text.encode()).hexdigest()
        assert browser.profile_sha256 == profile_sha256

        with display.session(browser=browser, attempt_id="browser-bound") as s:
            assert s.snapshot["binding"]["app_id"] == browser.app_id
            assert s.browser["workspace_id"] == browser.browser_id
            box = browser.element_box("#go")
            s.actions([a.click(*box.center)])
            clicks = evident.wait_for(lambda: browser.evaluate("window.clicks || null"), timeout=10,
                                      what="the page's click handler")
            assert clicks == [{"x": box.center_x, "y": box.center_y, "trusted": True}]
            s.freeze()
            s.observe()
            s.finish({"clicked": True})
        receipt = s.receipt
        assert receipt["browser"] == {
            "workspace_id": browser.browser_id,
            "browser_version": browser.version,
            "target_id": browser.target_id,
            "profile_sha256": profile_sha256,
            "viewport": {"width": 320, "height": 240},
        }
        assert browser.version.startswith("Chrome/")
        evidence = s.evidence_dir
        path = os.path.join(evidence, "receipt.json")
        with open(path, "rb") as f:
            on_disk = json.loads(f.read())
        assert on_disk["browser"] == receipt["browser"]
        c = subprocess.run([EVIDENT, "verify", path, "--frames", evidence, "--json"],
                           capture_output=True, text=True)
        assert c.returncode == 0, c.stdout + c.stderr
        assert json.loads(c.stdout)["ok"] is True
        p = subprocess.run([sys.executable, "-m", "evident.verify", path, "--frames", evidence, "--json"],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stdout + p.stderr
        # The member is covered by the receipt id: changed, the same file no longer verifies.
        forged = dict(on_disk, browser=dict(on_disk["browser"], target_id="0" * 32))
        forged_path = tmp_path / "forged.json"
        forged_path.write_text(json.dumps(forged))
        c = subprocess.run([EVIDENT, "verify", str(forged_path), "--json"], capture_output=True, text=True)
        assert c.returncode == 1
        assert [x["name"] for x in json.loads(c.stdout)["checks"] if not x["ok"]] == ["receipt_id"]


def test_a_browser_killed_mid_session_fails_the_next_batch_and_injects_nothing(engine, page):
    with engine.create_display(width=480, height=360) as display:
        browser = display.browser(page, viewport=(320, 240))
        s = display.session(browser=browser, attempt_id="browser-killed")
        box = browser.element_box("#go")
        s.actions([a.click(*box.center)])
        evident.wait_for(lambda: browser.evaluate("window.clicks || null"), timeout=10,
                         what="the page's click handler")
        before = s.status()
        pointer = _pointer(display)
        assert pointer == box.center
        os.kill(browser.pid, signal.SIGKILL)
        evident.wait_for(lambda: not alive(browser.pid), timeout=10, what="Chromium's death")
        with pytest.raises(evident.EvidentError) as e:
            s.actions([a.click(300, 300), a.type("nothing")])
        assert e.value.code == "browser-not-live"
        after = s.status()
        assert after["phase"] == "stage"
        assert (after["action_count"], after["input_event_count"], after["sequence"]) == \
               (before["action_count"], before["input_event_count"], before["sequence"])
        assert _pointer(display) == pointer  # the refused click never moved the pointer
        with pytest.raises(evident.EvidentError) as e:
            s.freeze()
        assert e.value.code == "browser-not-live"
        s.abort()
        assert s.status()["phase"] == "aborted"
        assert s.receipt is None
        # The display is free: a batch outside any session runs.
        display.actions([a.move_mouse(10, 10)], observe="none")
        assert _pointer(display) == (10, 10)


def test_bad_bindings_begin_nothing(engine, page):
    with engine.create_display(width=480, height=360) as one, \
            engine.create_display(width=480, height=360) as other:
        foreign = other.browser(page, viewport=(320, 240))
        local = one.browser(page, viewport=(320, 240))
        cases = [
            (foreign, local.app_id, "browser-binding-mismatch"),
            ("browser-" + "0" * 32, local.app_id, "browser-not-found"),
            ("", local.app_id, "session-command"),
        ]
        for ref, app, code in cases:
            with pytest.raises(evident.EvidentError) as e:
                one.session(app, browser=ref, attempt_id="bad-" + code)
            assert e.value.code == code, ref
        # Nothing was begun: the display's lock is free and a good binding begins at once.
        with one.session(browser=local, attempt_id="good") as s:
            assert s.browser["workspace_id"] == local.browser_id
            s.freeze()
            s.observe()
            s.finish({})
        assert s.receipt["browser"]["workspace_id"] == local.browser_id
