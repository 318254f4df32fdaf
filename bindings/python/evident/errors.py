"""One exception hierarchy for every error Evident reports.

The engine answers errors as data: ``{"ok": false, "error": {"code", "message", "retryable"}}``
with a stable kebab-case ``code`` (the same codes as the CLI's ``--json`` output). The Python
layer turns such a reply into an :class:`EvidentError` subclass chosen by the code's family, so a
test can catch broadly (``except evident.SessionError``) or precisely (``err.code ==
"session-sequence"``).

Action outcomes are *not* errors: a click that could not be verified is an ``ActionResult`` with
``status == "failed"``; only a refused request raises.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Type

__all__ = [
    "EvidentError",
    "UsageError",
    "EngineError",
    "DisplayError",
    "AppError",
    "ActionError",
    "SessionError",
    "ReceiptError",
    "BrowserError",
    "InterruptedCall",
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
        """The contract's error object: ``{"code", "message", "retryable"}``."""
        return {"code": self.code, "message": self.message, "retryable": self.retryable}

    def __reduce__(self):  # picklable (pytest-xdist ships exceptions between processes)
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
    """The session protocol (contract §5): ``session-*`` codes."""

    family = "session"


class ReceiptError(EvidentError):
    """Receipts and verification: ``receipt-*`` and ``verify-*`` codes."""

    family = "receipt"


class BrowserError(EvidentError):
    """Browser workspaces (docs/browsers.md): ``browser-*`` codes."""

    family = "browser"


class InterruptedCall(EngineError):
    """Not raised to callers (Ctrl-C raises ``KeyboardInterrupt``); used for bookkeeping."""


# Longest prefix wins. Codes not listed fall back to EvidentError, so a new engine code never
# breaks a caller that catches EvidentError.
_PREFIXES: Mapping[str, Type[EvidentError]] = {
    "session-": SessionError,
    "display-": DisplayError,
    "xvfb-": DisplayError,
    "capture-": DisplayError,
    "screenshot-": DisplayError,
    "window-": DisplayError,
    "wait-": DisplayError,
    "app-": AppError,
    "exec-": AppError,
    "spawn-": AppError,
    "x-connect": DisplayError,
    "action-": ActionError,
    "actions-": ActionError,
    "input-": ActionError,
    "cu-": ActionError,
    "receipt-": ReceiptError,
    "browser-": BrowserError,
    "verify-": ReceiptError,
    "engine-": EngineError,
    "daemon-": EngineError,
    "internal": EngineError,
    "request-": UsageError,
    "usage": UsageError,
    "json": UsageError,
    "op-": UsageError,
    "unknown-op": UsageError,
    "args-": UsageError,
}

# Exact codes whose family is not their prefix: the session layer reports display/app problems
# met during `begin` with their own codes (contract §5), and those stay catchable by family.
_EXACT: Mapping[str, Type[EvidentError]] = {
    "display-generation-mismatch": DisplayError,
    "app-not-live": AppError,
}


def error_class_for(code: str) -> Type[EvidentError]:
    """The exception class for an error code (family by prefix; EvidentError if unknown)."""
    if code in _EXACT:
        return _EXACT[code]
    best: Optional[str] = None
    for prefix in _PREFIXES:
        if code.startswith(prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    return _PREFIXES[best] if best is not None else EvidentError


def error_from_reply(reply: Mapping[str, Any]) -> EvidentError:
    """Builds the exception for an ``{"ok": false, "error": {...}}`` reply."""
    err = reply.get("error") if isinstance(reply, Mapping) else None
    if not isinstance(err, Mapping):
        return EngineError("engine-reply", f"malformed engine reply: {reply!r:.200}")
    code = str(err.get("code", "engine-reply"))
    return error_class_for(code)(code, str(err.get("message", "")), bool(err.get("retryable", False)))
