"""The action vocabulary (docs/protocol.md §4) as plain builders; results are small objects.

Builders return the exact JSON object the engine expects, so a batch is just a list::

    from evident import actions as a
    display.actions([a.click(100, 40), a.type("Zoë"), a.key("Return")], settle=True)

Outcomes are data: every result has ``status`` ``ok`` (effect verified), ``injected`` (events
reached the X server, effect not verified) or ``failed`` (with ``detail``). ``result.check()``
raises :class:`ActionError` for a failed result when a test wants that. The result types live in
``evident._data`` (the package's value types) and are re-exported here.
"""
from __future__ import annotations

from typing import Optional, Sequence

from ._data import Action, ActionResult, BatchResult, Observation, PngInfo, Settle

__all__ = [
    "Action", "ActionResult", "BatchResult", "Observation", "PngInfo", "ActionHelpers",
    "click", "double_click", "triple_click", "mouse_down", "mouse_up", "move_mouse", "drag",
    "scroll", "type", "paste", "key", "hold_key", "wait", "screenshot", "zoom",
]


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


def type(text: str) -> Action:  # noqa: A001 - the protocol's name
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


class ActionHelpers:
    """One-action helpers over ``actions()``; each returns that action's :class:`ActionResult`.

    Helpers default to ``observe="none"`` (no PNG per call, fast); pass ``observe="pixels"``
    and/or ``settle=True`` to get an observation, available as ``result.raw`` of the batch via
    :meth:`actions` instead.
    """

    def actions(self, actions: Sequence[Action], *, observe: str = "pixels",
                settle: Settle = False, coordinate_space: str = "pixel") -> BatchResult:
        raise NotImplementedError  # provided by Display and the pytest plugin's helpers

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
