"""The action vocabulary (contract §4) as plain builders, and results as small objects.

Builders return the exact JSON object the engine expects, so a batch is just a list::

    from evident import actions as a
    display.actions([a.click(100, 40), a.type("Zoë"), a.key("Return")], settle=True)

Outcomes are data: every result has ``status`` ``ok`` (effect verified), ``injected`` (events
reached the X server, effect not verified) or ``failed`` (with ``detail``). ``result.check()``
raises :class:`ActionError` for a failed result when a test wants that.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from .errors import ActionError

Action = Dict[str, Any]
Settle = Union[bool, int]

__all__ = [
    "Action", "ActionResult", "BatchResult", "Observation", "PngInfo", "ActionHelpers",
    "click", "double_click", "triple_click", "mouse_down", "mouse_up", "move_mouse", "drag",
    "scroll", "type", "paste", "key", "hold_key", "wait", "screenshot", "zoom",
]

_type = type  # `type` is an action name below


def _button(action: Action, button: Optional[str]) -> Action:
    if button is not None:
        action["button"] = button
    return action


def click(x: int, y: int, button: Optional[str] = None) -> Action:
    """Press and release ``button`` (left, right, middle) at (x, y)."""
    return _button({"type": "click", "x": x, "y": y}, button)


def double_click(x: int, y: int, button: Optional[str] = None) -> Action:
    return _button({"type": "double_click", "x": x, "y": y}, button)


def triple_click(x: int, y: int, button: Optional[str] = None) -> Action:
    return _button({"type": "triple_click", "x": x, "y": y}, button)


def mouse_down(x: int, y: int, button: Optional[str] = None) -> Action:
    """Press and keep holding (not allowed in sessions; released on every exit path)."""
    return _button({"type": "mouse_down", "x": x, "y": y}, button)


def mouse_up(x: int, y: int, button: Optional[str] = None) -> Action:
    return _button({"type": "mouse_up", "x": x, "y": y}, button)


def move_mouse(x: int, y: int) -> Action:
    return {"type": "move_mouse", "x": x, "y": y}


def drag(start_x: int, start_y: int, end_x: int, end_y: int,
         button: Optional[str] = None) -> Action:
    return _button({"type": "drag", "start_x": start_x, "start_y": start_y,
                    "end_x": end_x, "end_y": end_y}, button)


def scroll(x: int, y: int, direction: str, amount: Optional[int] = None) -> Action:
    """``direction``: up, down, left, right; ``amount`` 1..100 (default 3)."""
    a: Action = {"type": "scroll", "x": x, "y": y, "direction": direction}
    if amount is not None:
        a["amount"] = amount
    return a


def type(text: str) -> Action:  # noqa: A001 - the contract's name
    """Types any Unicode text; ``\\n`` presses Return and ``\\t`` Tab."""
    return {"type": "type", "text": text}


def paste(text: str) -> Action:
    """Pastes through the display's clipboard selection (not allowed in sessions)."""
    return {"type": "paste", "text": text}


def key(key: str) -> Action:
    """A key or chord: ``Return``, ``ctrl+shift+t``, ``F5``, keysym names, aliases."""
    return {"type": "key", "key": key}


def hold_key(key: str, ms: int) -> Action:
    return {"type": "hold_key", "key": key, "ms": ms}


def wait(ms: int) -> Action:
    return {"type": "wait", "ms": ms}


def screenshot() -> Action:
    return {"type": "screenshot"}


def zoom(x: int, y: int, width: int, height: int) -> Action:
    """The region at native pixels (not allowed in sessions)."""
    return {"type": "zoom", "x": x, "y": y, "width": width, "height": height}


@dataclass(frozen=True)
class PngInfo:
    """A PNG written by the engine: ``{"path","sha256","byte_length","width","height"}``."""

    path: Optional[str]
    sha256: str
    byte_length: int
    width: int
    height: int

    @classmethod
    def from_json(cls, obj: Optional[Mapping[str, Any]]) -> Optional["PngInfo"]:
        if not obj:
            return None
        return cls(obj.get("path"), obj.get("sha256", ""), int(obj.get("byte_length", 0)),
                   int(obj.get("width", 0)), int(obj.get("height", 0)))

    def read_bytes(self) -> bytes:
        if not self.path:
            raise FileNotFoundError("this PNG has no path")
        with open(self.path, "rb") as f:
            return f.read()

    def image(self):
        """The frame as a Pillow ``Image`` (requires Pillow)."""
        from .display import Png

        return Png(self.read_bytes(), info=self).image()


