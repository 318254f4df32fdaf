"""A real `evident daemon` for a test (one place for how tests start and stop one).

``running_daemon(tmp_dir)`` starts the built CLI's daemon on a private socket (a 0700 dir) with
its own state dir under ``tmp_dir``, waits for it to answer ping through evident.Client, yields
``(socket_path, client)``, and ends it with SIGTERM, asserting a clean exit (status 0).
"""
import contextlib
import signal
import subprocess
from pathlib import Path
from typing import Iterator, Tuple

import evident
from evident_bin import find_evident_bin


@contextlib.contextmanager
def running_daemon(tmp_dir: Path, *, timeout: float = 60) -> Iterator[Tuple[str, evident.Client]]:
    binary = find_evident_bin()
    assert binary, "the evident CLI is not built (set EVIDENT_BIN)"
    sock_dir = tmp_dir / "run"
    sock_dir.mkdir(mode=0o700)
    sock = str(sock_dir / "evident.sock")
    log = tmp_dir / "daemon.log"
    with open(log, "wb") as log_file:
        proc = subprocess.Popen([binary, "daemon", "--socket", sock, "--state-dir", str(tmp_dir / "state")],
                                stdout=log_file, stderr=subprocess.STDOUT)
    client = evident.Client(socket=sock, timeout=timeout)

    def ready():
        if proc.poll() is not None:
            raise AssertionError(f"daemon exited: {log.read_text()[-2000:]}")
        try:
            return client.ping()
        except evident.EvidentError as e:
            if e.code != "daemon-unavailable":
                raise
            return None

    try:
        evident.wait_for(ready, 20, "the daemon's socket")
        yield sock, client
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
