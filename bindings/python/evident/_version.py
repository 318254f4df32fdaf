"""The version comes from one place: the top-level ``VERSION`` file. CMake reads it into the C++
engine (``_core.version``); setup.py reads it into the package metadata."""
from __future__ import annotations

import os


def _read_version() -> str:
    try:
        from . import _core  # type: ignore[attr-defined]

        return str(_core.version)
    except ImportError:
        pass
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