@dataclass(frozen=True)
class ActionResult:
    """One action's outcome: ``{"index","type","status","detail"}`` plus any extra fields."""

    index: int
    type: str
    status: str
    detail: str
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "ActionResult":
        return cls(int(obj.get("index", 0)), str(obj.get("type", "")),
                   str(obj.get("status", "")), str(obj.get("detail", "")), dict(obj))

    @property
    def ok(self) -> bool:
        """True for ``ok`` and ``injected`` (events delivered), False for ``failed``."""
        return self.status in ("ok", "injected")

    @property
    def verified(self) -> bool:
        """True only for ``ok``: the intended effect was verified."""
        return self.status == "ok"

    @property
    def png(self) -> Optional[PngInfo]:
        """For screenshot/zoom results that carry a PNG."""
        return PngInfo.from_json(self.raw.get("png"))

    def check(self) -> "ActionResult":
        """Returns self, or raises ``ActionError("action-failed")`` if the status is failed."""
        if self.status == "failed":
            raise ActionError("action-failed", f"{self.type} #{self.index} failed: {self.detail}")
        return self


@dataclass(frozen=True)
class Observation:
    kind: str
    reason: str
    png: Optional[PngInfo]

    @classmethod
    def from_json(cls, obj: Optional[Mapping[str, Any]]) -> Optional["Observation"]:
        if not obj:
            return None
        return cls(str(obj.get("kind", "")), str(obj.get("reason", "")),
                   PngInfo.from_json(obj.get("png")))


@dataclass(frozen=True)
class BatchResult:
    """A batch response: ``results``, ``observation`` and ``settle``."""

    results: List[ActionResult]
    observation: Optional[Observation]
    settle: Mapping[str, Any]
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "BatchResult":
        return cls([ActionResult.from_json(r) for r in obj.get("results", [])],
                   Observation.from_json(obj.get("observation")),
                   dict(obj.get("settle") or {}), dict(obj))

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    def check(self) -> "BatchResult":
        """Returns self, or raises ActionError for the first failed result."""
        for r in self.results:
            r.check()
        return self

    def __iter__(self):
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, i: int) -> ActionResult:
        return self.results[i]


class ActionHelpers:
    """One-action helpers over ``actions()``; each returns that action's :class:`ActionResult`.

    Helpers default to ``observe="none"`` (no PNG per call, fast); pass ``observe="pixels"``
    and/or ``settle=True`` to get an observation, available as ``result.raw`` of the batch via
    :meth:`actions` instead.
    """

    def actions(self, actions: Sequence[Action], *, observe: str = "pixels",
                settle: Settle = False, coordinate_space: str = "pixel") -> BatchResult:
        raise NotImplementedError

    def _one(self, action: Action, observe: str, settle: Settle) -> ActionResult:
        return self.actions([action], observe=observe, settle=settle).results[0]

    def click(self, x: int, y: int, button: Optional[str] = None, *, observe: str = "none",
              settle: Settle = False) -> ActionResult:
        return self._one(click(x, y, button), observe, settle)

    def double_click(self, x: int, y: int, button: Optional[str] = None, *,
                     observe: str = "none", settle: Settle = False) -> ActionResult:
        return self._one(double_click(x, y, button), observe, settle)

    def triple_click(self, x: int, y: int, button: Optional[str] = None, *,
                     observe: str = "none", settle: Settle = False) -> ActionResult:
        return self._one(triple_click(x, y, button), observe, settle)

    def mouse_down(self, x: int, y: int, button: Optional[str] = None, *,
                   observe: str = "none", settle: Settle = False) -> ActionResult:
        return self._one(mouse_down(x, y, button), observe, settle)

    def mouse_up(self, x: int, y: int, button: Optional[str] = None, *,
                 observe: str = "none", settle: Settle = False) -> ActionResult:
        return self._one(mouse_up(x, y, button), observe, settle)

    def move_mouse(self, x: int, y: int, *, observe: str = "none",
                   settle: Settle = False) -> ActionResult:
        return self._one(move_mouse(x, y), observe, settle)

    def drag(self, start_x: int, start_y: int, end_x: int, end_y: int,
             button: Optional[str] = None, *, observe: str = "none",
             settle: Settle = False) -> ActionResult:
        return self._one(drag(start_x, start_y, end_x, end_y, button), observe, settle)

    def scroll(self, x: int, y: int, direction: str, amount: Optional[int] = None, *,
               observe: str = "none", settle: Settle = False) -> ActionResult:
        return self._one(scroll(x, y, direction, amount), observe, settle)

    def type(self, text: str, *, observe: str = "none",  # noqa: A003
             settle: Settle = False) -> ActionResult:
        return self._one(type(text), observe, settle)

    def paste(self, text: str, *, observe: str = "none", settle: Settle = False
              ) -> ActionResult:
        return self._one(paste(text), observe, settle)

    def key(self, chord: str, *, observe: str = "none", settle: Settle = False
            ) -> ActionResult:
        return self._one(key(chord), observe, settle)

    def hold_key(self, chord: str, ms: int, *, observe: str = "none",
                 settle: Settle = False) -> ActionResult:
        return self._one(hold_key(chord, ms), observe, settle)

    def wait(self, ms: int, *, observe: str = "none", settle: Settle = False) -> ActionResult:
        return self._one(wait(ms), observe, settle)

    def zoom(self, x: int, y: int, width: int, height: int) -> ActionResult:
        return self._one(zoom(x, y, width, height), "none", False)
