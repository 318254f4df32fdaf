#!/usr/bin/python3
"""Regenerates the worked example of docs/sessions.md (§6) from a real run.

    engine/session/tools/worked_example.py [--build build] [--write]     (/usr/bin/python3)

Starts a daemon on a private socket with a fresh state dir, creates a 640x480 display, launches
the fixture app, and drives one session through the CLI (`evident --json session --request`):
begin, a click and the trigger phrase, a replayed batch (refused), freeze, observe, finish with
a claim checked against the observed PNG, close, status; then `evident verify`. Prints the
Markdown of the section, or with --write replaces the text between the markers
"<!-- BEGIN WORKED EXAMPLE -->" / "<!-- END WORKED EXAMPLE -->" in docs/sessions.md. Everything
it started is stopped, and its temporary directory removed, before it exits. Python 3 and Pillow.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DOC = os.path.join(ROOT, "docs", "sessions.md")
BEGIN = "<!-- BEGIN WORKED EXAMPLE (engine/session/tools/worked_example.py --write) -->"
END = "<!-- END WORKED EXAMPLE -->"


def wait_for(pred, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise SystemExit(f"worked_example: {what} did not happen within {timeout:.0f} s")
        threading.Event().wait(0.02)


def pixel(png_path: str, x: int, y: int) -> str:
    """The RGB of (x, y) in a PNG, as #RRGGBB, decoded by Pillow (not by evident)."""
    from PIL import Image
    with Image.open(png_path) as im:
        r, g, b = im.convert("RGB").getpixel((x, y))
    return f"#{r:02X}{g:02X}{b:02X}"


class Run:
    def __init__(self, build: str) -> None:
        self.evident = os.path.join(build, "engine", "cli", "evident")
        self.app = os.path.join(build, "fixtures", "app", "evident-fixture-app")
        for f in (self.evident, self.app):
            if not os.access(f, os.X_OK):
                raise SystemExit(f"worked_example: {f} is missing; build first")
        self.work = tempfile.mkdtemp(prefix="evident-example.")
        os.chmod(self.work, 0o700)
        self.sock = os.path.join(self.work, "run", "evident.sock")
        os.makedirs(os.path.dirname(self.sock), mode=0o700)
        self.state = os.path.join(self.work, "state")
        self.events = os.path.join(self.work, "app-events.jsonl")
        self.daemon: Optional[subprocess.Popen] = None
        self.steps: List[Dict[str, Any]] = []

    def start(self) -> None:
        log = open(os.path.join(self.work, "daemon.log"), "w")
        self.daemon = subprocess.Popen([self.evident, "daemon", "--socket", self.sock, "--state-dir", self.state],
                                       stdout=log, stderr=subprocess.STDOUT)
        wait_for(lambda: "listening on" in open(os.path.join(self.work, "daemon.log")).read(), "the daemon start")

    def stop(self) -> None:
        if self.daemon and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            self.daemon.wait(timeout=60)
        shutil.rmtree(self.work, ignore_errors=True)

    def cli(self, *args: str, ok: bool = True) -> str:
        p = subprocess.run([self.evident, "--json", "--socket", self.sock, *args], capture_output=True,
                           text=True, timeout=60)
        if ok and p.returncode != 0:
            raise SystemExit(f"worked_example: {args[0]} failed: {p.stdout}{p.stderr}")
        return p.stdout

    def session(self, title: str, text: str, request: Dict[str, Any], ok: bool = True) -> Dict[str, Any]:
        raw = json.dumps(request, separators=(",", ":"))
        out = self.cli("session", "--request", raw, ok=ok)
        # The CLI prints one line; the page shows it indented (the same JSON, keys in its order).
        pretty = json.dumps(json.loads(out), indent=2, ensure_ascii=False)
        self.steps.append({"title": title, "text": text, "request": raw, "reply": pretty})
        return json.loads(out)

    def app_logged(self, kind: str) -> bool:
        try:
            with open(self.events, encoding="utf-8") as f:
                return any(json.loads(line).get("type") == kind for line in f if line.endswith("\n"))
        except FileNotFoundError:
            return False


