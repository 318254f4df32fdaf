"""``evident.Browser``: a Chromium workspace on one display generation (docs/browsers.md).

Made by :meth:`evident.Display.browser`. Chromium runs as a normal window on the display (an app
of that display generation), with a fresh private profile and DevTools on loopback only; the
CSS viewport is exactly the one asked for. Page access goes through the engine's DevTools client:
:meth:`evaluate` for assertions, :meth:`navigate`, and :meth:`element_box` for the screen box of
an element, to click it with native input.
"""
from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional, Tuple

from ._call import Caller
from ._data import ElementBox
from .app import App
from .errors import BrowserError
from .windows import WindowHelpers

__all__ = ["Browser", "ElementBox"]


class Browser:
    """``browser_id``, ``pid``, ``viewport`` (width, height), ``version``, ``target_id``,
    ``profile_sha256``.

    Context manager: closes the browser on exit (Chromium stopped, its profile removed).
    """

    def __init__(self, engine: Caller, obj: Mapping[str, Any],
                 display: Optional[WindowHelpers] = None) -> None:
        self.engine = engine
        self.display = display
        self.browser_id: str = str(obj["browser_id"])
        self.display_id: int = int(obj["display_id"])
        self.generation: str = str(obj["generation"])
        self.app_id: str = str(obj["app_id"])
        self.pid: int = int(obj["pid"])
        self.url: str = str(obj["url"])
        vp = obj.get("viewport") or {}
        self.viewport: Tuple[int, int] = (int(vp.get("width", 0)), int(vp.get("height", 0)))
        self.version: str = str(obj.get("version", ""))
        self.target_id: str = str(obj.get("target_id", ""))
        self.profile_dir: str = str(obj.get("profile_dir", ""))
        # docs/browsers.md "Profile digest": bound by a session's receipt (browser.profile_sha256)
        self.profile_sha256: str = str(obj.get("profile_sha256", ""))
        self.raw: Dict[str, Any] = dict(obj)
        self.exit_status: Optional[int] = None

    @property
    def id(self) -> str:
        return self.browser_id

    @property
    def app(self) -> App:
        """The Chromium process as an :class:`evident.App` (e.g. to bind a session to it)."""
        return App(self.engine, {"app_id": self.app_id, "display_id": self.display_id,
                                 "generation": self.generation, "pid": self.pid},
                   display=self.display)

    def _ref(self) -> Dict[str, Any]:
        return {"browser_id": self.browser_id}

    def evaluate(self, expression: str) -> Any:
        """Evaluates a JavaScript expression in the page; returns its value (JSON types; a
        Promise is not awaited). Raises ``BrowserError`` (``browser-evaluate-exception``, ...)."""
        reply = self.engine.call("browser.evaluate", {**self._ref(), "expression": str(expression)})
        return json.loads(reply["value_json"])

    def navigate(self, url: str) -> str:
        """Loads ``url`` and waits for its load event; returns ``location.href``."""
        return str(self.engine.call("browser.navigate", {**self._ref(), "url": str(url)})["url"])

    def element_box(self, selector: str) -> ElementBox:
        """Screen box of the first element matching the CSS ``selector``."""
        reply = self.engine.call("browser.element_box", {**self._ref(), "selector": str(selector)})
        return ElementBox.from_json(reply["box"])

    def status(self) -> Dict[str, Any]:
        """Liveness layers, probed fresh: ``live``, ``process``, ``display``, ``cdp``,
        ``page_target``."""
        return dict(self.engine.call("browser.status", self._ref()))

    @property
    def live(self) -> bool:
        return bool(self.status().get("live"))

    def close(self) -> Optional[int]:
        """Stops Chromium and removes its profile; returns the exit status."""
        reply = self.engine.call("browser.close", self._ref())
        self.exit_status = int(reply["exit_status"])
        return self.exit_status

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.exit_status is not None or self.engine.closed:
            return
        try:
            self.close()
        except BrowserError:
            pass  # already closed, or its display is gone (which closed it)

    def __repr__(self) -> str:
        return (f"<evident.Browser {self.browser_id} pid={self.pid} display={self.display_id} "
                f"{self.viewport[0]}x{self.viewport[1]}>")
