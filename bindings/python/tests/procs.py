"""Small helpers the tests share for what they check from outside the engine: whether a process
is alive (from /proc, a zombie counts as gone), whether one screen box lies inside another, and
how to start the OCR text fixture (fixtures/text/text_app.py)."""
from __future__ import annotations

import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PY = "/usr/bin/python3"
TEXT_APP = os.path.join(ROOT, "fixtures", "text", "text_app.py")


def alive(pid: int) -> bool:
    """True while /proc shows the process in any state but zombie or dead."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def inside(inner, outer, slack: int = 4) -> bool:
    """Whether box `inner` (x, y, w, h) lies inside `outer`, give or take `slack` pixels."""
    x, y, w, h = inner
    ox, oy, ow, oh = outer
    return ox - slack <= x and oy - slack <= y and x + w <= ox + ow + slack and y + h <= oy + oh + slack


def text_app_argv(geometry_file, title: str = "evident-ocr", second_line: str = "", after_ms: int = 800) -> list:
    """The command line of the OCR text fixture (its docstring says what it shows and writes)."""
    argv = [PY, TEXT_APP, str(geometry_file), "--title", title]
    if second_line:
        argv += ["--second-line", second_line, "--after-ms", str(after_ms)]
    return argv
