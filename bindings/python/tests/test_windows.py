"""Windows, the display's environment and waits without input, against real apps in three
toolkits (Athena: xmessage; GTK3: zenity; Qt5: a PyQt5 window; plus Tk scripts that animate or
change colour on a schedule of their own). Every wait has a case that must succeed and one that
must time out. Pixels are checked by Pillow, independently of the engine's encoder."""
import io
import os
import stat
import subprocess
import sys
import threading
import time

import pytest
from PIL import Image

import evident
from evident import actions as a

PY = "/usr/bin/python3"

QT_APP = r"""
import sys
from PyQt5.QtWidgets import QApplication, QLabel
app = QApplication(sys.argv)
w = QLabel("evident qt window")
w.setWindowTitle("evident-qt-window")
w.resize(220, 90)
w.show()
sys.exit(app.exec_())
"""

# Redraws a label every 20 ms in the top-left corner; the rest of the window never changes.
TK_ANIMATED = r"""
import tkinter as tk
root = tk.Tk()
root.title("evident-animated")
root.geometry("300x200+0+0")
root.configure(bg="#202020")
c = tk.Canvas(root, width=60, height=60, bg="#000000", highlightthickness=0)
c.place(x=0, y=0)
n = [0]
def tick():
    n[0] += 1
    c.configure(bg="#%02x0000" % (n[0] * 37 % 256))
    root.after(20, tick)
tick()
root.mainloop()
"""

# Grey at first; turns pure green 600 ms after start.
TK_GREEN_LATER = r"""
import tkinter as tk
root = tk.Tk()
root.title("evident-green-later")
root.geometry("200x120+0+0")
f = tk.Frame(root, bg="#808080", width=200, height=120)
f.pack(fill="both", expand=True)
root.after(600, lambda: f.configure(bg="#00ff00"))
root.mainloop()
"""

