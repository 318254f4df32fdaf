"""The plugin's readable evidence, through real inner pytest runs (pytester subprocesses): the
evident_* properties in pytest's own JUnit XML (failing and passing tests), report.html per
failing test (and per test with --evident-report=always) named in the failure section, the
apps' stdout/stderr copied into the evidence (0600), timeline.json listing the frames in order,
--evident-record-actions keeping evidence for tests that only use evident_actions, and
--evident-video recording every session's video, bound in its receipt."""
import hashlib
import json
import re
import stat
import xml.etree.ElementTree as ET
from pathlib import Path

pytest_plugins = ["pytester"]

PLUGIN_ARGS = ("-p", "no:evident", "-p", "evident.pytest_plugin", "-p", "no:cacheprovider")
# Prints to stdout and stderr, then becomes the window (exec keeps the pid evident waits on).
APP = ("['sh', '-c', 'echo out-marker-7f; echo err-marker-7f >&2; "
       "exec xmessage -geometry 200x80+0+0 evident']")

SESSION_TESTS = f'''
from evident import actions as a

def _session(evident_app, evident_evidence):
    app = evident_app({APP})
    with evident_evidence.session(app) as s:
        s.actions([a.move_mouse(5, 5), a.click(20, 20)])
        s.freeze()
        s.observe()
        s.finish({{"claim": "the app is shown"}})

def test_fail(evident_app, evident_evidence):
    _session(evident_app, evident_evidence)
    assert False, "deliberate failure after a finished session"

def test_pass(evident_app, evident_evidence):
    _session(evident_app, evident_evidence)
'''


def run(pytester, *args):
    return pytester.runpytest_subprocess(*PLUGIN_ARGS, *args, timeout=240)


def props(xml_path: Path):
    root = ET.parse(xml_path).getroot()
    out = {}
    for case in root.iter("testcase"):
        out[case.get("name")] = {p.get("name"): p.get("value") for p in case.iter("property")}
    return out


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_junit_properties_report_and_app_output_on_failure(pytester):
    pytester.makepyfile(test_sessions=SESSION_TESTS)
    result = run(pytester, "--junitxml=junit.xml")
    result.assert_outcomes(passed=1, failed=1)
    p = props(pytester.path / "junit.xml")

    failing = p["test_fail"]
    assert set(failing) == {"evident_dir", "evident_last_frame", "evident_receipt", "evident_report"}
    evidence = Path(failing["evident_dir"])
    assert Path(failing["evident_last_frame"]).read_bytes()[:4] == b"\x89PNG"
    receipt = Path(failing["evident_receipt"])
    report = Path(failing["evident_report"])
    assert report == receipt.parent / "report.html" and mode(report) == 0o600
    html = report.read_text(encoding="utf-8")
    events = json.loads(receipt.read_text())["transcript"]
    assert html.count('<li class="event"') == len(events)
    assert 'id="verdict" data-ok="true"' in html

    # The failure section in the terminal names the report and the app's output.
    text = result.stdout.str()
    block = text.split("_ test_fail _", 1)[1]
    assert f"report: {report}" in block
    output = evidence / "app-0-output.log"
    assert f"app output: {output}" in block
    log = output.read_text()
    assert "out-marker-7f" in log and "err-marker-7f" in log
    assert mode(output) == 0o600
    assert "marker-7f" not in receipt.read_text()

    # The passing test: its evidence dir in the XML, no report and no app output by default.
    passing = p["test_pass"]
    assert set(passing) >= {"evident_dir", "evident_receipt"}
    assert "evident_report" not in passing
    pdir = Path(passing["evident_dir"])
    assert not list(pdir.glob("**/report.html")) and not list(pdir.glob("app-*-output.log"))


def test_always_writes_reports_app_output_and_an_ordered_timeline(pytester):
    pytester.makepyfile(test_sessions=SESSION_TESTS)
    result = run(pytester, "-k", "test_pass", "--evident-report=always",
                 "--evident-app-output=always", "--junitxml=junit.xml")
    result.assert_outcomes(passed=1)
    passing = props(pytester.path / "junit.xml")["test_pass"]
    evidence = Path(passing["evident_dir"])
    assert Path(passing["evident_report"]).is_file()
    assert "out-marker-7f" in (evidence / "app-0-output.log").read_text()

    timeline = json.loads((evidence / "timeline.json").read_text())
    assert mode(evidence / "timeline.json") == 0o600
    assert timeline["schema"] == "evident.pytest-timeline/v1"
    receipt = json.loads((evidence / "session-0" / "receipt.json").read_text())
    frames = [f for f in timeline["frames"] if f["source"] == "session-0"]
    assert [(f["event_index"], f["sha256"]) for f in frames] == \
        [(e["index"], e["frame_sha256"]) for e in receipt["transcript"]]
    assert [f["index"] for f in timeline["frames"]] == list(range(len(timeline["frames"])))
    for f in timeline["frames"]:
        assert hashlib.sha256((evidence / f["path"]).read_bytes()).hexdigest() == f["sha256"]
    assert timeline["reports"] == ["session-0/report.html"]
    assert timeline["app_outputs"] == ["app-0-output.log"]


def test_evident_video_records_every_session_and_its_receipt_binds_it(pytester):
    pytester.makepyfile(test_sessions=SESSION_TESTS)
    result = run(pytester, "-k", "test_pass", "--evident-video", "--evident-report=always",
                 "--junitxml=junit.xml")
    result.assert_outcomes(passed=1)
    evidence = Path(props(pytester.path / "junit.xml")["test_pass"]["evident_dir"])
    session = evidence / "session-0"
    receipt = json.loads((session / "receipt.json").read_text())
    (art,) = receipt["artifacts"]
    video = (session / "video.webm").read_bytes()
    assert art["name"] == "video.webm" and art["sha256"] == hashlib.sha256(video).hexdigest()
    assert 'id="video"' in (session / "report.html").read_text()


def test_record_actions_keeps_evidence_of_actions_only_tests(pytester):
    pytester.makepyfile(test_actions=f'''
        from evident import actions as a

        def test_actions_only(evident_display, evident_actions):
            evident_actions.click(10, 10)
            evident_actions.actions([a.move_mouse(30, 30), a.type("s3cret-typed")])
    ''')
    result = run(pytester)
    result.assert_outcomes(passed=1)
    assert not list((pytester.path / "evidence").glob("*actions_only*"))   # not asked: nothing

    result = run(pytester, "--evident-record-actions")
    result.assert_outcomes(passed=1)
    (evidence,) = (pytester.path / "evidence").glob("*actions_only*")
    timeline_text = (evidence / "timeline.json").read_text()
    assert "s3cret-typed" not in timeline_text
    frames = json.loads(timeline_text)["frames"]
    assert [f["actions"] for f in frames] == [
        [{"type": "click", "x": 10, "y": 10}],
        [{"type": "move_mouse", "x": 30, "y": 30}, {"type": "type"}]]
    for f in frames:
        png = (evidence / f["path"]).read_bytes()
        assert png[:4] == b"\x89PNG" and hashlib.sha256(png).hexdigest() == f["sha256"]
        assert re.fullmatch(r"\d{3}-actions\.png", f["path"])
        assert all(s in ("ok", "injected") for s in f["statuses"])
