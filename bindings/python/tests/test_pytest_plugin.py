"""The pytest plugin's own behaviour, proven by running real inner pytest sessions (pytester, in
subprocesses so every run has its own engine like a user's run): passing and failing tests, the
failure report's frame and receipt paths, --evident-keep=on-failure, display sizing by marker and
option, and isolation under pytest-xdist (-n 2) with no Xvfb outliving the run."""
import json
import os
import re
from pathlib import Path

pytest_plugins = ["pytester"]

# Loads the plugin whether evident is installed (entry point "evident", blocked here so it is not
# registered twice) or only on PYTHONPATH.
PLUGIN_ARGS = ("-p", "no:evident", "-p", "evident.pytest_plugin", "-p", "no:cacheprovider")

APP = "['xmessage', '-geometry', '200x80+0+0', 'evident']"

HELPERS = r'''
import json, os

def _stat(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[1]), fields[19]          # ppid, start time (clock ticks since boot)

def my_xvfbs():
    """[pid, starttime] of every Xvfb that descends from this (worker) process."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv0 = open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")[0]
            ppid, start = _stat(entry)
        except OSError:
            continue
        if not argv0.endswith(b"Xvfb"):
            continue
        while ppid > 1 and ppid != me:
            try:
                ppid = _stat(ppid)[0]
            except OSError:
                break
        if ppid == me:
            found.append([int(entry), start])
    return found

def record(path, **fields):
    with open(path, "a") as f:
        f.write(json.dumps(fields) + "\n")
'''


def run(pytester, *args):
    return pytester.runpytest_subprocess(*PLUGIN_ARGS, *args, timeout=240)


def section(result, name="evident"):
    text = result.stdout.str()
    m = re.search(r"-+ " + name + r" -+\n(.*?)(?:\n[-=_]{5,}|\Z)", text, re.S)
    assert m, text
    return m.group(1)


def test_passing_test_keeps_recorded_frames(pytester):
    pytester.makepyfile(test_ok=f'''
        from evident import actions as a

        def test_ok(evident_display, evident_app, evident_actions, evident_evidence):
            app = evident_app({APP})
            assert app.alive
            assert evident_actions.move_mouse(10, 10).status in ("ok", "injected")
            path = evident_evidence.frame(evident_display, "after-move")
            assert path.exists() and path.read_bytes()[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    ''')
    result = run(pytester)
    result.assert_outcomes(passed=1)
    frames = list((pytester.path / "evidence").glob("*/*after-move.png"))
    assert len(frames) == 1


def test_evident_app_passes_env_and_cwd_to_the_app(pytester):
    # The app itself records what it got: a shell writes its working directory and the variable
    # into a file, then execs the window (the window wait covers the shell's process).
    workdir = pytester.path / "appdir"
    workdir.mkdir()
    pytester.makepyfile(test_env=f'''
        def test_env_cwd(evident_app):
            app = evident_app(["sh", "-c", 'printf "%s\\n%s\\n" "$(pwd -P)" "$PROBE" > seen.txt; '
                               'exec xmessage -geometry 200x80+0+0 evident'],
                              env={{"PROBE": "Zoë x=1"}}, cwd={str(workdir)!r})
            assert app.alive
    ''')
    result = run(pytester)
    result.assert_outcomes(passed=1)
    assert (workdir / "seen.txt").read_text(encoding="utf-8") == f"{workdir.resolve()}\nZoë x=1\n"


def test_failing_test_report_shows_last_frame_and_receipt(pytester):
    pytester.makepyfile(test_fail=f'''
        from evident import actions as a

        def test_finished_then_fails(evident_app, evident_evidence):
            app = evident_app({APP})
            with evident_evidence.session(app) as s:
                s.actions([a.move_mouse(5, 5)])
                s.freeze()
                s.observe()
                s.finish({{"claim": "the app is shown"}})
            assert False, "deliberate failure after a finished session"

        def test_fails_inside_session(evident_app, evident_evidence):
            app = evident_app({APP})
            with evident_evidence.session(app) as s:
                s.actions([a.move_mouse(6, 6)])
                assert False, "deliberate failure mid-session"
    ''')
    result = run(pytester, "-rA")
    result.assert_outcomes(failed=2)
    text = result.stdout.str()
    for name in ("test_finished_then_fails", "test_fails_inside_session"):
        block = text.split(f"_ {name} _", 1)[1]
        frame = re.search(r"last frame: (\S+\.png)", block).group(1)
        receipt = re.search(r"receipt: (\S+receipt\.json)", block).group(1)
        assert Path(frame).read_bytes()[:4] == b"\x89PNG"
        doc = json.loads(Path(receipt).read_text())
        assert doc["schema"] == "evident.session-receipt/v3"
        assert doc["receipt_id"].startswith("ecr-")
    # The mid-session failure still produced an honest receipt: the claims say it errored.
    receipts = sorted((pytester.path / "evidence").glob("*fails_inside*/session-0/receipt.json"))
    assert json.loads(receipts[0].read_text())["claims"]["outcome"] == "error"


