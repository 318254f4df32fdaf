"""Small helpers shared by the scenarios: looking at pixels and serving a local page. Waiting on
a condition with a deadline is ``evident.wait_for`` (re-exported here); browsers are the engine's
own workspaces (``display.browser``, docs/browsers.md).

Nothing here drives the display: all input goes through Evident (native XTest input).
"""
from __future__ import annotations

import contextlib
import functools
import http.server
import json
import threading
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
