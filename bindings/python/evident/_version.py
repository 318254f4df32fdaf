"""The version comes from one place: the top-level ``VERSION`` file. CMake reads it into the C++
engine (``_core.version``); setup.py reads it into the package metadata."""
from __future__ import annotations

import os

from ._native import find_core


def _read_version() -> str:
    core = find_core()
    if core is not None:
        return str(core.version)
    try:
        from importlib.metadata import version

        return version("evident")
    except Exception:  # noqa: BLE001 - not installed: fall back to the source tree
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        with open(os.path.join(here, "..", "..", "..", "VERSION"), encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return "0+unknown"


__version__ = _read_version()
