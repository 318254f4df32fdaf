"""``evident.Display``: an Xvfb display owned by the engine, named by (id, generation)."""
from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Sequence, Union

from ._call import Caller
from ._data import BatchResult, DisplayStatus, Png, PngInfo, Settle
from .accessibility import AxTree
from .actions import ActionHelpers
from .app import App
from .browser import Browser
from .errors import DisplayError
from .session import Session
from .windows import WindowHelpers

if TYPE_CHECKING:  # pragma: no cover - Pillow's types, for the annotations only
    from PIL import Image as _PILImage

__all__ = ["Display", "DisplayStatus", "Png"]


class Display(ActionHelpers, WindowHelpers):
    """An owned display. Every operation names its exact ``generation``; once destroyed, every
    call raises ``DisplayError("display-generation-mismatch")`` (or ``display-not-found``).

    Context manager: destroys the display (and its apps) on exit.
    """

    def __init__(self, engine: Caller, obj: Mapping[str, Any]) -> None:
        self.engine = engine
        self.id: int = int(obj["id"])
        self.name: str = str(obj.get("name", f":{self.id}"))
        self.generation: str = str(obj["generation"])
        self.width: int = int(obj.get("width", 0))
        self.height: int = int(obj.get("height", 0))
        self.raw: Dict[str, Any] = dict(obj)
        # Created with manage_windows=True (the engine fits, raises and focuses new windows).
        self.manage_windows: bool = bool(obj.get("manage_windows", False))
        self._destroyed = False

    def _ref(self) -> Dict[str, Any]:
        return {"display_id": self.id, "generation": self.generation}

    # -- lifecycle --------------------------------------------------------------------------
    def destroy(self) -> Dict[str, Any]:
        """Stops the display's apps, then the display (exact generation)."""
        reply = self.engine.call("display.destroy", self._ref())
        self._destroyed = True
        return reply

    @property
    def destroyed(self) -> bool:
        return self._destroyed

    def status(self) -> DisplayStatus:
        reply = self.engine.call("display.status", self._ref())
        layout = reply.get("keyboard_layout")
        keeper = reply.get("window_keeper")
        return DisplayStatus(bool(reply.get("ready")), list(reply.get("layers", [])),
                             None if layout is None else str(layout),
                             None if keeper is None else dict(keeper))

    def __enter__(self) -> "Display":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._destroyed or self.engine.closed:
            return
        try:
            self.destroy()
        except DisplayError:
            # Already gone (e.g. destroyed by someone holding the same id); nothing to clean.
            self._destroyed = True

    # -- frames -----------------------------------------------------------------------------
    def screenshot(self, out: Optional[str] = None) -> Png:
        """One full-display PNG as bytes (a :class:`Png`; ``.image()`` gives a Pillow image).

        With ``out``, the file is kept there; otherwise a private temporary file is used and
        removed.
        """
        if out is not None:
            reply = self.engine.call("display.screenshot", {**self._ref(), "out": str(out)})
            info = PngInfo.from_json(reply.get("png"))
            with open(out, "rb") as f:
                return Png(f.read(), info)
        with tempfile.TemporaryDirectory(prefix="evident-shot-") as d:
            path = os.path.join(d, "frame.png")
            reply = self.engine.call("display.screenshot", {**self._ref(), "out": path})
            info = PngInfo.from_json(reply.get("png"))
            with open(path, "rb") as f:
                data = f.read()
        return Png(data, info.without_path() if info is not None else None)

    def image(self) -> "_PILImage.Image":
        """Shortcut for ``screenshot().image()``."""
        return self.screenshot().image()

    # -- apps -------------------------------------------------------------------------------
    def launch(self, argv: Sequence[str], *, wait_window_ms: Optional[int] = None,
               env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None) -> App:
        """Launches ``argv`` on this display (DISPLAY/XAUTHORITY set, own process group).

        ``wait_window_ms`` waits for a mapped top-level window of the app's process tree
        (children included). ``env`` adds/overrides variables (not DISPLAY or XAUTHORITY);
        ``cwd`` is the app's working directory (absolute path of an existing directory).
        """
        args: Dict[str, Any] = {**self._ref(), "argv": [str(a) for a in argv]}
        if wait_window_ms is not None:
            args["wait_window_ms"] = int(wait_window_ms)
        if env is not None:
            args["env"] = [f"{k}={v}" for k, v in env.items()]
        if cwd is not None:
            args["cwd"] = os.path.abspath(str(cwd))
        reply = self.engine.call("app.launch", args)
        return App(self.engine, reply["app"], display=self)

    def browser(self, url: str, *, viewport: Optional[Sequence[int]] = None,
                extra_args: Sequence[str] = (), profile_dir: Optional[str] = None) -> Browser:
        """Starts Chromium on this display with ``url`` loaded and exactly the CSS ``viewport``
        ``(width, height)`` (default: the display's size). See :class:`evident.Browser`."""
        args: Dict[str, Any] = {**self._ref(), "url": str(url)}
        if viewport is not None:
            width, height = viewport
            args["viewport"] = {"width": int(width), "height": int(height)}
        if extra_args:
            args["extra_args"] = [str(a) for a in extra_args]
        if profile_dir is not None:
            args["profile_dir"] = str(profile_dir)
        reply = self.engine.call("browser.create", args)
        return Browser(self.engine, reply["browser"], display=self)

    def accessibility(self, app: Union[App, str], *, max_nodes: Optional[int] = None,
                      max_depth: Optional[int] = None,
                      timeout_ms: Optional[int] = None) -> AxTree:
        """The AT-SPI2 tree of ``app`` (an :class:`App` on this display, or its id), read now
        over this display's accessibility bus (the display must have been created with
        ``accessibility=True``). Bounded by ``max_nodes``/``max_depth`` (the tree says
        ``truncated``) and ``timeout_ms``. Raises ``AccessibilityError``
        (``accessibility-off``, ``accessibility-app-not-found``, ...). docs/accessibility.md."""
        app_id = app.app_id if isinstance(app, App) else str(app)
        args: Dict[str, Any] = {"app_id": app_id}
        if max_nodes is not None:
            args["max_nodes"] = int(max_nodes)
        if max_depth is not None:
            args["max_depth"] = int(max_depth)
        if timeout_ms is not None:
            args["timeout_ms"] = int(timeout_ms)
        return AxTree(self.engine.call("accessibility.tree", args))

    # -- actions ----------------------------------------------------------------------------
    def actions(self, actions: Sequence[Mapping[str, Any]], *, observe: str = "pixels",
                settle: Settle = False, coordinate_space: str = "pixel") -> BatchResult:
        """Runs one action batch outside a session (docs/protocol.md §4); refused while a session holds
        this display. Results are data; a refused batch raises ``ActionError``/``UsageError``.
        ``observe``: ``"pixels"`` (a PNG), ``"none"`` or ``"ax"`` (the display's accessibility
        tree as text, ``batch.observation.text``; a display created with ``accessibility=True``,
        else ``AccessibilityError("accessibility-off")`` before anything runs).
        """
        request: Dict[str, Any] = {"actions": [dict(a) for a in actions], "observe": observe,
                                   "settle": settle, "coordinate_space": coordinate_space}
        reply = self.engine.call("cu.actions", {"display_id": self.id,
                                                "generation": self.generation,
                                                "request": request})
        return BatchResult.from_json(reply)

    # -- sessions ---------------------------------------------------------------------------
    def session(self, app: Union[App, str, None] = None, *, attempt_id: Optional[str] = None,
                job_sha256: Optional[str] = None, app_exit: Optional[str] = None,
                record_video: bool = False, browser: Union[Browser, str, None] = None) -> Session:
        """Begins a session on this display bound to ``app`` (see :class:`evident.Session`);
        ``app_exit="record"``: the app's exit is an event, not the end of the session;
        ``record_video=True``: the session's video is recorded and bound in its receipt;
        ``browser=`` (a :class:`evident.Browser` or its id): the session binds that workspace
        (checked around every action batch, bound in the receipt); without ``app``, the
        session's app is that browser's Chromium."""
        if app is None:
            if not isinstance(browser, Browser):
                raise TypeError("session() needs an app (or a Browser object to take its app from)")
            app = browser.app_id
        return Session.begin(self.engine, self, app, attempt_id=attempt_id,
                             job_sha256=job_sha256, app_exit=app_exit, record_video=record_video,
                             browser=browser)

    def __repr__(self) -> str:
        return (f"<evident.Display {self.name} {self.width}x{self.height} "
                f"{self.generation[:12]}…{' destroyed' if self._destroyed else ''}>")
