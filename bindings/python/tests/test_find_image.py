"""Template search (``display.find_image`` / ``display.wait_image``, docs/windows.md "Finding an
image") against real apps: a Tk window and a Qt5 window show a PNG that Pillow drew from seeded
noise, and write where their toolkit put it on the screen (Tk's / Qt's own geometry), so the
expected position never comes from the matcher. A template that is never shown times out after
one look of an idle screen; bad templates and thresholds are refused before any wait."""
import random

import pytest
from PIL import Image

import evident

PY = "/usr/bin/python3"

# Shows argv[1] (a PNG) 700 ms after start at +37+23 inside the window; then writes the image's
# root position as "x y" to argv[2].
TK_IMAGE_LATER = r"""
import os, sys, tkinter as tk
root = tk.Tk()
root.title("evident-image-later")
root.geometry("300x200+40+30")
root.configure(bg="#303030")
img = tk.PhotoImage(file=sys.argv[1])
def show():
    l = tk.Label(root, image=img, borderwidth=0, highlightthickness=0, padx=0, pady=0)
    l.place(x=37, y=23)
    root.update_idletasks()
    with open(sys.argv[2] + ".tmp", "w") as f:
        f.write("%d %d" % (l.winfo_rootx(), l.winfo_rooty()))
    os.replace(sys.argv[2] + ".tmp", sys.argv[2])
root.after(700, show)
root.mainloop()
"""

QT_IMAGE = r"""
import os, sys
from PyQt5.QtCore import Qt, QTimer
from PyQt5.QtGui import QPixmap
from PyQt5.QtWidgets import QApplication, QLabel
app = QApplication(sys.argv[:1])
w = QLabel()
w.setWindowTitle("evident-qt-image")
w.setPixmap(QPixmap(sys.argv[1]))
w.setAlignment(Qt.AlignLeft | Qt.AlignTop)
w.setContentsMargins(0, 0, 0, 0)
w.setStyleSheet("QLabel { border: 0; padding: 0; margin: 0; }")
w.move(300, 200)
w.show()
def report():
    p = w.mapToGlobal(w.contentsRect().topLeft())
    with open(sys.argv[2] + ".tmp", "w") as f:
        f.write("%d %d" % (p.x(), p.y()))
    os.replace(sys.argv[2] + ".tmp", sys.argv[2])
QTimer.singleShot(300, report)
sys.exit(app.exec_())
"""


def noise_png(path, width, height, seed):
    rnd = random.Random(seed)
    img = Image.new("RGB", (width, height))
    img.putdata([(rnd.randrange(256), rnd.randrange(256), rnd.randrange(256))
                 for _ in range(width * height)])
    img.save(path)
    return str(path)


def reported(path):
    evident.wait_for(path.exists, 15, "the app to report its image's position")
    x, y = path.read_text().split()
    return int(x), int(y)


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with evident.Engine(state_dir=str(tmp_path_factory.mktemp("state"))) as e:
        yield e


@pytest.fixture
def display(engine):
    with engine.create_display(width=640, height=480) as d:
        yield d


def test_wait_image_finds_a_tk_image_where_tk_put_it(display, tmp_path):
    tpl = noise_png(tmp_path / "t.png", 60, 40, seed=1)
    pos = tmp_path / "pos.txt"
    (tmp_path / "tk.py").write_text(TK_IMAGE_LATER)
    display.launch([PY, str(tmp_path / "tk.py"), tpl, str(pos)], wait_window_ms=15000)
    assert display.find_image(tpl) is None or pos.exists()  # one look, usually before the image
    r = display.wait_image(tpl, timeout=15)
    assert r.outcome == "found"
    m = r.match
    assert (m.x, m.y) == reported(pos)
    assert (m.width, m.height) == (60, 40) and m.score >= 0.999
    assert r.raw["best"] == r.raw["match"] and r.raw["checks"] >= 1
    # A region that leaves the image out does not see it; one around it does.
    x, y = reported(pos)
    assert display.find_image(tpl, (x + 61, 0, 640 - x - 61, 480)) is None
    again = display.find_image(tpl, (x - 5, y - 5, 70, 50), threshold=0.99)
    assert again is not None and (again.x, again.y) == (x, y)
    # From bytes as well.
    with open(tpl, "rb") as f:
        assert display.find_image(f.read()).region == (x, y, 60, 40)


def test_wait_image_for_an_image_never_shown_times_out_after_one_look(display, tmp_path):
    shown = noise_png(tmp_path / "shown.png", 60, 40, seed=1)
    absent = noise_png(tmp_path / "absent.png", 60, 40, seed=2)
    pos = tmp_path / "pos.txt"
    (tmp_path / "tk.py").write_text(TK_IMAGE_LATER)
    display.launch([PY, str(tmp_path / "tk.py"), shown, str(pos)], wait_window_ms=15000)
    reported(pos)
    display.wait_stable(timeout=10)
    with pytest.raises(evident.WaitTimeout) as e:
        display.wait_image(absent, timeout=0.6)
    r = e.value.result
    assert r.outcome == "timeout" and r.elapsed_ms >= 600 and r.match is None
    assert r.raw["checks"] == 1  # an idle screen is searched once
    assert r.raw["best"]["score_permille"] < 950 and "best score" in str(e.value)
    r = display.wait_image(absent, timeout=0.2, raise_on_timeout=False)
    assert r.outcome == "timeout"


def test_find_image_in_a_qt5_window(display, tmp_path):
    tpl = noise_png(tmp_path / "q.png", 50, 30, seed=3)
    pos = tmp_path / "qpos.txt"
    (tmp_path / "qt.py").write_text(QT_IMAGE)
    display.launch([PY, str(tmp_path / "qt.py"), tpl, str(pos)], wait_window_ms=15000)
    where = reported(pos)
    r = display.wait_image(tpl, timeout=10)
    assert (r.match.x, r.match.y) == where and r.match.score >= 0.999


def test_bad_templates_and_thresholds_are_refused(display, tmp_path):
    flat = tmp_path / "flat.png"
    Image.new("RGB", (20, 20), (0, 255, 0)).save(flat)
    big = noise_png(tmp_path / "big.png", 100, 100, seed=4)
    (tmp_path / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    for template, region in [(str(flat), None), (big, (0, 0, 90, 200)),
                             (str(tmp_path / "bad.png"), None), (str(tmp_path / "none.png"), None)]:
        with pytest.raises(evident.DisplayError) as e:
            display.find_image(template, region)
        assert e.value.code == "wait-reference-invalid"
    for threshold in (0, 1.5, -1):
        with pytest.raises(ValueError):
            display.find_image(big, threshold=threshold)
    with pytest.raises(evident.EvidentError) as e:
        display.engine.call("wait.image", {**display._ref(), "template": big,
                                           "min_score_permille": 0})
    assert e.value.code == "request-args"
    with pytest.raises(evident.EvidentError) as e:
        display.engine.call("wait.image", {**display._ref(), "template": "relative.png"})
    assert e.value.code == "request-args"
