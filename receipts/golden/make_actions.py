#!/usr/bin/python3
"""Writes receipts/golden/<name>/actions.json for each builder golden (run once; output committed).

actions.json (docs/evidence.md) lists each action's projection in order. Here the projections
come from input.json through the pure-Python verifier's project_action() and JCS, not from the
C++ code under test, and every projection must hash to the projection_sha256 that the golden
receipt already holds (those digests were computed with npm canonicalize + sha256sum by
make_golden.py), so nothing is written unless the two agree. The C++ test
(receipts_build_test) then requires build_actions_file() to produce these bytes exactly.

Usage: /usr/bin/python3 receipts/golden/make_actions.py
"""
from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python", "evident"))
import verify as pyverify  # noqa: E402

NAMES = ("zero-actions", "three-actions", "sixty-four-actions",
         "v3-zero-actions", "v3-three-actions", "v3-sixty-four-actions",
         "v3-app-exit-settle", "v3-app-exit-observe", "v3-video")


def main() -> int:
    for name in NAMES:
        d = os.path.join(HERE, name)
        with open(os.path.join(d, "input.json"), encoding="utf-8") as f:
            inp = json.load(f)
        with open(os.path.join(d, "receipt.json"), encoding="utf-8") as f:
            receipt = json.load(f)
        events = [e for e in receipt["transcript"] if e["kind"] == "action"]
        assert len(events) == len(inp["actions"]), name
        entries = []
        for a, e in zip(inp["actions"], events):
            p = pyverify.project_action(a["action"])
            sha = pyverify.domain_digest(pyverify.DOMAIN_ACTION_PROJECTION, p)
            assert sha == e["projection_sha256"], f"{name}: projection {e['index']} differs"
            assert "text" not in p and "key" not in p
            entries.append({"event_index": e["index"], "projection": p,
                            "projection_sha256": sha, "elapsed_ms": None})
        doc = {"schema": "evident.actions/v1", "session_id": receipt["session_id"],
               "receipt_id": receipt["receipt_id"], "actions": entries}
        with open(os.path.join(d, "actions.json"), "wb") as f:
            f.write(pyverify.jcs(doc) + b"\n")
        print(f"{name}: {len(entries)} projections")
    return 0


if __name__ == "__main__":
    sys.exit(main())
