"""``evident.App``: a process the engine launched on one display generation."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional

from .errors import AppError

if TYPE_CHECKING:  # pragma: no cover
    from .display import Display
    from .engine import Engine
    from .windows import Window

__all__ = ["App"]


class App:
    """``app_id``, ``pid``, ``argv_sha256``, bound to ``display_id``/``generation``.

    Context manager: stops the app on exit (TERM, then KILL after a bound; reaped).
    """

    def __init__(self, engine: "Engine", obj: Mapping[str, Any],
                 display: Optional["Display"] = None) -> None:
        self.engine = engine
        self.app_id: str = str(obj["app_id"])
        self.display_id: int = int(obj.get("display_id", display.id if display else -1))
        self.generation: str = str(obj.get("generation", display.generation if display else ""))
        self.pid: int = int(obj.get("pid", 0))
        self.argv_sha256: str = str(obj.get("argv_sha256", ""))
        self.display = display
        self.raw: Dict[str, Any] = dict(obj)
        self._stopped_status: Optional[Any] = None
        self._stopped = False

    id = property(lambda self: self.app_id)

    def info(self) -> Optional[Dict[str, Any]]:
        """This app's entry in ``app list`` (None if the engine no longer lists it)."""
        for a in self.engine.apps():
            if a.get("app_id") == self.app_id:
                return a
        return None

    @property
    def alive(self) -> bool:
        """Liveness as the engine sees it now (probed on every access)."""
        entry = self.info()
        if entry is None:
            return False
        for k in ("alive", "live", "running"):
            if k in entry:
                return bool(entry[k])
        state = entry.get("state") or entry.get("status")
        return state in ("running", "alive", "live")

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

    def windows(self, *, mapped_only: bool = False) -> "List[Window]":
        """This app's top-level windows: those whose owner is its pid, a descendant of it or a
        process in its group (``window.list`` with ``app_id``)."""
        from .windows import Window

        reply = self.engine.call("window.list", {"display_id": self.display_id,
                                                 "generation": self.generation,
                                                 "app_id": self.app_id,
                                                 "mapped_only": bool(mapped_only)})
        return [Window.from_json(w) for w in reply.get("windows", [])]

    def wait_window(self, *, title: Optional[str] = None, class_: Optional[str] = None,
                    timeout: float = 10.0, raise_on_timeout: bool = True) -> Any:
        """``display.wait_window(app=self, ...)``: a window of this app's process tree."""
        if self.display is None:
            raise AppError("app-args", "this App object has no Display to wait on")
        return self.display.wait_window(title=title, class_=class_, app=self, timeout=timeout,
                                        raise_on_timeout=raise_on_timeout)

    def stop(self) -> Any:
        """Stops and reaps the app; returns its exit status (as the engine reports it)."""
        reply = self.engine.call("app.stop", {"app_id": self.app_id})
        self._stopped = True
        self._stopped_status = reply.get("exit_status")
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
