"""``evident/_core.pyi`` says exactly what the built ``evident._core`` has.

mypy reads the stub instead of the compiled module, so a stale stub would type-check code
against functions that do not exist (or with the wrong arguments). pybind11 writes each
function's real signature as the first line of its docstring
(``wait_warm(self: _core.Engine, timeout_ms: int) -> bool``); this test compares every name,
parameter (name, type, keyword-only, has a default) and return type of the stub with those
lines, and the module's attributes with the stub's annotated names, both ways.
"""
from __future__ import annotations

import ast
import os
import re
from typing import Any, Dict, List, Tuple

import pytest

from evident._native import find_core

STUB = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "evident",
                    "_core.pyi")

Param = Tuple[str, str, bool, bool]   # name, type, keyword-only, has a default


def _norm(t: str) -> str:
    t = t.replace(" ", "").replace("typing.", "").replace("_core.", "")
    return re.sub(r"\b(List|Dict|Tuple|Set)\[", lambda m: m.group(1).lower() + "[", t)


def _split(params: str) -> List[str]:
    out, depth, cur = [], 0, ""
    for ch in params:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _runtime_signature(fn: Any) -> Tuple[List[Param], str]:
    first = (fn.__doc__ or "").split("\n", 1)[0]
    m = re.fullmatch(r"\w+\((.*)\) -> (.+)", first)
    assert m, f"no pybind11 signature line: {first!r}"
    params: List[Param] = []
    kwonly = False
    for p in _split(m.group(1)):
        if p == "*":
            kwonly = True
            continue
        head, _, default = p.partition("=")
        name, _, typ = head.partition(":")
        if name.strip() == "self":
            continue
        params.append((name.strip(), _norm(typ), kwonly, bool(default)))
    return params, _norm(m.group(2))


def _stub_signature(fn: ast.FunctionDef) -> Tuple[List[Param], str]:
    a = fn.args
    params: List[Param] = []
    plain = a.posonlyargs + a.args
    defaults = [None] * (len(plain) - len(a.defaults)) + list(a.defaults)
    for arg, d in zip(plain, defaults):
        if arg.arg != "self":
            params.append((arg.arg, _norm(ast.unparse(arg.annotation)), False, d is not None))
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        params.append((arg.arg, _norm(ast.unparse(arg.annotation)), True, d is not None))
    assert fn.returns is not None, fn.name
    return params, _norm(ast.unparse(fn.returns))


def _stub() -> Dict[str, Any]:
    with open(STUB, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    out: Dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = ast.unparse(node.annotation)
        elif isinstance(node, ast.FunctionDef):
            out[node.name] = node
        elif isinstance(node, ast.ClassDef):
            out[node.name] = {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}
    return out


@pytest.fixture(scope="module")
def core():
    mod = find_core()
    assert mod is not None, "evident._core is not built (cmake --build build --target _core)"
    return mod


def test_stub_names_are_the_module_names(core):
    runtime = {n for n in dir(core) if not n.startswith("__")}
    assert set(_stub()) == runtime


def test_stub_attributes_have_the_module_types(core):
    for name, annotation in _stub().items():
        if isinstance(annotation, str):
            assert type(getattr(core, name)).__name__ == annotation, name


def test_stub_functions_have_the_module_signatures(core):
    for name, node in _stub().items():
        if isinstance(node, ast.FunctionDef):
            assert _stub_signature(node) == _runtime_signature(getattr(core, name)), name


def test_stub_classes_have_the_module_methods_and_properties(core):
    for cname, methods in _stub().items():
        if not isinstance(methods, dict):
            continue
        cls = getattr(core, cname)
        assert set(methods) - {"__init__"} == {n for n in vars(cls) if not n.startswith("__")}
        for mname, node in methods.items():
            member = vars(cls)[mname]
            if isinstance(member, property):
                assert any(isinstance(d, ast.Name) and d.id == "property"
                           for d in node.decorator_list), (cname, mname)
                continue
            assert _stub_signature(node) == _runtime_signature(getattr(cls, mname)), \
                (cname, mname)


def test_the_check_sees_a_wrong_parameter():
    fn = ast.parse("def f(timeout: int) -> bool: ...").body[0]

    class Fake:
        __doc__ = "f(timeout_ms: int) -> bool"

    assert isinstance(fn, ast.FunctionDef)
    assert _stub_signature(fn) != _runtime_signature(Fake)
    assert _stub_signature(fn)[1] == _runtime_signature(Fake)[1]
