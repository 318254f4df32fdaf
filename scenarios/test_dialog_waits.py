"""Scenario: answer a third-party GTK dialog with no sleeps and no pixel hunting.

What it shows:
  * ``zenity --question`` (GTK3) started by a shell (``sh -c "zenity …; echo $? > …"``): the
    window belongs to the shell's child, and ``wait_window_ms``/``wait_window`` still find it,
  * ``wait_stable`` on the dialog's area instead of a sleep before looking at it,
  * ``find_text`` (OCR, re-read only when the screen changes) to confirm the question is shown
    and to locate the button to press, by its caption, instead of hard-coded coordinates,
  * the effect checked where it lands (zenity's exit status, written by the shell), and the
    dialog's window gone (``wait_window`` on its id times out), in a session with a verified
    receipt (bound to the shell, which stays alive after zenity exits).
"""
import hashlib

import pytest

from evident import actions as a

from scenario_support import wait_for

WIDTH, HEIGHT = 640, 400
QUESTION = "Is the quarterly report final?"


@pytest.mark.evident_display(width=WIDTH, height=HEIGHT)
def test_answer_a_gtk_dialog_found_by_its_text(evident_display, evident_app, evident_evidence,
                                               tmp_path):
    status = tmp_path / "status.txt"
    app = evident_app([
        "sh", "-c", f"zenity --question --text '{QUESTION}' --ok-label Publish "
                    f"--cancel-label Revise; echo $? > '{status}.tmp' && mv '{status}.tmp' '{status}'; "
                    f"exec sleep 600",   # the session's app outlives the dialog
    ], wait_window_ms=15000)
    dialog = evident_display.wait_window(class_="Zenity", timeout=10)
    assert dialog.pid != app.pid   # zenity is the shell's child
    evident_display.wait_stable(dialog.region, timeout=5)

    # The question is on screen, and the button is where OCR reads its caption.
    evident_display.find_text("quarterly report final", dialog.region, timeout=20)
    button = evident_display.find_text("Publish", dialog.region, timeout=20).raw["box"]
    x = button["x"] + button["width"] // 2
    y = button["y"] + button["height"] // 2
    assert dialog.x <= x < dialog.x + dialog.width and dialog.y <= y < dialog.y + dialog.height

    job = hashlib.sha256(b"dialog: publish the report").hexdigest()
    with evident_evidence.session(app, job_sha256=job) as session:
        results = session.actions([a.click(x, y)])
        assert all(r.ok for r in results), results
        # zenity exits 0 for the OK button; the shell writes that, renamed into place.
        answer = wait_for(lambda: status.exists() and status.read_text(), timeout=10,
                          what="zenity's exit status")
        assert answer == "0\n"
        # The dialog is gone: a wait for its window by id times out.
        gone = evident_display.wait_window(id=dialog.id, timeout=0.5, raise_on_timeout=False)
        assert gone.outcome == "timeout"
        session.freeze()
        session.observe()
        receipt = session.finish({"scenario": "dialog-waits", "button": "Publish",
                                  "zenity_exit_status": 0})
    assert receipt["action_count"] == 1
    verification = evident_evidence.verify(session, expect_job_sha256=job)
    assert verification.ok, verification.failed
