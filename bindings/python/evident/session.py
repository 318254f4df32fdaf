"""``evident.Session``: the externally driven session protocol (docs/protocol.md §5) from Python.

Same protocol, limits and error codes as ``evident session --request``; this class only keeps
the bookkeeping a caller would otherwise do by hand (``session_id`` and the current
``sequence``) and turns error replies into :class:`SessionError` & co.::

    with display.session(app, attempt_id="tk-form-1", job_sha256=job) as s:
        s.actions([a.click(120, 40), a.type("Zoë")])
        s.freeze()
        s.observe()                   # a fresh frame, captured after the call
        s.finish({"name": "Zoë"})     # builds the receipt
    receipt = s.receipt               # closed on exit; aborted instead if the block raised
"""
from __future__ import annotations

import hashlib
import json
import secrets
from types import TracebackType
from typing import (Any, Callable, Dict, List, Mapping, Optional, Protocol, Sequence, Type, TypeVar,
                    Union)

from . import _protocol
from ._call import Caller, InterruptHook, PendingCall
from ._data import ActionResult, PngInfo
from .errors import EvidentError, SessionError, error_from_reply
from .verification import Verification, verify_receipt
from .windows import AppRef, WindowHelpers


class BrowserRef(Protocol):
    """What a session needs of a browser workspace (an :class:`evident.Browser`): its id. The
    session layer sits below the browser one (docs/python.md, "Package layout")."""

    @property
    def browser_id(self) -> str: ...


__all__ = ["Session", "MAX_ACTIONS_PER_BATCH", "MAX_ACTIONS_PER_SESSION"]

MAX_ACTIONS_PER_BATCH = _protocol.LIMITS["actions_per_batch_max"]
MAX_ACTIONS_PER_SESSION = _protocol.LIMITS["actions_per_session_max"]