def test_keep_on_failure_deletes_evidence_of_passing_tests(pytester):
    pytester.makepyfile(test_keep='''
        def test_pass(evident_display, evident_evidence):
            evident_evidence.frame(evident_display)

        def test_fail(evident_display, evident_evidence):
            evident_evidence.frame(evident_display)
            assert False
    ''')
    result = run(pytester, "--evident-keep=on-failure", "--evident-dir=ev")
    result.assert_outcomes(passed=1, failed=1)
    dirs = sorted(p.name for p in (pytester.path / "ev").iterdir())
    assert len(dirs) == 1 and "test_fail" in dirs[0]
    # The failing test also got a final frame captured at the moment it failed.
    assert any("final-call" in p.name for p in (pytester.path / "ev" / dirs[0]).iterdir())


def test_marker_and_option_size_the_display(pytester):
    pytester.makepyfile(test_size='''
        import pytest

        @pytest.mark.evident_display(width=320, height=200)
        def test_marker(evident_display):
            assert (evident_display.width, evident_display.height) == (320, 200)
            png = evident_display.screenshot()
            assert png.image().size == (320, 200)

        def test_option(evident_display):
            assert evident_display.screenshot().image().size == (400, 300)
    ''')
    result = run(pytester, "--evident-display-size=400x300", "--strict-markers")
    result.assert_outcomes(passed=2)


def test_marker_gives_the_display_an_accessibility_stack(pytester):
    pytester.makepyfile(test_ax='''
        import pytest

        @pytest.mark.evident_display(width=320, height=200, accessibility=True)
        def test_with_stack(evident_display):
            layer = evident_display.status().layer("accessibility")
            assert layer is not None and layer["state"] == "ready", layer

        def test_without(evident_display):
            assert evident_display.status().layer("accessibility") is None
    ''')
    result = run(pytester, "--strict-markers")
    result.assert_outcomes(passed=2)


def test_xdist_workers_are_isolated_and_leave_no_xvfb(pytester):
    log = pytester.path / "displays.jsonl"
    pytester.makepyfile(helpers=HELPERS)
    pytester.makepyfile(test_par=f'''
        import os
        import pytest
        from helpers import my_xvfbs, record

        @pytest.mark.parametrize("i", range(6))
        def test_display(i, evident_display, evident_worker_display, evident_app,
                         evident_evidence):
            app = evident_app({APP})
            assert app.alive
            evident_evidence.frame(evident_display)
            assert evident_display.name != evident_worker_display.name
            record({str(log)!r}, worker=os.environ.get("PYTEST_XDIST_WORKER"), i=i,
                   name=evident_display.name, generation=evident_display.generation,
                   xvfbs=my_xvfbs())
    ''')
    result = run(pytester, "-n", "2")
    result.assert_outcomes(passed=6)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert {r["worker"] for r in rows} == {"gw0", "gw1"}
    assert len({r["generation"] for r in rows}) == 6
    # Each test's evidence went to its own directory.
    assert len(list((pytester.path / "evidence").glob("*/*.png"))) == 6
    # No Xvfb from the run outlives it (pid plus start time, so a reused pid is not a false hit).
    # While each test ran, its worker had (at least) its own display and the worker display.
    assert all(len(r["xvfbs"]) >= 2 for r in rows), rows
    servers = {tuple(x) for r in rows for x in r["xvfbs"]}
    assert len(servers) >= 8  # six per-test displays and one per worker
    for pid, start in servers:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        assert stat.rsplit(")", 1)[1].split()[19] != start, f"Xvfb {pid} outlived the run"
