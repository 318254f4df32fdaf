"""A loopback HTTP server that stands in for a provider's API in the agent tests: it replies with
queued (status, body) pairs and records every request it receives (path, headers, JSON body), so
a test asserts exactly what a transport sent. Used by test_agent_transports.py and
test_agent_task_lane.py."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Tuple


class ProviderServer:
    """A loopback HTTP server replying with queued (status, body) pairs and recording requests."""

    def __init__(self) -> None:
        self.replies: List[Tuple[int, bytes]] = []
        self.requests: List[Dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                outer.requests.append({"path": self.path,
                                       "headers": {k.lower(): v for k, v in self.headers.items()},
                                       "body": json.loads(raw)})
                status, body = outer.replies.pop(0) if outer.replies else (500, b"{}")
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def reply(self, body: Any, status: int = 200) -> None:
        self.replies.append((status, body if isinstance(body, bytes) else json.dumps(body).encode()))

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)
