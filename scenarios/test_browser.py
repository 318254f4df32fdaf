"""Scenario: fill a web form in a real Chromium window with native input, and read the page's
own state back from the page.

What it shows:
  * a browser workspace (``display.browser``): Debian's ``chromium`` as a normal window on an
    owned display (not headless), a fresh private profile, DevTools on loopback only, the exact
    CSS viewport, loading a page served from ``fixtures/web/`` on 127.0.0.1,
  * clicking and typing natively at element positions the engine computes
    (``browser.element_box``: window geometry + the element's box, no pixel markers),
  * verifying through the page itself (``browser.evaluate``): ``event.isTrusted`` proves the
    click was real input,
  * a session bound to the browser's process that ends in a verified receipt.
"""
import hashlib

import pytest

from evident import actions as a

from scenario_support import WEB_ROOT, hex_rgb, region_fraction, serve_directory, wait_for

WIDTH, HEIGHT = 800, 600  # the CSS viewport; the display is one band taller (docs/browsers.md)
NAME, CITY = "Zoë", "Zürich — 東京"
GREEN = hex_rgb("#1e8e3e")


@pytest.fixture
def web_root_url():
    with serve_directory(WEB_ROOT) as url:
        yield url


@pytest.mark.evident_display(width=WIDTH, height=HEIGHT + 40)
def test_fill_web_form_in_chromium(evident_display, evident_evidence, web_root_url):
    url = f"{web_root_url}/form.html"
    # Returns once the page fired its load event and the viewport is exactly WIDTHxHEIGHT.
    with evident_display.browser(url, viewport=(WIDTH, HEIGHT)) as browser:
        assert browser.evaluate("[innerWidth, innerHeight]") == [WIDTH, HEIGHT]
        assert browser.evaluate("!!window.evidentForm") is True

        def centre(selector):
            box = browser.element_box(selector)
            assert box.in_viewport, (selector, box)
            return box.center

        job = hashlib.sha256(b"browser: fill and submit form.html").hexdigest()
        with evident_evidence.session(browser.app, job_sha256=job) as session:
            results = session.actions([
                a.click(*centre("#name")), a.type(NAME),
                a.click(*centre("#city")), a.type(CITY),
                a.click(*centre("#submit")),
            ])
            assert all(r.ok for r in results), results

            # The page's own state: the values, and proof that the click was trusted input.
            state = wait_for(lambda: browser.evaluate("window.evidentForm.submitted"), timeout=10,
                             what="the page's submitted state")
            assert state == {"name": NAME, "city": CITY, "trusted": True}

            # The page's state changes before Chromium paints it (the compositor draws on its own
            # schedule), so wait until a frame shows the green status, then freeze and observe:
            # the observed frame is captured after that and must show it too.
            s = browser.element_box("#status")
            box = (s.x, s.y, s.width, s.height)
            wait_for(lambda: region_fraction(evident_display.image(), box, GREEN) > 0.5,
                     timeout=10, what="the green status on screen")

            session.freeze()
            session.observe()
            assert region_fraction(session.frame.image(), box, GREEN) > 0.5

            receipt = session.finish({"scenario": "browser-form", "page_state": state})
        assert receipt["action_count"] == 5
        verification = evident_evidence.verify(session, expect_job_sha256=job)
        assert verification.ok, verification.failed
