"""`evident report` of a real session, opened in a real headless Chromium from Debian.

A real session on a real Xvfb drives the fixture app (click, scroll, drag, click, type, wait),
finishes with claims built to break out of HTML, and `evident report` (the CLI) writes the page.
Chromium then proves, through the DevTools protocol:

* the page makes no request but itself and data: URIs (and a control page with one external
  image shows that such a request would be seen), runs no script and violates no CSP rule;
* its DOM has one row per transcript event, in order, with the receipt's frame digests; every
  embedded frame (the computed background image, decoded) is the evidence file of that digest;
  action rows show the frame before and after and draw geometry for pointer actions only;
* a screenshot decoded by Pillow shows the green verdict, the observed frame's pixels where the
  page puts it, and the geometry's colour over a click's frame.
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from PIL import Image

import evident
from evident import actions as a

import headless_chromium

REPO = Path(__file__).resolve().parents[3]
EVIDENT_BIN = os.environ.get("EVIDENT_BIN", str(REPO / "build" / "engine" / "cli" / "evident"))
FIXTURE_APP = Path(EVIDENT_BIN).resolve().parents[2] / "fixtures" / "app" / "evident-fixture-app"
GEOMETRY_RGB = (0xD3, 0x18, 0x6B)
VERDICT_OK_RGB = (0x1A, 0x7F, 0x37)
TYPED = "evident-zq7"

pytestmark = [
    pytest.mark.skipif(not headless_chromium.available(), reason="needs /usr/bin/chromium"),
    pytest.mark.skipif(not os.access(EVIDENT_BIN, os.X_OK), reason="needs the evident CLI built"),
    pytest.mark.skipif(not FIXTURE_APP.exists(), reason="needs evident-fixture-app built"),
]


@pytest.fixture(scope="module")
def evidence(tmp_path_factory):
    """A real session's evidence directory and its receipt."""
    tmp = tmp_path_factory.mktemp("report-session")
    log = tmp / "events.jsonl"
    with evident.Engine(state_dir=str(tmp / "state")) as engine:
        with engine.create_display(width=640, height=480) as display:
            app = display.launch([str(FIXTURE_APP), "--events", str(log)], wait_window_ms=10000)
            evident.wait_for(lambda: log.exists() and '"ready"' in log.read_text(), 10,
                             "the fixture app's ready event")
            job = hashlib.sha256(b"report chromium test").hexdigest()
            with display.session(app, attempt_id="report<&>'\"", job_sha256=job) as s:
                s.actions([a.click(100, 130), a.scroll(300, 300, "down", 2),
                           a.drag(40, 220, 300, 420), a.click(300, 40), a.type(TYPED),
                           a.wait(200)])
                s.freeze()
                s.observe()
                s.finish({"note": "<script>document.title='pwned'</script>",
                          "link": "http://example.invalid/x.png", "quote": "</pre>\"'&"})
            evidence_dir = Path(s.evidence_dir)
    receipt = json.loads((evidence_dir / "receipt.json").read_text())
    return evidence_dir, receipt


