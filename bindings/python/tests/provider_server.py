"""A loopback HTTP server that stands in for a provider's API in the agent tests: it replies with
queued (status, body) pairs, or, once the queue is empty, with what ``respond(request_body)``
returns (a model played by a policy), and records every request it receives (path, headers, JSON
body), so a test asserts exactly what a transport sent. Used by test_agent_transports.py and
test_agent_task_lane.py."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple


class ProviderServer:
    """A loopback HTTP server replying with queued (status, body) pairs and recording requests."""

    def __init__(self, respond: Optional[Callable[[Dict[str, Any]], Any]] = None) -> None:
        self.respond = respond
        self.replies: List[Tuple[int, bytes]] = []
        self.requests: List[Dict[str, Any]] = []
        self.errors: List[BaseException] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                request = json.loads(raw)
                outer.requests.append({"path": self.path,
                                       "headers": {k.lower(): v for k, v in self.headers.items()},
                                       "body": request})
                if outer.replies:
                    status, body = outer.replies.pop(0)
                elif outer.respond is not None:
                    try:
                        status, body = 200, json.dumps(outer.respond(request)).encode()
                    except Exception as e:  # the test sees it in .errors; the transport sees a 500
                        outer.errors.append(e)
                        status, body = 500, b"{}"
                else:
                    status, body = 500, b"{}"
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
