"""Text on the screen through Debian's tesseract (docs/windows.md, "Text on the screen").

``display.read_text(region=None)`` reads the words in a region once; ``display.find_text(text,
region=None, timeout=)`` waits until a phrase is on screen. The OCR itself (running tesseract
with bounded input and time, parsing its TSV, grouping words into lines, matching a phrase) is
the agent OCR policy's (:mod:`evident.agent.ocr`), imported here, so both read text the same way.

``evident text read|find`` (:mod:`evident.text_cli`, docs/cli.md) runs both against a display of
the daemon, through :class:`evident.Client`.

``find_text`` is not a polling loop: after a look that misses, it waits in the engine
(``wait.pixels`` with ``until: "differs"``, DAMAGE-driven) until the region differs from the
image it just read, then reads again. A screen that never changes costs one OCR pass.
"""
from __future__ import annotations

import io
import os
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Protocol, Tuple

from ._data import Png, Region, WaitResult
from .agent.ocr import Line, Word, find_phrase, group_lines, ocr_words
from .errors import AgentError

Box = Tuple[int, int, int, int]  # x, y, width, height in display pixels

# The longest phrase find_text accepts (bytes of UTF-8), and at most this many words in it.
MAX_PHRASE_BYTES = 1024
MAX_PHRASE_WORDS = 64
# find_text's and read_text's time bounds (seconds): defaults and the largest accepted.
DEFAULT_READ_TIMEOUT_S = 30.0
DEFAULT_FIND_TIMEOUT_S = 10.0
MAX_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class ScreenText:
    """What one OCR pass read in ``region`` (display pixels): ``lines`` top to bottom, each
    word's box in display coordinates; ``text`` is the lines joined by newlines."""

    region: Box
    lines: Tuple[Line, ...]
    elapsed_ms: int

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)

    @property
    def words(self) -> List[Word]:
        return [w for line in self.lines for w in line.words]

    def find(self, phrase: str) -> Optional[Box]:
        """The box of ``phrase`` (consecutive words on one line, case-insensitive, trailing
        punctuation ignored), or None."""
        return find_phrase(self.lines, phrase)


class _Shooter(Protocol):
    width: int
    height: int

    def screenshot(self, out: Optional[str] = None) -> Png: ...

    def wait_pixels(self, region: Optional[Region] = None, **kw: Any) -> WaitResult: ...


def _check_region(d: _Shooter, region: Optional[Region]) -> Box:
    if region is None:
        return (0, 0, int(d.width), int(d.height))
    if isinstance(region, Mapping):
        x, y, w, h = (int(region[k]) for k in ("x", "y", "width", "height"))
    else:
        x, y, w, h = (int(v) for v in region)
    if w <= 0 or h <= 0 or x < 0 or y < 0 or x + w > d.width or y + h > d.height:
        raise ValueError("the region must be non-empty and lie inside the display")
    return (x, y, w, h)


def _check_timeout(timeout: float) -> float:
    t = float(timeout)
    if not (0 < t <= MAX_TIMEOUT_S):
        raise ValueError(f"timeout must be in (0, {MAX_TIMEOUT_S:g}] seconds")
    return t


def _grab(d: _Shooter, box: Box) -> bytes:
    shot = d.screenshot()
    if box == (0, 0, d.width, d.height):
        return bytes(shot)
    img = shot.image().crop((box[0], box[1], box[0] + box[2], box[1] + box[3]))
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def _read(png: bytes, box: Box, timeout_s: float, language: str) -> Tuple[Line, ...]:
    words = ocr_words(png, timeout_s=timeout_s, language=language)
    moved = [Word(w.text, w.left + box[0], w.top + box[1], w.width, w.height, w.conf) for w in words]
    return tuple(group_lines(moved))


def read_text(d: _Shooter, region: Optional[Region] = None, *,
              timeout: float = DEFAULT_READ_TIMEOUT_S, language: str = "eng") -> ScreenText:
    box = _check_region(d, region)
    t = _check_timeout(timeout)
    t0 = time.monotonic()
    png = _grab(d, box)
    lines = _read(png, box, max(0.001, t - (time.monotonic() - t0)), language)
    return ScreenText(box, lines, int((time.monotonic() - t0) * 1000))


def find_text(d: _Shooter, text: str, region: Optional[Region] = None, *,
              timeout: float = DEFAULT_FIND_TIMEOUT_S, language: str = "eng") -> WaitResult:
    """Outcome ``found`` (``raw["box"]``: the phrase's box in display pixels) or ``timeout``;
    ``raw``: ``checks`` (OCR passes), ``region``, ``cut_short`` (the deadline ended a pass),
    ``last_words`` (words read by the last complete pass)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("the text to find must be a non-empty string")
    if len(text.encode("utf-8")) > MAX_PHRASE_BYTES or len(text.split()) > MAX_PHRASE_WORDS:
        raise ValueError(f"the text to find is over {MAX_PHRASE_BYTES} bytes or "
                         f"{MAX_PHRASE_WORDS} words")
    box = _check_region(d, region)
    t = _check_timeout(timeout)
    t0 = time.monotonic()
    deadline = t0 + t
    checks, cut_short, last_words = 0, False, None
    found: Optional[Box] = None
    with tempfile.TemporaryDirectory(prefix="evident-ocr-") as tmp:
        ref = os.path.join(tmp, "last.png")
        while True:
            png = _grab(d, box)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                lines = _read(png, box, remaining, language)
            except AgentError as e:
                # ocr_words raises agent-ocr-failed when tesseract overruns its time bound, which
                # is the remaining time here: past the deadline that is this wait's timeout.
                if e.code == "agent-ocr-failed" and time.monotonic() >= deadline:
                    cut_short = True
                    break
                raise
            checks += 1
            last_words = sum(len(line.words) for line in lines)
            found = find_phrase(lines, text)
            if found is not None:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            with open(ref, "wb") as f:
                f.write(png)
            changed = d.wait_pixels(reference=ref, at=(box[0], box[1]), until="differs",
                                    timeout=remaining, raise_on_timeout=False)
            if not changed.reached:
                break
    raw: Dict[str, Any] = {
        "outcome": "found" if found is not None else "timeout",
        "elapsed_ms": int((time.monotonic() - t0) * 1000),
        "checks": checks,
        "region": {"x": box[0], "y": box[1], "width": box[2], "height": box[3]},
        "box": None if found is None else
        {"x": found[0], "y": found[1], "width": found[2], "height": found[3]},
        "cut_short": cut_short,
        "last_words": last_words,
    }
    return WaitResult(raw["outcome"], raw["elapsed_ms"], raw)

