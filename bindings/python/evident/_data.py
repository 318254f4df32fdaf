"""The package's value types: what the engine's replies are turned into.

Everything here is plain data built from a reply (``from_json``) plus small pure helpers; nothing
here calls the engine or knows a resource class (``Display``, ``App``, ``Browser``, ``Session``).
The resources and the action builders import these types from here, so the import graph has no
cycle (docs/python.md, "Package layout"). Each type keeps its public home: ``evident.Png``,
``evident.actions.PngInfo``, ``evident.windows.Window``, ...
"""
from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from typing import (TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Tuple, Type,
                    TypeVar, Union)

from .errors import ActionError

if TYPE_CHECKING:  # pragma: no cover - Pillow's types, for the annotations only
    from PIL import Image as _PILImage

__all__ = [
    "Action", "Settle", "Region", "PngInfo", "Png", "ActionResult", "Observation", "BatchResult",
    "DisplayStatus", "Window", "WaitResult", "ElementBox",
]

_T = TypeVar("_T")

Action = Dict[str, Any]
"""One action: the exact JSON object the engine expects (``{"type": "click", "x": 1, ...}``)."""
Settle = Union[bool, int]
"""``settle`` of a batch: ``False``, ``True`` (the default cap) or a cap in milliseconds."""
Region = Union[Tuple[int, int, int, int], Mapping[str, int]]
"""``(x, y, width, height)`` or ``{"x", "y", "width", "height"}`` in display pixels."""


def _open_image(data: bytes) -> "_PILImage.Image":
    try:
        from PIL import Image
    except ImportError as e:  # pragma: no cover - Pillow is a Debian package here
        raise ImportError("Png.image() needs Pillow (Debian: python3-pil)") from e
    img = Image.open(io.BytesIO(data))
    img.load()
    return img


def _built(cls: Type[_T], values: Dict[str, Any]) -> _T:
    """An instance of the frozen dataclass ``cls`` holding ``values`` (every field, in field
    order): what its ``__init__`` builds, without the ``object.__setattr__`` call per field that
    a frozen ``__init__`` makes (a third of building a click's result; docs/performance.md, "The
    per-call cost"). Only for the classes below themselves; a subclass gets its own ``__init__``."""
    obj: _T = object.__new__(cls)
    obj.__dict__.update(values)
    return obj


@dataclass(frozen=True)
class PngInfo:
    """A PNG written by the engine: ``{"path","sha256","byte_length","width","height"}``."""

    path: Optional[str]
    sha256: str
    byte_length: int
    width: int
    height: int

    @classmethod
    def from_json(cls, obj: Optional[Mapping[str, Any]]) -> Optional["PngInfo"]:
        if not obj:
            return None
        path = obj.get("path")
        return cls(None if path is None else str(path), str(obj.get("sha256", "")),
                   int(obj.get("byte_length", 0)), int(obj.get("width", 0)),
                   int(obj.get("height", 0)))

    def without_path(self) -> "PngInfo":
        """The same frame's metadata for bytes whose file is gone (a private temporary file)."""
        return PngInfo(None, self.sha256, self.byte_length, self.width, self.height)

    def read_bytes(self) -> bytes:
        if not self.path:
            raise FileNotFoundError("this PNG has no path")
        with open(self.path, "rb") as f:
            return f.read()

    def image(self) -> "_PILImage.Image":
        """The frame as a Pillow ``Image`` (requires Pillow)."""
        return Png(self.read_bytes(), info=self).image()


class Png(bytes):
    """PNG bytes, with the engine's metadata (``sha256``, ``width``, ``height``, ``path``)."""

    info: Optional[PngInfo]

    def __new__(cls, data: bytes, info: Optional[PngInfo] = None) -> "Png":
        obj = super().__new__(cls, data)
        obj.info = info
        return obj

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self).hexdigest()

    @property
    def width(self) -> int:
        return int.from_bytes(self[16:20], "big")

    @property
    def height(self) -> int:
        return int.from_bytes(self[20:24], "big")

    def image(self) -> "_PILImage.Image":
        """The PNG decoded by Pillow (``PIL.Image.Image``, mode RGB). Requires python3-pil."""
        return _open_image(bytes(self))

    def save(self, path: str) -> str:
        with open(path, "wb") as f:
            f.write(self)
        return path


@dataclass(frozen=True)
class ActionResult:
    """One action's outcome: ``{"index","type","status","detail"}`` plus any extra fields."""

    index: int
    type: str
    status: str
    detail: str
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "ActionResult":
        values: Dict[str, Any] = {
            "index": int(obj.get("index", 0)), "type": str(obj.get("type", "")),
            "status": str(obj.get("status", "")), "detail": str(obj.get("detail", "")),
            "raw": dict(obj)}
        return _built(cls, values) if cls is ActionResult else cls(**values)

    @property
    def ok(self) -> bool:
        """True for ``ok`` and ``injected`` (events delivered), False for ``failed``."""
        return self.status in ("ok", "injected")

    @property
    def verified(self) -> bool:
        """True only for ``ok``: the intended effect was verified."""
        return self.status == "ok"

    @property
    def png(self) -> Optional[PngInfo]:
        """For screenshot/zoom results that carry a PNG."""
        return PngInfo.from_json(self.raw.get("png"))

    def check(self) -> "ActionResult":
        """Returns self, or raises ``ActionError("action-failed")`` if the status is failed."""
        if self.status == "failed":
            raise ActionError("action-failed", f"{self.type} #{self.index} failed: {self.detail}")
        return self


