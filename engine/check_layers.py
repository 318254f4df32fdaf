#!/usr/bin/env python3
"""The include graph of engine/ against docs/architecture.md (test `layering_test`).

docs/architecture.md holds one table between `<!-- LAYERS: checked by engine/check_layers.py -->`
and `<!-- END LAYERS -->`: each engine module and the modules its sources may include. Every
`#include "evident/<module>/..."` in engine/<module>/src and engine/<module>/include must name the
module itself or one listed in its row (tests, tools, benchmarks and fuzz harnesses are not
checked: they may use any module as a fixture). The table itself must be downward only: no
cycle, so a lower layer never includes a higher one. Exit 1 with each violation listed.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
INCLUDE = re.compile(r'^\s*#\s*include\s+"evident/([a-z_]+)/', re.M)


def read_table():
    text = DOC.read_text(encoding="utf-8")
    m = re.search(r"<!-- LAYERS: checked by engine/check_layers.py -->(.*?)<!-- END LAYERS -->", text, re.S)
    if not m:
        sys.exit("docs/architecture.md: no LAYERS table")
    allowed = {}
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        module = cells[0].strip("`")
        deps = set(re.findall(r"`([a-z_]+)`", cells[1]))
        allowed[module] = deps
    return allowed


def cycles(allowed):
    state = {}
    found = []

    def visit(m, path):
        state[m] = 1
        for d in sorted(allowed.get(m, ())):
            if state.get(d) == 1:
                found.append(" -> ".join(path + [m, d]))
            elif d not in state:
                visit(d, path + [m])
        state[m] = 2

    for m in sorted(allowed):
        if m not in state:
            visit(m, [])
    return found


def main():
    allowed = read_table()
    problems = []
    for c in cycles(allowed):
        problems.append(f"docs/architecture.md: the table has a cycle: {c}")
    for d in allowed.values():
        for dep in d:
            if dep not in allowed:
                problems.append(f"docs/architecture.md: `{dep}` is listed but has no row")
    engine = ROOT / "engine"
    for mod_dir in sorted(p for p in engine.iterdir() if (p / "CMakeLists.txt").exists()):
        module = mod_dir.name
        if module == "testing":  # header-only test support: a fixture like the tests themselves
            continue
        sources = [p for sub in ("src", "include") for p in (mod_dir / sub).rglob("*")
                   if p.suffix in (".h", ".hpp", ".cpp", ".cc")]
        if not sources:
            continue
        if module not in allowed:
            problems.append(f"engine/{module}: no row in docs/architecture.md's LAYERS table")
            continue
        for path in sources:
            for dep in INCLUDE.findall(path.read_text(encoding="utf-8", errors="replace")):
                if dep != module and dep not in allowed[module]:
                    problems.append(f"{path.relative_to(ROOT)}: includes evident/{dep}/, which "
                                    f"`{module}` may not include (docs/architecture.md)")
    for p in problems:
        print(p)
    print(f"{len(allowed)} modules, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
