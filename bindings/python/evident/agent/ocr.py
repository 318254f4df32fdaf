"""A real, model-free policy: it reads the screen with Debian's tesseract OCR, finds a form's
labelled fields and its submit button, emits provider-native computer calls to fill it in and
submit it, and answers with the result line it reads back from the screen (docs/agents.md,
"The OCR policy").

Nothing is at known coordinates: each turn the policy OCRs the image it was shown, finds each
label's words, and takes the field to be the box drawn to the right of the label on the same row
(found in the pixels: the first run of non-background colour that is wide enough to be a field).
The button is the word(s) of its caption. Coordinates are in the image the policy was shown,
which is what the provider formats mean (the engine maps them to display pixels).

``tesseract`` runs as a subprocess (``tesseract stdin stdout --psm 11 -c thresholding_method=2
tsv``: sparse text, local thresholds) with a bounded time
and a bounded input; its TSV output is parsed into words with boxes.
"""
from __future__ import annotations

import io
import json
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import AgentError
from .policy import Observation

# Bounds checked before tesseract runs (docs/agents.md, "The OCR policy").
MAX_OCR_PNG_BYTES = 32 * 1024 * 1024
MAX_OCR_PIXELS = 4096 * 4096
DEFAULT_OCR_TIMEOUT_S = 30.0
MAX_TSV_LINES = 100_000
# Pixels whose channels all differ by at most this much from the background are background.
BACKGROUND_TOLERANCE = 8
# A field is at least this many label heights wide (a stray glyph or an icon is not a field).
MIN_FIELD_WIDTH_IN_LABEL_HEIGHTS = 2
# A run of this many background pixels ends a field.
FIELD_END_RUN = 3

# tesseract's thresholding_method 2 (Sauvola, local): the default global Otsu threshold loses dark
# text on a light window when most of the screen around it is black (an empty Xvfb root).
THRESHOLDING_SAUVOLA = 2

# Every adapter of the engine (docs/agents.md): the policy emits each one's native format.
ADAPTERS = ("evident", "anthropic-computer-20250124", "anthropic-computer-20251124",
            "anthropic-toolset-20260801", "openai-computer", "openai-computer-use-preview",
            "gemini-computer-use", "gemini-computer-use-3.5")
# The engine's per-turn bounds (protocol/evident.json task_calls_per_turn_max,
# actions_per_batch_max): the policy spreads a long fill over turns rather than be refused.
MAX_CALLS_PER_TURN = 16
MAX_ACTIONS_PER_TURN = 16

Box = Tuple[int, int, int, int]  # x, y, width, height in image pixels


@dataclass(frozen=True)
class Word:
    """One word tesseract read: its text, box (image pixels) and confidence (0..100)."""

    text: str
    left: int
    top: int
    width: int
    height: int
    conf: float

    @property
    def right(self) -> int:
        return self.left + self.width

    @property
    def bottom(self) -> int:
        return self.top + self.height


@dataclass(frozen=True)
class Line:
    """Words on one row of the screen, left to right (grouped by position, not by tesseract's
    block numbers, so sparse-text mode still gives whole lines)."""

    words: Tuple[Word, ...]

    @property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)

    @property
    def box(self) -> Box:
        return _union(self.words)


def _union(words: Sequence[Word]) -> Box:
    x0 = min(w.left for w in words)
    y0 = min(w.top for w in words)
    x1 = max(w.right for w in words)
    y1 = max(w.bottom for w in words)
    return (x0, y0, x1 - x0, y1 - y0)


def _png_size(png: bytes) -> Tuple[int, int]:
    if len(png) < 24 or png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        raise AgentError("agent-ocr-input", "the image is not a PNG")
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def tesseract_version(tesseract: str = "tesseract", timeout_s: float = 10.0) -> str:
    """``tesseract --version``'s first line, e.g. ``tesseract 5.3.0``."""
    exe = shutil.which(tesseract)
    if exe is None:
        raise AgentError("agent-ocr-unavailable", "tesseract is not installed (Debian: tesseract-ocr)")
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise AgentError("agent-ocr-failed", "tesseract --version did not answer in time") from None
    text = (out.stdout or out.stderr).decode("utf-8", "replace").strip().splitlines()
    return text[0].strip() if text else "tesseract"