@dataclass(frozen=True)
class Observation:
    """A batch's observation: ``kind`` ``pixels`` (``png``), ``ax`` (``ax``: the display's
    accessibility tree as text, docs/accessibility.md) or ``none`` (``reason`` says why)."""

    kind: str
    reason: str
    png: Optional[PngInfo]
    ax: Optional[Mapping[str, Any]] = None

    @classmethod
    def from_json(cls, obj: Optional[Mapping[str, Any]]) -> Optional["Observation"]:
        if not obj:
            return None
        ax = obj.get("ax")
        values: Dict[str, Any] = {
            "kind": str(obj.get("kind", "")), "reason": str(obj.get("reason", "")),
            "png": PngInfo.from_json(obj.get("png")),
            "ax": dict(ax) if isinstance(ax, Mapping) else None}
        return _built(cls, values) if cls is Observation else cls(**values)

    @property
    def text(self) -> Optional[str]:
        """``observe="ax"``: one line per node (``[INDEX] ROLE "NAME" center=X,Y box=X,Y,WxH
        value="…" {states}``, indented by depth); None for other kinds."""
        return None if self.ax is None else str(self.ax.get("text", ""))

    @property
    def truncated(self) -> bool:
        """``observe="ax"``: a bound (``ax["truncated_by"]``) left part of the tree out."""
        return bool(self.ax and self.ax.get("truncated"))


@dataclass(frozen=True)
class BatchResult:
    """A batch response: ``results``, ``observation`` and ``settle``."""

    results: List[ActionResult]
    observation: Optional[Observation]
    settle: Mapping[str, Any]
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "BatchResult":
        values: Dict[str, Any] = {
            "results": [ActionResult.from_json(r) for r in obj.get("results", [])],
            "observation": Observation.from_json(obj.get("observation")),
            "settle": dict(obj.get("settle") or {}), "raw": dict(obj)}
        return _built(cls, values) if cls is BatchResult else cls(**values)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    def check(self) -> "BatchResult":
        """Returns self, or raises ActionError for the first failed result."""
        for r in self.results:
            r.check()
        return self

    def __iter__(self) -> Iterator[ActionResult]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, i: int) -> ActionResult:
        return self.results[i]


@dataclass(frozen=True)
class DisplayStatus:
    """``display status``: readiness layers probed fresh (``unknown`` counts as not ready), and
    the keyboard layout the server reports (``"us"`` by default; docs/displays.md)."""

    ready: bool
    layers: List[Dict[str, Any]]
    keyboard_layout: Optional[str] = None
    # On a managed display: {"managed", "fitted", "focused"} counts of the window keeper.
    window_keeper: Optional[Dict[str, int]] = None

    def layer(self, name: str) -> Optional[Dict[str, Any]]:
        return next((x for x in self.layers if x.get("name") == name), None)


@dataclass(frozen=True)
class Window:
    """One top-level window as the engine listed it (ids are X window ids)."""

    id: int
    title: str
    wm_class: str
    instance: str
    pid: Optional[int]
    pid_source: Optional[str]
    x: int
    y: int
    width: int
    height: int
    mapped: bool
    focused: bool
    override_redirect: bool
    raw: Dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "Window":
        pid_source = obj.get("pid_source")
        return cls(int(obj["id"]), str(obj.get("title", "")), str(obj.get("class", "")),
                   str(obj.get("instance", "")),
                   None if obj.get("pid") is None else int(obj["pid"]),
                   None if pid_source is None else str(pid_source),
                   int(obj.get("x", 0)), int(obj.get("y", 0)), int(obj.get("width", 0)),
                   int(obj.get("height", 0)), bool(obj.get("mapped")), bool(obj.get("focused")),
                   bool(obj.get("override_redirect")), dict(obj))

    @property
    def region(self) -> Tuple[int, int, int, int]:
        """``(x, y, width, height)`` in display pixels."""
        return (self.x, self.y, self.width, self.height)


@dataclass(frozen=True)
class WaitResult:
    """What a wait reached: ``outcome`` (``found``/``stable``/``matched`` or ``timeout``),
    ``elapsed_ms``, and the op's whole reply in ``raw``."""

    outcome: str
    elapsed_ms: int
    raw: Dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def reached(self) -> bool:
        return self.outcome != "timeout"

    @property
    def window(self) -> Optional[Window]:
        w = self.raw.get("window")
        return Window.from_json(w) if isinstance(w, Mapping) else None

    @property
    def match(self) -> Optional["ImageMatch"]:
        """``wait_image``: where the template was found (``None`` on timeout)."""
        m = self.raw.get("match")
        return ImageMatch.from_json(m) if isinstance(m, Mapping) else None


@dataclass(frozen=True)
class ImageMatch:
    """Where a template image was found on the display (``find_image``/``wait_image``):
    the match's box in display pixels and its score (OpenCV's normalised correlation
    coefficient, ``score_permille`` / 1000; 1.0 for an exact copy)."""

    x: int
    y: int
    width: int
    height: int
    score_permille: int

    @property
    def score(self) -> float:
        return self.score_permille / 1000.0

    @property
    def center(self) -> Tuple[int, int]:
        return (self.x + self.width // 2, self.y + self.height // 2)

    @property
    def region(self) -> Tuple[int, int, int, int]:
        return (self.x, self.y, self.width, self.height)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "ImageMatch":
        return cls(int(obj["x"]), int(obj["y"]), int(obj["width"]), int(obj["height"]),
                   int(obj["score_permille"]))


@dataclass(frozen=True)
class ElementBox:
    """An element's border box on the display, in screen pixels (integers)."""

    x: int
    y: int
    width: int
    height: int
    center_x: int
    center_y: int
    in_viewport: bool

    @property
    def center(self) -> Tuple[int, int]:
        return (self.center_x, self.center_y)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "ElementBox":
        return cls(int(obj["x"]), int(obj["y"]), int(obj["width"]), int(obj["height"]),
                   int(obj["center_x"]), int(obj["center_y"]), bool(obj["in_viewport"]))
