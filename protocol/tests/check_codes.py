#!/usr/bin/python3
"""Guard: every error code the engine's sources (and the Python package) can emit is declared in
protocol/evident.json and documented in docs/errors.md, and every declared code is emitted
somewhere; and the envelope ops engine/service registers are exactly the declared ones.

It also guards the other fact the protocol file holds about a code, whether it is retryable: a
`make_error("code", message, depends)` names `depends` exactly when the code is declared
"retryable": "depends" (for a code declared true or false the file decides, evident::make_error
reads it), and every Error is made by make_error (no `Error{...}` elsewhere). And every declared
limit is read from the file where it is enforced (protocol::k<Name> in the engine, or its name in
the Python package), so no limit is a number written twice.

How it finds codes, so that it stays honest: it takes EVERY string literal in engine/ (tests,
benchmarks, tools and engine/testing excepted) that looks like a code (kebab-case with a dash), plus the first
argument of every `make_error("...")` (which also catches one-word codes like `internal`). Each must
be a declared code or be listed below as a string that is not an error code, with the reason.
A new code therefore fails this test until it is declared; a new kebab-case string that is not a
code must be listed here. Stale entries of the list fail too.
"""
from __future__ import annotations

import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Kebab-case string literals in engine sources that are not error codes.
NOT_CODES = {
    # program names of the display's accessibility stack (docs/accessibility.md)
    "dbus-daemon": "program name (the accessibility stack's buses)",
    "at-spi2-registryd": "program name (the accessibility stack's registry)",
    "evident-daemon": "program name (the daemon program `evident daemon` execs; docs/cli.md)",
    # AT-SPI state names (AtspiStateType's nicks) in an accessibility tree's "states"
    "has-popup": "AT-SPI state name (accessibility tree)",
    "has-tooltip": "AT-SPI state name (accessibility tree)",
    "invalid-entry": "AT-SPI state name (accessibility tree)",
    "is-default": "AT-SPI state name (accessibility tree)",
    "manages-descendants": "AT-SPI state name (accessibility tree)",
    "multi-line": "AT-SPI state name (accessibility tree)",
    "read-only": "AT-SPI state name (accessibility tree)",
    "selectable-text": "AT-SPI state name (accessibility tree)",
    "single-line": "AT-SPI state name (accessibility tree)",
    "supports-autocompletion": "AT-SPI state name (accessibility tree)",
    # session end reasons (a snapshot's "ended.reason"; docs/sessions.md)
    "display-lost": "session end reason",
    "cleanup-failed": "session end reason",
    "evidence-write-failed": "session end reason",
    "engine-shutdown": "session end reason",
    "sign-failed": "session end reason (signing at close failed; docs/receipts.md)",
    "commitment-failed": "session end reason (a commitment could not be computed; docs/receipts.md)",
    # task end reasons (a task snapshot's "ended.reason"; docs/agents.md "The lane")
    "turn-refused": "task end reason (a turn refused by the adapter or the limits)",
    "result-invalid": "task end reason (an invalid final answer used the last turn)",
    "receipt-failed": "task end reason (the task receipt could not be built)",
    # parse codes of the envelope verifier, reported as named failing checks, never as errors
    "envelope-json": "internal parse code of the envelope check",
    "statement-json": "internal parse code of the statement check",
    # receipt execution fields (docs/receipts.md)
    "external-actions": "receipt execution.kind",
    "external-caller": "receipt execution.claims_authority",
    "caller-policy": "task receipt execution.kind and claims_authority",
    # prefixes of random owner ids of a display's lock
    "session-lease": "owner id prefix of a session's lease",
    "window-focus": "owner id prefix of a window focus",
    # CLI subcommand names and window fields
    "element-box": "CLI subcommand `browser element-box`",
    "x-resource": "a window's pid_source (docs/windows.md)",
    # agent adapter names (docs/agents.md)
    "anthropic-computer-20250124": "agent adapter name",
    "anthropic-computer-20251124": "agent adapter name",
    "anthropic-toolset-20260801": "agent adapter name",
    "gemini-computer-use": "agent adapter name",
    "openai-computer": "agent adapter name",
    "openai-computer-use-preview": "agent adapter name",
    # report signature states (docs/evidence.md)
    # input tracing labels (EVIDENT_INPUT_TRACE; docs/input.md)
    "barrier-begin": "input trace label",
    "barrier-end": "input trace label",
    "fetch-wait-begin": "input trace label",
    "fetch-wait-end": "input trace label",
    "timeout-no-marker": "input trace label",
    "timeout-unfetched": "input trace label",
    "xi-key": "input trace label",
}

LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
KEBAB = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)+$")
# ids, not codes: a session, task or receipt id is a prefix and 32 hex digits (docs/receipts.md)
ID = re.compile(r"^[a-z]{2,4}-[0-9a-f]{32}$")
MAKE_ERROR = re.compile(r'make_error\(\s*"([^"]+)"')
PY_RAISE = re.compile(r'(?:Error|error_class_for\([^)]*\))\(\s*"([a-z][a-z0-9-]*)"')


def make_error_calls(text: str):
    """(line, [argument texts]) of each `make_error(...)` call, split at its top-level commas."""
    for m in re.finditer(r"\bmake_error\(", text):
        i, depth, start, args, in_str = m.end(), 1, m.end(), [], False
        while depth and i < len(text):
            c = text[i]
            if in_str:
                if c == "\\":
                    i += 1
                elif c == '"':
                    in_str = False
            elif c == '"':
                in_str = True
            elif c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
            elif c == "," and depth == 1:
                args.append(text[start:i].strip())
                start = i + 1
            i += 1
        args.append(text[start:i - 1].strip())
        yield text.count("\n", 0, m.start()) + 1, args


def py_present_text(root: str) -> str:
    """The Python package's sources (not the generated _protocol.py), as one text."""
    out = []
    for path in sorted(glob.glob(os.path.join(root, "bindings", "python", "evident", "**", "*.py"),
                                 recursive=True)):
        if not path.endswith("_protocol.py"):
            with open(path, encoding="utf-8") as f:
                out.append(f.read())
    return "\n".join(out)


def engine_sources():
    for path in sorted(glob.glob(os.path.join(ROOT, "engine", "**", "*.*"), recursive=True)):
        rel = os.path.relpath(path, ROOT)
        parts = rel.split(os.sep)
        if any(p in ("tests", "bench", "tools", "testing") for p in parts):
            continue
        if path.endswith((".cpp", ".h", ".inc")):
            yield rel, path


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"(?m)//.*$", "", text)


