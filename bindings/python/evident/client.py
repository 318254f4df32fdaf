"""``evident.Client``: the same API as :class:`evident.Engine`, served by a running daemon
(``evident daemon``) instead of in-process.

Wire format (engine/daemon, docs/cli.md): one request per connection on the daemon's Unix
socket — write one JSON envelope ``{"op","args"}``, shut down the write side, read one JSON answer
to EOF. The daemon identifies the caller by SO_PEERCRED, so the actor in receipts is
``{"kind":"local_user","uid":N}``.

    with evident.Client() as engine:          # $EVIDENT_SOCKET or the per-user default
        display = engine.create_display(640, 480)
        ...

``Client.close()`` does not stop the daemon and does not destroy what it created (the daemon owns
it); use the displays' and apps' context managers for that.
"""
from __future__ import annotations

import os
import socket as _socket
from typing import Optional

from .engine import Engine
from .errors import EngineError

__all__ = ["Client", "default_socket_path"]

MAX_REPLY_BYTES = 64 * 1024 * 1024


def default_socket_path() -> str:
    """``$EVIDENT_SOCKET``, else ``$XDG_RUNTIME_DIR/evident/evident.sock`` (if writable), else
    ``/tmp/evident-<uid>/evident.sock`` — the daemon's own default."""
    env = os.environ.get("EVIDENT_SOCKET")
    if env:
        return env
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.access(xdg, os.W_OK):
        return os.path.join(xdg, "evident", "evident.sock")
    return f"/tmp/evident-{os.geteuid()}/evident.sock"


class _SocketBackend:
    def __init__(self, path: str, timeout: float) -> None:
        self.path = path
        self.timeout = timeout

    def call(self, text: str) -> str:
        s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            try:
                s.connect(self.path)
            except (FileNotFoundError, ConnectionRefusedError) as e:
                raise EngineError(
                    "daemon-unavailable",
                    f"no evident daemon listens on {self.path}; start one with "
                    f"`evident daemon --socket {self.path}` ({e.strerror})", True) from None
            s.sendall(text.encode("utf-8"))
            s.shutdown(_socket.SHUT_WR)
            chunks = []
            size = 0
            while True:
                try:
                    chunk = s.recv(65536)
                except _socket.timeout:
                    raise EngineError("daemon-timeout", "the daemon did not answer in time",
                                       True) from None
                if not chunk:
                    break
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    raise EngineError("daemon-protocol", "the daemon's answer is too large")
                chunks.append(chunk)
        finally:
            s.close()
        reply = b"".join(chunks).decode("utf-8").strip()
        if not reply:
            raise EngineError("daemon-protocol", "the daemon closed without answering")
        return reply

    def close(self) -> None:
        pass  # the daemon owns its resources


class Client(Engine):
    """An :class:`Engine`-compatible client of the daemon at ``socket`` (default:
    :func:`default_socket_path`). Errors: ``daemon-unavailable``, ``daemon-timeout``,
    ``daemon-protocol`` (EvidentError), plus everything the engine reports."""

    def __init__(self, socket: Optional[str] = None, *, timeout: float = 300.0) -> None:
        self.socket_path = socket or default_socket_path()
        super().__init__(backend=_SocketBackend(self.socket_path, timeout))

    def __repr__(self) -> str:
        return f"<evident.Client {self.socket_path}>"
