#!/usr/bin/python3
"""Where a process's resident memory is, by kind of mapping, from /proc/PID/smaps.

    smaps.py snap PID OUT.json        # one snapshot (mappings, their Rss, each thread's stack)
    smaps.py diff A.json B.json       # RSS by kind in both, and the mappings that changed most

Kinds: `heap` (the main malloc arena, [heap]), `arenas` (glibc's other malloc arenas: anonymous
mappings aligned to their 64 MiB reservation), `thread_stacks` (the anonymous mapping holding a
thread's stack pointer, or a mapping right above a 4 KiB guard page), `main_stack`, `shmem`
(SysV / POSIX shared memory, e.g. MIT-SHM segments), `file` (file-backed: code, data, fonts),
`anon_other` (everything else anonymous: mmapped allocations, libraries' bss). bench.py's
daemon_soak row records `breakdown(pid)` at each of its samples.
"""
import json
import os
import sys

ARENA_ALIGN = 64 << 20  # glibc's HEAP_MAX_SIZE on 64-bit: every non-main arena heap is aligned to it
KINDS = ("heap", "arenas", "thread_stacks", "main_stack", "shmem", "file", "anon_other")


def read_smaps(pid):
    """-> a list of mappings: start, end, perms, path, rss/anonymous/private_dirty (KiB)."""
    maps = []
    cur = None
    with open("/proc/%d/smaps" % pid, encoding="utf-8", errors="replace") as f:
        for line in f:
            head = line.split(None, 5)
            if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                lo, hi = head[0].split("-")
                cur = {"start": int(lo, 16), "end": int(hi, 16), "perms": head[1],
                       "path": head[5].strip() if len(head) > 5 else "", "rss": 0,
                       "anonymous": 0, "private_dirty": 0}
                maps.append(cur)
            elif cur is not None and head[0] in ("Rss:", "Anonymous:", "Private_Dirty:"):
                cur[head[0][:-1].lower()] = int(head[1])
    return maps


def thread_sps(pid):
    """-> {tid: (name, stack pointer or None)} from /proc/PID/task/*/syscall (a running thread
    has no recorded stack pointer)."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid), encoding="utf-8") as f:
                name = f.read().strip()
            with open("/proc/%d/task/%s/syscall" % (pid, tid), encoding="ascii") as f:
                fields = f.read().split()
        except OSError:
            continue
        sp = int(fields[-2], 16) if len(fields) >= 3 else None
        out[int(tid)] = (name, sp)
    return out


def classify(maps, sps):
    """Sets each mapping's `kind` (and `thread`, for a stack whose thread was found)."""
    by_start = {m["start"]: m for m in maps}
    by_end = {m["end"]: m for m in maps}
    for m in maps:
        path = m["path"]
        guard = by_end.get(m["start"])
        if path == "[heap]":
            m["kind"] = "heap"
        elif path == "[stack]":
            m["kind"] = "main_stack"
        elif path.startswith("/SYSV") or path.startswith("/dev/shm/") or \
                path.startswith("/memfd:"):
            m["kind"] = "shmem"
        elif path and not path.startswith("["):
            m["kind"] = "file"
        elif path:
            m["kind"] = "anon_other"  # [vdso], [vvar], [anon:...]
        elif m["start"] % ARENA_ALIGN == 0 and m["perms"].startswith("rw") and \
                (by_start.get(m["end"], {}).get("perms", "").startswith("---") or
                 m["end"] - m["start"] == ARENA_ALIGN):
            m["kind"] = "arenas"
        elif m["perms"].startswith("rw") and guard is not None and not guard["path"] and \
                guard["perms"].startswith("---") and guard["end"] - guard["start"] == 4096:
            m["kind"] = "thread_stacks"
        else:
            m["kind"] = "anon_other"
    for tid, (name, sp) in sps.items():
        if sp is None:
            continue
        for m in maps:
            if m["start"] <= sp < m["end"] and m["kind"] in ("thread_stacks", "anon_other"):
                m["kind"] = "thread_stacks"
                m.setdefault("threads", []).append("%s/%d" % (name, tid))
    return maps


def snapshot(pid):
    maps = classify(read_smaps(pid), thread_sps(pid))
    return {"pid": pid, "mappings": maps}


def breakdown(pid):
    """-> {kind: Rss KiB} of the process now (and `thread_stacks_n`, the number of stacks)."""
    out = dict.fromkeys(KINDS, 0)
    n = 0
    for m in snapshot(pid)["mappings"]:
        out[m["kind"]] += m["rss"]
        n += m["kind"] == "thread_stacks"
    out["thread_stacks_n"] = n
    return out


def sums(snap):
    out = dict.fromkeys(KINDS, 0)
    for m in snap["mappings"]:
        out[m["kind"]] += m["rss"]
    return out


def label(m):
    t = ",".join(m.get("threads", []))
    return "%s %012x-%012x %s %s%s" % (m["kind"], m["start"], m["end"], m["perms"],
                                       m["path"], (" [" + t + "]") if t else "")


def diff(a, b, top=25):
    sa, sb = sums(a), sums(b)
    print("%-14s %10s %10s %9s" % ("kind", "A KiB", "B KiB", "B-A"))
    for k in KINDS:
        print("%-14s %10d %10d %+9d" % (k, sa[k], sb[k], sb[k] - sa[k]))
    print("%-14s %10d %10d %+9d" % ("total", sum(sa.values()), sum(sb.values()),
                                    sum(sb.values()) - sum(sa.values())))
    old = {(m["start"], m["perms"]): m for m in a["mappings"]}
    new = {(m["start"], m["perms"]): m for m in b["mappings"]}
    rows = []
    for key in set(old) | set(new):
        ma, mb = old.get(key), new.get(key)
        d = (mb["rss"] if mb else 0) - (ma["rss"] if ma else 0)
        if d:
            rows.append((d, ma["rss"] if ma else None, mb["rss"] if mb else None, mb or ma))
    rows.sort(key=lambda r: -abs(r[0]))
    print("\nmappings whose Rss changed most (KiB; - = absent):")
    for d, ra, rb, m in rows[:top]:
        print("%+8d %8s %8s  %s" % (d, "-" if ra is None else ra, "-" if rb is None else rb,
                                    label(m)))
    stacks = sorted((m for m in b["mappings"] if m["kind"] == "thread_stacks"),
                    key=lambda m: -m["rss"])
    print("\nthread stacks in B: %d, Rss %s KiB" % (
        len(stacks), " ".join(str(m["rss"]) for m in stacks)))


def main(argv):
    if len(argv) == 3 and argv[0] == "snap":
        with open(argv[2], "w", encoding="utf-8") as f:
            json.dump(snapshot(int(argv[1])), f)
        return 0
    if len(argv) == 3 and argv[0] == "diff":
        with open(argv[1], encoding="utf-8") as fa, open(argv[2], encoding="utf-8") as fb:
            diff(json.load(fa), json.load(fb))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
