#!/usr/bin/python3
"""Instructions per in-process click, counted by callgrind (docs/performance.md, "Counted with
callgrind"). Wall clock on a shared 2-vCPU VM is noise; instruction counts are not.

    EVIDENT_BUILD=build /usr/bin/python3 bench/callgrind_click.py [--modes api,object,text]

(``EVIDENT_SOURCE=/other/checkout`` runs that checkout's Python package against its build.)

For each mode it runs this file under ``valgrind --tool=callgrind`` twice, with 50 and with 250
clicks on the fixture app's button of a 1920x1080 display, and prints (run of 250 - run of 50) /
200: start-up (engine, display, app) is the same in both runs and cancels out. Modes:

- ``api``: ``Display.actions([click], observe="none")``, the whole Python call;
- ``object``: ``_core.Engine.call_inline_object(envelope)`` (engine + binding, object path);
- ``text``: ``_core.Engine.call_inline(json text)`` plus json's encoding and decoding, the text
  path as ``evident.Engine`` took it before the object path.

Only the Python process is counted (Xvfb and the app are other processes). The clicks are not
checked here (bench/bench.py's click row checks delivery); every reply's ``ok`` is.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def loop(mode: str, n: int, build: str) -> None:
    source = os.environ.get("EVIDENT_SOURCE", ROOT)   # another checkout's package, to compare
    sys.path[:0] = [os.path.join(source, "bindings", "python"),
                    os.path.join(build, "bindings", "core")]
    import evident
    from evident.engine import _dumps, _loads_reply

    app_exe = os.path.join(build, "fixtures", "app", "evident-fixture-app")
    with tempfile.TemporaryDirectory(prefix="evident-cg-") as tmp, \
            evident.Engine(state_dir=os.path.join(tmp, "state")) as engine, \
            engine.create_display(1920, 1080) as d:
        d.launch([app_exe, "--events", os.path.join(tmp, "ev.jsonl"), "--x", "100", "--y", "100"],
                 wait_window_ms=10000)
        click = {"type": "click", "x": 220, "y": 230}   # the button: window (100, 100) + (120, 130)
        env = {"op": "cu.actions", "args": {"display_id": d.id, "generation": d.generation,
                                            "request": {"actions": [click], "observe": "none"}}}
        core = engine._backend
        assert d.actions([click], observe="none").ok   # warm-up: first XTest use, keymap
        if mode == "api":
            for _ in range(n):
                d.actions([click], observe="none")
        elif mode == "object":
            for _ in range(n):
                core.call_inline_object(env)
        elif mode == "text":
            for _ in range(n):
                _loads_reply(core.call_inline(_dumps(env)))
        else:
            raise SystemExit("unknown mode " + mode)
        assert d.actions([click], observe="none").ok


def count(mode: str, n: int, build: str, out_dir: str) -> int:
    out = os.path.join(out_dir, "cg-%s-%d.out" % (mode, n))
    subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                    sys.executable, os.path.abspath(__file__), "--loop", mode, "--n", str(n)],
                   check=True, capture_output=True, env={**os.environ, "EVIDENT_BUILD": build})
    with open(out) as f:
        for line in f:
            m = re.match(r"(?:summary|totals): (\d+)", line)
            if m:
                return int(m.group(1))
    raise SystemExit("no totals in " + out)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--modes", default="api,object,text")
    p.add_argument("--loop")
    p.add_argument("--n", type=int, default=50)
    p.add_argument("--keep", help="directory for the callgrind files (default: a temporary one)")
    args = p.parse_args()
    build = os.path.abspath(os.environ.get("EVIDENT_BUILD", os.path.join(ROOT, "build")))
    if args.loop:
        loop(args.loop, args.n, build)
        return
    with tempfile.TemporaryDirectory(prefix="evident-cg-out-") as tmp:
        out_dir = args.keep or tmp
        for mode in args.modes.split(","):
            small, large = count(mode, 50, build, out_dir), count(mode, 250, build, out_dir)
            print("%-6s %8.1f k instructions per click (50: %d, 250: %d)" % (
                mode, (large - small) / 200 / 1000, small, large), flush=True)


if __name__ == "__main__":
    main()
