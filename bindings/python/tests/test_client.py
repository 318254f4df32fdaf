"""evident.Client speaks the daemon's wire format with the same API as the in-process Engine: a
real `evident daemon` on a private socket serves a display, an app and a session to a verified
receipt whose actor is the socket's local user; a missing daemon is a clear error."""
import os
import signal
import subprocess
from pathlib import Path

import pytest

import evident
from evident import actions as a

from evident import wait_for

REPO = Path(__file__).resolve().parents[3]


def evident_bin():
    path = os.environ.get("EVIDENT_BIN") or str(REPO / "build" / "engine" / "cli" / "evident")
    assert os.access(path, os.X_OK), f"the evident CLI is not built at {path} (set EVIDENT_BIN)"
    return path


@pytest.fixture
def daemon(tmp_path):
    sock_dir = tmp_path / "run"
    sock_dir.mkdir(mode=0o700)
    sock = str(sock_dir / "evident.sock")
    log = tmp_path / "daemon.log"
    with open(log, "wb") as log_file:
        proc = subprocess.Popen([evident_bin(), "daemon", "--socket", sock,
                                 "--state-dir", str(tmp_path / "state")],
                                stdout=log_file, stderr=subprocess.STDOUT)
    client = evident.Client(socket=sock, timeout=60)

    def ready():
        if proc.poll() is not None:
            raise AssertionError(f"daemon exited: {log.read_text()[-2000:]}")
        try:
            return client.ping()
        except evident.EvidentError as e:
            if e.code != "daemon-unavailable":
                raise
            return None

    wait_for(ready, 20, "the daemon's socket")
    try:
        yield client
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


def test_client_session_through_the_daemon(daemon):
    with daemon.create_display(width=320, height=200) as display:
        assert display.id in [d.id for d in daemon.displays()]
        app = display.launch(["xmessage", "-geometry", "200x80+0+0", "evident"],
                             wait_window_ms=10000)
        assert app.alive
        with display.session(app) as s:
            s.actions([a.move_mouse(3, 3)])
            s.freeze()
            s.observe()
            receipt = s.finish({"via": "daemon"})
        assert receipt["actor"] == {"kind": "local_user", "uid": os.getuid()}
        assert s.verify().ok
    assert display.id not in [d.id for d in daemon.displays()]


def test_missing_daemon_is_a_clear_error(tmp_path):
    with pytest.raises(evident.EngineError) as info:
        evident.Client(socket=str(tmp_path / "nobody.sock")).ping()
    assert info.value.code == "daemon-unavailable" and info.value.retryable
    assert "evident daemon --socket" in info.value.message
