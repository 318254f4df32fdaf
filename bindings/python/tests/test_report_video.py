"""A recorded session (``record_video``) and its report, opened in a real headless Chromium.

A real session on a real Xvfb records its video (ffmpeg x11grab) while it drives the fixture
app; the receipt binds ``video.webm`` as its artifact and the independent Python verifier checks
the file. ``evident report`` links the video (never embeds it) and gives every timeline row a
link to its moment. Chromium then proves that the page's only requests are itself, data: URIs
and that video file, that no CSP rule is violated, that the video decodes in the page with the
display's size, and that each action row's moment is (its actions.json time - the video's start
offset), computed here from the files.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

import evident
from evident import actions as a
from evident import verify as pyverify

import headless_chromium

REPO = Path(__file__).resolve().parents[3]
EVIDENT_BIN = os.environ.get("EVIDENT_BIN", str(REPO / "build" / "engine" / "cli" / "evident"))
FIXTURE_APP = Path(EVIDENT_BIN).resolve().parents[2] / "fixtures" / "app" / "evident-fixture-app"

pytestmark = [
    pytest.mark.skipif(not headless_chromium.available(), reason="needs /usr/bin/chromium"),
    pytest.mark.skipif(not os.access(EVIDENT_BIN, os.X_OK), reason="needs the evident CLI built"),
    pytest.mark.skipif(not FIXTURE_APP.exists(), reason="needs evident-fixture-app built"),
]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("video-session")
    log = tmp / "events.jsonl"
    with evident.Engine(state_dir=str(tmp / "state")) as engine:
        with engine.create_display(width=480, height=320) as display:
            app = display.launch([str(FIXTURE_APP), "--events", str(log)], wait_window_ms=10000)
            evident.wait_for(lambda: log.exists() and '"ready"' in log.read_text(), 10,
                             "the fixture app's ready event")
            with display.session(app, record_video=True) as s:
                s.actions([a.click(100, 40), a.type("evident")], settle=True)
                s.actions([a.wait(300), a.click(300, 200)], settle=True)
                s.freeze()
                s.observe()
                s.finish({"recorded": True})
            evidence_dir = Path(s.evidence_dir)
    return evidence_dir, json.loads((evidence_dir / "receipt.json").read_text())


def test_the_receipt_binds_the_video_and_the_python_verifier_checks_it(recorded):
    evidence_dir, receipt = recorded
    (art,) = receipt["artifacts"]
    data = (evidence_dir / "video.webm").read_bytes()
    assert art["sha256"] == hashlib.sha256(data).hexdigest() and art["byte_length"] == len(data)
    assert data[:4] == b"\x1a\x45\xdf\xa3"  # EBML: a Matroska/WebM file
    report = pyverify.verify_receipt(receipt, frames_dir=str(evidence_dir))
    assert report["ok"], [c for c in report["checks"] if not c["ok"]]
    assert report["checks"][-1]["name"] == "artifacts"


def test_the_report_plays_the_video_and_links_each_row_to_its_moment(recorded, tmp_path):
    evidence_dir, receipt = recorded
    out = evidence_dir / "report.html"
    proc = subprocess.run([EVIDENT_BIN, "--json", "report", str(evidence_dir)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    video_uri = (evidence_dir / "video.webm").as_uri()
    start = receipt["artifacts"][0]["start_offset_ms"]
    elapsed = {e["event_index"]: e["elapsed_ms"]
               for e in json.loads((evidence_dir / "actions.json").read_text())["actions"]}
    b = headless_chromium.HeadlessChromium(str(tmp_path / "profile"))
    try:
        page = b.open_page(1280, 900)
        b.navigate(page, out.as_uri())
        meta = b.evaluate(page, """new Promise(ok => {
            const v = document.getElementById('video');
            const done = () => ok({ready: v.readyState, w: v.videoWidth, h: v.videoHeight,
                                   duration: v.duration, error: v.error ? v.error.code : null});
            if (v.readyState >= 1) return done();
            v.addEventListener('loadedmetadata', done);
            v.addEventListener('error', done);
            setTimeout(done, 15000);  // the bound: a video that never loads fails below
        })""", await_promise=True)
        assert meta["error"] is None and meta["ready"] >= 1, meta
        assert (meta["w"], meta["h"]) == (480, 320)
        assert b.console(page) == []  # no CSP violation, no media error
        requests = b.requests(page)
        assert requests[0] == out.as_uri()
        assert all(u in (out.as_uri(), video_uri) or u.startswith("data:") for u in requests), \
            requests
        rows = b.evaluate(page, """[...document.querySelectorAll('li.event')].map(li => {
            const link = li.querySelector('a.vt');
            return {index: +li.dataset.index, kind: li.dataset.kind,
                    t: link ? link.dataset.videoT : null, href: link ? link.href : null}; })""")
    finally:
        b.close()
    assert [r["index"] for r in rows] == [e["index"] for e in receipt["transcript"]]
    actions = [r for r in rows if r["kind"] == "action"]
    assert len(actions) == 4
    for r in actions:
        want_ms = max(0, elapsed[r["index"]] - start)
        assert r["t"] == "%d.%03d" % (want_ms // 1000, want_ms % 1000), r
        assert r["href"] == video_uri + "#t=" + r["t"]


def test_the_plain_tools_recipe_checks_the_video_subject(recorded, tmp_path):
    """docs/receipts.md's recipe (openssl, jq, base64, sha256sum) on a receipt with a video:
    the video is a signed subject; a changed video fails the recipe."""
    from test_signed_evidence import run_recipe
    evidence_dir, _ = recorded
    pub = str(evidence_dir.parents[1] / "keys" / "signing.pub")
    ok = run_recipe(str(evidence_dir), pub, str(tmp_path / "w1"))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    copy = tmp_path / "copy"
    import shutil
    shutil.copytree(evidence_dir, copy)
    video = copy / "video.webm"
    data = video.read_bytes()
    video.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    bad = run_recipe(str(copy), pub, str(tmp_path / "w2"))
    assert bad.returncode != 0 and "video.webm" in bad.stdout + bad.stderr
