"""Scenario: a person fills in a Tk form with Unicode text and submits it.

What it shows:
  * an owned display sized for the app (``@pytest.mark.evident_display``),
  * launching an app and waiting for its window (``evident_app``), then for the form itself to be
    on screen: a mapped top-level window is not yet a drawn form (Tk maps and draws its widgets
    afterwards, and a click before that lands on nothing),
  * a recorded session: native clicks and typing, each followed by a frame,
  * checking the result twice: on screen (the pixels of the status bar) and in the app's output,
  * finishing with claims and verifying the receipt (C++ and Python verifiers).
"""
import hashlib
import sys

import pytest

from evident import actions as a

from scenario_support import APPS, hex_rgb, read_json_file, region_fraction, wait_for

sys.path.insert(0, str(APPS))
import tk_form  # noqa: E402  (the app's layout constants: the test clicks where the app draws)


def centre(box):
    x, y, w, h = box
    return x + w // 2, y + h // 2


NAME, CITY = "Zoë", "Zürich — 東京"
GREEN, WHITE = hex_rgb(tk_form.SUBMITTED_GREEN), hex_rgb(tk_form.ENTRY_WHITE)


def form_drawn(image) -> bool:
    """Both entries are on screen (mostly white inside their borders)."""
    return all(region_fraction(image, box, WHITE) > 0.6
               for box in (tk_form.NAME_ENTRY, tk_form.CITY_ENTRY))


@pytest.mark.evident_display(width=tk_form.WIDTH, height=tk_form.HEIGHT)
def test_fill_and_submit_tk_form(evident_display, evident_app, evident_evidence, tmp_path):
    out = tmp_path / "submitted.json"
    app = evident_app([sys.executable, str(APPS / "tk_form.py"), "--out", str(out)],
                      wait_window_ms=10000)
    wait_for(lambda: form_drawn(evident_display.image()), timeout=10, what="the form on screen")

    # The job this session performs, as a digest the receipt binds (any stable description).
    job = hashlib.sha256(f"fill tk form: name, city, submit".encode()).hexdigest()
    with evident_evidence.session(app, job_sha256=job) as session:
        # Before: the form is there and the status bar is not green.
        initial = session.frame.image()
        assert form_drawn(initial)
        assert region_fraction(initial, tk_form.STATUS_BAR, GREEN) == 0

        results = session.actions([
            a.click(*centre(tk_form.NAME_ENTRY)), a.type(NAME),
            a.click(*centre(tk_form.CITY_ENTRY)), a.type(CITY),
            a.click(*centre(tk_form.SUBMIT_BUTTON)),
        ])
        assert all(r.ok for r in results), results

        # The app's own output: the exact Unicode text arrived.
        submitted = wait_for(lambda: read_json_file(out), timeout=10, what="the form's output")
        assert submitted == {"name": NAME, "city": CITY}

        # On screen: freeze input, then observe one fresh frame and look at its pixels.
        session.freeze()
        session.observe()
        observed = session.frame.image()
        assert region_fraction(observed, tk_form.STATUS_BAR, GREEN) > 0.5

        receipt = session.finish({
            "scenario": "tk-form",
            "submitted": submitted,
            "status_bar": "green (Submitted)",
        })
    # Leaving the block closed the session; its evidence is in the test's evidence dir.
    assert receipt["action_count"] == 5
    assert receipt["claims"]["submitted"] == {"name": NAME, "city": CITY}
    verification = evident_evidence.verify(session, expect_job_sha256=job)
    assert verification.ok, verification.failed
