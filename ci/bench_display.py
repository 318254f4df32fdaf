#!/usr/bin/python3
"""display create -> ready: evident vs raw `Xvfb -displayfd` vs pyvirtualdisplay, in one run.

Usage: /usr/bin/python3 ci/bench_display.py [--runs N] [--size 1920x1080] [--evident PATH]
                                            [--out FILE.json]

Each round measures the three peers back to back (interleaved, so machine noise hits all of
them alike) and prints medians and ratios; the same numbers go to --out as JSON (integers only:
microseconds). evident is timed as one `display.create` request on a running daemon's socket
(the CLI process start-up is not part of display start-up); raw Xvfb is timed from spawn until
it writes its display number to -displayfd; pyvirtualdisplay from Display().start() to its
return.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def request(sock_path, req):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    s.sendall(json.dumps(req).encode())
    s.shutdown(socket.SHUT_WR)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return json.loads(data)


def raw_xvfb(width, height, tmp):
    auth = os.path.join(tmp, "raw-auth")
    with open(auth, "wb") as f:  # one FamilyWild MIT-MAGIC-COOKIE-1 entry
        name = b"MIT-MAGIC-COOKIE-1"
        cookie = os.urandom(16)
        f.write(b"\xff\xff\x00\x00\x00\x00" + len(name).to_bytes(2, "big") + name +
                len(cookie).to_bytes(2, "big") + cookie)
    r, w = os.pipe()
    t0 = time.monotonic_ns()
    p = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", f"{width}x{height}x24",
                          "-nolisten", "tcp", "-noreset", "-auth", auth],
                         pass_fds=[w], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(r, 16)
        if not chunk:
            raise RuntimeError("Xvfb exited before it was ready")
        data += chunk
    us = (time.monotonic_ns() - t0) // 1000
    os.close(r)
    p.terminate()
    p.wait()
    return us


def pyvirtualdisplay_start(width, height):
    from pyvirtualdisplay import Display
    t0 = time.monotonic_ns()
    d = Display(visible=False, size=(width, height), color_depth=24)
    d.start()
    us = (time.monotonic_ns() - t0) // 1000
    d.stop()
    return us


def evident_create(sock_path, width, height):
    t0 = time.monotonic_ns()
    r = request(sock_path, {"op": "display.create", "args": {"width": width, "height": height}})
    us = (time.monotonic_ns() - t0) // 1000
    if not r.get("ok"):
        raise RuntimeError(f"display.create failed: {r}")
    d = r["display"]
    request(sock_path, {"op": "display.destroy",
                        "args": {"display_id": d["id"], "generation": d["generation"]}})
    return us


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--evident", default=os.environ.get(
        "EVIDENT_BIN", os.path.join(here, "..", "build", "engine", "cli", "evident")))
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    width, height = (int(v) for v in args.size.split("x"))

    tmp = tempfile.mkdtemp(prefix="evident-bench-display-")
    os.chmod(tmp, 0o700)
    sock_path = os.path.join(tmp, "run", "d.sock")
    log = open(os.path.join(tmp, "daemon.log"), "wb")
    daemon = subprocess.Popen([args.evident, "daemon", "--socket", sock_path, "--state-dir",
                               os.path.join(tmp, "state")], stderr=log)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                if request(sock_path, {"op": "ping", "args": {}}).get("ok"):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or daemon.poll() is not None:
                sys.exit("the evident daemon did not start; see " + log.name)
            time.sleep(0.02)  # start-up poll of the benchmark harness only

        samples = {"evident": [], "xvfb_displayfd": [], "pyvirtualdisplay": []}
        have_pvd = True
        try:
            import pyvirtualdisplay  # noqa: F401
        except ImportError:
            have_pvd = False
        # One warm-up round (page cache, xkbcomp's compiled keymap cache), not recorded.
        evident_create(sock_path, width, height)
        raw_xvfb(width, height, tmp)
        for _ in range(args.runs):
            samples["xvfb_displayfd"].append(raw_xvfb(width, height, tmp))
            samples["evident"].append(evident_create(sock_path, width, height))
            if have_pvd:
                samples["pyvirtualdisplay"].append(pyvirtualdisplay_start(width, height))
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)

    med = {k: int(statistics.median(v)) for k, v in samples.items() if v}
    result = {
        "what": "display create -> ready",
        "size": f"{width}x{height}",
        "runs": args.runs,
        "median_us": med,
        "samples_us": {k: v for k, v in samples.items() if v},
        # ratios as integer per-mille (no floats in evident's JSON)
        "ratio_permille_vs_xvfb": med["evident"] * 1000 // max(1, med["xvfb_displayfd"]),
        "target_permille_vs_xvfb": 1150,
    }
    if "pyvirtualdisplay" in med:
        result["ratio_permille_vs_pyvirtualdisplay"] = (
            med["evident"] * 1000 // max(1, med["pyvirtualdisplay"]))
    print(f"display create -> ready, {width}x{height}, {args.runs} runs (medians)")
    for k, v in med.items():
        print(f"  {k:18} {v / 1000:8.1f} ms")
    print(f"  evident / raw Xvfb -displayfd   = {result['ratio_permille_vs_xvfb'] / 1000:.2f}x"
          f"  (target <= 1.15x)")
    if "ratio_permille_vs_pyvirtualdisplay" in result:
        print(f"  evident / pyvirtualdisplay      = "
              f"{result['ratio_permille_vs_pyvirtualdisplay'] / 1000:.2f}x")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
