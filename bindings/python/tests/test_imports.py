"""The package's import graph (docs/python.md, "Package layout"): no cycle, every import of a
package module at the top of its file.

The check reads the sources with ``ast`` (nothing is imported to build the graph):

* an import of a package module (relative, or absolute ``evident...``) must sit in the file's
  header: the leading run of top-level imports, optionally inside ``if TYPE_CHECKING:`` or
  ``try:`` blocks made only of imports. One inside a function or class, or after the first other
  statement (a "bottom-of-file" import), is reported;
* the edges (``TYPE_CHECKING`` imports included: a cycle of annotations is still a cycle) must
  form no cycle. ``from . import name`` is an edge to the submodule ``name`` when there is one,
  else to the package's ``__init__``;
* the one exception is a top-level ``if __name__ == "__main__":`` block: it runs only when the
  file is the program (``python3 -m evident.verify``), as module ``__main__``, a different module
  object from the package's; its imports cannot close a cycle and are not edges;
* ``importlib.import_module``/``__import__`` of a package module is reported (it would hide an
  edge).

The checker's own tests plant each defect in a throwaway package and expect it reported.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_DIR = os.path.join(os.path.dirname(HERE), "evident")

Graph = Dict[str, Set[str]]


def _modules(pkg_dir: Path, name: str, pattern: str = "*.py") -> Dict[str, Path]:
    """Module name -> file, for every .py file of the package (``__init__`` is the package)."""
    out: Dict[str, Path] = {}
    for path in sorted(pkg_dir.rglob(pattern)):
        rel = path.relative_to(pkg_dir).with_suffix("")
        parts = [name, *rel.parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If):
        return False
    t = node.test
    return (isinstance(t, ast.Compare) and isinstance(t.left, ast.Name)
            and t.left.id == "__name__" and len(t.comparators) == 1
            and isinstance(t.comparators[0], ast.Constant)
            and t.comparators[0].value == "__main__")


def _only_imports(body: List[ast.stmt]) -> bool:
    return all(isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass)) for s in body)


def _header_len(tree: ast.Module) -> int:
    """How many leading top-level statements form the import header."""
    n = 0
    for i, node in enumerate(tree.body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            n += 1  # the docstring
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            n += 1
        elif isinstance(node, ast.If) and not _is_main_guard(node) and _only_imports(
                node.body) and _only_imports(node.orelse):
            n += 1
        elif isinstance(node, ast.Try) and _only_imports(node.body) and all(
                _only_imports(h.body) for h in node.handlers) and not node.finalbody:
            n += 1
        else:
            break
    return n


def _targets(node: ast.stmt, mod: str, is_pkg: bool, root: str, known: Dict[str, Path],
             compiled: Set[str]) -> List[str]:
    """The package modules an import statement loads (empty for anything else). A compiled
    submodule (known by its ``.pyi`` stub, e.g. ``_core``) imports nothing of the package."""
    found: List[str] = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name == root or alias.name.startswith(root + "."):
                found.append(alias.name)
        return [t for t in found if t in known]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = mod.split(".") if is_pkg else mod.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
        if not (target == root or target.startswith(root + ".")):
            return []
    for alias in node.names:
        sub = f"{target}.{alias.name}"
        if sub not in compiled:
            found.append(sub if sub in known else target)
    return [t for t in dict.fromkeys(found) if t in known]


def _dynamic_import(node: ast.AST, root: str) -> Optional[str]:
    if not isinstance(node, ast.Call) or not node.args:
        return None
    f = node.func
    name = (f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "")
    arg = node.args[0]
    if name in ("import_module", "__import__") and isinstance(arg, ast.Constant) and isinstance(
            arg.value, str) and (arg.value.startswith(".") or arg.value == root
                                 or arg.value.startswith(root + ".")):
        return arg.value
    return None


def analyze(pkg_dir: str, name: str) -> Tuple[Graph, List[str]]:
    """(import graph between the package's modules, problems: late or hidden imports)."""
    known = _modules(Path(pkg_dir), name)
    compiled = set(_modules(Path(pkg_dir), name, "*.pyi")) - set(known)
    graph: Graph = {m: set() for m in known}
    problems: List[str] = []
    for mod, path in known.items():
        is_pkg = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        header = tree.body[:_header_len(tree)]
        in_header = {id(n) for h in header for n in ast.walk(h)}
        in_main = {id(n) for top in tree.body if _is_main_guard(top) for n in ast.walk(top)}
        for node in ast.walk(tree):
            dyn = _dynamic_import(node, name)
            if dyn is not None and dyn in known:  # (the compiled _core is not a .py module)
                problems.append(f"{mod}:{getattr(node, 'lineno', 0)}: dynamic import of {dyn}")
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            targets = _targets(node, mod, is_pkg, name, known, compiled)
            if not targets or id(node) in in_main:
                continue
            if id(node) not in in_header:
                problems.append(f"{mod}:{node.lineno}: import of {', '.join(targets)} is not at "
                                f"the top of the file")
            graph[mod].update(targets)
    return graph, problems


def cycles(graph: Graph) -> List[List[str]]:
    """Every strongly connected component with a cycle (Tarjan), each sorted."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    out: List[List[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


# -- the package ----------------------------------------------------------------------------------

def test_package_imports_are_at_the_top():
    _, problems = analyze(PACKAGE_DIR, "evident")
    assert problems == []


def test_package_has_no_import_cycle():
    graph, _ = analyze(PACKAGE_DIR, "evident")
    assert cycles(graph) == []


# The layers of docs/python.md ("Package layout"), bottom first: a module imports modules of
# lower layers only (and modules outside this list, such as verification or _native, which the
# acyclicity test keeps from importing back up).
LAYERS = [
    ["evident._protocol"],
    ["evident.errors"],
    ["evident._data", "evident._call"],             # value types; the Caller protocol
    ["evident.actions", "evident.windows"],          # builders and helpers
    ["evident.app", "evident.session"],              # resources ...
    ["evident.browser"],
    ["evident.display"],                             # ... the one that makes the others
    ["evident.engine"],
    ["evident.client"],
]


def test_resources_sit_in_their_layers():
    graph, _ = analyze(PACKAGE_DIR, "evident")
    rank = {m: i for i, layer in enumerate(LAYERS) for m in layer}
    assert set(rank) <= set(graph)
    wrong = [(m, t) for m in rank for t in sorted(graph[m]) if t in rank and rank[t] >= rank[m]]
    assert wrong == []
    # the value types and the Caller know nothing of the resources or the engines
    assert graph["evident._data"] == {"evident.errors"} and graph["evident._call"] == set()
    # a session names its app by app_id (windows.AppRef), it does not need the App class
    assert "evident.app" not in graph["evident.session"]


def test_every_module_imports_first_in_a_fresh_interpreter():
    # No module depends on another having been imported before it (what a cycle resolved by
    # import order would): each one is imported first, with every evident module forgotten and
    # the package's __init__ replaced by an empty shell (so it cannot import the others first);
    # then the package itself.
    mods = sorted(m for m in _modules(Path(PACKAGE_DIR), "evident") if m != "evident")
    code = textwrap.dedent("""
        import importlib, sys, types
        pkg_dir, names = sys.argv[1], sys.argv[2:]
        def forget():
            for m in [m for m in sys.modules if m == "evident" or m.startswith("evident.")]:
                del sys.modules[m]
        for name in names:
            forget()
            shell = types.ModuleType("evident")
            shell.__path__ = [pkg_dir]
            sys.modules["evident"] = shell
            importlib.import_module(name)
        forget()
        import evident
        print("imported", len(names) + 1)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(PACKAGE_DIR)] + [p for p in os.environ.get("PYTHONPATH", "").split(
            os.pathsep) if p]))
    r = subprocess.run([sys.executable, "-c", code, PACKAGE_DIR, *mods], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"imported {len(mods) + 1}"


# -- the checker finds what it must ---------------------------------------------------------------

def _plant(tmp_path: Path, files: Dict[str, str]) -> str:
    pkg = tmp_path / "pkg"
    for rel, text in {"__init__.py": "", **files}.items():
        p = pkg / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(pkg)


def test_checker_finds_a_planted_cycle(tmp_path):
    pkg = _plant(tmp_path, {"a.py": "from . import b\n", "b.py": "from .c import X\n",
                            "c.py": "from .a import Y\nX = 1\n", "d.py": "from . import a\n"})
    graph, problems = analyze(pkg, "pkg")
    assert problems == []
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_checker_finds_a_cycle_through_type_checking_and_absolute_imports(tmp_path):
    pkg = _plant(tmp_path, {
        "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n",
        "b.py": "import pkg.a\n"})
    graph, _ = analyze(pkg, "pkg")
    assert cycles(graph) == [["pkg.a", "pkg.b"]]


def test_checker_finds_a_cycle_through_the_package_init(tmp_path):
    pkg = _plant(tmp_path, {"__init__.py": "from .a import f\n__version__ = '1'\n",
                            "a.py": "from . import __version__\ndef f(): pass\n"})
    graph, _ = analyze(pkg, "pkg")
    assert cycles(graph) == [["pkg", "pkg.a"]]


def test_checker_knows_a_compiled_submodule_from_a_name_of_the_package(tmp_path):
    # `from . import _ext` loads the compiled _ext (its stub says it exists), not __init__.
    pkg = _plant(tmp_path, {"__init__.py": "from .a import f\n", "_ext.pyi": "X: int\n",
                            "a.py": "from . import _ext\ndef f(): pass\n"})
    graph, problems = analyze(pkg, "pkg")
    assert problems == [] and graph["pkg.a"] == set() and cycles(graph) == []


def test_checker_finds_function_level_and_bottom_imports(tmp_path):
    pkg = _plant(tmp_path, {
        "a.py": """
            import os
            def f():
                from . import b
                return b
            """,
        "b.py": """
            X = 1
            from .c import Y
            """,
        "c.py": """
            class C:
                def m(self):
                    import pkg.b
            Y = 2
            """,
        "sub/__init__.py": "",
        "sub/d.py": """
            import importlib
            def g():
                return importlib.import_module("pkg.c")
            """,
    })
    _, problems = analyze(pkg, "pkg")
    assert problems == [
        "pkg.a:4: import of pkg.b is not at the top of the file",
        "pkg.b:3: import of pkg.c is not at the top of the file",
        "pkg.c:4: import of pkg.b is not at the top of the file",
        "pkg.sub.d:4: dynamic import of pkg.c",
    ]


def test_checker_accepts_the_header_forms_and_the_main_block(tmp_path):
    pkg = _plant(tmp_path, {
        "a.py": '''
            """Doc."""
            from __future__ import annotations
            import os
            from typing import TYPE_CHECKING
            from . import b
            if TYPE_CHECKING:
                from .c import C
            try:
                from .c import D
            except ImportError:
                pass

            def main():
                return 0

            if __name__ == "__main__":
                from pkg.a import main as m
            ''',
        "b.py": "import json\n", "c.py": "C = D = 1\n"})
    graph, problems = analyze(pkg, "pkg")
    assert problems == []
    assert graph["pkg.a"] == {"pkg.b", "pkg.c"}
    assert cycles(graph) == []
