"""Scenario: type a shell command into a real terminal and check what it did on disk.

What it shows:
  * ``xterm -u8`` on an owned display (fixed geometry and font, so the window is predictable),
  * native typing of a command line with non-ASCII text, then the Return key,
  * verifying the effect outside the screen: the file the shell wrote,
  * a session that ends in a verified receipt.
"""
import hashlib

import pytest

from evident import actions as a

from scenario_support import wait_for

WIDTH, HEIGHT = 640, 400
GREETING = "Grüße from Evident — 東京"


@pytest.mark.evident_display(width=WIDTH, height=HEIGHT)
def test_shell_command_creates_file(evident_app, evident_evidence, tmp_path):
    xterm = evident_app([
        "xterm", "-u8", "-geometry", "80x24+0+0", "-fa", "DejaVu Sans Mono", "-fs", "11",
        "-bg", "black", "-fg", "white", "-e", "/bin/sh",
    ], wait_window_ms=10000)
    target = tmp_path / "greeting.txt"
    command = f"cd '{tmp_path}' && printf '%s\\n' '{GREETING}' > greeting.tmp && " \
              f"mv greeting.tmp greeting.txt"

    job = hashlib.sha256(b"terminal: write greeting.txt").hexdigest()
    with evident_evidence.session(xterm, job_sha256=job) as session:
        results = session.actions([
            a.move_mouse(WIDTH // 2, HEIGHT // 2),   # no window manager: keys go under the pointer
            a.type(command),
            a.key("Return"),
        ])
        assert all(r.ok for r in results), results

        # The shell renames the file into place only when the whole line has been written.
        content = wait_for(lambda: target.exists() and target.read_text(encoding="utf-8"),
                           timeout=10, what="greeting.txt")
        assert content == GREETING + "\n"

        session.freeze()
        session.observe()
        receipt = session.finish({
            "scenario": "terminal",
            "file": target.name,
            "file_sha256": hashlib.sha256(target.read_bytes()).hexdigest(),
        })
    assert receipt["action_count"] == 3
    verification = evident_evidence.verify(session, expect_job_sha256=job)
    assert verification.ok, verification.failed
