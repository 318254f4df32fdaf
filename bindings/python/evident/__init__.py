"""Evident from Python: owned X displays, native input, exact frames and verified receipts.

The engine runs inside this process (the compiled ``evident._core``); no daemon is needed::

    import evident
    from evident import actions as a

    with evident.Engine() as engine, engine.create_display(800, 600) as display:
        app = display.launch(["xterm"], wait_window_ms=5000)
        display.actions([a.click(100, 100), a.type("echo hi\\n")], settle=True)
        png = display.screenshot()          # PNG bytes; png.image() is a Pillow image

See docs/python.md for the whole API and the pytest plugin (fixtures ``evident_display``,
``evident_app``, ``evident_actions``, ``evident_evidence``).
"""
from __future__ import annotations

from . import actions
from ._data import (ActionResult, BatchResult, DisplayStatus, ElementBox, ImageMatch, Observation,
                    Png, PngInfo, WaitResult, Window)
from ._version import __version__
from .app import App
from .browser import Browser
from .client import Client
from .display import Display
from .engine import Engine
from .accessibility import AxNode, AxTree
from .errors import (AccessibilityError, ActionError, AppError, BrowserError, DisplayError, EngineError,
                     EvidentError, ReceiptError, SessionError, TaskError, UsageError,
                     error_class_for)
from .session import Session
from .verification import Verification, VerifyCheck, verify_receipt
from .waiting import wait_for
from .windows import WaitTimeout

__all__ = [
    "__version__", "actions", "Engine", "Display", "DisplayStatus", "Png", "App", "Browser", "ElementBox", "Session",
    "ActionResult", "BatchResult", "Observation", "PngInfo", "Verification", "VerifyCheck",
    "verify_receipt", "EvidentError", "UsageError", "EngineError", "DisplayError", "AppError",
    "ActionError", "SessionError", "TaskError", "ReceiptError", "BrowserError", "AccessibilityError", "AxNode", "AxTree", "error_class_for", "Client", "wait_for",
    "Window", "WaitResult", "WaitTimeout", "ImageMatch",
]

