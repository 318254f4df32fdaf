"""keyboard_layout= for a display: setxkbmap once ready, reported (read back from the server) by
display status, and typing stays exact in two layouts (us, de) and two toolkits (a Tk entry and
xterm), each app writing exactly what it received to a file."""
import pytest

import evident

PY = "/usr/bin/python3"
# Letters that move between us and de (y/z), characters on AltGr or shifted keys in de, umlauts
# and ß (on de keys, through spare keycodes in us), and punctuation.
TEXT = "Zyx yz@{}[]|~\\ äöü ÄÖÜ ß €#'<>;:-_=+ Qq"

TK_ENTRY = r"""
import os, sys, tkinter as tk
root = tk.Tk()
root.title("evident-layout-entry")
root.geometry("400x60+0+0")
e = tk.Entry(root)
e.pack(fill="both", expand=True)
e.focus_set()
def done(_):
    with open(sys.argv[1] + ".tmp", "w", encoding="utf-8") as f:
        f.write(e.get())
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
e.bind("<Return>", done)
root.mainloop()
"""

# Runs inside xterm: one line from the terminal, written as UTF-8.
XTERM_READER = r"""
import os, sys
line = sys.stdin.readline().rstrip("\n")
with open(sys.argv[1] + ".tmp", "w", encoding="utf-8") as f:
    f.write(line)
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with evident.Engine(state_dir=str(tmp_path_factory.mktemp("state"))) as e:
        yield e


def _type_into(d, argv, title, out, env=None):
    d.launch(argv, wait_window_ms=15000, env=env)
    w = d.wait_window(title=title, timeout=10)
    d.wait_stable(timeout=5)
    d.click(w.x + w.width // 2, w.y + w.height // 2)
    r = d.type(TEXT + "\n")
    assert r.status == "injected" and "focus" not in r.detail
    evident.wait_for(out.exists, 15, "the app's file")
    return out.read_text(encoding="utf-8")


@pytest.mark.parametrize("layout", [None, "de"])
def test_typing_is_exact_in_a_layout_in_tk_and_xterm(engine, tmp_path, layout):
    with engine.create_display(width=640, height=480, keyboard_layout=layout) as d:
        st = d.status()
        assert st.keyboard_layout == (layout or "us")
        tk_script = tmp_path / "entry.py"
        tk_script.write_text(TK_ENTRY)
        got = _type_into(d, [PY, str(tk_script), str(tmp_path / "tk.txt")],
                         "evident-layout-entry", tmp_path / "tk.txt")
        assert got == TEXT
        reader = tmp_path / "reader.py"
        reader.write_text(XTERM_READER)
        got = _type_into(d, ["xterm", "-u8", "-T", "evident-layout-xterm", "-geometry", "60x5+0+100",
                             "-e", PY, str(reader), str(tmp_path / "xterm.txt")],
                         "evident-layout-xterm", tmp_path / "xterm.txt",
                         env={"LC_ALL": "C.UTF-8"})
        assert got == TEXT


def test_a_bad_layout_is_refused_and_leaves_no_display(engine):
    before = len(engine.displays())
    with pytest.raises(evident.DisplayError) as info:
        engine.create_display(width=320, height=240, keyboard_layout="nosuchlayout")
    assert info.value.code == "display-keyboard-layout"
    assert "nosuchlayout" not in info.value.message
    for bad in ("DE", "de,us", "", "x" * 40, "de;rm"):
        with pytest.raises(evident.EvidentError) as info:
            engine.create_display(width=320, height=240, keyboard_layout=bad)
        assert info.value.code in ("display-args", "request-args"), bad
    assert len(engine.displays()) == before
