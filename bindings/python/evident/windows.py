"""Windows and waits without input (docs/windows.md).

``Display`` inherits :class:`WindowHelpers`: ``display.windows()``, ``display.wait_window(...)``,
``display.capture_window(...)``, ``display.focus_window(...)``, ``display.env()``,
``display.wait_stable(...)``, ``display.wait_pixels(...)``, ``display.find_image(...)``,
``display.wait_image(...)``. Every one is a single engine op
(``window.*``, ``wait.*``, ``display.env``), the same the CLI sends (``evident window ...``,
``evident wait ...``).

Waits report which outcome they reached. By default a wait that times out raises
:class:`WaitTimeout` (a ``DisplayError`` with code ``wait-timeout`` that is also an
``AssertionError``, so pytest shows it as a failed expectation) carrying the engine's result;
pass ``raise_on_timeout=False`` to get the result back instead.
"""
from __future__ import annotations

import os
import struct
import tempfile
from typing import Any, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple, Union

from ._call import Caller
from ._data import ImageMatch, Png, PngInfo, Region, WaitResult, Window
from .errors import DisplayError
from .screen_text import ScreenText, find_text, read_text

__all__ = ["Window", "WaitResult", "WaitTimeout", "WindowHelpers", "Region", "AppRef",
           "ImageMatch"]


class AppRef(Protocol):
    """What names an app to the window ops: an :class:`evident.App` (its ``app_id``)."""

    @property
    def app_id(self) -> str: ...


class WaitTimeout(DisplayError, AssertionError):
    """A wait ended with outcome ``timeout`` (code ``wait-timeout``, family ``display``); also
    an ``AssertionError``, so pytest shows it as a failed expectation. ``result`` is the
    :class:`WaitResult` (``None`` after unpickling)."""

    def __init__(self, code: str, message: str = "", retryable: bool = True,
                 result: Optional[WaitResult] = None) -> None:
        super().__init__(code, message, retryable)
        self.result = result


def _region(region: Region) -> Dict[str, int]:
    if isinstance(region, Mapping):
        return {k: int(region[k]) for k in ("x", "y", "width", "height")}
    x, y, w, h = region
    return {"x": int(x), "y": int(y), "width": int(w), "height": int(h)}


def _ms(seconds: Optional[float], default_ms: int) -> int:
    return default_ms if seconds is None else max(0, int(round(seconds * 1000)))


def _png_size(data: bytes) -> Tuple[int, int]:
    if len(data) < 24 or data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise DisplayError("wait-reference-invalid", "the reference is not a PNG")
    w, h = struct.unpack(">II", data[16:24])
    if not (0 < w <= 65536 and 0 < h <= 65536):
        raise DisplayError("wait-reference-invalid", "the reference PNG's size is out of range")
    return w, h