def run_example(build: str) -> str:
    r = Run(build)
    try:
        r.start()
        d = json.loads(r.cli("display", "create", "--width", "640", "--height", "480"))["display"]
        a = json.loads(r.cli("app", "launch", str(d["id"]), d["generation"], "--wait-window-ms", "10000", "--",
                             r.app, "--events", r.events))["app"]
        wait_for(lambda: r.app_logged("ready"), "the app's ready event")
        job = hashlib.sha256(b"evident worked example: type the trigger phrase, expect green").hexdigest()
        s = r.session("begin", "`begin` takes the display's lock, captures the initial frame and starts the "
                      "180 s stage deadline (`expires_in_ms`).",
                      {"op": "begin", "display_id": d["id"], "generation": d["generation"], "app_id": a["app_id"],
                       "attempt_id": "example-1", "job_sha256": job})
        sid = s["session_id"]
        r.session("actions", "Each action is followed by a full-display frame (`frame_sha256`; the snapshot's "
                  "`frame` is the last one). The click gives the text field focus; typing the trigger phrase "
                  "turns the window green.",
                  {"op": "actions", "session_id": sid, "sequence": 0,
                   "actions": [{"type": "click", "x": 100, "y": 40}, {"type": "type", "text": "evident"}]})
        wait_for(lambda: r.app_logged("trigger"), "the app's trigger event")
        r.session("actions (replayed sequence: refused)", "A replay of the first batch (sequence 0 again) executes "
                  "nothing; the session stays at sequence 1.",
                  {"op": "actions", "session_id": sid, "sequence": 0,
                   "actions": [{"type": "click", "x": 100, "y": 40}]}, ok=False)
        s = r.session("freeze", "Input is over: held keys/buttons were released and checked; the deadline is now "
                      "45 s.", {"op": "freeze", "session_id": sid, "sequence": 1})
        s = r.session("observe", "A fresh frame captured after the call arrived; the caller sent the freeze frame's "
                      "digest as `pre_observation_sha256`.",
                      {"op": "observe", "session_id": sid, "sequence": 2,
                       "pre_observation_sha256": s["frame"]["sha256"]})
        bg = pixel(s["frame"]["path"], 5, 5)
        if bg != "#20A040":
            raise SystemExit(f"worked_example: the observed background is {bg}, not green")
        r.session("finish", f"The caller checked the observed PNG (pixel (5,5) is `{bg}`) and claims the background "
                  "is green; the receipt is returned (it becomes `receipt.json` at close). Receipt v3: "
                  "`engine.host_id`, each action event's `input_events`, and for `type` a salted `commitment` "
                  "to the text instead of the text (docs/receipts.md §11).",
                  {"op": "finish", "session_id": sid, "sequence": 3, "observation_sha256": s["frame"]["sha256"],
                   "claims": {"background": "green"}})
        s = r.session("close", "Answered only after cleanup: input released, display lock released, scratch "
                      "removed. Then `receipt.json` is written and signed: `envelope_path` is its DSSE envelope, "
                      "`log` its run-log entry and the signed tree head (docs/receipts.md §8–§9). The evidence "
                      "directory stays.", {"op": "close", "session_id": sid, "sequence": 4})
        r.session("status", "After close, `status` still answers for 10 minutes.",
                  {"op": "status", "session_id": sid})
        evidence = s["evidence_dir"]
        key = os.path.join(r.state, "keys", "signing.pub")
        verify = subprocess.run([r.evident, "verify", s["receipt_path"], "--frames", evidence, "--key", key],
                                capture_output=True, text=True, timeout=60)
        if verify.returncode != 0:
            raise SystemExit(f"worked_example: verify failed: {verify.stdout}{verify.stderr}")
        print(verify.stdout, file=sys.stderr)
        summary = [ln for ln in verify.stdout.splitlines() if ln.startswith("verified")]
        if not summary:
            raise SystemExit(f"worked_example: no summary line in: {verify.stdout}")
        return render(r, summary[0])
    finally:
        r.stop()


def render(r: Run, verify_summary: str) -> str:
    o = ["The requests and responses below were captured from a real run by "
         "`engine/session/tools/worked_example.py` (daemon, `evident --json session --request …`, the fixture "
         "app on a 640x480 display; the uid is that of the user who ran it). Nothing is edited but the "
         "line breaks and indentation (the CLI prints one line) and `--socket`, which the commands below "
         "leave out.", ""]
    for st in r.steps:
        o += [f"### {st['title']}", "", st["text"], "", "```sh",
              f"evident --json session --request '{st['request']}'", "```", "", "```json", st["reply"], "```", ""]
    o += [f"Then, offline: `evident verify <evidence_dir>/receipt.json --frames <evidence_dir> --key "
          f"<state_dir>/keys/signing.pub` → `{verify_summary}`.", ""]
    return "\n".join(o)


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--write", action="store_true", help="replace the example in docs/sessions.md")
    args = ap.parse_args(argv)
    text = run_example(os.path.abspath(args.build))
    if not args.write:
        sys.stdout.write(text)
        return 0
    with open(DOC, encoding="utf-8") as f:
        doc = f.read()
    i, j = doc.find(BEGIN), doc.find(END)
    if i < 0 or j < i:
        raise SystemExit(f"worked_example: the markers are missing in {DOC}")
    doc = doc[: i + len(BEGIN)] + "\n" + text + doc[j:]
    with open(DOC + ".tmp", "w", encoding="utf-8") as f:
        f.write(doc)
    os.replace(DOC + ".tmp", DOC)
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
