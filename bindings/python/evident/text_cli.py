"""``evident text read|find``: OCR of a display of the daemon from the command line (docs/cli.md,
docs/windows.md "Text on the screen"). The C++ CLI runs ``python3 -m evident.text_cli`` with the
rest of its command line (and ``--socket`` as ``EVIDENT_SOCKET``); the reading and waiting are
:mod:`evident.screen_text`'s, through :class:`evident.Client`."""
from __future__ import annotations

import argparse
import json
import sys
from typing import IO, Any, Dict, List, Optional, Sequence, Tuple

from .agent.ocr import Line
from .client import Client
from .display import Display
from .errors import DisplayError, EvidentError
from .screen_text import DEFAULT_FIND_TIMEOUT_S, DEFAULT_READ_TIMEOUT_S, find_text, read_text


def _region_arg(text: str) -> Tuple[int, int, int, int]:
    parts = text.split(",")
    if len(parts) != 4 or not all(p.strip().lstrip("-").isdigit() for p in parts):
        raise argparse.ArgumentTypeError("--region must be X,Y,W,H (integers)")
    x, y, w, h = (int(p) for p in parts)
    return (x, y, w, h)


def _lines_json(lines: Sequence[Line]) -> List[Dict[str, Any]]:
    out = []
    for line in lines:
        xs = [w.left for w in line.words]
        ys = [w.top for w in line.words]
        x1 = max(w.left + w.width for w in line.words)
        y1 = max(w.top + w.height for w in line.words)
        out.append({"text": line.text, "x": min(xs), "y": min(ys), "width": x1 - min(xs),
                    "height": y1 - min(ys), "words": len(line.words)})
    return out


def _attach(client: Any, display_id: int, generation: str) -> Any:
    """The daemon's display ``display_id`` of exactly ``generation``, as a :class:`Display`."""
    for d in client.call("display.list")["displays"]:
        if int(d["id"]) == display_id:
            if str(d["generation"]) != generation:
                raise DisplayError("display-generation-mismatch",
                                   f"display {display_id} has another generation (it was destroyed and recreated)")
            return Display(client, d)
    raise DisplayError("display-not-found", f"no display {display_id} is owned by the daemon")


def main(argv: Optional[List[str]] = None, out: Optional[IO[str]] = None) -> int:
    """``evident text read ID GENERATION`` / ``evident text find ID GENERATION TEXT``: exit status 0
    read or found, 1 an error or a find that timed out (an answer, not an error, but scripts must
    be able to tell, as for ``evident wait``), 2 a usage error."""
    sink: IO[str] = out or sys.stdout
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("id", metavar="ID", type=int)
    common.add_argument("generation", metavar="GENERATION")
    common.add_argument("--region", type=_region_arg, metavar="X,Y,W,H", help="default: the whole display")
    common.add_argument("--language", default="eng", help="tesseract's language (default eng)")
    common.add_argument("--socket", help="the daemon's socket (default $EVIDENT_SOCKET, then the daemon's default)")
    common.add_argument("--json", action="store_true", help="print exactly one JSON object")
    parser = argparse.ArgumentParser(prog="evident text", description="Text on a display by OCR (tesseract).")
    sub = parser.add_subparsers(dest="command", required=True)
    read = sub.add_parser("read", parents=[common], help="one OCR pass over the region")
    read.add_argument("--timeout", type=float, default=DEFAULT_READ_TIMEOUT_S, metavar="S")
    find = sub.add_parser("find", parents=[common], help="wait (re-reading only on change) until TEXT is on screen")
    find.add_argument("text", metavar="TEXT")
    find.add_argument("--timeout", type=float, default=DEFAULT_FIND_TIMEOUT_S, metavar="S")
    as_json = "--json" in (argv if argv is not None else sys.argv[1:])
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        if e.code and as_json:
            sink.write(json.dumps({"ok": False, "error": {"code": "usage", "message": "see evident text --help",
                                                          "retryable": False}}) + "\n")
        return 2 if e.code else 0

    def fail(code: str, message: str, retryable: bool, status: int) -> int:
        if args.json:
            sink.write(json.dumps({"ok": False, "error": {"code": code, "message": message,
                                                          "retryable": retryable}}, ensure_ascii=False) + "\n")
        else:
            sys.stderr.write(f"evident: error [{code}]: {message}\n")
        return status

    try:
        with Client(args.socket) as client:
            d = _attach(client, args.id, args.generation)
            if args.command == "read":
                st = read_text(d, args.region, timeout=args.timeout, language=args.language)
                doc: Dict[str, Any] = {"ok": True, "region": dict(zip(("x", "y", "width", "height"), st.region)),
                                       "text": st.text, "lines": _lines_json(st.lines), "elapsed_ms": st.elapsed_ms}
                status = 0
            else:
                r = find_text(d, args.text, args.region, timeout=args.timeout, language=args.language)
                doc = {"ok": True, **r.raw}
                status = 0 if r.outcome == "found" else 1
    except ValueError as e:
        return fail("usage", str(e), False, 2)
    except EvidentError as e:
        return fail(e.code, e.message, e.retryable, 1)
    if args.json:
        sink.write(json.dumps(doc, ensure_ascii=False) + "\n")
    elif args.command == "read":
        sink.write(doc["text"] + ("\n" if doc["text"] else ""))
    elif doc["outcome"] == "found":
        b = doc["box"]
        sink.write(f"found at {b['x']},{b['y']} {b['width']}x{b['height']} after {doc['elapsed_ms']} ms "
                   f"({doc['checks']} OCR pass(es))\n")
    else:
        sink.write(f"timeout after {doc['elapsed_ms']} ms ({doc['checks']} OCR pass(es), "
                   f"{doc['last_words']} word(s) read last)\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
