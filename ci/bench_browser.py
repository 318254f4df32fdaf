#!/usr/bin/python3
"""browser create -> page ready: evident's display.browser vs a raw `chromium
--remote-debugging-port=0` start (Puppeteer/Playwright style), interleaved in one run.

Usage: PYTHONPATH=bindings/python:build/bindings/core \
         /usr/bin/python3 ci/bench_browser.py [--runs N] [--viewport 800x600] [--out FILE.json]

Both sides load the same page (a local file) at the same CSS viewport on an owned display of the
same engine, with the same Chromium flags, and stop the clock when the page's load event has
fired and the page reports the viewport:

* raw: spawn chromium (DISPLAY/XAUTHORITY of the display, a fresh --user-data-dir,
  --app=<page> --window-size=W,H), read "DevTools listening on ws://..." from its stderr (what
  Puppeteer does), open the browser WebSocket, attach to the page target, Page.enable, and check
  that the page (not the tab's initial about:blank) reports its URL, readyState "complete" and the
  viewport, waiting for Page.loadEventFired between checks;
* evident: Display.browser(page, viewport=(W, H)) (in-process engine), which returns after the
  load event and the exact-viewport check; nothing else is timed.

Chromium is stopped and its profile removed after each sample, outside the timed span.
Medians (microseconds, integers) and the ratio (permille) are printed and written to --out.
"""
import argparse
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import websocket  # Debian: python3-websocket

import evident

FLAGS = ["--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-default-browser-check", "--password-store=basic", "--test-type",
         "--disable-gpu", "--disable-dev-shm-usage", "--disable-features=Translate",
         "--force-device-scale-factor=1", "--remote-debugging-port=0", "--window-position=0,0"]


def raw_start(display, auth, page_url, w, h, tmp):
    profile = tempfile.mkdtemp(prefix="raw-profile-", dir=tmp)
    argv = ["chromium"] + (["--no-sandbox"] if os.geteuid() == 0 else []) + FLAGS + [
        f"--user-data-dir={profile}", f"--window-size={w},{h}", f"--app={page_url}"]
    env = dict(os.environ, DISPLAY=display.name, XAUTHORITY=auth)
    t0 = time.monotonic_ns()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        ws_url, buf, deadline = None, b"", time.monotonic() + 30
        while ws_url is None:
            if time.monotonic() > deadline:
                raise RuntimeError("no DevTools line from chromium")
            r, _, _ = select.select([p.stderr], [], [], 1.0)
            if r:
                chunk = os.read(p.stderr.fileno(), 65536)
                if not chunk:
                    raise RuntimeError("chromium exited")
                buf += chunk
                for line in buf.split(b"\n"):
                    if line.startswith(b"DevTools listening on "):
                        ws_url = line.split(b" ", 3)[3].decode().strip()
        ws = websocket.create_connection(ws_url, suppress_origin=True, timeout=30)
        n = [0]
        loads = [0]  # Page.loadEventFired events seen so far

        def recv():
            m = json.loads(ws.recv())
            if m.get("method") == "Page.loadEventFired":
                loads[0] += 1
            return m

        def call(method, session=None, **params):
            n[0] += 1
            msg = {"id": n[0], "method": method, "params": params}
            if session:
                msg["sessionId"] = session
            ws.send(json.dumps(msg))
            while True:
                m = recv()
                if m.get("id") == n[0]:
                    return m.get("result", {})

        target = next(t for t in call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        sid = call("Target.attachToTarget", targetId=target["targetId"], flatten=True)["sessionId"]
        call("Page.enable", sid)
        # Until the page (not the tab's initial about:blank) reports itself loaded: check, and
        # otherwise wait for the next load event and check again.
        expr = "location.href + ' ' + innerWidth + 'x' + innerHeight + ' ' + document.readyState"
        want = f"{page_url} {w}x{h} complete"
        while True:
            seen = loads[0]
            got = call("Runtime.evaluate", sid, expression=expr,
                       returnByValue=True).get("result", {}).get("value")
            if got == want or time.monotonic() > deadline:
                break
            while loads[0] == seen and time.monotonic() < deadline:
                recv()
        us = (time.monotonic_ns() - t0) // 1000
        ws.close()
        return us, got == want, got
    finally:
        os.killpg(p.pid, 9)
        p.wait()
        shutil.rmtree(profile, ignore_errors=True)


def evident_start(display, page_url, w, h):
    t0 = time.monotonic_ns()
    b = display.browser(page_url, viewport=(w, h))
    us = (time.monotonic_ns() - t0) // 1000
    try:
        got = b.evaluate("location.href + ' ' + innerWidth + 'x' + innerHeight + ' ' + "
                         "document.readyState")
        return us, got == f"{page_url} {w}x{h} complete", got
    finally:
        b.close()


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--viewport", default="800x600")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    w, h = (int(x) for x in args.viewport.split("x"))
    tmp = tempfile.mkdtemp(prefix="evident-bench-browser-")
    page = os.path.join(tmp, "page.html")
    with open(page, "w") as f:
        f.write("<!doctype html><title>bench</title><h1>bench</h1>" +
                "".join(f"<p id=p{i}>paragraph {i}</p>" for i in range(50)))
    page_url = "file://" + page
    raw, ev, checks = [], [], []
    try:
        runtime = os.path.join(tmp, "rt")
        with evident.Engine(state_dir=os.path.join(tmp, "state"), runtime_dir=runtime) as engine, \
                engine.create_display(width=w, height=h + 40) as display:
            auth = next(os.path.join(root, "auth") for root, _, files in
                        os.walk(os.path.join(runtime, "displays")) if "auth" in files)
            for i in range(args.runs):  # interleaved; the order alternates per round
                for side in (("raw", "evident") if i % 2 == 0 else ("evident", "raw")):
                    if side == "raw":
                        us, ok, got = raw_start(display, auth, page_url, w, h, tmp)
                        raw.append(us)
                    else:
                        us, ok, got = evident_start(display, page_url, w, h)
                        ev.append(us)
                    checks.append((side, ok, got))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    raw_med, ev_med = int(statistics.median(raw)), int(statistics.median(ev))
    doc = {"row": "browser_create", "viewport": {"width": w, "height": h}, "runs": args.runs,
           "raw_median_us": raw_med, "evident_median_us": ev_med,
           "ratio_permille": round(1000 * ev_med / raw_med), "raw_samples_us": raw,
           "evident_samples_us": ev, "checks_ok": all(ok for _, ok, _ in checks),
           "load_average": list(os.getloadavg())}
    bad = [c for c in checks if not c[1]]
    if bad:
        doc["failed_checks"] = [f"{s}: {g}" for s, _, g in bad]
    print(f"raw chromium --remote-debugging-port start -> page ready: {raw_med / 1000:.1f} ms")
    print(f"evident display.browser -> page ready:                  {ev_med / 1000:.1f} ms")
    print(f"ratio {ev_med / raw_med:.3f}x (target <= 1.2x); checks {'ok' if doc['checks_ok'] else 'FAILED'}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
    return 0 if doc["checks_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
