"""The Python browser API (docs/browsers.md) against the real in-process engine, a real Xvfb and
a real Chromium: one Chromium start, its page checked through the API, its screen box clicked
with native input and the click seen by the page, every refusal a BrowserError with a stable
code, and the display's destroy taking the browser, its processes and its profile with it."""
import os

import pytest

import evident
from evident import actions as a
from procs import alive

PAGE = ("<!doctype html><title>py</title><body style=\"margin:0\">"
        "<button id=\"go\" style=\"position:absolute;left:40px;top:30px;width:120px;height:50px\""
        " onclick=\"window.clicked = {x: event.clientX, y: event.clientY, trusted: event.isTrusted}\">"
        "go</button></body>")


def _group(pgid):
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                out.append(int(name))
    return out


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with evident.Engine(state_dir=str(tmp_path_factory.mktemp("state"))) as e:
        yield e


def test_refusals_are_browser_errors_and_start_nothing(engine, tmp_path):
    with engine.create_display(width=400, height=300) as display:
        cases = [
            (dict(url="javascript:1"), "browser-url-scheme"),
            (dict(url="about:blank", viewport=(400, 300)), "browser-viewport-range"),
            (dict(url="about:blank", viewport=(10, 10)), "browser-viewport-range"),
            (dict(url="about:blank", extra_args=["--headless"]), "browser-args"),
        ]
        for kwargs, code in cases:
            with pytest.raises(evident.BrowserError) as e:
                display.browser(**kwargs)
            assert e.value.code == code
        existing = tmp_path / "profile"
        existing.mkdir()
        with pytest.raises(evident.BrowserError) as e:
            display.browser("about:blank", profile_dir=str(existing))
        assert e.value.code == "browser-profile-exists"
        assert existing.is_dir() and not any(existing.iterdir())
        assert engine.call("app.list", {})["apps"] == []


def test_click_an_element_box_and_destroy_the_display(engine, tmp_path):
    page = tmp_path / "page.html"
    page.write_text(PAGE)
    display = engine.create_display(width=480, height=360)
    browser = display.browser(page.as_uri(), viewport=(320, 240))
    assert browser.viewport == (320, 240)
    assert browser.version.startswith("Chrome/")
    assert browser.evaluate("[innerWidth, innerHeight, document.title]") == [320, 240, "py"]
    assert browser.status()["live"] is True

    box = browser.element_box("#go")
    assert (box.x, box.y, box.width, box.height) == (40, 30, 120, 50)
    display.actions([a.click(*box.center)], observe="none")
    clicked = evident.wait_for(lambda: browser.evaluate("window.clicked || null"), timeout=10,
                               what="the page's click handler")
    # The native click landed where element_box said, as the page itself saw it.
    assert clicked == {"x": box.center_x, "y": box.center_y, "trusted": True}

    with pytest.raises(evident.BrowserError) as e:
        browser.element_box("#missing")
    assert e.value.code == "browser-element-not-found"
    with pytest.raises(evident.BrowserError) as e:
        browser.evaluate("nope(")
    assert e.value.code == "browser-evaluate-exception"
    assert browser.navigate("about:blank") == "about:blank"

    members = _group(browser.pid)
    assert len(members) >= 2
    profile = browser.profile_dir
    assert os.path.isdir(profile)
    display.destroy()
    assert all(evident.wait_for(lambda p=p: not alive(p), timeout=10, what="a Chromium process")
               for p in members)
    assert not os.path.exists(profile)
    with pytest.raises(evident.BrowserError) as e:
        browser.evaluate("1")
    assert e.value.code == "browser-not-found"
    browser.__exit__(None, None, None)  # closing an already closed browser is quiet
