"""OCR waits (display.read_text / display.find_text) through Debian's tesseract, against a real Tk
app that shows known text and writes where it drew it (its own geometry, not the engine's)."""
import json
import time

import pytest

import evident
from procs import inside, text_app_argv

@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with evident.Engine(state_dir=str(tmp_path_factory.mktemp("state"))) as e:
        yield e


@pytest.fixture
def display(engine):
    with engine.create_display(width=640, height=480) as d:
        yield d


def test_find_text_waits_for_text_that_appears_and_read_text_reads_it(display, tmp_path):
    geo = tmp_path / "geo.json"
    display.launch(text_app_argv(geo, second_line="Submit Invoice Now"), wait_window_ms=15000)
    w = display.wait_window(title="evident-ocr", timeout=5)
    region = (w.x, w.y, w.width, w.height)
    # The second line is drawn 800 ms after start: find_text waits for it, driven by changes.
    r = display.find_text("submit invoice now", region, timeout=20)
    assert r.outcome == "found" and r.raw["checks"] >= 1 and not r.raw["cut_short"]
    evident.wait_for(geo.exists, 10, "the app's geometry file")
    boxes = json.loads(geo.read_text())
    found = r.raw["box"]
    assert inside((found["x"], found["y"], found["width"], found["height"]), boxes["b"])
    # read_text: both lines, in display coordinates, where Tk drew them.
    text = display.read_text(region)
    assert "Quarterly Report Ready" in text.text and "Submit Invoice Now" in text.text
    assert text.region == region
    assert inside(text.find("Quarterly Report"), boxes["a"])
    assert text.find("no such words") is None


def test_find_text_that_never_appears_times_out_after_one_read_of_an_idle_screen(display, tmp_path):
    geo = tmp_path / "geo.json"
    display.launch(text_app_argv(geo, second_line="Submit Invoice Now"), wait_window_ms=15000)
    evident.wait_for(geo.exists, 10, "the second line")
    w = display.wait_window(title="evident-ocr", timeout=5)
    display.wait_stable(timeout=5)
    t0 = time.monotonic()
    with pytest.raises(evident.WaitTimeout) as info:
        display.find_text("Cancel Order", (w.x, w.y, w.width, w.height), timeout=2.5)
    elapsed = time.monotonic() - t0
    raw = info.value.result.raw
    assert raw["outcome"] == "timeout" and raw["box"] is None
    assert 2.5 <= elapsed < 2.5 + 2.0
    # Nothing changed on screen, so one OCR pass was all (no polling), and it read words.
    assert raw["checks"] == 1 and raw["last_words"] >= 6
    r = display.find_text("Cancel Order", timeout=0.5, raise_on_timeout=False)
    assert r.outcome == "timeout" and not r.reached


def test_text_waits_refuse_bad_input_before_any_ocr(display):
    for bad in ("", "   ", "x" * 2000):
        with pytest.raises(ValueError):
            display.find_text(bad, timeout=1)
    for region in ((0, 0, 0, 10), (600, 0, 100, 10), (-1, 0, 10, 10)):
        with pytest.raises(ValueError):
            display.read_text(region)
    for timeout in (0, -1, 121):
        with pytest.raises(ValueError):
            display.read_text(timeout=timeout)


def test_wait_pixels_until_differs(display, tmp_path):
    ref = display.screenshot().image().crop((0, 0, 40, 40))
    path = str(tmp_path / "ref.png")
    ref.save(path)
    # An idle screen never differs from itself.
    r = display.wait_pixels(reference=path, at=(0, 0), until="differs", timeout=0.3,
                            raise_on_timeout=False)
    assert r.outcome == "timeout" and r.raw["until"] == "differs" and r.raw["checks"] == 1
    # A window drawn over the corner makes it differ.
    display.launch(["xmessage", "-geometry", "+0+0", "differs"])
    r = display.wait_pixels(reference=path, at=(0, 0), until="differs", timeout=10)
    assert r.outcome == "matched" and r.raw["last"]["matching"] < 1600
    with pytest.raises(ValueError):
        display.wait_pixels((0, 0, 4, 4), color="#000000", until="differs", timeout=1)
    with pytest.raises(evident.UsageError):
        display.wait_pixels(reference=path, at=(0, 0), until="sometimes", timeout=1)


def test_the_pytest_plugins_display_finds_text(evident_display, tmp_path):
    geo = tmp_path / "geo.json"
    evident_display.launch(text_app_argv(geo, second_line="Submit Invoice Now"), wait_window_ms=15000)
    assert evident_display.find_text("Quarterly Report", timeout=20).outcome == "found"