_S = TypeVar("_S", bound="Session")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def default_job_sha256(text: str) -> str:
    """A job digest for callers without one: SHA-256 of a description of the job."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Session:
    """One live session. Attributes mirror the latest snapshot: ``session_id``, ``sequence``,
    ``phase``, ``frame`` (:class:`PngInfo`), ``results``, ``receipt``, ``evidence_dir``.
    """

    def __init__(self, engine: Caller, snapshot: Mapping[str, Any],
                 display: Optional[WindowHelpers] = None) -> None:
        self.engine = engine
        self.display = display
        self.snapshot: Dict[str, Any] = dict(snapshot)
        self.session_id: str = str(snapshot["session_id"])
        self.sequence: int = int(snapshot.get("sequence", 0))
        self.closed_reply: Optional[Dict[str, Any]] = None
        self.aborted = False
        self.frames: List[PngInfo] = []
        self.on_close: List[Callable[["Session"], None]] = []
        self._remember_frame(snapshot)

    # -- begin ------------------------------------------------------------------------------
    @classmethod
    def begin(cls: Type[_S], engine: Caller, display: WindowHelpers, app: Union[AppRef, str], *,
              attempt_id: Optional[str] = None, job_sha256: Optional[str] = None,
              app_exit: Optional[str] = None, record_video: bool = False,
              browser: Union[BrowserRef, str, None] = None) -> _S:
        """``begin``: takes the display's exclusive lock and captures the initial frame.

        ``attempt_id`` defaults to a random ``att-<hex>``; ``job_sha256`` to the SHA-256 of the
        attempt id (pass your own digest of what the job was). ``app_exit="record"`` makes the
        app's exit an ``app_exit`` event of the receipt instead of the end of the session (a
        dialog whose OK closes it still gets a receipt; :attr:`app_exit` then holds it).
        ``record_video=True`` records the display from begin to finish as ``video.webm`` in the
        evidence dir (ffmpeg x11grab, WebM), bound in the receipt as its artifact
        (docs/evidence.md "Video"); ``video-unavailable`` without ffmpeg.
        ``browser`` (an :class:`evident.Browser` or its id) binds that browser workspace of the
        same display generation: checked live at begin, re-checked before and after every
        action batch (``browser-not-live``), and bound in the receipt's ``browser`` member
        (docs/sessions.md "Browser").
        """
        app_id = app if isinstance(app, str) else app.app_id
        attempt = attempt_id or f"att-{secrets.token_hex(8)}"
        job = job_sha256 or default_job_sha256(attempt)
        request = {"op": "begin", "display_id": display.id, "generation": display.generation,
                   "app_id": app_id, "attempt_id": attempt, "job_sha256": job}
        if app_exit is not None:
            request["app_exit"] = app_exit
        if record_video:
            request["record_video"] = True
        if browser is not None:
            request["browser"] = browser if isinstance(browser, str) else browser.browser_id
        snapshot = cls._send(engine, request)
        return cls(engine, snapshot, display)

    # -- plumbing ---------------------------------------------------------------------------
    @staticmethod
    def _send(engine: Caller, request: Mapping[str, Any],
              on_interrupt: Optional[InterruptHook] = None) -> Dict[str, Any]:
        reply = engine.request("session", {"request": _dumps(request)}, on_interrupt=on_interrupt)
        if reply.get("ok") is not True:
            raise error_from_reply(reply)
        return reply

    def _remember_frame(self, snapshot: Mapping[str, Any]) -> None:
        frame = PngInfo.from_json(snapshot.get("frame"))
        if frame is not None and (not self.frames or self.frames[-1].sha256 != frame.sha256
                                  or self.frames[-1].path != frame.path):
            self.frames.append(frame)

    def _update(self, snapshot: Mapping[str, Any]) -> Dict[str, Any]:
        self.snapshot = dict(snapshot)
        if "sequence" in snapshot:
            self.sequence = int(snapshot["sequence"])
        self._remember_frame(snapshot)
        return self.snapshot

    def _interrupted(self, pending: PendingCall) -> None:
        # Ctrl-C while a request was in flight: the engine completes that request (input already
        # sent cannot be recalled; held keys/buttons are released by the engine). Once it
        # returns, abort the session so the display lock is released.
        def cleanup(_: PendingCall) -> None:
            try:
                self.abort()
            except EvidentError:
                pass

        pending.add_done_callback(cleanup)

    def _op(self, op: str, **fields: Any) -> Dict[str, Any]:
        request = {"op": op, "session_id": self.session_id, "sequence": self.sequence, **fields}
        return self._update(self._send(self.engine, request, on_interrupt=self._interrupted))

    # -- protocol ---------------------------------------------------------------------------
    def actions(self, actions: Sequence[Mapping[str, Any]],
                settle: Union[bool, int, None] = None) -> List[ActionResult]:
        """One batch (1..16 actions; 64 per session). Each action is followed by a frame.

        ``settle`` (``True`` or a cap in ms): each action's frame is taken after the display
        settled (docs/protocol.md §4), and the outcome is in its result (``raw["settle"]``) and
        its receipt event. Returns the results. A ``failed`` action ends the session (the engine
        cleans up; there is no receipt), which the next call reports as
        ``session-not-found``/``session-phase``. In a session begun with ``app_exit="record"``
        a batch stops where the app was found gone (fewer results than actions).
        """
        actions = [dict(a) for a in actions]
        if not 1 <= len(actions) <= MAX_ACTIONS_PER_BATCH:
            # Checked by the engine too (session-actions); this keeps the sequence untouched.
            raise SessionError("session-actions",
                               f"a batch has 1..{MAX_ACTIONS_PER_BATCH} actions, got {len(actions)}")
        fields: Dict[str, Any] = {"actions": actions}
        if settle is not None:
            fields["settle"] = settle
        snap = self._op("actions", **fields)
        return [ActionResult.from_json(r) for r in snap.get("results") or []]

    def freeze(self) -> Dict[str, Any]:
        """Permanently ends input; the deadline becomes 45 s for observe, finish and close."""
        return self._op("freeze")

    def observe(self, pre_observation_sha256: Optional[str] = None) -> Dict[str, Any]:
        """Captures one fresh full-display frame after the call.

        ``pre_observation_sha256`` is the digest of what the caller saw before observing; it
        defaults to the latest frame of this session (the freeze frame).
        """
        pre = pre_observation_sha256 or (self.frame.sha256 if self.frame else None)
        if pre is None:
            raise SessionError("session-observation", "no frame known; pass pre_observation_sha256")
        return self._op("observe", pre_observation_sha256=pre)

    def finish(self, claims: Mapping[str, Any], observation_sha256: Optional[str] = None
               ) -> Dict[str, Any]:
        """Records ``claims`` (a JSON object) and builds the receipt, returned and kept in
        :attr:`receipt`. ``observation_sha256`` defaults to the observed frame's digest.
        """
        obs = observation_sha256 or (self.frame.sha256 if self.frame else None)
        snap = self._op("finish", observation_sha256=obs, claims=dict(claims))
        return snap.get("receipt") or {}

    def close(self) -> Dict[str, Any]:
        """Answers only after cleanup is complete: ``{"closed", "cleanup_complete", "receipt_id"}``."""
        request = {"op": "close", "session_id": self.session_id, "sequence": self.sequence}
        reply = self._send(self.engine, request)
        self.closed_reply = reply
        self._run_on_close()
        return reply

    def abort(self) -> Dict[str, Any]:
        """Ends the session in any phase (no receipt); cleanup runs and the display is released.

        Uses ``status`` first when needed so an abort after a lost reply still carries the
        current sequence.
        """
        try:
            status = self.status()
            self.sequence = int(status.get("sequence", self.sequence))
        except SessionError:
            pass
        request = {"op": "abort", "session_id": self.session_id, "sequence": self.sequence}
        reply = self._send(self.engine, request)
        self.aborted = True
        self._run_on_close()
        return reply

    def status(self) -> Dict[str, Any]:
        """Where the session stands; changes nothing (no sequence)."""
        return self._send(self.engine, {"op": "status", "session_id": self.session_id})

    def sync(self) -> int:
        """Re-reads ``sequence`` from ``status`` (after a lost reply); returns it."""
        snap = self.status()
        self._update(snap)
        return self.sequence

    def _run_on_close(self) -> None:
        callbacks, self.on_close = self.on_close, []
        for fn in callbacks:
            fn(self)

    # -- views ------------------------------------------------------------------------------
    @property
    def phase(self) -> str:
        return str(self.snapshot.get("phase", ""))

    @property
    def frame(self) -> Optional[PngInfo]:
        """The latest frame (after an action, freeze, observe...)."""
        return PngInfo.from_json(self.snapshot.get("frame"))

    @property
    def results(self) -> List[ActionResult]:
        return [ActionResult.from_json(r) for r in self.snapshot.get("results") or []]

    @property
    def receipt(self) -> Optional[Dict[str, Any]]:
        return self.snapshot.get("receipt")

    @property
    def app_exit(self) -> Optional[Dict[str, Any]]:
        """``{"exit_status", "frame_sha256", "after_freeze"}`` once the app's exit was recorded
        (a session begun with ``app_exit="record"``), else None."""
        return self.snapshot.get("app_exit")

    @property
    def browser(self) -> Optional[Dict[str, Any]]:
        """The bound browser workspace (``workspace_id``, ``browser_version``, ``target_id``,
        ``profile_sha256``, ``viewport``) of a session begun with ``browser=``, else None."""
        return self.snapshot.get("browser")

    @property
    def evidence_dir(self) -> Optional[str]:
        return self.snapshot.get("evidence_dir")

    @property
    def receipt_path(self) -> Optional[str]:
        """``<evidence_dir>/receipt.json`` once closed (the engine writes it only at close;
        before that the receipt exists only as :attr:`receipt`)."""
        if not self.closed_reply:
            return None
        return self.closed_reply.get("receipt_path")

    def verify(self, *, frames: bool = True, expect_job_sha256: Optional[str] = None,
               expect_uid: Optional[int] = None) -> Verification:
        """Verifies this session's receipt with :func:`evident.verify_receipt`."""
        if not self.receipt:
            raise SessionError("session-phase", "no receipt yet: finish the session first")
        return verify_receipt(self.receipt_path or self.receipt,
                              frames_dir=self.evidence_dir if frames else None,
                              expect_job_sha256=expect_job_sha256, expect_uid=expect_uid)

    # -- context manager --------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self.closed_reply is not None or self.aborted

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        if self.done or self.engine.closed:
            return
        if exc_type is None and self.receipt:
            self.close()
            return
        try:
            self.abort()
        except EvidentError:
            if exc_type is None:
                raise

    def __repr__(self) -> str:
        return f"<evident.Session {self.session_id} seq={self.sequence} phase={self.phase}>"
