"""``evident.Engine``: the in-process engine (no daemon needed).

Every operation goes through one JSON request envelope ``{"op": ..., "args": {...}}``, the same
one the daemon speaks, so Python has exactly the operations, limits and error codes of the CLI.
"""
from __future__ import annotations

import json
import threading
from types import ModuleType
from typing import (TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Protocol, Sequence,
                    Set, Union)

from ._call import InterruptHook, PendingCall, in_main_thread, run_interruptible
from ._native import find_core
from .app import App
from .display import Display
from .errors import EngineError, error_from_reply
from .session import Session

if TYPE_CHECKING:  # pragma: no cover - the compiled module's types (_core.pyi)
    from . import _core

__all__ = ["Engine", "load_core"]


def load_core() -> ModuleType:
    """Imports the compiled ``evident._core`` extension (raises ImportError with a remedy)."""
    core = find_core()
    if core is None:  # pragma: no cover - depends on the build
        raise ImportError(
            "evident._core (the compiled engine) is not importable: install the package "
            "(/usr/bin/python3 -m pip install --no-build-isolation --break-system-packages .) or "
            "build it (cmake --build build --target _core) and put build/bindings/core on "
            "PYTHONPATH.")
    return core


class Backend(Protocol):
    """What carries the envelopes: ``evident._core.Engine`` in-process, a socket for
    :class:`evident.Client`. (``wait_warm(timeout_ms)`` is optional, and so are the in-process
    short-call paths ``call_inline(text)`` and ``call_inline_object(envelope)``.)"""

    def call(self, request_json: str) -> str: ...

    def close(self) -> None: ...


# One encoder for every envelope: json.dumps with these options builds a new JSONEncoder per
# call, a sixth of a short call's Python time (docs/performance.md, "The per-call cost").
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_DECODER = json.JSONDecoder()


def _dumps(obj: Any) -> str:
    return _ENCODER.encode(obj)


def _loads_reply(text: str) -> Any:
    """``json.loads(text)`` for the engine's own compact replies: decoded in one step when the
    text is exactly one value (json.loads also matches whitespace twice); otherwise json.loads
    itself, with its errors."""
    try:
        value, end = _DECODER.raw_decode(text)
    except ValueError:
        value, end = None, -1
    return value if end == len(text) else json.loads(text)


