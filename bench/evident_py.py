#!/usr/bin/python3
"""evident's side of the display/click/type/turn/browser/ax rows through the in-process engine (the
`evident` Python package over `evident._core`), run by bench.py as a child process with PYTHONPATH
set.

Each mode times only the engine call and checks delivery itself (fixture-app event log for
clicks, Tk/xterm read-back for typing), then prints one JSON object. The browser mode also runs
the row's peer (bench.raw_chromium_start), interleaved with evident's starts on the same display.
usage: evident_py.py --mode display|warm|click|type|turn|browser|ax --runs N --tmp DIR [--text T]
       [--receiver tk|xterm] [--widgets N]
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402  (helpers: EventLog, LineReader, wait_until, median_us)


def timed_creates(engine, args, what, before_each=None):
    """args.runs create_display calls, each timed alone; before_each() (outside the timed span)
    may return an error detail to stop early."""
    samples, ok, detail = [], True, f"{what} returned; status ready; 1920x1080"
    for _ in range(args.runs):
        if before_each is not None:
            problem = before_each()
            if problem:
                ok, detail = False, problem
                break
        t0 = time.perf_counter_ns()
        d = engine.create_display(width=bench.W, height=bench.H)
        samples.append(time.perf_counter_ns() - t0)
        st = d.status()
        if not st.ready or (d.width, d.height) != (bench.W, bench.H):
            ok, detail = False, f"{what}: display not ready or wrong size"
        d.destroy()
    return {"median_us": bench.median_us(samples) if samples else None, "runs": len(samples),
            "samples_us": [x // 1000 for x in samples], "check": {"ok": ok, "detail": detail}}


def mode_display(engine, args):
    return timed_creates(engine, args, "create")


def mode_warm(engine, args):
    """Warm-pool leases: the engine keeps one 1920x1080 display pre-started; each sample is one
    create_display call that leases it. Between leases the pool refills in the background; we wait
    for that (bounded), outside the timed span."""
    def refilled():
        return None if engine.wait_warm(30000) else "the warm pool did not refill within 30 s"
    result = timed_creates(engine, args, "lease", refilled)
    if result["check"]["ok"]:
        result["check"]["detail"] += "; pool refilled"
    return result


def fixture_exe(args):
    for b in args.build:
        p = os.path.join(b, "fixtures", "app", "evident-fixture-app")
        if os.path.isfile(p):
            return p
    p = os.path.join(args.tmp, "evident-fixture-app")
    if not os.path.isfile(p):
        subprocess.run(["g++", "-std=c++20", "-O1", "-o", p,
                        os.path.join(bench.ROOT, "fixtures", "app", "main.cpp"), "-lX11"],
                       check=True, capture_output=True, timeout=300)
    return p


def raw_click_lib(args):
    """The raw engine click as a ctypes module (engine/actions/tools/bench_click.cpp), or None."""
    for b in args.build:
        p = os.path.join(b, "engine", "actions", "libevident-bench-click.so")
        if os.path.isfile(p):
            lib = ctypes.CDLL(p)
            lib.evident_bench_click_open.restype = ctypes.c_void_p
            lib.evident_bench_click_open.argtypes = [ctypes.c_char_p]
            lib.evident_bench_click.restype = ctypes.c_longlong
            lib.evident_bench_click.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
            lib.evident_bench_click_close.restype = None
            lib.evident_bench_click_close.argtypes = [ctypes.c_void_p]
            return lib
    return None


def mode_click(engine, args):
    """The in-process cu.actions click, alternating click by click (the order swapping every
    pair) with the raw engine click it wraps (InputDevice::click through libevident-bench-click,
    on a connection of its own to the same display), so both are measured in one process on the
    same display, app and CPU placement. Without the module, the batch alone."""
    d = engine.create_display(width=bench.W, height=bench.H)
    raw_lib, raw = raw_click_lib(args), None
    try:
        log_path = os.path.join(args.tmp, "fixture-inproc.jsonl")
        app = d.launch([fixture_exe(args), "--events", log_path, "--x", "100", "--y", "100"],
                       wait_window_ms=10000)
        log = bench.EventLog(log_path)
        ready = bench.wait_until(lambda: next((e for e in log.poll() if e["type"] == "ready"),
                                              None), 15, "fixture ready")
        bx, by = ready["x"] + 120, ready["y"] + 130
        act = [{"type": "click", "x": bx, "y": by}]
        d.actions(act, observe="none")  # warm-up (first XTest use, keymap fetch)
        warm = 1
        if raw_lib is not None:
            os.environ.update(d.env())  # DISPLAY and XAUTHORITY for the module's XOpenDisplay
            raw = raw_lib.evident_bench_click_open(d.name.encode())
            if not raw:
                raise SystemExit("libevident-bench-click: cannot open %s" % d.name)
            if raw_lib.evident_bench_click(raw, bx, by) < 0:
                raise SystemExit("libevident-bench-click: the warm-up click failed")
            warm += 1
        bench.wait_until(lambda: log.count("button_clicked") >= warm, 3, "warm-up clicks")
        samples, raw_samples, statuses, raw_failed = [], [], {}, 0
        sent = warm
        for i in range(args.runs):
            for k in range(2 if raw is not None else 1):
                if raw is not None and (k == 0) == (i % 2 == 0):
                    ns = raw_lib.evident_bench_click(raw, bx, by)
                    if ns < 0:
                        raw_failed += 1
                    else:
                        raw_samples.append(ns)
                else:
                    t0 = time.perf_counter_ns()
                    r = d.actions(act, observe="none")
                    samples.append(time.perf_counter_ns() - t0)
                    st = r.results[0].status
                    statuses[st] = statuses.get(st, 0) + 1
                # Each click starts once the app has handled the one before (its log line), as
                # in a test that clicks, then checks: neither side's call is timed while the
                # app and the server still work on the other's click.
                sent += 1
                try:
                    bench.wait_until(lambda: log.count("button_clicked") >= sent, 2, "click",
                                     poll=0.0005)
                except bench.BenchError:
                    pass
        got = log.count("button_clicked") - warm
        app.stop()
    finally:
        if raw is not None:
            raw_lib.evident_bench_click_close(raw)
        d.destroy()
    sent -= warm
    out = {"median_us": bench.median_us(samples), "runs": args.runs, "statuses": statuses,
           "check": {"ok": got == sent and raw_failed == 0 and
                     set(statuses) <= {"ok", "injected"},
                     "detail": "%d/%d clicks reached the fixture app (%s); statuses %s" % (
                         got, sent, "in-process batch and raw engine click alternating"
                         if raw is not None else "in-process batch", json.dumps(statuses))}}
    if raw is not None:
        out["raw_click_median_us"] = bench.median_us(raw_samples)
        out["raw_clicks"] = len(raw_samples)
    return out


def mode_type(engine, args):
    d = engine.create_display(width=bench.W, height=bench.H)
    fifo = os.path.join(args.tmp, "inproc-%s.fifo" % args.receiver)
    if not os.path.exists(fifo):
        os.mkfifo(fifo, 0o600)
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if args.receiver == "tk":
            argv = ["/usr/bin/python3", os.path.join(HERE, "apps", "tk_entry.py"),
                    "bench-tk-entry", "100", "100", fifo]
        else:
            argv = ["xterm", "-u8", "-title", "bench-xterm", "-geometry", "100x10+100+100", "-e",
                    "/usr/bin/python3", os.path.join(HERE, "apps", "tty_reader.py"), fifo]
        app = d.launch(argv, wait_window_ms=15000)
        lines = bench.LineReader(fd)
        lines.next(15, "the %s receiver" % args.receiver)
        # pointer over the receiver: without a window manager keys go to the window under it
        d.actions([{"type": "move_mouse", "x": 300, "y": 130}], observe="none")

        def read_back():
            d.actions([{"type": "key", "key": "Return"}], observe="none")
            return lines.next(5, "the read-back")["value"]
        read_back()  # probe: focus, keys and read-back work
        samples, exact, wrong, statuses, pattern = [], 0, [], {}, []
        for _ in range(args.runs):
            t0 = time.perf_counter_ns()
            r = d.actions([{"type": "type", "text": args.text}], observe="none")
            samples.append(time.perf_counter_ns() - t0)
            st = r.results[0].status
            statuses[st] = statuses.get(st, 0) + 1
            try:
                got = read_back()
            except bench.BenchError as e:
                got = "<%s>" % e
            pattern.append("1" if got == args.text else "0")
            if got == args.text:
                exact += 1
            elif len(wrong) < 2:
                wrong.append(got)
        app.stop()
    finally:
        os.close(fd)
        d.destroy()
    # The first run remaps (cold: fetch wait included); later runs find the characters still on
    # their spare keycodes (the display's device restores 1 s after the last key): reported apart.
    return {"median_us": bench.median_us(samples), "runs": args.runs, "exact": exact,
            "first_run_us": samples[0] // 1000 if samples else None,
            "statuses": statuses, "exact_by_run": "".join(pattern),
            "check": {"ok": exact == args.runs, "detail": "%d/%d exact in %s%s" % (
                exact, args.runs, args.receiver, (" (got e.g. %r)" % wrong) if wrong else "")}}


TURN_W, TURN_H = 1280, 800
TURNS_PER_TASK = 11  # a stage task has 12 turns; the 12th is the final answer


def mode_turn(engine, args):
    """Agent turns through the task lane (docs/agents.md): each sample is one task.turn call
    carrying an Anthropic computer_20250124 response with one left_click, timed from the response
    going in to the provider-native tool_result (with the fresh frame as base64 PNG) coming out.
    Tasks of 11 click turns each, begun with settle off (task.begin "settle": false: each frame
    is taken straight after its action), ended by a valid final answer (so every task ends in a
    receipt).
    Checked: every click reached the fixture app, every turn answered its call with an image whose
    bytes hash to the turn's frame digest."""
    import base64
    import hashlib
    d = engine.create_display(width=TURN_W, height=TURN_H)
    samples, ok_turns, problems, receipts = [], 0, [], 0
    try:
        log_path = os.path.join(args.tmp, "fixture-turn.jsonl")
        app = d.launch([fixture_exe(args), "--events", log_path, "--x", "100", "--y", "100"],
                       wait_window_ms=10000)
        log = bench.EventLog(log_path)
        ready = bench.wait_until(lambda: next((e for e in log.poll() if e["type"] == "ready"),
                                              None), 15, "fixture ready")
        bx, by = ready["x"] + 120, ready["y"] + 130
        task_sha = hashlib.sha256(b"evident-bench turn").hexdigest()

        def task(request):
            return engine.request("task", {"request": json.dumps(request)})

        tasks = max(1, -(-args.runs // TURNS_PER_TASK))
        left = args.runs
        for t in range(tasks):
            b = task({"op": "begin", "mode": "stage", "display_id": d.id,
                      "generation": d.generation, "app_id": app.id,
                      "attempt_id": "bench-turn-%d-%s" % (t, os.urandom(4).hex()),
                      "task_sha256": task_sha,
                      "policy": {"adapter": "anthropic-computer-20250124", "provider": "bench",
                                 "model": "none"},
                      "settle": False})   # the row measures a turn without settle
            if not b.get("ok"):
                problems.append("begin: %s" % b.get("error", {}).get("code"))
                break
            tid, seq = b["task_id"], b["sequence"]
            for i in range(min(TURNS_PER_TASK, left)):
                response = {"id": "msg_bench", "type": "message", "role": "assistant",
                            "content": [{"type": "tool_use", "id": "toolu_%d_%d" % (t, i),
                                         "name": "computer",
                                         "input": {"action": "left_click",
                                                   "coordinate": [bx, by]}}],
                            "stop_reason": "tool_use"}
                text = json.dumps({"op": "turn", "task_id": tid, "sequence": seq,
                                   "response": response})
                t0 = time.perf_counter_ns()
                r = engine.request("task", {"request": text})
                samples.append(time.perf_counter_ns() - t0)
                left -= 1
                if not r.get("ok"):
                    problems.append("turn: %s" % r.get("error", {}).get("code"))
                    break
                seq = r["sequence"]
                try:
                    part = r["tool_results"]["content"][0]
                    image = next(c for c in part["content"] if c["type"] == "image")
                    png = base64.b64decode(image["source"]["data"])
                    if hashlib.sha256(png).hexdigest() == r["frame"]["sha256"] and \
                            part["tool_use_id"] == "toolu_%d_%d" % (t, i):
                        ok_turns += 1
                    else:
                        problems.append("turn %d: the tool result's image is not the frame" % i)
                except (KeyError, IndexError, StopIteration, TypeError, ValueError) as e:
                    problems.append("turn %d: unexpected tool_results (%s)" % (i, e))
            f = task({"op": "turn", "task_id": tid, "sequence": seq, "response": {
                "id": "msg_bench_end", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": '{"clicked": true}'}],
                "stop_reason": "end_turn"}})
            receipts += 1 if f.get("ok") and f.get("receipt") else 0
        want = len(samples)
        try:
            bench.wait_until(lambda: log.count("button_clicked") >= want, 5, "clicks")
        except bench.BenchError:
            pass
        got = log.count("button_clicked")
        app.stop()
    finally:
        d.destroy()
    ok = not problems and got == len(samples) and ok_turns == len(samples) and receipts == tasks
    return {"median_us": bench.median_us(samples) if samples else None, "runs": len(samples),
            "samples_us": [x // 1000 for x in samples],
            "check": {"ok": ok, "detail": "%d/%d clicks reached the fixture app; %d/%d tool "
                      "results carried the turn's frame; %d/%d tasks ended in a receipt%s" % (
                          got, len(samples), ok_turns, len(samples), receipts, tasks,
                          ("; " + "; ".join(problems[:3])) if problems else "")}}


def mode_browser(engine, args):
    """browser create -> page ready: evident's Display.browser against the raw peer
    (bench.raw_chromium_start), interleaved sample by sample on one display of this engine (the
    order alternates), the same page (a local file) and the same CSS viewport. Only the start is
    timed; each side's Chromium is stopped and its profile removed outside the span."""
    w, h = bench.BROWSER_W, bench.BROWSER_H
    page_url = bench.browser_page(args.tmp)
    want = "%s %dx%d complete" % (page_url, w, h)
    raw, ours, raw_bad, our_bad, left_behind = [], [], [], [], []
    with engine.create_display(width=w, height=h + 40) as d:
        env = dict(os.environ, **d.env())
        for i in range(args.runs):
            for side in (("raw", "evident") if i % 2 == 0 else ("evident", "raw")):
                if side == "raw":
                    dt, ok, got = bench.raw_chromium_start(env, page_url, w, h, args.tmp)
                    raw.append(dt)
                    if not ok:
                        raw_bad.append(got)
                    continue
                t0 = time.perf_counter_ns()
                b = d.browser(page_url, viewport=(w, h))
                ours.append(time.perf_counter_ns() - t0)
                try:
                    got = b.evaluate(bench.PAGE_PROBE)
                    if got != want or b.viewport != (w, h):
                        our_bad.append(got)
                finally:
                    b.close()
                if os.path.exists(b.profile_dir):
                    left_behind.append(b.profile_dir)
    n = args.runs
    return {"median_us": bench.median_us(ours), "runs": n,
            "samples_us": [x // 1000 for x in ours],
            "raw": {"median_us": bench.median_us(raw), "samples_us": [x // 1000 for x in raw],
                    "check": {"ok": not raw_bad, "detail": "%d/%d starts reported %s%s" % (
                        n - len(raw_bad), n, "the page, 'complete' and %dx%d" % (w, h),
                        (" (got e.g. %r)" % raw_bad[0]) if raw_bad else "")}},
            "check": {"ok": not our_bad and not left_behind,
                      "detail": "%d/%d creates: the page reported its URL, 'complete' and %dx%d; "
                      "%d/%d profiles removed at close%s" % (
                          n - len(our_bad), n, w, h, n - len(left_behind), n,
                          (" (got e.g. %r)" % our_bad[0]) if our_bad else "")}}


def cpu_ms(pid):
    """user + system CPU time of a process so far (ms), from /proc/PID/stat."""
    with open("/proc/%d/stat" % pid, encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def own_cpu_ms():
    t = os.times()
    return (t.user + t.system) * 1000.0


def child_pids(comms):
    """{comm: [pid, ...]} of this process's children with those command names."""
    out = {c: [] for c in comms}
    me = str(os.getpid())
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        if comm in out and stat.rsplit(")", 1)[1].split()[1] == me:
            out[comm].append(int(entry))
    return out


def mode_ax(engine, args):
    """The accessibility tree of the GTK 3 fixture with --widgets N labelled check buttons, on a
    display with its own accessibility stack. Each sample is one Display.accessibility(app) call
    (the engine's read plus the Python AxTree); the first read after the window appeared (the
    toolkit makes its accessible objects on demand) is reported apart as first_read_us. Every read
    must hold each "item i" check box exactly once, with screen bounds inside the display."""
    import evident
    w, h = 800, 600
    log_path = os.path.join(args.tmp, "ax-app.jsonl")
    fixture = os.path.join(bench.ROOT, "fixtures", "gtk", "ax_app.py")
    want = {"item %d" % i for i in range(args.widgets)}
    samples, engine_us, bad, counts = [], [], [], []
    with engine.create_display(width=w, height=h, accessibility=True) as d:
        app = d.launch(["/usr/bin/python3", fixture, "--log", log_path, "--widgets",
                        str(args.widgets)], wait_window_ms=30000)

        def ready():
            try:
                with open(log_path, encoding="utf-8") as f:
                    return any(json.loads(line).get("event") == "ready" for line in f
                               if line.strip())
            except FileNotFoundError:
                return False
        bench.wait_until(ready, 30, "the GTK fixture's ready line")

        def first():
            try:
                return d.accessibility(app)
            except evident.AccessibilityError as e:
                if e.code == "accessibility-app-not-found":  # retryable: not registered yet
                    return None
                raise
        t0 = time.perf_counter_ns()
        bench.wait_until(first, 30, "the app on the accessibility bus", poll=0.05)
        first_read = time.perf_counter_ns() - t0

        def check(tree):
            boxes = [n for n in tree.nodes if n.role == "check box" and n.name in want]
            names = [n.name for n in boxes]
            inside = all(n.bounds is not None and 0 <= n.bounds[0] and 0 <= n.bounds[1] and
                         n.bounds[0] + n.bounds[2] <= w and n.bounds[1] + n.bounds[3] <= h
                         for n in boxes)
            counts.append(len(tree))
            if sorted(names) != sorted(want) or not inside or tree.truncated:
                bad.append("%d/%d item check boxes (%d distinct), inside %s, truncated %s" % (
                    len(boxes), len(want), len(set(names)), inside, tree.truncated))
        # CPU spent per read by each process taking part (the reads are the only work here):
        # the app answering, this process (engine + Python), the display's buses and Xvfb.
        helpers = child_pids(("dbus-daemon", "at-spi2-registr", "Xvfb"))
        cpu0 = {"app": cpu_ms(app.pid), "engine_process": own_cpu_ms(),
                **{k: sum(cpu_ms(p) for p in ps) for k, ps in helpers.items()}}
        for _ in range(args.runs):
            t0 = time.perf_counter_ns()
            tree = d.accessibility(app)
            samples.append(time.perf_counter_ns() - t0)
            engine_us.append(tree.elapsed_us * 1000)
            check(tree)
        cpu1 = {"app": cpu_ms(app.pid), "engine_process": own_cpu_ms(),
                **{k: sum(cpu_ms(p) for p in ps) for k, ps in helpers.items()}}
        app.stop()
    return {"median_us": bench.median_us(samples), "runs": args.runs,
            "samples_us": [x // 1000 for x in samples], "first_read_us": first_read // 1000,
            "engine_elapsed_median_us": bench.median_us(engine_us),
            "node_count": counts[0] if counts else None,
            "cpu_ms_per_read": {k: "%.1f" % ((cpu1[k] - cpu0[k]) / max(1, args.runs))
                                for k in cpu0},
            "check": {"ok": not bad and len(samples) == args.runs,
                      "detail": "%d/%d reads held all %d 'item i' check boxes once, with bounds "
                      "on screen; %s nodes per tree%s" % (
                          args.runs - len(bad), args.runs, len(want),
                          counts[0] if counts else "no", ("; " + bad[0]) if bad else "")}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", required=True,
                    choices=("display", "warm", "click", "type", "turn", "browser", "ax"))
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--text", default="")
    ap.add_argument("--receiver", default="tk", choices=("tk", "xterm"))
    ap.add_argument("--widgets", type=int, default=100)
    ap.add_argument("--build", action="append", default=[])
    args = ap.parse_args()
    import evident
    state = os.path.join(args.tmp, "inproc-state")
    warm = [(bench.W, bench.H)] if args.mode == "warm" else None
    with evident.Engine(state_dir=state, warm=warm) as engine:
        out = {"display": mode_display, "warm": mode_warm, "click": mode_click,
               "type": mode_type, "turn": mode_turn, "browser": mode_browser,
               "ax": mode_ax}[args.mode](engine, args)
    out["ok"] = True
    print(json.dumps(out))


if __name__ == "__main__":
    main()