# An entry that writes what it holds to argv[1] on Return.
TK_ENTRY = r"""
import sys, tkinter as tk
root = tk.Tk()
root.title("evident-entry")
root.geometry("240x60+0+0")
e = tk.Entry(root)
e.pack(fill="both", expand=True)
def done(_):
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(e.get())
    import os
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
e.bind("<Return>", done)
root.mainloop()
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with evident.Engine(state_dir=str(tmp_path_factory.mktemp("state"))) as e:
        yield e


@pytest.fixture
def display(engine):
    with engine.create_display(width=640, height=480) as d:
        yield d


def script(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_windows_of_three_toolkits_are_listed_with_owner_pid_and_geometry(display, tmp_path):
    xm = display.launch(["xmessage", "-geometry", "200x80+10+20", "athena"], wait_window_ms=10000)
    zen = display.launch(["zenity", "--info", "--text", "gtk3"], wait_window_ms=15000)
    qt = display.launch([PY, script(tmp_path, "qt.py", QT_APP)], wait_window_ms=20000)

    w_xm = display.wait_window(class_="Xmessage", timeout=5)
    w_zen = display.wait_window(class_="Zenity", timeout=5)
    w_qt = display.wait_window(title="evident-qt-window", timeout=5)
    # The content area, inside xmessage's 1-pixel X border.
    assert (w_xm.x, w_xm.y, w_xm.width, w_xm.height) == (11, 21, 200, 80)
    assert (w_xm.pid, w_xm.pid_source) == (xm.pid, "x-resource")
    assert w_zen.pid == zen.pid and w_zen.title == "Information"
    assert w_qt.pid == qt.pid and w_qt.mapped and not w_qt.override_redirect
    # app.windows(): exactly that app's mapped windows.
    assert [w.id for w in xm.windows(mapped_only=True)] == [w_xm.id]
    assert [w.id for w in zen.windows(mapped_only=True)] == [w_zen.id]
    assert [w.id for w in qt.windows(mapped_only=True)] == [w_qt.id]
    listed = {w.id for w in display.windows(mapped_only=True)}
    assert {w_xm.id, w_zen.id, w_qt.id} <= listed


def test_launch_waits_for_a_window_of_a_child_process(display):
    app = display.launch(["sh", "-c", "zenity --info --text child; echo done"],
                         wait_window_ms=15000)
    (w,) = app.windows(mapped_only=True)
    assert w.wm_class == "Zenity"
    assert w.pid != app.pid  # the window belongs to sh's child, zenity


def test_launch_window_timeout_says_what_it_waited_for(display):
    t0 = time.monotonic()
    with pytest.raises(evident.AppError) as info:
        display.launch(["sh", "-c", "exec sleep 30"], wait_window_ms=400)
    assert info.value.code == "app-window-timeout"
    assert time.monotonic() - t0 >= 0.4
    msg = info.value.message
    assert "waited 400 ms for a mapped" in msg and "descendant" in msg and "stopped" in msg
    assert "0 new since the wait began" in msg


def test_wait_window_sees_a_window_that_appears_later(display):
    got = {}

    def waiter():
        got["w"] = display.wait_window(title="later-title", timeout=15)

    t = threading.Thread(target=waiter)
    t.start()
    # The waiter is blocked on X events; the window does not exist yet.
    xm = display.launch(["xmessage", "-title", "later-title", "x"])
    t.join(20)
    assert not t.is_alive()
    assert got["w"].title == "later-title" and got["w"].pid == xm.pid


def test_wait_window_times_out_honestly(display):
    display.launch(["xmessage", "present"], wait_window_ms=10000)
    t0 = time.monotonic()
    with pytest.raises(evident.WaitTimeout) as info:
        display.wait_window(title="no such window", timeout=0.3)
    assert isinstance(info.value, AssertionError) and info.value.code == "wait-timeout"
    assert time.monotonic() - t0 >= 0.3
    r = display.wait_window(class_="NoSuchClass", timeout=0.2, raise_on_timeout=False)
    assert r.outcome == "timeout" and r.elapsed_ms >= 200 and r.window is None
    assert "1 of those considered mapped" in r.raw["seen"]
    with pytest.raises(evident.AppError) as info:
        display.wait_window(app="app-" + "0" * 32, timeout=0.1)
    assert info.value.code == "app-not-found"


def test_capture_window_is_the_windows_area_of_the_screen(display):
    display.launch(["xmessage", "-geometry", "180x70+30+40", "capture me"], wait_window_ms=10000)
    w = display.wait_window(class_="Xmessage", timeout=5)
    display.wait_stable(timeout=5)
    png = display.capture_window(w)
    assert (png.width, png.height) == (180, 70)
    shot = Image.open(io.BytesIO(display.screenshot())).convert("RGB")
    crop = shot.crop((31, 41, 211, 111))  # inside the 1-pixel border
    assert Image.open(io.BytesIO(png)).convert("RGB").tobytes() == crop.tobytes()
    with pytest.raises(evident.DisplayError) as info:
        display.capture_window(12345)
    assert info.value.code == "window-not-found"


def test_focus_window_outside_sessions_and_refused_inside(display):
    a1 = display.launch(["xmessage", "-geometry", "+0+0", "one"], wait_window_ms=10000)
    display.launch(["xmessage", "-geometry", "+0+200", "two"], wait_window_ms=10000)
    w1, w2 = sorted(display.windows(mapped_only=True), key=lambda w: w.y)
    assert display.focus()["kind"] == "pointer_root"
    assert display.focus_window(w2)
    assert display.focus() == {"kind": "window", "window": w2.id}
    assert [w.id for w in display.windows() if w.focused] == [w2.id]
    assert display.focus_window(w1)
    assert [w.id for w in display.windows() if w.focused] == [w1.id]
    with display.session(a1) as s:
        with pytest.raises(evident.DisplayError) as info:
            display.focus_window(w2)
        assert info.value.code == "display-busy"
        s.abort()
    assert [w.id for w in display.windows() if w.focused] == [w1.id]


def test_wait_stable_on_an_idle_screen_and_an_animated_region(display, tmp_path):
    r = display.wait_stable(quiet_ms=200, timeout=3)
    assert r.outcome == "stable" and 200 <= r.elapsed_ms < 3000
    display.launch([PY, script(tmp_path, "anim.py", TK_ANIMATED)], wait_window_ms=15000)
    display.wait_window(title="evident-animated", timeout=5)
    # The animated corner never settles ...
    with pytest.raises(evident.WaitTimeout) as info:
        display.wait_stable((0, 0, 60, 60), quiet_ms=300, timeout=1.5)
    assert info.value.result.raw["changes"] > 0
    # ... while a region beside it does, and so does the untouched rest of the display.
    assert display.wait_stable((100, 100, 100, 50), quiet_ms=300, timeout=5).outcome == "stable"
    assert display.wait_stable((400, 300, 200, 150), quiet_ms=300, timeout=5).outcome == "stable"


def test_wait_pixels_for_a_colour_and_a_reference_image(display, tmp_path):
    display.launch([PY, script(tmp_path, "green.py", TK_GREEN_LATER)], wait_window_ms=15000)
    r = display.wait_pixels((20, 20, 50, 50), color="#00ff00", timeout=10)
    assert r.outcome == "matched" and r.raw["last"]["matching"] == 2500
    shot = Image.open(io.BytesIO(display.screenshot())).convert("RGB")
    assert shot.getpixel((40, 40)) == (0, 255, 0)
    # A colour that never appears times out, with the last comparison.
    with pytest.raises(evident.WaitTimeout) as info:
        display.wait_pixels((20, 20, 50, 50), color=(255, 0, 0), tolerance=10, timeout=0.3)
    assert info.value.result.raw["last"]["matching"] == 0
    # A reference image: the screen's own pixels match; one changed pixel does not, unless allowed.
    ref = shot.crop((10, 10, 60, 60))
    buf = io.BytesIO()
    ref.save(buf, "PNG")
    assert display.wait_pixels(reference=buf.getvalue(), at=(10, 10), timeout=2).outcome == "matched"
    ref.putpixel((5, 5), (0, 0, 255))
    path = str(tmp_path / "ref.png")
    ref.save(path)
    r = display.wait_pixels(reference=path, at=(10, 10), timeout=0.3, raise_on_timeout=False)
    assert r.outcome == "timeout" and r.raw["last"]["matching"] == 2499
    assert display.wait_pixels(reference=path, at=(10, 10), max_pixels=1, timeout=2).reached
    with pytest.raises(evident.DisplayError) as info:
        display.wait_pixels(reference=b"\x89PNG\r\n\x1a\n" + b"\0" * 20, at=(0, 0), timeout=1)
    assert info.value.code == "wait-reference-invalid"
    # A PNG header that passes the Python check but whose data is corrupt: the engine refuses it.
    bad = bytearray(buf.getvalue())
    bad[60:80] = b"\xff" * 20
    with pytest.raises(evident.DisplayError) as info:
        display.wait_pixels(reference=bytes(bad), at=(10, 10), timeout=1)
    assert info.value.code == "wait-reference-invalid"


def test_launch_env_and_cwd_and_the_displays_environment(display, tmp_path):
    out = tmp_path / "env.txt"
    app = display.launch(["sh", "-c", f'echo "$EVIDENT_T1|$PWD|$DISPLAY" > {out}; exec sleep 30'],
                         env={"EVIDENT_T1": "v a l"}, cwd=str(tmp_path))
    evident.wait_for(lambda: out.exists() and out.read_text().endswith("\n"), 10, "env.txt")
    assert out.read_text() == f"v a l|{tmp_path}|{display.name}\n"
    app.stop()
    for bad in ({"DISPLAY": ":99"}, {"XAUTHORITY": "/tmp/x"}, {"1BAD": "x"}):
        with pytest.raises(evident.AppError) as info:
            display.launch(["true"], env=bad)
        assert info.value.code == "app-args"
    with pytest.raises(evident.AppError) as info:
        display.launch(["true"], cwd=str(tmp_path / "missing"))
    assert info.value.code == "app-args"
    env = display.env()
    assert env["DISPLAY"] == display.name
    st = os.stat(env["XAUTHORITY"])
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid()
    # A helper tool with that environment reaches the display; without the cookie it cannot.
    ok = subprocess.run(["xprop", "-root", "_NET_SUPPORTED"], env={**os.environ, **env},
                        capture_output=True, timeout=20)
    assert ok.returncode == 0
    no_cookie = subprocess.run(["xprop", "-root"], capture_output=True, timeout=20,
                               env={**os.environ, "DISPLAY": env["DISPLAY"],
                                    "XAUTHORITY": str(tmp_path / "none")})
    assert no_cookie.returncode != 0


def test_key_uppercase_letter_types_that_letter(display, tmp_path):
    out = tmp_path / "entry.txt"
    display.launch([PY, script(tmp_path, "entry.py", TK_ENTRY), str(out)], wait_window_ms=15000)
    w = display.wait_window(title="evident-entry", timeout=5)
    display.wait_stable(timeout=5)
    display.click(w.x + 50, w.y + 30)
    for k in ("G", "g", "shift+h", "Return"):
        display.key(k)
    evident.wait_for(out.exists, 10, "the entry's text file")
    assert out.read_text() == "GgH"


def test_exit_status_is_known_after_the_app_exited(display):
    app = display.launch(["sh", "-c", "sleep 0.3; exit 3"])
    assert app.exit_status is None
    evident.wait_for(lambda: not app.alive, 10, "the app to exit")
    assert app.exit_status == 3
    assert app.info()["exit_status"] == 3
    assert app.stop() == 3 and app.exit_status == 3


NO_KEYS = "no window was under the pointer"


def _set_focus_none(env):
    """A real X client (ctypes over libX11) that sets the input focus to None, as an app may."""
    code = ("import ctypes; x = ctypes.CDLL('libX11.so.6'); x.XOpenDisplay.restype = ctypes.c_void_p;"
            "d = ctypes.c_void_p(x.XOpenDisplay(None)); assert d;"
            "x.XSetInputFocus(d, ctypes.c_ulong(0), 0, ctypes.c_ulong(0)); x.XSync(d, 0);"
            "x.XCloseDisplay(d)")
    subprocess.run([PY, "-c", code], env={**os.environ, **env}, check=True, timeout=20)


def test_type_says_when_its_keys_reach_no_app(display, tmp_path):
    # A GTK3 dialog on a display without a window manager: nothing gives it the focus.
    out = tmp_path / "entry.txt"
    app = display.launch(["sh", "-c", f"zenity --entry --title evident-type-hint --text t > {out}"],
                         wait_window_ms=15000)
    w = display.wait_window(title="evident-type-hint", timeout=5)
    corner = (display.width - 3, display.height - 3)
    assert not any(v.x <= corner[0] < v.x + v.width and v.y <= corner[1] < v.y + v.height
                   for v in display.windows(mapped_only=True))
    assert display.focus()["kind"] == "pointer_root"
    display.move_mouse(*corner)
    r = display.type("lost")
    assert r.status == "injected"
    assert f"PointerRoot and {NO_KEYS} at ({corner[0]},{corner[1]})" in r.detail
    assert "lost" not in r.detail
    # After a click on the dialog the keys reach it, and the detail has no such note.
    display.click(w.x + w.width // 2, w.y + w.height // 2)
    r = display.type("kept\n")
    assert r.status == "injected" and "focus" not in r.detail
    evident.wait_for(lambda: not app.alive, 10, "zenity to exit on Return")
    assert out.read_text() == "kept\n"  # "lost" went nowhere, as the first detail said


def test_type_says_when_the_focus_is_none_in_batches_and_sessions(display):
    app = display.launch(["xmessage", "-geometry", "+0+0", "focus none"], wait_window_ms=10000)
    _set_focus_none(display.env())
    assert display.focus()["kind"] == "none"
    hint = "the input focus was None: no window received the keys"
    (r,) = display.actions([a.type("secret-a")], observe="none").results
    assert r.status == "injected" and hint in r.detail and "secret" not in r.detail
    with display.session(app) as s:
        (r,) = s.actions([a.type("secret-b")])
        assert r.status == "injected" and hint in r.detail
        s.freeze()
        s.observe()
        receipt = s.finish({"case": "focus none"})
    with open(s.receipt_path) as f:
        text = f.read()
    # The receipt holds the actions' projections (docs/actions.md), never the typed text.
    assert receipt["schema"].startswith("evident.session-receipt/") and "secret" not in text
