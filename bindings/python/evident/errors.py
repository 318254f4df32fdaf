"""One exception hierarchy for every error Evident reports.

The engine answers errors as data: ``{"ok": false, "error": {"code", "message", "retryable"}}``
with a stable kebab-case ``code`` (the same codes as the CLI's ``--json`` output). The Python
layer turns such a reply into an :class:`EvidentError` subclass chosen by the code's family (as
declared in protocol/evident.json, generated into ``_protocol``; docs/errors.md), so a
test can catch broadly (``except evident.SessionError``) or precisely (``err.code ==
"session-sequence"``).

Action outcomes are *not* errors: a click that could not be verified is an ``ActionResult`` with
``status == "failed"``; only a refused request raises.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Tuple, Type

from . import _protocol

__all__ = [
    "EvidentError",
    "UsageError",
    "EngineError",
    "DisplayError",
    "AppError",
    "ActionError",
    "SessionError",
    "TaskError",
    "BrowserError",
    "AccessibilityError",
    "ReceiptError",
    "AgentError",
    "error_class_for",
    "error_from_reply",
]


class EvidentError(Exception):
    """An error reported by Evident. ``code`` is stable; ``message`` is for people."""

    family = "evident"

    def __init__(self, code: str, message: str = "", retryable: bool = False) -> None:
        super().__init__(f"[{code}] {message}" if message else f"[{code}]")
        self.code = code
        self.message = message
        self.retryable = bool(retryable)

    def to_json(self) -> Dict[str, Any]:
        """The protocol's error object: ``{"code", "message", "retryable"}``."""
        return {"code": self.code, "message": self.message, "retryable": self.retryable}

    def __reduce__(self) -> Tuple[Type["EvidentError"], Tuple[str, str, bool]]:
        # picklable (pytest-xdist ships exceptions between processes)
        return (type(self), (self.code, self.message, self.retryable))


class UsageError(EvidentError):
    """The request itself is malformed: unknown fields, wrong types, values out of range."""

    family = "usage"


class EngineError(EvidentError):
    """The engine as a whole: closed, shutting down, internal failures."""

    family = "engine"


class DisplayError(EvidentError):
    """Display lifecycle: creation, readiness, stale generations, screenshots."""

    family = "display"


class AppError(EvidentError):
    """App lifecycle: launch, liveness (``app-not-live``), stop."""

    family = "app"


class ActionError(EvidentError):
    """An action batch was refused (validation), or a failed action result was checked."""

    family = "action"


class SessionError(EvidentError):
    """The session protocol (docs/protocol.md): ``session-*`` codes."""

    family = "session"


class BrowserError(EvidentError):
    """Browser workspaces (docs/browsers.md): ``browser-*`` codes."""

    family = "browser"


class AccessibilityError(EvidentError):
    """Accessibility (docs/accessibility.md): ``accessibility-*`` codes."""

    family = "accessibility"


class TaskError(EvidentError):
    """Bounded agent tasks: ``task-*`` codes (a refused provider response, a turn over its limits)."""

    family = "task"


class AgentError(TaskError):
    """An error of the Python agent API (``evident.agent``; codes ``agent-*``, family ``task``)."""


class ReceiptError(EvidentError):
    """Receipts and verification: ``receipt-*`` and ``verify-*`` codes."""

    family = "receipt"


_CLASSES: Mapping[str, Type[EvidentError]] = {
    cls.__name__: cls
    for cls in (UsageError, EngineError, DisplayError, AppError, ActionError, SessionError,
                TaskError, BrowserError, AccessibilityError, ReceiptError)
}
# The class of each family of the protocol file (a family added there needs its class above:
# importing this module then fails, and so does tests/test_errors_and_protocol.py).
_FAMILY_CLASS: Mapping[str, Type[EvidentError]] = {
    family: _CLASSES[class_name] for family, class_name in _protocol.ERROR_FAMILIES.items()
}


def error_class_for(code: str) -> Type[EvidentError]:
    """The exception class for an error code: the class of its family as declared in
    protocol/evident.json. A code the file does not declare (a newer engine's) gives
    :class:`EvidentError`, so it never escapes ``except evident.EvidentError``."""
    info = _protocol.ERRORS.get(code)
    return _FAMILY_CLASS[info.family] if info is not None else EvidentError


def error_from_reply(reply: Mapping[str, Any]) -> EvidentError:
    """Builds the exception for an ``{"ok": false, "error": {...}}`` reply."""
    err = reply.get("error") if isinstance(reply, Mapping) else None
    if not isinstance(err, Mapping):
        return EngineError("engine-reply", f"malformed engine reply: {reply!r:.200}")
    code = str(err.get("code", "engine-reply"))
    return error_class_for(code)(code, str(err.get("message", "")), bool(err.get("retryable", False)))
