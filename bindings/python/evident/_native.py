"""Finds the compiled engine module.

Installed, it is ``evident/_core*.so``. In the no-install dev path (``PYTHONPATH=bindings/python:
<build>/bindings/core``) CMake's output is a top-level ``_core`` module; it is adopted as
``evident._core`` only if it is really Evident's (its docstring says so).
"""
from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Optional

_MARKER = "Private bridge to the Evident C++ engine"


def find_core() -> Optional[ModuleType]:
    try:
        return importlib.import_module("evident._core")
    except ImportError:
        pass
    try:
        mod = importlib.import_module("_core")
    except ImportError:
        return None
    if not (mod.__doc__ or "").startswith(_MARKER):
        return None
    sys.modules["evident._core"] = mod
    parent = sys.modules.get("evident")
    if parent is not None:
        setattr(parent, "_core", mod)
    return mod
