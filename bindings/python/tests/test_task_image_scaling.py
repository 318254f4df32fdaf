"""Image scaling end to end (docs/agents.md "Image scaling", "Conversions"; docs/receipts.md §12):
an Anthropic task on a display larger than the adapter's image bound, through the real task lane
(in-process engine, its own Xvfb, the C++ fixture app, which logs the root coordinates of every
button press it receives).

What is checked, with every expected value computed here from the documented rules (never from
the engine's answer):

- the image the policy is given (the snapshot's ``frame``, the ``tool_results`` image) is the
  scaled copy with the documented size (1920x1080 -> 1461x821, the 1,200,000 px area bound;
  3000x400 -> 1568x209, the 1568 px long-edge bound), and its pixels show the display: the
  fixture's counter, whose colour a click changes, is seen at the scaled place in the right
  colour before and after the click;
- a click given in the model image's coordinates lands in the app at the display pixel under
  the centre of the model pixel, ``floor((2x+1)*D/(2*I))``: the points are chosen where that
  rule differs from plain flooring and from rounding, so another rule fails; the last model
  pixel reaches the last display pixel; a coordinate just outside the image (inside the
  display) is refused with ``task-action-forbidden`` and sends nothing;
- the receipt's turn events carry ``model_image_sha256`` (the image the policy was given) and
  ``frame_sha256`` (the display frame it was made from): different, both files in the evidence
  directory hashing to their names, of the two sizes; ``evident verify --frames --key`` and the
  independent Python verifier accept the receipt.
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from PIL import Image

import evident
from evident import TaskError, wait_for
from evident.agent import Observation, run_task
from evident_bin import find_evident_bin

EVIDENT = find_evident_bin()
FIXTURE_APP = (Path(EVIDENT).resolve().parents[2] / "fixtures" / "app" / "evident-fixture-app"
               if EVIDENT else None)
pytestmark = pytest.mark.skipif(FIXTURE_APP is None or not FIXTURE_APP.exists(),
                                reason="needs the evident binary and evident-fixture-app built")

ADAPTER = "anthropic-computer-20250124"
POLICY = {"adapter": ADAPTER, "provider": "anthropic", "model": "scripted-test"}
APP_W, APP_H = 640, 480
# The fixture's layout (fixtures/app/README.md), window coordinates, inclusive.
BUTTON = (20, 100, 219, 159)
COUNTER = (240, 100, 439, 159)
GREY, RED, BLUE, ORANGE = (0x80, 0x80, 0x80), (0xFF, 0, 0), (0x20, 0x50, 0xC0), (0xE0, 0x80, 0x20)


# ---- the documented rules, written out here -----------------------------------------------

def anthropic_image_size(w: int, h: int) -> Tuple[int, int]:
    """docs/agents.md: the largest long edge L <= min(long edge, 1568) such that
    floor(w*L/long) * floor(h*L/long) <= 1,200,000 (aspect kept). Searched downwards, one by one."""
    long_edge = max(w, h)
    for edge in range(min(long_edge, 1568), 0, -1):
        sw, sh = w * edge // long_edge, h * edge // long_edge
        if sw * sh <= 1_200_000:
            return sw, sh
    raise AssertionError("no size fits")


def to_display(v: int, image: int, display: int) -> int:
    """docs/agents.md Conversions: the display pixel under the centre of model pixel v."""
    return (2 * v + 1) * display // (2 * image)


def distinguishing(lo: int, hi: int, image: int, display: int) -> int:
    """A model coordinate mapping into display [lo, hi] where the centre rule differs from
    flooring v*D/I and from rounding it: a click there tells the rules apart."""
    for v in range(image):
        d = to_display(v, image, display)
        if lo <= d <= hi and d != v * display // image and d != (2 * v * display + image) // (2 * image):
            return v
    raise AssertionError(f"no distinguishing coordinate for {lo}..{hi}")


def covered(rect: Tuple[int, int, int, int], image: Tuple[int, int], display: Tuple[int, int]) -> Tuple[int, int]:
    """A model pixel whose whole display area (x*D/I .. (x+1)*D/I) lies inside ``rect`` (display
    coordinates, inclusive): its colour is the rectangle's, however the area is averaged."""
    (x0, y0, x1, y1), (iw, ih), (dw, dh) = rect, image, display
    xs = [x for x in range(iw) if x * dw >= x0 * iw and (x + 1) * dw <= (x1 + 1) * iw]
    ys = [y for y in range(ih) if y * dh >= y0 * ih and (y + 1) * dh <= (y1 + 1) * ih]
    assert xs and ys, rect
    return xs[len(xs) // 2], ys[len(ys) // 2]


def png_size(png: bytes) -> Tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def pixel(png: bytes, x: int, y: int) -> Tuple[int, int, int]:
    with Image.open(io.BytesIO(png)) as im:
        return tuple(im.convert("RGB").getpixel((x, y)))  # type: ignore[return-value]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_log(path: Path) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def presses(path: Path) -> List[Tuple[int, int]]:
    return [(e["x_root"], e["y_root"]) for e in read_log(path) if e["type"] == "button_press"]


def click(call_id: str, x: int, y: int) -> Dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "computer",
            "input": {"action": "left_click", "coordinate": [x, y]}}


