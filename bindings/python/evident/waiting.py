"""Bounded waiting on a condition, for tests and scripts around Evident.

What a test waits for outside Evident (a file the app writes, a page's state through DevTools)
or for a known look on screen (a condition on a fresh frame) is a condition with a deadline, never
a fixed sleep. "Until the screen stops changing" is the engine's ``settle`` instead.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Optional, TypeVar

T = TypeVar("T")

__all__ = ["wait_for"]


def wait_for(condition: Callable[[], Optional[T]], timeout: float, what: str,
             interval: float = 0.02) -> T:
    """Returns the first truthy value of ``condition()``, checked at once and then every
    ``interval`` seconds; raises ``AssertionError("timed out after …s waiting for <what>")`` once
    ``timeout`` seconds have passed without one (``condition`` runs at least once)."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        pause.wait(interval)
