"""``evident.App``: a process the engine launched on one display generation."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Union

from ._call import Caller
from ._data import WaitResult, Window
from .errors import AppError
from .windows import WindowHelpers

__all__ = ["App"]


class App:
    """``app_id``, ``pid``, ``argv_sha256``, bound to ``display_id``/``generation``.

    Context manager: stops the app on exit (TERM, then KILL after a bound; reaped).
    ``display`` is the :class:`evident.Display` that launched it (any object with the window
    helpers), or None when the App was made from an app id alone.
    """

    def __init__(self, engine: Caller, obj: Mapping[str, Any],
                 display: Optional[WindowHelpers] = None) -> None:
        self.engine = engine
        self.app_id: str = str(obj["app_id"])
        self.display_id: int = int(obj.get("display_id", display.id if display else -1))
        self.generation: str = str(obj.get("generation", display.generation if display else ""))
        self.pid: int = int(obj.get("pid", 0))
        self.argv_sha256: str = str(obj.get("argv_sha256", ""))
        self.display = display
        self.raw: Dict[str, Any] = dict(obj)
        self._stopped_status: Optional[int] = None
        self._stopped = False

    @property
    def id(self) -> str:
        return self.app_id

    def info(self) -> Optional[Dict[str, Any]]:
        """This app's entry in ``app list`` (None if the engine no longer lists it)."""
        for a in self.engine.call("app.list")["apps"]:
            if a.get("app_id") == self.app_id:
                return dict(a)
        return None

    @property
    def alive(self) -> bool:
        """True when ``app list`` lists this app now with ``"alive": true`` (probed on every
        access). False once it exited on its own (listed with ``alive: false`` and its
        ``exit_status``) and once it is no longer listed (stopped, or its display destroyed)."""
        entry = self.info()
        return entry is not None and entry.get("alive") is True

    @property
    def exit_status(self) -> Optional[int]:
        """The exit status (exit code, or 128+signal) once the app exited: from ``stop()``, or,
        for an app that exited on its own, from the engine's ``app list``. ``None`` while it
        runs (and once the engine forgot it without a ``stop()`` from this object)."""
        if self._stopped:
            return self._stopped_status
        if self.engine.closed:
            return None
        entry = self.info()
        if entry is None or entry.get("exit_status") is None:
            return None
        return int(entry["exit_status"])

    def windows(self, *, mapped_only: bool = False) -> List[Window]:
        """This app's top-level windows: those whose owner is its pid, a descendant of it or a
        process in its group (``window.list`` with ``app_id``)."""
        reply = self.engine.call("window.list", {"display_id": self.display_id,
                                                 "generation": self.generation,
                                                 "app_id": self.app_id,
                                                 "mapped_only": bool(mapped_only)})
        return [Window.from_json(w) for w in reply.get("windows", [])]

    def wait_window(self, *, title: Optional[str] = None, class_: Optional[str] = None,
                    timeout: float = 10.0, raise_on_timeout: bool = True
                    ) -> Union[Window, WaitResult]:
        """``display.wait_window(app=self, ...)``: a window of this app's process tree."""
        if self.display is None:
            raise AppError("app-args", "this App object has no Display to wait on")
        return self.display.wait_window(title=title, class_=class_, app=self, timeout=timeout,
                                        raise_on_timeout=raise_on_timeout)

    def stop(self) -> Optional[int]:
        """Stops and reaps the app; returns its exit status (as the engine reports it)."""
        reply = self.engine.call("app.stop", {"app_id": self.app_id})
        self._stopped = True
        status = reply.get("exit_status")
        self._stopped_status = None if status is None else int(status)
        return self._stopped_status

    def __enter__(self) -> "App":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._stopped or self.engine.closed:
            return
        try:
            self.stop()
        except AppError:
            pass  # already stopped or its display is gone

    def __repr__(self) -> str:
        return f"<evident.App {self.app_id} pid={self.pid} display={self.display_id}>"