class Engine:
    """Owns displays, apps and sessions for this process; destroys all of them on ``close()``.

    ``Engine(state_dir=None, runtime_dir=None)``: ``state_dir`` keeps session evidence (frames and
    ``receipt.json``) and persists; ``runtime_dir`` is private scratch. Both default to the
    engine's per-user defaults. Use as a context manager::

        with evident.Engine() as engine, engine.create_display(800, 600) as display:
            ...
    """

    def __init__(self, state_dir: Optional[str] = None, runtime_dir: Optional[str] = None, *,
                 backend: Optional[Backend] = None, warm: Optional[Sequence[Sequence[int]]] = None) -> None:
        # warm: sizes to keep one pre-started, ready display each for, e.g. [(1920, 1080)];
        # (width, height[, depth[, dpi]]). create_display with an equal size leases it.
        if backend is None:
            core = load_core()
            native: "_core.Engine"
            if warm:
                native = core.Engine(str(state_dir or ""), str(runtime_dir or ""),
                                     warm=[[int(v) for v in w] for w in warm])
            else:
                native = core.Engine(str(state_dir or ""), str(runtime_dir or ""))
            backend = native
        self._backend = backend
        # In-process only: short calls run on the calling thread (evident._call), offered first
        # as objects (no JSON text on either side), else as text.
        self._inline: Optional[Callable[[str], Optional[str]]] = getattr(backend, "call_inline",
                                                                         None)
        self._inline_object: Optional[Callable[[Dict[str, Any]], Any]] = getattr(
            backend, "call_inline_object", None)
        self._lock = threading.Lock()
        self._inflight: Set[PendingCall] = set()
        self._idle = threading.Condition(self._lock)
        self._closed = False

    # -- plumbing ---------------------------------------------------------------------------
    def _track(self, pending: PendingCall, started: bool) -> None:
        with self._lock:
            if started:
                self._inflight.add(pending)
            else:
                self._inflight.discard(pending)
                self._idle.notify_all()

    def request(self, op: str, args: Optional[Mapping[str, Any]] = None, *,
                on_interrupt: Optional[InterruptHook] = None) -> Dict[str, Any]:
        """Sends one envelope and returns the reply object as is (``ok`` true or false)."""
        if self._closed:
            raise EngineError("engine-closed", "this Engine was closed; create a new one")
        body = args if isinstance(args, dict) else dict(args or {})  # json needs a dict
        envelope = {"op": op, "args": body}
        inline = self._inline
        answered: Any = False
        if self._inline_object is not None and in_main_thread():
            # The object path (docs/python.md "The GIL and Ctrl-C"): the reply as objects (or
            # text); None: not a short call, nothing ran (it takes the worker); False: nothing
            # ran, the envelope goes as text (the engine's strict parser judges it, same codes).
            answered = self._inline_object(envelope)
            if answered is None:
                inline = None
        if isinstance(answered, dict):
            reply: Any = answered
        elif isinstance(answered, str):
            reply = _loads_reply(answered)
        else:
            reply_text = run_interruptible(self._backend.call, _dumps(envelope),
                                           on_interrupt=on_interrupt, track=self._track,
                                           inline=inline)
            reply = _loads_reply(reply_text)
        if not isinstance(reply, dict) or "ok" not in reply:
            raise EngineError("engine-reply", f"malformed engine reply to {op}")
        return reply

    def call(self, op: str, args: Optional[Mapping[str, Any]] = None, *,
             on_interrupt: Optional[InterruptHook] = None) -> Dict[str, Any]:
        """Like :meth:`request` but raises the mapped :class:`EvidentError` on ``ok: false``."""
        reply = self.request(op, args, on_interrupt=on_interrupt)
        if reply.get("ok") is not True:
            raise error_from_reply(reply)
        return reply

    # -- operations -------------------------------------------------------------------------
    def ping(self) -> Dict[str, Any]:
        """``{"ok": true, "version", "pid"}``."""
        return self.call("ping")

    def create_display(self, width: int = 1280, height: int = 800, depth: int = 24,
                       dpi: int = 96, keyboard_layout: Optional[str] = None,
                       manage_windows: bool = False, accessibility: bool = False) -> Display:
        """Starts an owned display and waits until it is ready (docs/protocol.md §3);
        ``keyboard_layout="de"`` applies that XKB layout first (docs/displays.md);
        ``manage_windows=True`` runs the engine-side window manager: every newly mapped
        top-level window is fitted into the display, raised and focused (docs/windows.md);
        ``accessibility=True`` gives it a private accessibility stack, so that
        :meth:`Display.accessibility` can read its apps' trees (docs/accessibility.md)."""
        args: Dict[str, Any] = {"width": width, "height": height, "depth": depth, "dpi": dpi}
        if keyboard_layout is not None:
            args["keyboard_layout"] = keyboard_layout
        if manage_windows:
            args["manage_windows"] = True
        if accessibility:
            args["accessibility"] = True
        reply = self.call("display.create", args)
        display = Display(self, reply["display"])
        display.manage_windows = bool(reply.get("manage_windows", False))
        return display

    def displays(self) -> List[Display]:
        """The displays this engine owns."""
        return [Display(self, d) for d in self.call("display.list")["displays"]]

    def apps(self) -> List[Dict[str, Any]]:
        """The apps this engine launched, with their liveness, as the engine reports them."""
        return list(self.call("app.list")["apps"])

    def begin_session(self, display: Display, app: Union[App, str], *,
                      attempt_id: Optional[str] = None, job_sha256: Optional[str] = None
                      ) -> Session:
        """Begins a session (docs/protocol.md §5) on ``display`` bound to ``app``."""
        return Session.begin(self, display, app, attempt_id=attempt_id, job_sha256=job_sha256)

    def wait_warm(self, timeout_ms: int) -> bool:
        """True once every ``warm`` size holds a ready display (at once without ``warm``); false on
        timeout or after close. The pool refills in the background after each lease."""
        wait = getattr(self._backend, "wait_warm", None)
        if self._closed or wait is None:
            return False
        return bool(wait(int(timeout_ms)))

    # -- lifecycle --------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    def close(self, timeout: Optional[float] = None) -> None:
        """Aborts sessions, stops apps, destroys displays. Idempotent.

        Waits for requests still in flight on worker threads (for example one interrupted by
        Ctrl-C) so their input completes and is released before the engine shuts down.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._idle.wait_for(lambda: not self._inflight, timeout=timeout)
        self._backend.close()

    shutdown = close

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<evident.Engine {'closed' if self._closed else 'open'}>"

