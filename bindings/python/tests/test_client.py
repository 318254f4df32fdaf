"""evident.Client speaks the daemon's wire format with the same API as the in-process Engine: a
real `evident daemon` on a private socket serves a display, an app and a session to a verified
receipt whose actor is the socket's local user; a missing daemon is a clear error."""
import os

import pytest

import evident
from evident import actions as a

from daemon_proc import running_daemon


@pytest.fixture
def daemon(tmp_path):
    with running_daemon(tmp_path) as (_, client):
        yield client


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
