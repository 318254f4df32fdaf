"""Runs engine calls so that Ctrl-C stays responsive.

The C++ call releases the GIL. When it is made from the main thread we run it on a worker thread
(reused across calls) and wait for it in short slices: a ``KeyboardInterrupt`` is then delivered to the caller promptly
instead of after the whole batch. What happens to the interrupted request is documented in
docs/python.md ("Ctrl-C"): the engine finishes input that is already in flight, releases every
held key and button itself, and the Python side aborts the session (if any) as soon as the
in-flight request returns.

It also declares :class:`Caller`, the one thing the resource classes (``Display``, ``App``,
``Browser``, ``Session``, the window helpers) need from an engine: they depend on this protocol,
never on :class:`evident.Engine` or on each other's modules (docs/python.md, "Package layout").
"""
from __future__ import annotations

import os
import queue
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol

_SLICE_S = 0.05


class _Workers:
    """Threads that run main-thread calls, kept for reuse: starting a thread per call cost more
    than a short engine call itself. A call is handed to an idle worker, or to a new one when all
    are busy (an interrupted call keeps its worker until the engine returns), so no call ever
    waits behind another."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle = 0  # workers waiting on _jobs that no submit has claimed yet
        self._jobs: "queue.SimpleQueue[Callable[[], None]]" = queue.SimpleQueue()

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            claimed = self._idle > 0
            if claimed:
                self._idle -= 1
        if claimed:
            self._jobs.put(job)
        else:
            threading.Thread(target=self._serve, args=(job,), name="evident-call",
                             daemon=True).start()

    def _serve(self, job: Callable[[], None]) -> None:
        while True:
            job()
            with self._lock:
                self._idle += 1
            job = self._jobs.get()


_workers = _Workers()


def _reset_after_fork() -> None:
    # A forked child has none of the parent's threads: idle counts from the parent are lies.
    global _workers
    _workers = _Workers()


os.register_at_fork(after_in_child=_reset_after_fork)


class PendingCall:
    """A request running on a worker thread."""

    __slots__ = ("done", "result", "exc", "_callbacks", "_lock")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: Optional[str] = None
        self.exc: Optional[BaseException] = None
        self._callbacks: List[Callable[["PendingCall"], None]] = []
        self._lock = threading.Lock()

    def add_done_callback(self, fn: Callable[["PendingCall"], None]) -> None:
        """Runs ``fn(self)`` when the call completes (immediately if it already has)."""
        with self._lock:
            if not self.done.is_set():
                self._callbacks.append(fn)
                return
        fn(self)

    def _finish(self) -> None:
        with self._lock:
            self.done.set()
            callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            try:
                fn(self)
            except Exception:  # noqa: BLE001 - cleanup callbacks must not kill the worker
                pass


InterruptHook = Callable[[PendingCall], None]
"""Called with the still running request when Ctrl-C interrupts the caller's wait."""


class Caller(Protocol):
    """Something that can call the engine: :class:`evident.Engine` and :class:`evident.Client`.

    ``request`` sends one envelope ``{"op", "args"}`` and returns the reply object as is;
    ``call`` does the same but raises the mapped :class:`evident.EvidentError` on ``ok: false``;
    ``closed`` is true once the engine was closed (context managers then skip their cleanup).
    """

    @property
    def closed(self) -> bool: ...

    def request(self, op: str, args: Optional[Mapping[str, Any]] = None, *,
                on_interrupt: Optional[InterruptHook] = None) -> Dict[str, Any]: ...

    def call(self, op: str, args: Optional[Mapping[str, Any]] = None, *,
             on_interrupt: Optional[InterruptHook] = None) -> Dict[str, Any]: ...


def in_main_thread() -> bool:
    """True on the thread Python delivers signals (Ctrl-C) to."""
    return threading.current_thread() is threading.main_thread()


def run_interruptible(fn: Callable[[str], str], text: str,
                      on_interrupt: Optional[InterruptHook] = None,
                      track: Optional[Callable[[PendingCall, bool], None]] = None,
                      inline: Optional[Callable[[str], Optional[str]]] = None) -> str:
    """Calls ``fn(text)``; from the main thread, on a worker so Ctrl-C interrupts the wait.

    ``inline(text)``, when given, is tried first on the calling thread: the engine answers there
    only the requests that take a short, bounded time (``Engine::call_inline``: ping, a
    ``cu.actions`` batch of bounded action kinds without settle) and returns None, having run
    nothing, for every other one. A short call costs no thread hand-off (two thread wake-ups,
    most of its time on an idle machine); a Ctrl-C during it is delivered when it returns.

    On ``KeyboardInterrupt`` the request keeps running to completion on its worker (the engine
    cannot un-send input that is already in flight); ``on_interrupt(pending)`` is called so the
    caller can schedule cleanup, and the interrupt propagates.
    """
    if not in_main_thread():
        return fn(text)
    if inline is not None:
        answered = inline(text)
        if answered is not None:
            return answered
    pending = PendingCall()

    def worker() -> None:
        # Tracked from inside the worker, so a call is "in flight" exactly while it can run.
        if track is not None:
            track(pending, True)
        try:
            pending.result = fn(text)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            pending.exc = e
        finally:
            pending._finish()
            if track is not None:
                track(pending, False)

    try:
        # submit() is inside the try: Ctrl-C can land while it starts a worker.
        _workers.submit(worker)
        while not pending.done.wait(_SLICE_S):
            pass
    except KeyboardInterrupt:
        if on_interrupt is not None:
            on_interrupt(pending)
        raise
    if pending.exc is not None:
        raise pending.exc
    assert pending.result is not None
    return pending.result