@pytest.fixture(scope="module")
def report(evidence, tmp_path_factory):
    evidence_dir, _ = evidence
    out = tmp_path_factory.mktemp("report-out") / "report.html"
    proc = subprocess.run([EVIDENT_BIN, "--json", "report", str(evidence_dir), "-o", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["ok"] is True and result["report"]["path"] == str(out)
    assert result["report"]["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    return out, result


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = headless_chromium.HeadlessChromium(str(tmp_path_factory.mktemp("chromium-profile")))
    try:
        yield b
    finally:
        b.close()


def test_page_is_self_contained_in_its_text(report):
    out, _ = report
    html = out.read_text(encoding="utf-8")
    assert "<script" not in html.lower()
    assert not re.search(r"\s(src|href|action|formaction|poster|srcset|background)\s*=", html, re.I)
    assert "@import" not in html
    assert all(m.startswith("data:") for m in re.findall(r"url\(\s*['\"]?([^)'\"]*)", html))
    assert TYPED not in html
    assert "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in html


def test_chromium_loads_it_without_any_request_leaving_the_file(report, browser, tmp_path):
    out, _ = report
    # Control: a page with one external image. Its request must be seen, or the check below
    # could not fail.
    control = tmp_path / "control.html"
    control.write_text('<!DOCTYPE html><img src="http://127.0.0.1:9/evident-control.png">')
    page = browser.open_page(800, 600)
    browser.navigate(page, control.as_uri())
    assert "http://127.0.0.1:9/evident-control.png" in browser.requests(page)

    page = browser.open_page(1280, 900)
    seconds = browser.navigate(page, out.as_uri())
    print(f"report page load in headless Chromium: {seconds * 1000:.0f} ms")
    requests = browser.requests(page)
    assert requests and requests[0] == out.as_uri()
    assert all(u == out.as_uri() or u.startswith("data:") for u in requests), requests
    assert browser.console(page) == []          # no CSP violation, no exception, no console
    assert browser.evaluate(page, "document.scripts.length") == 0
    assert browser.evaluate(page, "document.title").startswith("Evident evidence: ses-")


def _rows(browser, page):
    return browser.evaluate(page, """
      [...document.querySelectorAll('li.event')].map(li => ({
        index: +li.dataset.index, kind: li.dataset.kind, frame: li.dataset.frameSha256,
        action: li.dataset.action || null, projection: li.dataset.projection || null,
        geoms: li.querySelectorAll('g.geom').length,
        rings: [...li.querySelectorAll('g.mark circle')].map(c => [+c.getAttribute('cx'),
                                                                   +c.getAttribute('cy')]),
        lines: [...li.querySelectorAll('g.mark line')].map(l => ['x1', 'y1', 'x2', 'y2'].map(
                  k => +l.getAttribute(k))),
        figures: [...li.querySelectorAll('.frame')].map(f => ({
          sha: f.dataset.frameSha256, bg: getComputedStyle(f).backgroundImage}))}))""")


def _decode_bg(bg: str) -> bytes:
    m = re.fullmatch(r'url\("data:image/png;base64,([A-Za-z0-9+/=]+)"\)', bg)
    assert m, bg[:80]
    return base64.b64decode(m.group(1))


def test_dom_has_one_row_per_event_with_the_receipts_frames(evidence, report, browser):
    evidence_dir, receipt = evidence
    out, result = report
    page = browser.open_page(1280, 900)
    browser.navigate(page, out.as_uri())
    rows = _rows(browser, page)
    transcript = receipt["transcript"]
    assert [(r["index"], r["kind"], r["frame"]) for r in rows] == \
        [(e["index"], e["kind"], e["frame_sha256"]) for e in transcript]
    # actions.json, checked here with the independent Python verifier's JCS and hashing.
    from evident import verify as pyverify
    entries = json.loads((evidence_dir / "actions.json").read_text())["actions"]
    projections = {}
    for entry in entries:
        event = transcript[entry["event_index"]]
        assert pyverify.domain_digest(pyverify.DOMAIN_ACTION_PROJECTION, entry["projection"]) == \
            event["projection_sha256"]
        projections[entry["event_index"]] = entry["projection"]
    assert len(projections) == receipt["action_count"]
    previous = None
    for row, event in zip(rows, transcript):
        shas = [f["sha"] for f in row["figures"]]
        if event["kind"] == "action":
            assert row["action"] == event["action"] and row["projection"] == "ok"
            assert shas == [previous, event["frame_sha256"]]
            pointer = event["action"] in ("click", "drag", "scroll")
            assert row["geoms"] == (2 if pointer else 0), row
            p = projections[event["index"]]
            if event["action"] == "click":   # the ring is centred on the click, on both frames
                assert row["rings"] == [[p["x"], p["y"]]] * 2
            if event["action"] == "drag":    # a line from start to end, on both frames
                assert row["lines"].count([p["start_x"], p["start_y"], p["end_x"], p["end_y"]]) == 2
        else:
            assert shas == [event["frame_sha256"]] and row["geoms"] == 0
        for f in row["figures"]:
            png = _decode_bg(f["bg"])
            assert hashlib.sha256(png).hexdigest() == f["sha"]
            assert png == (evidence_dir / f"{f['sha']}.png").read_bytes()
        previous = event["frame_sha256"]
    checks = browser.evaluate(page, """[...document.querySelectorAll('tr.check')].map(
        t => [t.dataset.check, t.dataset.ok])""")
    assert checks == [[c["name"], "true"] for c in result["checks"]]
    assert [c[0] for c in checks][-2:] == ["actions_file", "action_projections"]
    assert browser.evaluate(page, "document.querySelector('#claims').textContent").count(
        "<script>document.title='pwned'</script>") == 1


def test_screenshot_shows_verdict_observed_frame_and_geometry(evidence, report, browser, tmp_path):
    evidence_dir, receipt = evidence
    out, _ = report
    page = browser.open_page(1280, 900)
    browser.navigate(page, out.as_uri())
    shot = Image.open(io.BytesIO(browser.screenshot(page))).convert("RGB")
    assert shot.size == (1280, 900)
    shot.save(tmp_path / "viewport.png")
    top = shot.crop((0, 0, 1280, 150))
    assert sum(1 for p in top.getdata() if p == VERDICT_OK_RGB) > 5000  # the green banner

    def rect(selector):
        return browser.evaluate(page, f"""(() => {{ const r = document.querySelector({json.dumps(selector)})
          .getBoundingClientRect(); return {{x: r.x + scrollX, y: r.y + scrollY, width: r.width,
          height: r.height}}; }})()""")

    def clip_image(selector):
        r = rect(selector)
        inner = {"x": r["x"] + 1, "y": r["y"] + 1, "width": r["width"] - 2, "height": r["height"] - 2}
        return Image.open(io.BytesIO(browser.screenshot(page, clip=inner))).convert("RGB")

    # The observed frame, drawn where the page puts it, is the observed PNG scaled.
    observed = Image.open(evidence_dir / f"{receipt['observation']['sha256']}.png").convert("RGB")
    drawn = clip_image("#observed .frame")
    drawn.save(tmp_path / "observed.png")
    expected = observed.resize(drawn.size, Image.NEAREST)
    close = sum(1 for p, q in zip(drawn.getdata(), expected.getdata())
                if max(abs(p[i] - q[i]) for i in range(3)) <= 24)
    assert close / (drawn.width * drawn.height) > 0.97
    assert (0x20, 0xA0, 0x40) in set(drawn.getdata())   # the trigger turned the app green

    # Geometry: the click's ring and crosshair in its colour; none over the typed text's frame.
    click = clip_image("#event-1 .frame")
    assert sum(1 for p in click.getdata() if p == GEOMETRY_RGB) > 50
    typed = next(e["index"] for e in receipt["transcript"] if e.get("action") == "type")
    assert GEOMETRY_RGB not in set(clip_image(f"#event-{typed} .frame").getdata())
