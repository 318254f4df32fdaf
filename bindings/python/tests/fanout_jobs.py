"""Job functions for the fan-out tests (importable by Dask workers: this directory is on their
PYTHONPATH). Each runs one real session against the fixture app and claims what the app's own
event log says it received."""
from __future__ import annotations

import json
import os
from pathlib import Path

from evident import actions as a
from evident import wait_for

BUTTON = (120, 130)   # the fixture app's button (x 20..219, y 100..159) with the window at 0,0


def _events(path: Path):
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except FileNotFoundError:
        return []


def click_fixture(ctx):
    """args: app (the fixture app's path), clicks (1..8), hold_dir (optional: announce the start
    in hold_dir/<attempt_id>.started and wait for hold_dir/release before acting)."""
    log = ctx.scratch / "events.jsonl"
    app = ctx.launch([ctx.args["app"], "--events", str(log), "--x", "0", "--y", "0",
                      "--width", "640", "--height", "480"], wait_window_ms=10000)
    wait_for(lambda: any(e["type"] == "ready" for e in _events(log)), 10, "the fixture app")
    hold = ctx.args.get("hold_dir")
    if hold:
        # Written under another name and renamed: the test globs *.started and must never read
        # a file that exists but is still empty (write_text creates, then writes).
        tmp = Path(hold, f"{ctx.attempt_id}.tmp")
        tmp.write_text(json.dumps({"pid": os.getpid()}))
        os.replace(tmp, Path(hold, f"{ctx.attempt_id}.started"))
        wait_for(lambda: os.path.exists(os.path.join(hold, "release")), 120, "the release file")
    clicks = int(ctx.args.get("clicks", 1))
    with ctx.session(app) as s:
        s.actions([a.click(*BUTTON) for _ in range(clicks)])
        got = wait_for(lambda: [e for e in _events(log) if e["type"] == "button_clicked"]
                       if len([e for e in _events(log) if e["type"] == "button_clicked"])
                       >= clicks else None, 10, "the app's clicks")
        s.freeze()
        s.observe()
        s.finish({"job": ctx.job_id, "clicks_sent": clicks, "clicks_received": len(got),
                  "colour": got[-1]["color"]})


def fail_always(ctx):
    raise RuntimeError("this job always fails")
