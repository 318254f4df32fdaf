"""Small helpers shared by the scenarios: looking at pixels, serving a local page, and talking
to Chromium's DevTools protocol on loopback. Waiting on a condition with a deadline is
``evident.wait_for`` (re-exported here).

Nothing here drives the display: all input goes through Evident (native XTest input).
"""
from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import threading
import urllib.request
from pathlib import Path
from typing import Any, Iterator, Optional, Tuple

from evident import wait_for  # noqa: F401  (the scenarios import it from here)

REPO = Path(__file__).resolve().parent.parent
APPS = Path(__file__).resolve().parent / "apps"
WEB_ROOT = REPO / "fixtures" / "web"

RGB = Tuple[int, int, int]


def read_json_file(path: Path) -> Optional[Any]:
    """The JSON in ``path``, or None while it does not exist yet."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def hex_rgb(colour: str) -> RGB:
    colour = colour.lstrip("#")
    return (int(colour[0:2], 16), int(colour[2:4], 16), int(colour[4:6], 16))


def region_fraction(image, box: Tuple[int, int, int, int], rgb: RGB) -> float:
    """Fraction of pixels in ``box`` = (x, y, width, height) that are exactly ``rgb``."""
    x, y, w, h = box
    region = image.convert("RGB").crop((x, y, x + w, y + h))
    pixels = list(region.getdata())
    return sum(1 for p in pixels if p == rgb) / max(1, len(pixels))


def find_colour(image, rgb: RGB) -> Optional[Tuple[int, int]]:
    """Top-left-most pixel of exactly ``rgb`` (row-major scan), or None."""
    img = image.convert("RGB")
    width = img.width
    for i, p in enumerate(img.getdata()):
        if p == rgb:
            return (i % width, i // width)
    return None


@contextlib.contextmanager
def serve_directory(root: Path) -> Iterator[str]:
    """Serves ``root`` on 127.0.0.1 (a free port) in a thread; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="scenario-http", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass


class DevTools:
    """A minimal Chrome DevTools Protocol client for one page target (loopback only)."""

    def __init__(self, port: int, url_prefix: str, timeout: float = 15.0) -> None:
        import websocket  # Debian: python3-websocket

        def page_target():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json", timeout=2) as r:
                    targets = json.load(r)
            except OSError:
                return None
            return next((t for t in targets if t.get("type") == "page"
                         and t.get("url", "").startswith(url_prefix)), None)

        target = wait_for(page_target, timeout, f"a DevTools page target for {url_prefix}")
        # No Origin header: Chromium refuses DevTools websockets from unexpected origins.
        self._ws = websocket.create_connection(target["webSocketDebuggerUrl"], timeout=timeout,
                                               suppress_origin=True)
        self._next_id = 0

    def call(self, method: str, **params: Any) -> Any:
        self._next_id += 1
        my_id = self._next_id
        self._ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self._ws.recv())
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"DevTools {method}: {msg['error']}")
                return msg.get("result")

    def evaluate(self, expression: str) -> Any:
        """Evaluates ``expression`` in the page and returns its JSON value."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if result.get("exceptionDetails"):
            raise RuntimeError(f"page exception: {result['exceptionDetails']}")
        return result["result"].get("value")

    def close(self) -> None:
        self._ws.close()


def devtools_port(user_data_dir: Path) -> Optional[int]:
    """Chromium writes its DevTools port (``--remote-debugging-port=0``) to this file."""
    try:
        first = (user_data_dir / "DevToolsActivePort").read_text().splitlines()[0]
        return int(first)
    except (FileNotFoundError, IndexError, ValueError):
        return None


def chromium_argv(url: str, user_data_dir: Path, width: int, height: int) -> list:
    """Chromium as a real window on the owned display (not headless), fresh private profile."""
    return [
        "chromium", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", "--password-store=basic", "--disable-features=Translate",
        "--test-type",  # no "unsupported command-line flag" info bar above the page
        f"--user-data-dir={user_data_dir}", "--remote-debugging-port=0",
        "--force-device-scale-factor=1", "--window-position=0,0",
        f"--window-size={width},{height}", f"--app={url}",
    ]
