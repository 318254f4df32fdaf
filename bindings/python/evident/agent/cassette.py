"""Cassettes: record a provider exchange once, replay it offline (docs/agents.md, "Record and
replay"). A cassette sits where the HTTP client does: in ``record`` mode it forwards each POST to
the real client and appends the exchange; in ``replay`` mode it answers from the file and checks
that each request is the one recorded (same path, same JSON body), so a replayed run proves the
policy sent exactly the same requests. Credential headers are never written."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Optional
from urllib.parse import urlsplit

from .transport import SECRET_HEADERS, AgentError, Http, HttpResponse

SCHEMA = "evident.agent-cassette/v1"


def _path(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (("?" + parts.query) if parts.query else "")


def _json_or_text(body: bytes) -> Any:
    try:
        return {"json": json.loads(body.decode("utf-8"))}
    except (UnicodeDecodeError, ValueError):
        return {"text": body.decode("utf-8", "replace")}


class CassetteHttp:
    """``CassetteHttp(path, "record", inner=UrllibHttp())`` or ``CassetteHttp(path, "replay")``."""

    def __init__(self, path: str, mode: str, inner: Optional[Http] = None) -> None:
        if mode not in ("record", "replay"):
            raise AgentError("agent-cassette", "mode must be record or replay")
        if mode == "record" and inner is None:
            raise AgentError("agent-cassette", "record mode needs the real HTTP client as inner")
        self.path = path
        self.mode = mode
        self.inner = inner
        self.position = 0
        self.exchanges: List[Dict[str, Any]] = []
        if mode == "replay":
            try:
                with open(path, "r", encoding="utf-8") as f:
                    doc = json.load(f)
            except (OSError, ValueError):
                raise AgentError("agent-cassette", "the cassette file cannot be read as JSON") from None
            if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("exchanges"), list):
                raise AgentError("agent-cassette", f"the file is not an {SCHEMA} cassette")
            self.exchanges = doc["exchanges"]

    def post(self, url: str, headers: Mapping[str, str], body: bytes) -> HttpResponse:
        request = {"method": "POST", "path": _path(url),
                   "headers": {k.lower(): v for k, v in headers.items() if k.lower() not in SECRET_HEADERS},
                   "body": _json_or_text(body)}
        if self.mode == "record":
            assert self.inner is not None  # record mode needs it (checked in __init__)
            resp = self.inner.post(url, headers, body)
            self.exchanges.append({"request": request,
                                   "response": {"status": resp.status, "body": _json_or_text(resp.body)}})
            self._write()
            return resp
        if self.position >= len(self.exchanges):
            raise AgentError("agent-cassette-exhausted",
                             f"the cassette holds {len(self.exchanges)} exchanges and all were replayed")
        recorded = self.exchanges[self.position]
        want = recorded.get("request", {})
        if want.get("path") != request["path"] or want.get("body") != request["body"]:
            raise AgentError("agent-cassette-mismatch",
                             f"request {self.position} differs from the recorded one "
                             f"({'path' if want.get('path') != request['path'] else 'body'})")
        self.position += 1
        answer = recorded.get("response", {})
        rb = answer.get("body", {})
        data = json.dumps(rb["json"]).encode("utf-8") if "json" in rb else str(rb.get("text", "")).encode("utf-8")
        return HttpResponse(int(answer.get("status", 0)), data)

    def _write(self) -> None:
        tmp = self.path + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"schema": SCHEMA, "exchanges": self.exchanges}, f, ensure_ascii=False, indent=1)
        os.replace(tmp, self.path)

    @property
    def finished(self) -> bool:
        """Replay: every recorded exchange was used."""
        return self.position == len(self.exchanges)


__all__ = ["CassetteHttp", "SCHEMA"]
