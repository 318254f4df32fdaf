"""Managed displays (``create_display(manage_windows=True)``, docs/windows.md "Managed windows"):
the engine-side window manager focuses every newly mapped window, so typing into a freshly
launched dialog without a click reaches it (GTK3 zenity, a Qt5 line edit, a Tk entry, an Athena
xmessage's default button), gives the focus back when a dialog closes, and fits a dialog larger
than the display (GTK's file chooser on a small display) into it. The same dialog on an unmanaged
display hangs off it (its window capture is clipped). What the apps received is what they wrote
themselves."""
import os
import subprocess
from pathlib import Path

import pytest

import evident

PY = "/usr/bin/python3"

# A line edit that writes what it holds to argv[1] on Return, then quits.
QT_ENTRY = r"""
import os, sys
from PyQt5.QtWidgets import QApplication, QLineEdit
app = QApplication(sys.argv[:1])
e = QLineEdit()
e.setWindowTitle("evident-qt-entry")
e.resize(240, 40)
def done():
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(e.text())
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    app.quit()
e.returnPressed.connect(done)
e.show()
sys.exit(app.exec_())
"""

# An entry that writes what it holds to argv[1] on Return (and stays open).
TK_ENTRY = r"""
import os, sys, tkinter as tk
root = tk.Tk()
root.title("evident-tk-entry")
root.geometry("240x60+0+0")
e = tk.Entry(root)
e.pack(fill="both", expand=True)
e.focus_set()
def done(_):
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(e.get())
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    e.delete(0, "end")
e.bind("<Return>", done)
# A line per focus the entry gets (keys sent before Tk gave it the focus were seen lost).
e.bind("<FocusIn>", lambda _: open(sys.argv[1] + ".focus", "a").write("in\n"))
root.mainloop()
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with evident.Engine(state_dir=str(tmp_path_factory.mktemp("state"))) as e:
        yield e


@pytest.fixture
def managed(engine):
    with engine.create_display(width=640, height=480, manage_windows=True) as d:
        yield d


def _tk_focused(out, times):
    """Waits until the Tk entry has taken the focus `times` times (its <FocusIn> log)."""
    log = Path(str(out) + ".focus")
    evident.wait_for(lambda: log.exists() and log.read_text().count("in") >= times, 15,
                     "the Tk entry to take the focus (%d)" % times)


def _corner(display):
    """Parks the pointer in a corner no window covers: PointerRoot focus would reach no app."""
    corner = (display.width - 2, display.height - 2)
    assert not any(w.x <= corner[0] < w.x + w.width and w.y <= corner[1] < w.y + w.height
                   for w in display.windows(mapped_only=True))
    display.move_mouse(*corner)


def _exit(app, timeout=15):
    evident.wait_for(lambda: not app.alive, timeout, "the app to exit")
    return app.exit_status


def test_typing_into_a_fresh_gtk_dialog_without_a_click(managed, tmp_path):
    out = tmp_path / "gtk.txt"
    assert managed.manage_windows is True
    app = managed.launch(["sh", "-c", f"zenity --entry --title evident-gtk --text t > {out}"],
                         wait_window_ms=15000)
    (w,) = managed.windows(mapped_only=True, app=app)
    assert w.focused and managed.focus()["kind"] == "window"
    _corner(managed)
    r = managed.type("reached\n")
    assert r.status == "injected" and "focus" not in r.detail
    assert _exit(app) == 0
    assert out.read_text() == "reached\n"


def test_typing_into_fresh_qt5_and_tk_windows_and_an_athena_default_button(managed, tmp_path):
    qt_out, tk_out = tmp_path / "qt.txt", tmp_path / "tk.txt"
    (tmp_path / "qt.py").write_text(QT_ENTRY)
    (tmp_path / "tk.py").write_text(TK_ENTRY)
    tk = managed.launch([PY, str(tmp_path / "tk.py"), str(tk_out)], wait_window_ms=15000)
    _corner(managed)
    # The keeper focused the window before launch returned; Tk takes it when it handles that
    # (a mapped window is not a ready app: docs/testing.md). Without this wait the keys were
    # dropped by Tk in 1 of ~6 runs of this file with one core busy.
    _tk_focused(tk_out, 1)
    managed.type("tk-first\n")
    evident.wait_for(tk_out.exists, 10, "the Tk entry to write its text")
    assert tk_out.read_text() == "tk-first"
    qt = managed.launch([PY, str(tmp_path / "qt.py"), str(qt_out)], wait_window_ms=15000)
    _corner(managed)
    managed.type("qt-typed\n")
    assert _exit(qt) == 0
    assert qt_out.read_text() == "qt-typed"
    # The Qt window went: the focus is back on the Tk entry, the topmost window left.
    os.unlink(tk_out)
    _tk_focused(tk_out, 2)
    managed.type("tk-again\n")
    evident.wait_for(tk_out.exists, 10, "the Tk entry to write its text again")
    assert tk_out.read_text() == "tk-again"
    # Athena: xmessage's default button is activated by Return when the window has the focus.
    xm = managed.launch(["xmessage", "-buttons", "no:3,yes:7", "-default", "yes", "athena"],
                        wait_window_ms=10000)
    _corner(managed)
    managed.key("Return")
    assert _exit(xm) == 7
    assert tk.alive


def test_a_dialog_larger_than_the_display_is_fitted_into_it(engine, managed, tmp_path):
    # GTK's file chooser is larger than a 640x480 display; without a window manager it hangs off.
    argv = ["zenity", "--file-selection", "--save", "--title", "evident-save-as"]
    with engine.create_display(width=640, height=480) as plain:
        app = plain.launch(argv, wait_window_ms=15000)
        (w,) = plain.windows(mapped_only=True, app=app)
        assert w.x < 0 or w.y < 0 or w.x + w.width > 640 or w.y + w.height > 480
        shot = plain.capture_window(w.id)  # clipped to what is on screen
        assert (shot.width, shot.height) != (w.width, w.height)
    app = managed.launch(argv, wait_window_ms=15000)
    (w,) = managed.windows(mapped_only=True, app=app)
    assert 0 <= w.x and 0 <= w.y and w.x + w.width <= 640 and w.y + w.height <= 480
    assert w.focused
    st = managed.status()
    assert st.window_keeper is not None and st.window_keeper["fitted"] >= 1
    managed.wait_stable(timeout=10)
    shot = managed.capture_window(w.id)  # all of it is on screen
    assert (shot.width, shot.height) == (w.width, w.height)


def test_manage_windows_must_be_a_boolean(engine):
    with pytest.raises(evident.EvidentError) as e:
        engine.call("display.create", {"width": 320, "height": 240, "manage_windows": "yes"})
    assert e.value.code == "request-args"
    assert engine.displays() == []