def message(*blocks: Dict[str, Any]) -> Dict[str, Any]:
    return {"id": "msg", "type": "message", "role": "assistant", "model": "scripted-test",
            "content": list(blocks)}


def final(obj: Dict[str, Any]) -> Dict[str, Any]:
    return message({"type": "text", "text": json.dumps(obj)})


# ---- the world: one engine per display size -----------------------------------------------

@pytest.fixture(scope="module", params=[(1920, 1080), (3000, 400)], ids=["1920x1080-area", "3000x400-long-edge"])
def world(request, tmp_path_factory):
    width, height = request.param
    state = tmp_path_factory.mktemp("state")
    log = state / "fixture.jsonl"
    app_h = min(APP_H, height)
    origin = (width - APP_W, height - app_h)   # bottom right: the last display pixel is the app's
    with evident.Engine(state_dir=str(state)) as engine:
        with engine.create_display(width=width, height=height) as display:
            app = display.launch([str(FIXTURE_APP), "--events", str(log), "--x", str(origin[0]),
                                  "--y", str(origin[1]), "--height", str(app_h)], wait_window_ms=10000)
            ready = wait_for(lambda: next((e for e in read_log(log) if e["type"] == "ready"), None),
                             timeout=10, what="the fixture's ready line")
            assert (ready["x"], ready["y"]) == origin
            yield {"engine": engine, "display": display, "app": app, "log": log, "state": state,
                   "size": (width, height), "origin": origin}


def root_rect(rect: Tuple[int, int, int, int], origin: Tuple[int, int]) -> Tuple[int, int, int, int]:
    return rect[0] + origin[0], rect[1] + origin[1], rect[2] + origin[0], rect[3] + origin[1]