def main() -> int:
    with open(os.path.join(ROOT, "protocol", "evident.json"), encoding="utf-8") as f:
        protocol = json.load(f)
    declared = protocol["errors"]
    with open(os.path.join(ROOT, "docs", "errors.md"), encoding="utf-8") as f:
        errors_md = f.read()
    problems = []
    seen = {}
    for rel, path in engine_sources():
        with open(path, encoding="utf-8") as f:
            text = strip_comments(f.read())
        for m in LITERAL.finditer(text):
            s = m.group(1)
            if KEBAB.match(s) and not ID.match(s):
                seen.setdefault(s, rel)
        # codes written into JSON or messages by hand (raw strings included)
        for m in re.finditer(r'\\?"code\\?"\s*:\s*\\?"([a-z][a-z0-9-]*)|error \[([a-z][a-z0-9-]*)\]', text):
            code = m.group(1) or m.group(2)
            seen.setdefault(code, rel)
            if code not in declared:
                problems.append(f"{rel}: writes error code \"{code}\" by hand; it is not declared")
        status_h = rel == os.path.join("engine", "core", "include", "evident", "core", "status.h")
        # a code named by a constant of this file (`constexpr const char* kTimeout = "…"`)
        constants = dict(re.findall(r'\b(k[A-Z]\w*)\s*(?:\[\])?\s*=\s*"([a-z][a-z0-9-]*)"', text))
        for line, args in make_error_calls(text):
            lit = re.fullmatch(r'"([a-z][a-z0-9-]*)"', args[0])
            code = lit.group(1) if lit else constants.get(args[0])
            if code is None or code not in declared or status_h:
                continue
            r = declared[code]["retryable"]
            if r == "depends" and len(args) < 3:
                problems.append(f"{rel}:{line}: make_error(\"{code}\") names no retryable; "
                                "the code is declared \"depends\", so the call must say which case it is")
            elif r != "depends" and len(args) > 2:
                problems.append(f"{rel}:{line}: make_error(\"{code}\", ..., {args[2]}): the code is "
                                f"declared retryable {str(r).lower()} in protocol/evident.json, which "
                                "decides; drop the argument")
        if not status_h:
            for m in re.finditer(r"\bError(?:\s+[A-Za-z_]\w*)?\s*\{", text):
                if re.search(r"->\s*$", text[:m.start()]):
                    continue  # a lambda's return type (`-> Error {`)
                problems.append(f"{rel}:{text.count(chr(10), 0, m.start()) + 1}: Error{{...}} built by "
                                "hand; use make_error (it reads retryable from the protocol file)")
        for m in MAKE_ERROR.finditer(text):
            seen.setdefault(m.group(1), rel)
            if m.group(1) not in declared:
                problems.append(f"{rel}: make_error(\"{m.group(1)}\") is not a declared error code")
    py_seen = {}  # codes the package raises: ...Error("code", ...)
    py_present = {}  # code-like strings anywhere in the package (for "is it emitted")
    for path in sorted(glob.glob(os.path.join(ROOT, "bindings", "python", "evident", "**", "*.py"), recursive=True)):
        rel = os.path.relpath(path, ROOT)
        if rel.endswith("_protocol.py"):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in PY_RAISE.finditer(text):
            py_seen.setdefault(m.group(1), rel)
            py_present.setdefault(m.group(1), rel)
        for m in re.finditer(r'["\'\[]([a-z][a-z0-9]*(?:-[a-z0-9]+)+)["\'\]]', text):
            py_present.setdefault(m.group(1), rel)
    for s, rel in sorted(seen.items()):
        if s in declared or s in NOT_CODES:
            continue
        problems.append(f"{rel}: \"{s}\" looks like an error code but is not declared in "
                        "protocol/evident.json (declare it, or list it in NOT_CODES of "
                        "protocol/tests/check_codes.py with the reason it is not a code)")
    for s, rel in sorted(py_seen.items()):
        if s not in declared:
            problems.append(f"{rel}: the Python package raises \"{s}\", not declared in protocol/evident.json")
    for s in NOT_CODES:
        if s not in seen:
            problems.append(f"NOT_CODES lists \"{s}\", which no engine source contains any more")
        if s in declared:
            problems.append(f"NOT_CODES lists \"{s}\", which is a declared code")
    for code, e in declared.items():
        if f"| `{code}` |" not in errors_md:
            problems.append(f"{code}: declared but has no row in docs/errors.md (run protocol/generate.py)")
        emitted = code in seen or code in py_present
        if not emitted:
            problems.append(f"{code}: declared but no engine or Python source emits it "
                            "(remove the declaration, or it is unreachable)")
    # The envelope ops the service registers are exactly those the protocol file declares.
    registered = set()
    for path in glob.glob(os.path.join(ROOT, "engine", "service", "src", "*.cpp")):
        with open(path, encoding="utf-8") as f:
            registered |= set(re.findall(r'ops\["([a-z0-9_.]+)"\]\s*=', f.read()))
    declared_ops = set(protocol["envelope"]["ops"])
    for op in sorted(registered - declared_ops):
        problems.append(f"engine/service registers op {op!r}, not declared in protocol/evident.json envelope.ops")
    for op in sorted(declared_ops - registered):
        problems.append(f"protocol/evident.json declares op {op!r}, which engine/service does not register")
    # Every declared limit is read from the protocol file where it is enforced: by its generated
    # name (k<Name>, protocol.h) in an engine source, or by its name in the Python package. A
    # limit nothing reads is a second copy of a number written by hand somewhere.
    engine_text = ""
    for rel, path in engine_sources():
        with open(path, encoding="utf-8") as f:
            engine_text += strip_comments(f.read())
    py_text = py_present_text(ROOT)
    for name in protocol["limits"]:
        k = "k" + "".join(part.capitalize() for part in name.split("_"))
        if not re.search(rf"\b{k}\b", engine_text) and f'"{name}"' not in py_text:
            problems.append(f"limit {name!r} is declared but no engine source reads protocol::{k} and "
                            "the Python package does not name it: the number is written by hand "
                            "where it is enforced")
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{len(seen)} code-like strings in engine sources, {len(py_seen)} codes raised in Python, "
          f"{len(declared)} declared; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
