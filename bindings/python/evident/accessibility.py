"""The AT-SPI2 tree of an app (docs/accessibility.md): ``Display.accessibility(app)``.

The engine reads the tree over the display's private accessibility bus (a display created with
``accessibility=True``) and returns it flat; here it is linked into :class:`AxNode` objects.
Password fields' values are never read: such a node has ``value is None`` and
``value_withheld``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, Iterator, List, Mapping, Optional, Tuple

__all__ = ["AxNode", "AxTree"]


@dataclass(eq=False)
class AxNode:
    """One accessible object: ``role`` (AT-SPI's role name, e.g. ``"push button"``), ``name``,
    ``states`` (AT-SPI state names, e.g. ``"focused"``), ``bounds`` ``(x, y, width, height)``
    in screen pixels (None when not on screen), ``value`` (an editable text's text or a Value
    widget's number as text; None for a password field: ``value_withheld``)."""

    index: int
    depth: int
    role: str
    name: str
    states: FrozenSet[str]
    bounds: Optional[Tuple[int, int, int, int]]
    value: Optional[str]
    value_withheld: bool
    child_count: int
    parent: Optional["AxNode"] = field(default=None, repr=False)
    children: List["AxNode"] = field(default_factory=list, repr=False)

    @property
    def center(self) -> Optional[Tuple[int, int]]:
        """The centre of ``bounds`` (floored), to click; None without bounds."""
        if self.bounds is None:
            return None
        x, y, w, h = self.bounds
        return (x + w // 2, y + h // 2)

    def has(self, state: str) -> bool:
        return state in self.states

    def walk(self) -> Iterator["AxNode"]:
        """This node and its descendants, breadth first."""
        queue = [self]
        while queue:
            node = queue.pop(0)
            yield node
            queue.extend(node.children)

    def find_all(self, role: Optional[str] = None, name: Optional[str] = None,
                 state: Optional[str] = None) -> List["AxNode"]:
        """Nodes at or below this one with exactly that ``role`` and ``name`` and holding
        ``state`` (each optional), breadth first."""
        return [n for n in self.walk()
                if (role is None or n.role == role) and (name is None or n.name == name)
                and (state is None or state in n.states)]

    def find(self, role: Optional[str] = None, name: Optional[str] = None,
             state: Optional[str] = None) -> Optional["AxNode"]:
        """The first node of :meth:`find_all`, or None."""
        found = self.find_all(role=role, name=name, state=state)
        return found[0] if found else None


class AxTree:
    """An app's tree as read once: ``root`` (role ``"application"``), ``nodes`` (breadth
    first), ``truncated``/``truncated_by`` (a bound cut it), ``pid``, ``bus_name``,
    ``elapsed_us``."""

    def __init__(self, obj: Mapping[str, Any]) -> None:
        self.raw: Dict[str, Any] = dict(obj)
        self.app_id: str = str(obj.get("app_id", ""))
        self.pid: int = int(obj.get("pid", 0))
        self.bus_name: str = str(obj.get("bus_name", ""))
        self.truncated: bool = bool(obj.get("truncated"))
        by = obj.get("truncated_by")
        self.truncated_by: Optional[str] = None if by is None else str(by)
        self.elapsed_us: int = int(obj.get("elapsed_us", 0))
        self.nodes: List[AxNode] = []
        for n in obj.get("nodes", []):
            b = n.get("bounds")
            bounds = None if b is None else (int(b["x"]), int(b["y"]), int(b["width"]),
                                             int(b["height"]))
            v = n.get("value")
            self.nodes.append(AxNode(
                index=int(n["index"]), depth=int(n["depth"]), role=str(n["role"]),
                name=str(n["name"]), states=frozenset(str(s) for s in n.get("states", [])),
                bounds=bounds, value=None if v is None else str(v),
                value_withheld=bool(n.get("value_withheld")),
                child_count=int(n.get("child_count", 0))))
        for n, raw in zip(self.nodes, obj.get("nodes", [])):
            p = raw.get("parent")
            if p is not None:
                n.parent = self.nodes[int(p)]
            n.children = [self.nodes[int(c)] for c in raw.get("children", [])]

    @property
    def root(self) -> AxNode:
        return self.nodes[0]

    def find_all(self, role: Optional[str] = None, name: Optional[str] = None,
                 state: Optional[str] = None) -> List[AxNode]:
        return self.root.find_all(role=role, name=name, state=state)

    def find(self, role: Optional[str] = None, name: Optional[str] = None,
             state: Optional[str] = None) -> Optional[AxNode]:
        """The first node (breadth first) with exactly that ``role`` and ``name`` and holding
        ``state`` (each optional), or None. ``tree.find(role="push button", name="OK").center``
        is where to click it."""
        return self.root.find(role=role, name=name, state=state)

    def __len__(self) -> int:
        return len(self.nodes)

    def __repr__(self) -> str:
        return (f"<evident.AxTree {len(self.nodes)} nodes pid={self.pid}"
                f"{' truncated' if self.truncated else ''}>")