def test_a_click_in_model_image_coordinates_lands_at_the_mapped_display_pixel(world, tmp_path):
    (dw, dh), origin, log = world["size"], world["origin"], world["log"]
    iw, ih = anthropic_image_size(dw, dh)
    assert (iw, ih) < (dw, dh)
    if (dw, dh) == (1920, 1080):
        assert (iw, ih) == (1461, 821)          # docs/agents.md's worked example
    counter, button = root_rect(COUNTER, origin), root_rect(BUTTON, origin)
    # Inner margins keep each click well inside its rectangle.
    p1 = (distinguishing(counter[0] + 5, counter[2] - 5, iw, dw), distinguishing(counter[1] + 5, counter[3] - 5, ih, dh))
    p2 = (distinguishing(button[0] + 5, button[2] - 5, iw, dw), distinguishing(button[1] + 5, button[3] - 5, ih, dh))
    corner = (iw - 1, ih - 1)
    expected = [(to_display(x, iw, dw), to_display(y, ih, dh)) for x, y in (p1, p2, corner)]
    assert expected[2] == (dw - 1, dh - 1)
    counter_px, button_px = covered(counter, (iw, ih), (dw, dh)), covered(button, (iw, ih), (dw, dh))

    seen: List[Observation] = []
    before, logged = len(presses(log)), len(read_log(log))

    def policy(obs: Observation) -> Dict[str, Any]:
        seen.append(obs)
        assert (obs.width, obs.height) == (iw, ih) == png_size(obs.png)
        assert obs.sha256 == sha(obs.png) and obs.frame_sha256 != obs.sha256
        if obs.turn == 0:
            assert pixel(obs.png, *counter_px) == GREY and pixel(obs.png, *button_px) == BLUE
            return message(click("toolu_1", *p1))
        if obs.turn == 1:
            # The answer to call toolu_1 is this very image: the scaled frame after the click.
            images = [b for r in obs.tool_results["content"] for b in r["content"] if b["type"] == "image"]
            assert [r["tool_use_id"] for r in obs.tool_results["content"]] == ["toolu_1"]
            assert [sha(image_bytes(b)) for b in images] == [obs.sha256]
            assert pixel(obs.png, *counter_px) == RED and pixel(obs.png, *button_px) == BLUE
            return message(click("toolu_2", *p2), click("toolu_3", *corner))
        assert pixel(obs.png, *button_px) == ORANGE and pixel(obs.png, *counter_px) == RED
        return final({"clicks": 3})

    run = run_task(world["display"], world["app"], policy, task="click the counter", **POLICY)
    assert run.result == {"clicks": 3}
    # The app received exactly the three presses, each at the mapped display pixel.
    assert presses(log)[before:] == expected
    events = read_log(log)[logged:]          # the app is fresh: counter 0 (grey), button blue
    assert [e["value"] for e in events if e["type"] == "counter"] == [1]
    assert [e["color"] for e in events if e["type"] == "button_clicked"] == ["orange"]

    # The receipt: per turn the image the policy was given and the display frame it came from.
    ev = Path(run.evidence_dir)
    turns = [e for e in run.receipt["transcript"] if e["kind"] == "turn"]
    assert [t["model_image_sha256"] for t in turns] == run.shown == [o.sha256 for o in seen]
    assert [t["frame_sha256"] for t in turns] == [o.frame_sha256 for o in seen]
    for t in turns:
        assert t["model_image_sha256"] != t["frame_sha256"]
        model_png = (ev / (t["model_image_sha256"] + ".png")).read_bytes()
        frame_png = (ev / (t["frame_sha256"] + ".png")).read_bytes()
        assert sha(model_png) == t["model_image_sha256"] and sha(frame_png) == t["frame_sha256"]
        assert png_size(model_png) == (iw, ih) and png_size(frame_png) == (dw, dh)
    # The display frames show the counter and the button at display coordinates.
    last = (ev / (turns[-1]["frame_sha256"] + ".png")).read_bytes()
    assert pixel(last, counter[0] + 2, counter[1] + 2) == RED
    assert pixel(last, button[0] + 2, button[1] + 2) == ORANGE

    pub = str(world["state"] / "keys" / "signing.pub")
    p = subprocess.run([EVIDENT, "verify", run.receipt_path, "--frames", str(ev), "--key", pub, "--json"],
                       capture_output=True, text=True, timeout=60)
    out = json.loads(p.stdout)
    assert p.returncode == 0 and out["ok"] is True and out["authenticated"] is True, p.stdout
    assert "frames" in [c["name"] for c in out["checks"] if c["ok"]]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    p = subprocess.run([sys.executable, "-m", "evident.verify", run.receipt_path, "--frames", str(ev),
                        "--key", pub, "--json"], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0 and json.loads(p.stdout)["authenticated"] is True, p.stdout


def image_bytes(block: Dict[str, Any]) -> bytes:
    assert block["source"]["media_type"] == "image/png"
    return base64.b64decode(block["source"]["data"], validate=True)


def test_a_coordinate_outside_the_model_image_is_refused_and_sends_nothing(world):
    """x = image width is inside the display (which is wider) but outside what the model was
    shown: the whole turn is refused before anything runs. A marker click afterwards is the
    only press the app logs."""
    (dw, dh), log = world["size"], world["log"]
    iw, ih = anthropic_image_size(dw, dh)
    before = len(presses(log))
    bad = message(click("toolu_ok", iw - 1, ih - 1), click("toolu_out", iw, 0))
    with pytest.raises(TaskError) as info:
        run_task(world["display"], world["app"], lambda obs: bad, task="out of bounds", **POLICY)
    assert info.value.code == "task-action-forbidden"
    bad_y = message(click("toolu_out", 0, ih))
    with pytest.raises(TaskError) as info:
        run_task(world["display"], world["app"], lambda obs: bad_y, task="out of bounds", **POLICY)
    assert info.value.code == "task-action-forbidden"
    script = iter([message(click("toolu_marker", iw - 1, ih - 1)), final({"marker": True})])
    run_task(world["display"], world["app"], lambda obs: next(script), task="marker", **POLICY)
    assert presses(log)[before:] == [(dw - 1, dh - 1)]