def ocr_words(png: bytes, *, tesseract: str = "tesseract", timeout_s: float = DEFAULT_OCR_TIMEOUT_S,
              psm: int = 11, language: str = "eng") -> List[Word]:
    """The words tesseract reads in ``png`` (non-empty text, confidence ≥ 0), in reading order.

    ``agent-ocr-input`` for an image over the bounds (checked before tesseract runs),
    ``agent-ocr-unavailable`` when tesseract is not installed, ``agent-ocr-failed`` when it
    exits non-zero, times out or writes something that is not its TSV."""
    if len(png) > MAX_OCR_PNG_BYTES:
        raise AgentError("agent-ocr-input", f"the image is over {MAX_OCR_PNG_BYTES} bytes")
    width, height = _png_size(png)
    if width <= 0 or height <= 0 or width * height > MAX_OCR_PIXELS:
        raise AgentError("agent-ocr-input", f"the image is empty or over {MAX_OCR_PIXELS} pixels")
    exe = shutil.which(tesseract)
    if exe is None:
        raise AgentError("agent-ocr-unavailable", "tesseract is not installed (Debian: tesseract-ocr)")
    try:
        out = subprocess.run([exe, "stdin", "stdout", "--psm", str(int(psm)), "-l", language,
                              "-c", f"thresholding_method={THRESHOLDING_SAUVOLA}", "tsv"],
                             input=png, capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise AgentError("agent-ocr-failed", f"tesseract took longer than {timeout_s:g} s") from None
    if out.returncode != 0:
        raise AgentError("agent-ocr-failed", f"tesseract exited with status {out.returncode}")
    return parse_tsv(out.stdout.decode("utf-8", "replace"))


_TSV_HEADER = ["level", "page_num", "block_num", "par_num", "line_num", "word_num", "left", "top",
               "width", "height", "conf", "text"]


def parse_tsv(tsv: str) -> List[Word]:
    """Words (level 5, non-empty text, conf ≥ 0) from tesseract's TSV output."""
    rows = tsv.splitlines()
    if not rows or rows[0].split("\t") != _TSV_HEADER:
        raise AgentError("agent-ocr-failed", "tesseract's output is not its TSV format")
    if len(rows) > MAX_TSV_LINES:
        raise AgentError("agent-ocr-failed", f"tesseract's output has over {MAX_TSV_LINES} lines")
    words: List[Word] = []
    for row in rows[1:]:
        cols = row.split("\t")
        if len(cols) != len(_TSV_HEADER) or cols[0] != "5":
            continue
        text = cols[11].strip()
        try:
            left, top, width, height = (int(c) for c in cols[6:10])
            conf = float(cols[10])
        except ValueError:
            raise AgentError("agent-ocr-failed", "tesseract's TSV has a malformed word row") from None
        if text and conf >= 0:
            words.append(Word(text, left, top, width, height, conf))
    return words


def group_lines(words: Sequence[Word]) -> List[Line]:
    """Words grouped into rows: a word joins a row when its vertical centre lies within the row's
    first word's top..bottom. Rows top to bottom, words left to right."""
    rows: List[List[Word]] = []
    for w in sorted(words, key=lambda w: (w.top, w.left)):
        centre = w.top + w.height // 2
        for row in rows:
            if row[0].top <= centre <= row[0].bottom:
                row.append(w)
                break
        else:
            rows.append([w])
    return [Line(tuple(sorted(r, key=lambda w: w.left))) for r in rows]


def _norm(token: str) -> str:
    return token.strip(":.,;!?*").casefold()


def find_phrase(lines: Sequence[Line], phrase: str) -> Optional[Box]:
    """The box of the first run of consecutive words on one line that reads ``phrase``
    (case-insensitive, ignoring trailing punctuation such as a label's colon)."""
    want = [_norm(t) for t in phrase.split()]
    if not want:
        return None
    for line in lines:
        got = [_norm(w.text) for w in line.words]
        for i in range(len(got) - len(want) + 1):
            if got[i:i + len(want)] == want:
                return _union(line.words[i:i + len(want)])
    return None


def find_line_with(lines: Sequence[Line], marker: str) -> Optional[Line]:
    """The first line whose text starts with the words of ``marker`` (as :func:`find_phrase`)."""
    want = [_norm(t) for t in marker.split()]
    for line in lines:
        got = [_norm(w.text) for w in line.words]
        if want and got[:len(want)] == want:
            return line
    return None


def _image(png: bytes) -> Any:
    try:
        from PIL import Image
    except ImportError as e:  # pragma: no cover - Pillow is a Debian package here
        raise AgentError("agent-ocr-unavailable", "the OCR policy needs Pillow (Debian: python3-pil)") from e
    img = Image.open(io.BytesIO(png))
    img.load()
    return img.convert("RGB")


def _close(a: Tuple[int, int, int], b: Tuple[int, int, int]) -> bool:
    return all(abs(x - y) <= BACKGROUND_TOLERANCE for x, y in zip(a, b))


def field_right_of(image: Any, label: Box) -> Optional[Box]:
    """The field drawn to the right of ``label`` on its row: the background is the most common
    colour inside the label's box; scanning right along the label's middle row from its right
    edge, the field is the first run of other colours (border, fill and any text in it, ending
    at ``FIELD_END_RUN`` background pixels) at least ``MIN_FIELD_WIDTH_IN_LABEL_HEIGHTS`` label
    heights wide; its top and bottom are found the same way along the run's middle column."""
    lx, ly, lw, lh = label
    width, height = image.size
    pixels = image.load()
    counts: Counter[Tuple[int, int, int]] = Counter(
        pixels[x, y] for x in range(lx, min(width, lx + lw)) for y in range(ly, min(height, ly + lh)))
    if not counts:
        return None
    bg = counts.most_common(1)[0][0]
    cy = min(height - 1, ly + lh // 2)
    x = lx + lw
    min_width = MIN_FIELD_WIDTH_IN_LABEL_HEIGHTS * max(1, lh)
    while x < width:
        if _close(pixels[x, cy], bg):
            x += 1
            continue
        start, quiet, end = x, 0, x
        while x < width and quiet < FIELD_END_RUN:
            if _close(pixels[x, cy], bg):
                quiet += 1
            else:
                quiet, end = 0, x
            x += 1
        if end - start + 1 >= min_width:
            cx = (start + end) // 2
            top = bottom = cy
            while top > 0 and not _close(pixels[cx, top - 1], bg):
                top -= 1
            while bottom < height - 1 and not _close(pixels[cx, bottom + 1], bg):
                bottom += 1
            return (start, top, end - start + 1, bottom - top + 1)
    return None


def centre(box: Box) -> Tuple[int, int]:
    x, y, w, h = box
    return x + w // 2, y + h // 2


@dataclass(frozen=True)
class FormLayout:
    """Where the form's parts are in one image (image pixels)."""

    fields: Dict[str, Box]
    submit: Box


def locate_form(png: bytes, labels: Sequence[str], submit: str, *,
                words: Optional[Sequence[Word]] = None, **ocr: Any) -> FormLayout:
    """Finds each label's field and the submit button in ``png``; ``agent-ocr-target-missing``
    names which one (by position, never its text) was not found."""
    lines = group_lines(words if words is not None else ocr_words(png, **ocr))
    image = _image(png)
    fields: Dict[str, Box] = {}
    for i, label in enumerate(labels):
        box = find_phrase(lines, label)
        if box is None:
            raise AgentError("agent-ocr-target-missing", f"the label of field {i + 1} is not on screen")
        found = field_right_of(image, box)
        if found is None:
            raise AgentError("agent-ocr-target-missing", f"no field to the right of the label of field {i + 1}")
        fields[label] = found
    button = find_phrase(lines, submit)
    if button is None:
        raise AgentError("agent-ocr-target-missing", "the submit button's caption is not on screen")
    return FormLayout(fields, button)


def _squash(text: str) -> str:
    return " ".join(text.split())


@dataclass
class OcrFormPolicy:
    """Fills a form in ``stage`` and proves its result in ``attest``, reading the screen with OCR.

    ``values`` maps each field's label (as shown on screen) to the text to type; ``submit`` is
    the button's caption; ``result_marker`` the words that start the result line the app shows
    after a submit. ``adapter`` picks the provider format the calls are emitted in: any of
    :data:`ADAPTERS` (docs/agents.md, "The OCR policy", has each format's calls).

    Stage: turn 0 finds the fields and the button and fills and submits the form (per field the
    field's text selected, a triple click where the format has one, and the text typed over it;
    then a click on the button), in one turn when the format's calls fit the engine's per-turn
    bounds, else spread over the next turns. When they are not on screen yet it waits a second and looks again,
    at most ``patience`` times, then gives up (``agent-ocr-target-missing``). Later turns look for the result line; while it is not there the policy
    asks for one more screenshot, so a slow app costs a turn, not a guess. Attest: turn 0 asks
    for a screenshot (no input), turn 1 reads the result. The final answer is
    ``{"result_line": <the line as read>, "confirmed": <every value is in it>}``.
    """

    values: Mapping[str, str]
    submit: str = "Submit"
    result_marker: str = "Submitted:"
    adapter: str = "evident"
    provider: str = "evident-ocr"
    model: str = ""
    tesseract: str = "tesseract"
    timeout_s: float = DEFAULT_OCR_TIMEOUT_S
    patience: int = 2
    submitted: bool = field(default=False, init=False)
    pending: List[List[Tuple[Any, ...]]] = field(default_factory=list, init=False)
    image: Tuple[int, int] = field(default=(0, 0), init=False)  # the last observation's image size
    looks: int = field(default=0, init=False)
    turns: int = field(default=0, init=False)
    layouts: List[FormLayout] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if self.adapter not in ADAPTERS:
            raise AgentError("agent-policy-args", "the OCR policy emits the formats of the engine's adapters: "
                             + ", ".join(ADAPTERS))
        if not self.values or not all(isinstance(k, str) and k.strip() and isinstance(v, str)
                                      for k, v in self.values.items()):
            raise AgentError("agent-policy-args", "values must map non-empty labels to strings")
        if not self.model:
            self.model = tesseract_version(self.tesseract)

    @property
    def policy(self) -> Dict[str, str]:
        """The declared policy for ``task.begin``."""
        return {"adapter": self.adapter, "provider": self.provider, "model": self.model}

    # -- one turn ---------------------------------------------------------------------------
    def __call__(self, obs: Observation) -> Dict[str, Any]:
        self.turns += 1
        words = ocr_words(obs.png, tesseract=self.tesseract, timeout_s=self.timeout_s)
        lines = group_lines(words)
        self.image = (obs.width, obs.height)
        if obs.mode == "attest":
            if obs.turn == 0:
                return self._calls(obs.turn, [[("screenshot",)]])
            return self._final(lines)
        if self.pending:  # the rest of a fill that did not fit one turn
            return self._next_pack(obs.turn)
        if self.submitted:
            if find_line_with(lines, self.result_marker) is not None:
                return self._final(lines)
            if obs.turns_left > 1:
                return self._calls(obs.turn, [[("screenshot",)]])
            return self._final(lines)
        try:
            layout = locate_form(obs.png, list(self.values), self.submit, words=words)
        except AgentError as e:
            # Not (yet) on screen: look again after a second, a bounded number of times, while
            # turns remain for filling in and answering.
            if e.code != "agent-ocr-target-missing" or self.looks >= self.patience or obs.turns_left <= 2:
                raise
            self.looks += 1
            return self._calls(obs.turn, [[("wait",), ("screenshot",)]])
        self.layouts.append(layout)
        calls: List[List[Tuple[Any, ...]]] = []
        for label, text in self.values.items():
            x, y = centre(layout.fields[label])
            call: List[Tuple[Any, ...]] = [("select", x, y)]
            if text:
                call.append(("type", text, x, y))
            calls.append(call)
        calls.append([("click",) + centre(layout.submit)])
        self.pending = calls
        return self._next_pack(obs.turn)

    def _next_pack(self, turn: int) -> Dict[str, Any]:
        """The next calls of the fill that fit one turn's bounds (the submit goes last)."""
        pack: List[List[Tuple[Any, ...]]] = []
        n_calls = n_actions = 0
        while self.pending:
            c, a = _cost(self.adapter, self.pending[0])
            if pack and (n_calls + c > MAX_CALLS_PER_TURN or n_actions + a > MAX_ACTIONS_PER_TURN):
                break
            pack.append(self.pending.pop(0))
            n_calls, n_actions = n_calls + c, n_actions + a
        if not self.pending:
            self.submitted = True
        return self._calls(turn, pack)

    def _confirmed(self, line: Line) -> bool:
        text = _squash(line.text)
        return all(_squash(v) in text for v in self.values.values())

    def _final(self, lines: Sequence[Line]) -> Dict[str, Any]:
        line = find_line_with(lines, self.result_marker)
        result: Dict[str, Any] = {"result_line": _squash(line.text) if line else None,
                                  "confirmed": bool(line and self._confirmed(line))}
        return final_response(self.adapter, result, self.model, self.turns)

    # -- provider formats -------------------------------------------------------------------
    def _calls(self, turn: int, calls: Sequence[Sequence[Tuple[Any, ...]]]) -> Dict[str, Any]:
        """``calls``: per call, the policy's steps; rendered in the adapter's native format."""
        return calls_response(self.adapter, calls, self.model, self.turns, turn, self.image)


# -- the policy's steps in each adapter's native format ----------------------------------------
# A step is ("screenshot",), ("wait",) (about a second), ("select", x, y) (select the text of the
# field under image pixel (x, y), so typing replaces it), ("type", text, x, y) (type into that
# field, which was just selected) or ("click", x, y) (a left click). Coordinates are image pixels.
# Where a format has no triple click (OpenAI, Gemini 2.5) a field is selected the way any
# toolkit's line edit selects its whole line: a click, End, then Shift+Home; Gemini 2.5 has no
# plain typing either (type_text_at clicks first, losing the selection), so it deletes the
# selection (BackSpace) and types at the field.

def _grid(v: int, size: int) -> int:
    """Image pixel -> Google's 0..999 grid: the cell holding the pixel's centre, which the
    engine maps back to floor(g * D / 1000) (docs/agents.md, "Conversions")."""
    return max(0, min(999, (2 * v + 1) * 1000 // (2 * max(1, size))))


def _native(adapter: str, step: Tuple[Any, ...], image: Tuple[int, int]) -> List[Any]:
    """One step as the adapter's native actions (each one §4 action, but Gemini's type_text_at,
    which is a click and a type)."""
    kind = step[0]
    if adapter == "evident":
        if kind == "screenshot":
            return [{"type": "screenshot"}]
        if kind == "wait":
            return [{"type": "wait", "ms": 1000}]
        if kind == "select":
            return [{"type": "triple_click", "x": step[1], "y": step[2]}]
        if kind == "type":
            return [{"type": "type", "text": step[1]}]
        return [{"type": "click", "x": step[1], "y": step[2]}]
    if adapter.startswith("anthropic-"):
        if kind == "screenshot":
            return [{"action": "screenshot"}]
        if kind == "wait":
            return [{"action": "wait", "duration": 1}]
        if kind == "select":
            return [{"action": "triple_click", "coordinate": [step[1], step[2]]}]
        if kind == "type":
            return [{"action": "type", "text": step[1]}]
        return [{"action": "left_click", "coordinate": [step[1], step[2]]}]
    if adapter.startswith("openai-"):
        if kind == "screenshot":
            return [{"type": "screenshot"}]
        if kind == "wait":
            return [{"type": "wait"}]
        if kind == "select":
            return [{"type": "click", "button": "left", "x": step[1], "y": step[2]},
                    {"type": "keypress", "keys": ["END"]}, {"type": "keypress", "keys": ["SHIFT", "HOME"]}]
        if kind == "type":
            return [{"type": "type", "text": step[1]}]
        return [{"type": "click", "button": "left", "x": step[1], "y": step[2]}]
    w, h = image
    if adapter == "gemini-computer-use":  # the 2.5 function set
        if kind == "screenshot":
            return [("open_web_browser", {})]
        if kind == "wait":
            return [("wait_5_seconds", {})]
        if kind == "select":
            return [("click_at", {"x": _grid(step[1], w), "y": _grid(step[2], h)}),
                    ("key_combination", {"keys": "End"}), ("key_combination", {"keys": "shift+Home"}),
                    ("key_combination", {"keys": "BackSpace"})]
        if kind == "type":
            return [("type_text_at", {"x": _grid(step[2], w), "y": _grid(step[3], h), "text": step[1],
                                      "press_enter": False, "clear_before_typing": False})]
        return [("click_at", {"x": _grid(step[1], w), "y": _grid(step[2], h)})]
    # gemini-computer-use-3.5
    if kind == "screenshot":
        return [("take_screenshot", {})]
    if kind == "wait":
        return [("wait", {"seconds": 1})]
    if kind == "select":
        return [("triple_click", {"x": _grid(step[1], w), "y": _grid(step[2], h)})]
    if kind == "type":
        return [("type", {"text": step[1], "press_enter": False})]
    return [("click", {"x": _grid(step[1], w), "y": _grid(step[2], h)})]


def _cost(adapter: str, call: Sequence[Tuple[Any, ...]]) -> Tuple[int, int]:
    """(provider calls, §4 actions) one policy call takes in the adapter's format."""
    natives = [n for step in call for n in _native(adapter, step, (1000, 1000))]
    actions = sum(2 if isinstance(n, tuple) and n[0] == "type_text_at" else 1 for n in natives)
    if adapter in ("evident", "openai-computer"):
        return 1, actions               # one call carries several actions
    return len(natives), actions        # one call per native action


def calls_response(adapter: str, calls: Sequence[Sequence[Tuple[Any, ...]]], model: str, n: int, turn: int,
                   image: Tuple[int, int]) -> Dict[str, Any]:
    """A response with computer calls, as the adapter's provider sends it."""
    native = [[x for step in call for x in _native(adapter, step, image)] for call in calls]
    if adapter == "evident":
        return {"calls": [{"id": f"ocr-{turn}-{i}", "actions": acts} for i, acts in enumerate(native)]}
    if adapter == "anthropic-toolset-20260801":
        # a member call: named by the member, with the family in toolset_name, no "action" field
        blocks = [{"type": "tool_use", "id": f"toolu_ocr_{turn}_{i}_{j}", "name": a["action"],
                   "toolset_name": "computer", "input": {k: v for k, v in a.items() if k != "action"}}
                  for i, acts in enumerate(native) for j, a in enumerate(acts)]
        return anthropic_message(blocks, model, "tool_use", n)
    if adapter.startswith("anthropic-"):
        blocks = [{"type": "tool_use", "id": f"toolu_ocr_{turn}_{i}_{j}", "name": "computer", "input": a}
                  for i, acts in enumerate(native) for j, a in enumerate(acts)]
        return anthropic_message(blocks, model, "tool_use", n)
    if adapter == "openai-computer":
        items = [{"type": "computer_call", "id": f"cu_ocr_{turn}_{i}", "call_id": f"call_ocr_{turn}_{i}",
                  "status": "completed", "pending_safety_checks": [], "actions": acts}
                 for i, acts in enumerate(native)]
        return openai_response(items, model, n)
    if adapter == "openai-computer-use-preview":
        items = [{"type": "computer_call", "id": f"cu_ocr_{turn}_{i}_{j}", "call_id": f"call_ocr_{turn}_{i}_{j}",
                  "status": "completed", "pending_safety_checks": [], "action": a}
                 for i, acts in enumerate(native) for j, a in enumerate(acts)]
        return openai_response(items, model, n)
    parts = [{"functionCall": {"id": f"fc_ocr_{turn}_{i}_{j}", "name": name, "args": args}}
             for i, acts in enumerate(native) for j, (name, args) in enumerate(acts)]
    return gemini_response(parts, model)


def final_response(adapter: str, result: Mapping[str, Any], model: str, n: int) -> Dict[str, Any]:
    """The final answer ``result`` (one JSON object) where the adapter's provider puts text."""
    if adapter == "evident":
        return {"result": dict(result)}
    text = json.dumps(result, ensure_ascii=False)
    if adapter.startswith("anthropic-"):
        return anthropic_message([{"type": "text", "text": text}], model, "end_turn", n)
    if adapter.startswith("openai-"):
        return openai_response([{"type": "message", "id": f"msg_ocr_{n:04d}", "role": "assistant",
                                 "status": "completed",
                                 "content": [{"type": "output_text", "text": text, "annotations": []}]}], model, n)
    return gemini_response([{"text": text}], model)


def openai_response(output: List[Dict[str, Any]], model: str, n: int) -> Dict[str, Any]:
    """A Responses API response as the API returns it."""
    return {"id": f"resp_ocr_{n:04d}", "object": "response", "status": "completed", "model": model,
            "output": output}


def gemini_response(parts: List[Dict[str, Any]], model: str) -> Dict[str, Any]:
    """A generateContent response (REST, camelCase) as the API returns it."""
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
            "modelVersion": model}


def anthropic_message(content: List[Dict[str, Any]], model: str, stop_reason: str, n: int) -> Dict[str, Any]:
    """A Messages API assistant message as the API returns it."""
    return {"id": f"msg_ocr_{n:04d}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0}}


__all__ = ["ADAPTERS", "FormLayout", "Line", "OcrFormPolicy", "Word", "anthropic_message", "calls_response",
           "field_right_of", "final_response", "find_line_with", "find_phrase", "gemini_response", "group_lines",
           "locate_form", "ocr_words", "openai_response", "parse_tsv", "tesseract_version"]