class WindowHelpers:
    """Mixed into :class:`evident.Display`, which provides ``engine`` (a :class:`Caller`), the
    display's ``id`` and ``generation``, and ``_ref()``."""

    engine: Caller
    id: int
    generation: str

    def _ref(self) -> Dict[str, Any]:  # pragma: no cover - provided by Display
        raise NotImplementedError

    # -- windows ----------------------------------------------------------------------------
    def windows(self, *, mapped_only: bool = False, app: Union[AppRef, str, None] = None
                ) -> List[Window]:
        """Top-level windows, bottom of the stack first (``window.list``). ``app`` (an
        :class:`App` or app id) keeps those of its process tree."""
        args: Dict[str, Any] = {**self._ref(), "mapped_only": bool(mapped_only)}
        if app is not None:
            args["app_id"] = app if isinstance(app, str) else app.app_id
        reply = self.engine.call("window.list", args)
        return [Window.from_json(w) for w in reply.get("windows", [])]

    def focus(self) -> Dict[str, Any]:
        """Where the input focus is: ``{"kind": "window"|"none"|"pointer_root", "window"}``."""
        return dict(self.engine.call("window.list", self._ref()).get("focus", {}))

    def wait_window(self, *, title: Optional[str] = None, class_: Optional[str] = None,
                    pid_tree: Optional[int] = None, app: Union[AppRef, str, None] = None,
                    id: Optional[int] = None,
                    timeout: float = 10.0, raise_on_timeout: bool = True
                    ) -> Union[Window, WaitResult]:
        """Waits (X events, no polling) for a mapped, non-override-redirect top-level window:
        ``title`` is a substring of its title, ``class_`` equals its WM_CLASS class or
        instance, ``pid_tree``/``app`` owns it (that pid, a descendant or its process group).
        Returns the :class:`Window`; on timeout raises :class:`WaitTimeout` (or returns the
        :class:`WaitResult` with ``raise_on_timeout=False``)."""
        args: Dict[str, Any] = {**self._ref(), "timeout_ms": _ms(timeout, 10000)}
        if title is not None:
            args["title"] = str(title)
        if class_ is not None:
            args["class"] = str(class_)
        if pid_tree is not None:
            args["pid"] = int(pid_tree)
        if app is not None:
            args["app_id"] = app if isinstance(app, str) else app.app_id
        if id is not None:
            args["id"] = int(id)
        reply = self.engine.call("window.wait", args)
        result = WaitResult(str(reply["outcome"]), int(reply.get("elapsed_ms", 0)), dict(reply))
        if result.outcome == "found":
            w = result.window
            assert w is not None
            return w
        if raise_on_timeout:
            raise WaitTimeout("wait-timeout",
                              f"no window appeared within {result.elapsed_ms} ms: waited for "
                              f"{reply.get('waited_for')}; saw {reply.get('seen')}", True, result)
        return result

    def capture_window(self, window: Union[Window, int], out: Optional[str] = None) -> Png:
        """A PNG of the window's area (clipped to the display; ``png.info`` has the digest).
        ``window-not-viewable`` for an unmapped window, ``window-offscreen`` when none of it is on
        the display."""
        wid = window.id if isinstance(window, Window) else int(window)
        if out is not None:
            reply = self.engine.call("window.capture", {**self._ref(), "id": wid, "out": str(out)})
            with open(out, "rb") as f:
                return Png(f.read(), PngInfo.from_json(reply.get("png")))
        with tempfile.TemporaryDirectory(prefix="evident-win-") as d:
            path = os.path.join(d, "window.png")
            reply = self.engine.call("window.capture", {**self._ref(), "id": wid, "out": path})
            with open(path, "rb") as f:
                data = f.read()
        info = PngInfo.from_json(reply.get("png"))
        return Png(data, info.without_path() if info is not None else None)

    def focus_window(self, window: Union[Window, int]) -> bool:
        """Raises the window and gives it the input focus (outside sessions: ``display-busy``
        while one holds the display). True when the focus is then in that window."""
        wid = window.id if isinstance(window, Window) else int(window)
        return bool(self.engine.call("window.focus", {**self._ref(), "id": wid}).get("focused"))

    def env(self) -> Dict[str, str]:
        """``{"DISPLAY": ":N", "XAUTHORITY": "<private cookie file>"}`` for helper tools
        (xdotool, xprop, ...). Whoever reads that file can control and read this display:
        keep it to processes you trust (docs/windows.md, "The display's environment")."""
        return dict(self.engine.call("display.env", self._ref())["env"])

    # -- waits without input ----------------------------------------------------------------
    def wait_stable(self, region: Optional[Region] = None, *, quiet_ms: int = 300,
                    timeout: float = 5.0, raise_on_timeout: bool = True) -> WaitResult:
        """Waits until the region (default: the whole display) shows no change (DAMAGE) for
        ``quiet_ms``, counted from the call. Outcome ``stable`` or ``timeout``."""
        args: Dict[str, Any] = {**self._ref(), "quiet_ms": int(quiet_ms),
                                "timeout_ms": _ms(timeout, 5000)}
        if region is not None:
            args["region"] = _region(region)
        reply = self.engine.call("wait.stable", args)
        result = WaitResult(str(reply["outcome"]), int(reply.get("elapsed_ms", 0)), dict(reply))
        if result.outcome != "stable" and raise_on_timeout:
            raise WaitTimeout("wait-timeout",
                              f"the region was still changing after {result.elapsed_ms} ms "
                              f"({reply.get('changes')} change bursts; quiet wanted: "
                              f"{quiet_ms} ms)", True, result)
        return result

    def wait_pixels(self, region: Optional[Region] = None, *,
                    color: Optional[Union[str, Sequence[int]]] = None, tolerance: int = 0,
                    min_fraction: float = 1.0, reference: Optional[Union[str, bytes]] = None,
                    at: Optional[Tuple[int, int]] = None, max_pixels: int = 0,
                    until: str = "matches",
                    timeout: float = 5.0, raise_on_timeout: bool = True) -> WaitResult:
        """Waits until a region shows a colour (``color="#00ff00"`` or ``(r, g, b)``; every
        channel within ``tolerance``, on at least ``min_fraction`` of the pixels), or until the
        screen at ``at=(x, y)`` matches a ``reference`` PNG (path or bytes; at most
        ``max_pixels`` pixels differ by more than ``tolerance``). Re-checked on every DAMAGE
        report in the region, never on a timer. With ``until="differs"`` (reference only) the
        condition is the opposite: the screen no longer matches the reference (the next change
        after a look). Outcome ``matched`` (the condition held) or ``timeout``; ``raw["last"]``
        has the last comparison (matching, total, max_channel_diff)."""
        args: Dict[str, Any] = {**self._ref(), "tolerance": int(tolerance),
                                "timeout_ms": _ms(timeout, 5000)}
        tmp: Optional[tempfile.TemporaryDirectory[str]] = None
        try:
            if (color is None) == (reference is None):
                raise ValueError("give exactly one of color= or reference=")
            if color is not None:
                if region is None:
                    raise ValueError("a colour wait needs a region")
                rgb: Tuple[int, ...]
                if isinstance(color, str):
                    c = color.lstrip("#")
                    if len(c) != 6:
                        raise ValueError("color must be '#rrggbb' or (r, g, b)")
                    rgb = (int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16))
                else:
                    rgb = tuple(int(v) for v in color)
                if until != "matches":
                    raise ValueError("until= applies to a reference image")
                args["color"] = {"r": rgb[0], "g": rgb[1], "b": rgb[2]}
                args["min_permille"] = max(1, min(1000, int(round(min_fraction * 1000))))
                args["region"] = _region(region)
            else:
                if isinstance(reference, (bytes, bytearray)):
                    data = bytes(reference)
                    tmp = tempfile.TemporaryDirectory(prefix="evident-ref-")
                    path = os.path.join(tmp.name, "reference.png")
                    with open(path, "wb") as f:
                        f.write(data)
                else:
                    path = os.path.abspath(str(reference))
                    with open(path, "rb") as f:
                        data = f.read(32)
                w, h = _png_size(data)
                if at is None:
                    corner = {"x": 0, "y": 0} if region is None else _region(region)
                    at = (corner["x"], corner["y"])
                args["region"] = {"x": int(at[0]), "y": int(at[1]), "width": w, "height": h}
                args["reference"] = path
                args["max_pixels"] = int(max_pixels)
                if until != "matches":
                    args["until"] = str(until)
            reply = self.engine.call("wait.pixels", args)
        finally:
            if tmp is not None:
                tmp.cleanup()
        result = WaitResult(str(reply["outcome"]), int(reply.get("elapsed_ms", 0)), dict(reply))
        if result.outcome != "matched" and raise_on_timeout:
            last = reply.get("last", {})
            raise WaitTimeout("wait-timeout",
                              f"the pixels did not match within {result.elapsed_ms} ms "
                              f"({reply.get('checks')} checks; last: {last.get('matching')} of "
                              f"{last.get('total')} pixels within tolerance, largest channel "
                              f"difference {last.get('max_channel_diff')})", True, result)
        return result

    def wait_image(self, template: Union[str, bytes], region: Optional[Region] = None, *,
                   threshold: float = 0.95, timeout: float = 5.0,
                   raise_on_timeout: bool = True) -> WaitResult:
        """Waits until ``template`` (a PNG path or bytes) appears in the region (default: the
        whole display): OpenCV template matching (TM_CCOEFF_NORMED), found when the best score
        reaches ``threshold`` (0.001..1.0). Re-checked on every DAMAGE report in the region,
        never on a timer. Outcome ``found`` (``result.match``: the box and score) or
        ``timeout`` (``raw["best"]``: the best candidate seen last)."""
        if not 0.0 < float(threshold) <= 1.0:
            raise ValueError("threshold must be in (0, 1]")
        args: Dict[str, Any] = {**self._ref(), "timeout_ms": _ms(timeout, 5000),
                                "min_score_permille": max(1, min(1000, int(round(threshold * 1000))))}
        if region is not None:
            args["region"] = _region(region)
        tmp: Optional[tempfile.TemporaryDirectory[str]] = None
        try:
            if isinstance(template, (bytes, bytearray)):
                tmp = tempfile.TemporaryDirectory(prefix="evident-tpl-")
                path = os.path.join(tmp.name, "template.png")
                with open(path, "wb") as f:
                    f.write(bytes(template))
            else:
                path = os.path.abspath(str(template))
            args["template"] = path
            reply = self.engine.call("wait.image", args)
        finally:
            if tmp is not None:
                tmp.cleanup()
        result = WaitResult(str(reply["outcome"]), int(reply.get("elapsed_ms", 0)), dict(reply))
        if result.outcome != "found" and raise_on_timeout:
            best = reply.get("best", {})
            raise WaitTimeout("wait-timeout",
                              f"the image was not found within {result.elapsed_ms} ms "
                              f"({reply.get('checks')} checks; best score "
                              f"{best.get('score_permille')}/1000, needed "
                              f"{reply.get('min_score_permille')})", True, result)
        return result

    def find_image(self, template: Union[str, bytes], region: Optional[Region] = None, *,
                   threshold: float = 0.95) -> Optional[ImageMatch]:
        """One look (no wait): where ``template`` is on the screen now, or ``None`` when its best
        score is below ``threshold`` (``wait_image`` with timeout 0)."""
        return self.wait_image(template, region, threshold=threshold, timeout=0,
                               raise_on_timeout=False).match

    # -- text on the screen (tesseract; evident.screen_text) ---------------------------------
    def read_text(self, region: Optional[Region] = None, *, timeout: float = 30.0,
                  language: str = "eng") -> ScreenText:
        """One OCR pass (Debian's tesseract) over the region (default: the whole display):
        a :class:`ScreenText` with ``text``, ``lines`` and ``words`` (boxes in display pixels)
        and ``find(phrase)``. Bounded: the image by the OCR limits, tesseract by ``timeout``
        (``agent-ocr-failed`` past it; ``agent-ocr-unavailable`` without tesseract)."""
        return read_text(self, region, timeout=timeout, language=language)  # type: ignore[arg-type]

    def find_text(self, text: str, region: Optional[Region] = None, *, timeout: float = 10.0,
                  language: str = "eng", raise_on_timeout: bool = True) -> WaitResult:
        """Waits until OCR reads ``text`` (consecutive words on one line, case-insensitive,
        trailing punctuation ignored) in the region: outcome ``found`` (``raw["box"]`` in display
        pixels) or ``timeout``. Reads again only when the region changed since the last read
        (DAMAGE-driven, never on a timer); bounded by ``timeout`` including the OCR passes."""
        result = find_text(self, text, region, timeout=timeout,  # type: ignore[arg-type]
                           language=language)
        if result.outcome != "found" and raise_on_timeout:
            raw = result.raw
            raise WaitTimeout("wait-timeout",
                              f"the text was not read within {result.elapsed_ms} ms "
                              f"({raw['checks']} OCR pass(es); the last read "
                              f"{raw['last_words']} word(s)"
                              f"{'; the deadline cut a pass short' if raw['cut_short'] else ''})",
                              True, result)
        return result
