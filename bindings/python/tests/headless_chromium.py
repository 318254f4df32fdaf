"""A headless Debian Chromium driven over the DevTools protocol (python3-websocket), for tests that
look at pages evident writes. The browser runs with a fresh private profile and prints its
DevTools endpoint on stderr, which is read with a deadline (no polling, no sleeping). Every
protocol event is kept, so a test can ask which requests a page made."""
from __future__ import annotations

import base64
import json
import os
import re
import selectors
import subprocess
import time
from typing import Any, Dict, List, Optional

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--password-store=basic", "--remote-debugging-port=0"]


def available() -> bool:
    return os.access(CHROMIUM, os.X_OK)


class HeadlessChromium:
    def __init__(self, profile_dir: str, timeout: float = 60.0) -> None:
        import websocket  # Debian: python3-websocket

        os.makedirs(profile_dir, exist_ok=True)
        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile_dir}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.timeout = timeout
        endpoint = self._read_endpoint(timeout)
        # No Origin header: Chromium refuses DevTools websockets from unexpected origins.
        self.ws = websocket.create_connection(endpoint, timeout=timeout, suppress_origin=True)
        self._next = 0
        self.events: List[Dict[str, Any]] = []

    def _read_endpoint(self, timeout: float) -> str:
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stderr, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        buf = b""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not print its DevTools endpoint")
            if not sel.select(left):
                continue
            chunk = os.read(self.proc.stderr.fileno(), 65536)
            if not chunk:
                raise RuntimeError("chromium exited before printing its DevTools endpoint")
            buf += chunk
            m = re.search(rb"DevTools listening on (ws://127\.0\.0\.1:\d+/devtools/browser/[\w-]+)", buf)
            if m:
                sel.close()
                return m.group(1).decode()

    def call(self, method: str, session: Optional[str] = None, **params: Any) -> Any:
        self._next += 1
        my_id = self._next
        msg: Dict[str, Any] = {"id": my_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == my_id:
                if "error" in reply:
                    raise RuntimeError(f"DevTools {method}: {reply['error']}")
                return reply.get("result")
            self.events.append(reply)

    def wait_event(self, method: str, session: Optional[str] = None,
                   timeout: Optional[float] = None) -> Dict[str, Any]:
        """The first event `method` (of `session`) seen so far or arriving before the deadline."""
        def match(e: Dict[str, Any]) -> bool:
            return e.get("method") == method and (session is None or e.get("sessionId") == session)
        for e in self.events:
            if match(e):
                return e
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {method} event")
            self.ws.settimeout(left)
            e = json.loads(self.ws.recv())
            self.events.append(e)
            if match(e):
                return e

    def open_page(self, width: int, height: int) -> str:
        """A new page target with Network/Page/Log/Runtime events on; returns its session id."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Network", "Page", "Log", "Runtime"):
            self.call(f"{domain}.enable", session)
        self.call("Emulation.setDeviceMetricsOverride", session, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)
        return session

    def navigate(self, session: str, url: str) -> float:
        """Loads `url` and waits for its load event; returns the seconds it took."""
        self.events = [e for e in self.events if e.get("sessionId") != session]
        t0 = time.monotonic()
        self.call("Page.navigate", session, url=url)
        self.wait_event("Page.loadEventFired", session)
        return time.monotonic() - t0

    def requests(self, session: str) -> List[str]:
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("sessionId") == session and e.get("method") == "Network.requestWillBeSent"]

    def console(self, session: str) -> List[Dict[str, Any]]:
        return [e["params"] for e in self.events if e.get("sessionId") == session
                and e.get("method") in ("Log.entryAdded", "Runtime.consoleAPICalled",
                                        "Runtime.exceptionThrown")]

    def evaluate(self, session: str, expression: str, await_promise: bool = False) -> Any:
        r = self.call("Runtime.evaluate", session, expression=expression, returnByValue=True,
                      awaitPromise=await_promise)
        if r.get("exceptionDetails"):
            raise RuntimeError(f"page exception: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self, session: str, clip: Optional[Dict[str, float]] = None,
                   full_page: bool = False) -> bytes:
        params: Dict[str, Any] = {"format": "png"}
        if clip is not None:
            params["clip"] = {**clip, "scale": 1}
            params["captureBeyondViewport"] = True
        elif full_page:
            params["captureBeyondViewport"] = True
        return base64.b64decode(self.call("Page.captureScreenshot", session, **params)["data"])

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            if self.proc.stderr:
                self.proc.stderr.close()
