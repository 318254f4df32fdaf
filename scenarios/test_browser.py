"""Scenario: fill a web form in a real Chromium window with native input, and read the page's
own state back through the DevTools protocol.

What it shows:
  * Debian's ``chromium`` as a normal window on an owned display (not headless), with a fresh
    private profile, loading a page served from ``fixtures/web/`` on 127.0.0.1,
  * finding where the page sits on screen from pixels (a magenta marker at the viewport origin),
    then clicking and typing natively at element positions asked from the page,
  * verifying through the page itself: ``event.isTrusted`` proves the click was real input,
  * a session that ends in a verified receipt.
"""
import hashlib

import pytest

from evident import actions as a

from scenario_support import (WEB_ROOT, DevTools, chromium_argv, devtools_port, find_colour,
                              hex_rgb, region_fraction, serve_directory, wait_for)

WIDTH, HEIGHT = 800, 600
NAME, CITY = "Zoë", "Zürich — 東京"
MAGENTA, GREEN = hex_rgb("#ff00ff"), hex_rgb("#1e8e3e")


@pytest.fixture
def web_root_url():
    with serve_directory(WEB_ROOT) as url:
        yield url


@pytest.mark.evident_display(width=WIDTH, height=HEIGHT)
def test_fill_web_form_in_chromium(evident_display, evident_app, evident_evidence,
                                   web_root_url, tmp_path):
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    url = f"{web_root_url}/form.html"
    browser = evident_app(chromium_argv(url, profile, WIDTH, HEIGHT), wait_window_ms=30000)

    port = wait_for(lambda: devtools_port(profile), timeout=30, what="DevToolsActivePort")
    page = DevTools(port, url)
    try:
        wait_for(lambda: page.evaluate("document.readyState === 'complete' && "
                                       "!!window.evidentForm"), timeout=30, what="the page")

        # Where is the viewport on the display? Find the page's magenta marker in a frame; accept
        # it once two consecutive frames agree (the layout has stopped moving).
        last = []

        def viewport_origin():
            marker = find_colour(evident_display.image(), MAGENTA)
            stable = marker is not None and last and last[-1] == marker
            last.append(marker)
            return marker if stable else None

        origin = wait_for(viewport_origin, timeout=30, what="the page's marker on screen")

        def on_screen(element_id):
            r = page.evaluate(f"(() => {{ const r = document.getElementById('{element_id}')"
                              f".getBoundingClientRect(); return [r.x, r.y, r.width, r.height];"
                              f" }})()")
            return origin[0] + int(r[0] + r[2] / 2), origin[1] + int(r[1] + r[3] / 2)

        job = hashlib.sha256(b"browser: fill and submit form.html").hexdigest()
        with evident_evidence.session(browser, job_sha256=job) as session:
            results = session.actions([
                a.click(*on_screen("name")), a.type(NAME),
                a.click(*on_screen("city")), a.type(CITY),
                a.click(*on_screen("submit")),
            ])
            assert all(r.ok for r in results), results

            # The page's own state: the values, and proof that the click was trusted input.
            state = wait_for(lambda: page.evaluate("window.evidentForm.submitted"), timeout=10,
                             what="the page's submitted state")
            assert state == {"name": NAME, "city": CITY, "trusted": True}

            # The page's state changes before Chromium paints it (the compositor draws on its own
            # schedule), so wait until a frame shows the green status, then freeze and observe:
            # the observed frame is captured after that and must show it too.
            status = page.evaluate("(() => { const r = document.getElementById('status')"
                                   ".getBoundingClientRect(); return [r.x, r.y, r.width, "
                                   "r.height]; })()")
            box = (origin[0] + int(status[0]), origin[1] + int(status[1]), int(status[2]),
                   int(status[3]))
            wait_for(lambda: region_fraction(evident_display.image(), box, GREEN) > 0.5,
                     timeout=10, what="the green status on screen")

            session.freeze()
            session.observe()
            assert region_fraction(session.frame.image(), box, GREEN) > 0.5

            receipt = session.finish({"scenario": "browser-form", "page_state": state})
        assert receipt["action_count"] == 5
        verification = evident_evidence.verify(session, expect_job_sha256=job)
        assert verification.ok, verification.failed
    finally:
        page.close()
