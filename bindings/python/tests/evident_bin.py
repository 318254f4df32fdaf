"""Where the tests find the built `evident` CLI (one place for the rule).

$EVIDENT_BIN when set (None if it is not executable), else build/engine/cli/evident, else the
first build-*/engine/cli/evident, under the source tree's root.
"""
import glob
import os
from typing import Optional

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def find_evident_bin() -> Optional[str]:
    env = os.environ.get("EVIDENT_BIN")
    if env:
        return env if os.access(env, os.X_OK) else None
    for c in [os.path.join(ROOT, "build", "engine", "cli", "evident")] + \
            sorted(glob.glob(os.path.join(ROOT, "build-*", "engine", "cli", "evident"))):
        if os.access(c, os.X_OK):
            return c
    return None
