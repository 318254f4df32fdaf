"""The Evident pytest plugin (entry point ``pytest11: evident``; or ``-p evident.pytest_plugin``).

Fixtures
  ``evident_engine``          one in-process :class:`evident.Engine` per worker (session scope)
  ``evident_display``         a fresh owned display per test, sized by ``@pytest.mark.evident_display(
                              width=, height=, depth=, dpi=)`` or ``--evident-display-size=WxH``;
                              ``manage_windows=True`` in the marker: new windows are fitted,
                              raised and focused (docs/windows.md); ``accessibility=True``: the
                              display's own AT-SPI stack (docs/accessibility.md)
  ``evident_worker_display``  one display shared by all tests of a worker (faster, less isolated)
  ``evident_app``             launcher: ``evident_app(["cmd", ...], wait_window_ms=5000, env=None,
                              cwd=None)`` -> App, stopped at teardown
  ``evident_actions``         action helpers bound to ``evident_display`` (click, type, key, ...)
  ``evident_evidence``        the test's evidence recorder: frames, sessions and receipts under
                              ``--evident-dir/<test id>/``

On a failure (setup or call), the plugin captures a final frame of every display the test holds
and adds an "evident" section to the report with the last frame and the receipt paths (also as
``user_properties``: ``evident_last_frame``, ``evident_receipt``, ``evident_dir``).
``--evident-keep=on-failure`` deletes the evidence of passing tests.
``--evident-report``, ``--evident-app-output`` and ``--evident-record-actions`` add a report.html
per recorded session, the apps' output and the frames of action batches; ``timeline.json`` lists
every kept frame in order (docs/python.md).

Safe under pytest-xdist: every worker process has its own engine and displays (Xvfb picks display
numbers atomically with ``-displayfd``), and evidence paths are per test id.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from types import TracebackType
from typing import (Any, Callable, Dict, Generator, Iterator, List, Mapping, Optional, Sequence,
                    Tuple, Type, TypeVar, cast)

import pytest

from ._data import BatchResult, Settle
from .actions import ActionHelpers
from .app import App
from .display import Display, Png
from .engine import Engine
from .errors import EvidentError
from .report import write_report
from .session import Session
from .verification import Verification
from .verify import project_action

# CI shards and their bundles (shard.json) live in their own module (docs/scale.md).
pytest_plugins = ("evident.shard",)

DEFAULT_SIZE = (1024, 768)
_RECORDER_KEY = pytest.StashKey["Recorder"]()
_PHASES_KEY = pytest.StashKey[Dict[str, str]]()
_RUNTIME_KEY = pytest.StashKey[Path]()
_APPS_KEY = pytest.StashKey[List[App]]()
_MAX_APP_OUTPUT_BYTES = 16 * 1024 * 1024

_F = TypeVar("_F", bound=Callable[..., Any])


def hookimpl(**options: Any) -> Callable[[_F], _F]:
    """``pytest.hookimpl(**options)`` with its type kept (pluggy's marker is untyped)."""
    return cast(Callable[[_F], _F], pytest.hookimpl(**options))


# ------------------------------------------------------------------------------------------------
# options and markers

def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evident", "Evident displays and evidence")
    group.addoption("--evident-dir", default="evidence", metavar="DIR",
                    help="where per-test evidence (frames, receipts) goes (default: ./evidence)")
    group.addoption("--evident-keep", default="always", choices=("always", "on-failure"),
                    help="keep evidence of every test (always) or only of failing ones")
    group.addoption("--evident-display-size", default=None, metavar="WxH",
                    help=f"default display size (default: {DEFAULT_SIZE[0]}x{DEFAULT_SIZE[1]})")
    group.addoption("--evident-state-dir", default=None, metavar="DIR",
                    help="the engine's state dir (its signing key keys/signing.*, run log); "
                         "default: a fresh temporary one per worker. Give a kept one so the "
                         "key that signs receipts can be pinned (docs/scale.md)")
    _add_evidence_options(group)


def _add_evidence_options(group: "pytest.OptionGroup") -> None:
    """Options of the readable evidence: reports, app output, recorded action batches."""
    group.addoption("--evident-report", default="on-failure",
                    choices=("on-failure", "always", "never"),
                    help="write report.html for each recorded session of failing tests "
                         "(on-failure, default), of every test (always) or never")
    group.addoption("--evident-app-output", default="on-failure",
                    choices=("on-failure", "always", "never"),
                    help="copy the stdout/stderr of apps launched by evident_app into the "
                         "test's evidence dir (0600) on failure (default), always or never")
    group.addoption("--evident-video", action="store_true", default=False,
                    help="record a video of every session begun through evident_evidence "
                         "(video.webm, bound in its receipt; needs ffmpeg)")
    group.addoption("--evident-record-actions", action="store_true", default=False,
                    help="keep a frame of every evident_actions batch in the test's evidence "
                         "(listed in timeline.json), so tests without sessions have evidence too")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "evident_display(width=None, height=None, depth=24, dpi=96, manage_windows=False, "
        "accessibility=False): size of the test's evident_display; manage_windows: new windows "
        "fitted, raised, focused; accessibility: the display's own AT-SPI stack")


def _parse_size(text: Optional[str]) -> Tuple[int, int]:
    if not text:
        return DEFAULT_SIZE
    m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not m:
        raise pytest.UsageError(f"--evident-display-size must be WxH, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def worker_id() -> str:
    """``gw0``, ``gw1``... under pytest-xdist, else ``main``."""
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def sanitize_node_id(nodeid: str) -> str:
    """A file-name-safe, unique, bounded name for a test id."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", nodeid).strip("._") or "test"
    if len(safe) > 120 or safe != nodeid:
        digest = hashlib.sha256(nodeid.encode("utf-8")).hexdigest()[:10]
        safe = f"{safe[:120]}-{digest}"
    return safe


def evidence_root(config: pytest.Config) -> Path:
    root = Path(config.getoption("evident_dir"))
    if not root.is_absolute():
        root = Path(config.invocation_params.dir) / root
    return root


# ------------------------------------------------------------------------------------------------
# the evidence recorder

class Recorder:
    """Keeps a test's frames and receipts under ``dir`` (created on first use).

    * ``frame(display)``: captures a PNG now and makes it the test's last frame.
    * ``session(app, display=...)``: begins a :class:`Session`; when it closes, its receipt and
      frames are copied here (``session-N/``). If the ``with`` block raises while the session
      can still finish, the recorder finishes it with claims ``{"outcome": "error", ...}`` so a
      failing test still has a receipt.
    * ``verify(session)``: verifies a receipt with every available verifier and records the result.
    """

    def __init__(self, nodeid: str, path: Path, video: bool = False) -> None:
        self.nodeid = nodeid
        self.dir = path
        self.video = video  # --evident-video: sessions record video.webm
        self.frames: List[Path] = []
        self.receipts: List[Path] = []
        self.sessions: List[Session] = []
        self.displays: List[Display] = []
        self.reports: List[Path] = []
        self.app_outputs: List[Path] = []
        # Every frame kept, in the order it was captured (written as timeline.json).
        self.timeline: List[Dict[str, Any]] = []
        self._counter = 0

    def _ensure_dir(self) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        return self.dir

    def _next(self, stem: str, suffix: str) -> Path:
        self._counter += 1
        return self._ensure_dir() / f"{self._counter:03d}-{stem}{suffix}"

    @property
    def last_frame(self) -> Optional[Path]:
        return self.frames[-1] if self.frames else None

    @property
    def last_receipt(self) -> Optional[Path]:
        return self.receipts[-1] if self.receipts else None

    def watch(self, display: Display) -> Display:
        """Makes ``display`` part of this test's evidence (a final frame on failure)."""
        if display not in self.displays:
            self.displays.append(display)
        return display

    def frame(self, display: Display, name: str = "frame") -> Path:
        """Captures one full-display PNG into the evidence dir; returns its path."""
        self.watch(display)
        path = self._next(re.sub(r"[^A-Za-z0-9_-]+", "_", name) or "frame", ".png")
        png = display.screenshot(out=str(path))
        self.frames.append(path)
        self._timeline_add(path, "frame", name=name, sha256=getattr(png.info, "sha256", None),
                           display=display.id)
        return path

    def add_frame(self, png: Png, name: str = "frame") -> Path:
        path = self._next(re.sub(r"[^A-Za-z0-9_-]+", "_", name) or "frame", ".png")
        png.save(str(path))
        self.frames.append(path)
        self._timeline_add(path, "frame", name=name, sha256=hashlib.sha256(png).hexdigest())
        return path

    def session(self, app: "App | str", display: Optional[Display] = None, *,
                attempt_id: Optional[str] = None, job_sha256: Optional[str] = None,
                record_video: Optional[bool] = None, browser: Any = None) -> Session:
        """Begins a recorded session on ``display`` (default: the app's display); its video is
        recorded when ``record_video`` is true, or when it is None and ``--evident-video`` was
        given; ``browser`` binds a browser workspace (as :meth:`evident.Display.session`)."""
        if display is None:
            owner = app.display if isinstance(app, App) else None
            if not isinstance(owner, Display):
                raise ValueError("pass display= when app is an app id")
            display = owner
        self.watch(display)
        job = job_sha256 or hashlib.sha256(f"pytest:{self.nodeid}".encode()).hexdigest()
        attempt = attempt_id or f"{sanitize_node_id(self.nodeid)[:200]}-{len(self.sessions)}"
        video = self.video if record_video is None else record_video
        s = _RecordedSession.begin(display.engine, display, app, attempt_id=attempt,
                                   job_sha256=job, record_video=video, browser=browser)
        s.recorder = self
        s.on_close.append(self._collect)
        self.sessions.append(s)
        return s

    def _collect(self, s: Session) -> None:
        """Copies a closed session's receipt and frames into this test's evidence dir."""
        index = self.sessions.index(s) if s in self.sessions else len(self.sessions)
        dest = self._ensure_dir() / f"session-{index}"
        src = s.evidence_dir
        if src and os.path.isdir(src):
            shutil.copytree(src, dest, dirs_exist_ok=True)
        else:
            dest.mkdir(parents=True, exist_ok=True)
            if s.receipt:
                (dest / "receipt.json").write_text(json.dumps(s.receipt, ensure_ascii=False))
        for info in s.frames:
            p = dest / f"{info.sha256}.png"
            if not p.exists() and info.path and os.path.exists(info.path):
                shutil.copyfile(info.path, p)
        last = s.frames[-1] if s.frames else None
        if last is not None and (dest / f"{last.sha256}.png").exists():
            self.frames.append(dest / f"{last.sha256}.png")
        if (dest / "receipt.json").exists():
            self.receipts.append(dest / "receipt.json")
        self._timeline_add_session(dest, s)

    def verify(self, session: Session, **kwargs: Any) -> Verification:
        """Verifies ``session``'s receipt (C++ and Python verifiers); writes
        ``verification-N.json`` beside it and returns the :class:`evident.Verification`."""
        result = session.verify(**kwargs)
        path = self._next("verification", ".json")
        path.write_text(json.dumps({
            "ok": result.ok, "receipt_id": result.receipt_id, "verifiers": result.verifiers,
            "checks": [c.__dict__ for c in result.checks]}, indent=1, ensure_ascii=False))
        return result

    def summary(self) -> Dict[str, Optional[str]]:
        return {"evident_dir": str(self.dir),
                "evident_last_frame": str(self.last_frame) if self.last_frame else None,
                "evident_receipt": str(self.last_receipt) if self.last_receipt else None,
                "evident_report": str(self.reports[-1]) if self.reports else None}

    # -- readable evidence: timeline, reports, app output, recorded batches (docs/python.md) --

    def _timeline_add(self, path: Path, source: str, **fields: Any) -> None:
        entry: Dict[str, Any] = {"index": len(self.timeline), "path": self._relative(path),
                                 "source": source}
        entry.update({k: v for k, v in fields.items() if v is not None})
        self.timeline.append(entry)

    def _relative(self, path: Path) -> str:
        try:
            return str(Path(path).relative_to(self.dir))
        except ValueError:
            return str(path)

    def _timeline_add_session(self, dest: Path, s: Session) -> None:
        """The frames of a collected session, in transcript order (or as seen, without receipt)."""
        name = dest.name
        try:
            receipt = json.loads((dest / "receipt.json").read_text(encoding="utf-8"))
            events = receipt["transcript"]
        except (OSError, ValueError, KeyError, TypeError):
            events = None
        if isinstance(events, list):
            for e in events:
                sha = e.get("frame_sha256") if isinstance(e, dict) else None
                if isinstance(sha, str) and (dest / f"{sha}.png").exists():
                    self._timeline_add(dest / f"{sha}.png", name, sha256=sha,
                                       event_index=e.get("index"), kind=e.get("kind"),
                                       action=e.get("action"), status=e.get("status"))
            return
        for info in s.frames:
            if (dest / f"{info.sha256}.png").exists():
                self._timeline_add(dest / f"{info.sha256}.png", name, sha256=info.sha256)

    def record_batch(self, display: Display, actions: Sequence[Dict[str, Any]],
                     batch: BatchResult) -> Optional[Path]:
        """Keeps the frame after an action batch (its observation, else a fresh screenshot) with
        the batch's projections (no typed text, no key names) and statuses in the timeline."""
        path = self._next("actions", ".png")
        png_info = batch.observation.png if batch.observation else None
        if png_info is not None and png_info.path and os.path.exists(png_info.path):
            shutil.copyfile(png_info.path, path)
            os.chmod(path, 0o600)
            sha = png_info.sha256
        else:
            sha = display.screenshot(out=str(path)).sha256
        self.frames.append(path)
        self._timeline_add(path, "actions", sha256=sha, display=display.id,
                           actions=[project_action(dict(a)) for a in actions],
                           statuses=[r.status for r in batch.results],
                           settle=dict(batch.settle) or None)
        return path

    def write_reports(self) -> List[Path]:
        """Writes report.html in each collected session's dir that has a receipt (once)."""
        for receipt in self.receipts:
            out = receipt.parent / "report.html"
            if out in self.reports:
                continue
            try:
                self.reports.append(Path(write_report(str(receipt.parent), str(out)).path))
            except EvidentError:
                pass  # an unreadable evidence dir is already visible as a missing report
        return self.reports

    def copy_app_output(self, apps: Sequence[App], runtime_dir: Optional[Path]) -> List[Path]:
        """Copies each app's stdout+stderr log (``<runtime>/apps/<app_id>.log``) into the
        evidence dir as ``app-<N>-output.log`` (0600; at most 16 MiB each, the rest cut)."""
        if runtime_dir is None:
            return []
        for i, app in enumerate(apps):
            src = runtime_dir / "apps" / f"{app.app_id}.log"
            if not src.is_file():
                continue
            dest = self._ensure_dir() / f"app-{i}-output.log"
            fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with open(fd, "wb") as out, open(src, "rb") as f:
                data = f.read(_MAX_APP_OUTPUT_BYTES + 1)
                out.write(data[:_MAX_APP_OUTPUT_BYTES])
                if len(data) > _MAX_APP_OUTPUT_BYTES:
                    out.write(b"\n[evident: output cut at 16 MiB]\n")
            if dest not in self.app_outputs:
                self.app_outputs.append(dest)
        return self.app_outputs

    def write_timeline(self) -> Optional[Path]:
        """``timeline.json``: every frame kept, in capture order (docs/python.md)."""
        if not self.timeline or not self.dir.is_dir():
            return None
        path = self.dir / "timeline.json"
        doc = {"schema": "evident.pytest-timeline/v1", "test": self.nodeid,
               "frames": self.timeline,
               "app_outputs": [self._relative(p) for p in self.app_outputs],
               "reports": [self._relative(p) for p in self.reports]}
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False)
        return path


class _RecordedSession(Session):
    recorder: Optional[Recorder] = None

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        if exc_type is not None and not self.done and not self.engine.closed:
            try:
                # Still live: end it with an honest receipt so the failure has evidence.
                if self.phase == "stage":
                    self.freeze()
                if self.phase == "frozen":
                    self.observe()
                if self.phase == "observed":
                    self.finish({"outcome": "error", "test": self.recorder.nodeid
                                 if self.recorder else "", "exception": exc_type.__name__})
                if self.phase == "finished":
                    self.close()
                    return
            except EvidentError:
                pass
        super().__exit__(exc_type, exc, tb)


class Actions(ActionHelpers):
    """Action helpers bound to one display (the ``evident_actions`` fixture)."""

    def __init__(self, display: Display, recorder: Optional[Recorder] = None,
                 record: bool = False) -> None:
        self.display = display
        self.recorder = recorder
        self.record = record  # --evident-record-actions: keep every batch's frame

    def actions(self, actions: Sequence[Dict[str, Any]], *, observe: str = "pixels",
                settle: Settle = False, coordinate_space: str = "pixel") -> BatchResult:
        batch = self.display.actions(actions, observe=observe, settle=settle,
                                     coordinate_space=coordinate_space)
        if self.record and self.recorder is not None:
            self.recorder.record_batch(self.display, actions, batch)
        return batch

    run = actions

    def screenshot(self) -> Png:
        return self.display.screenshot()

    def frame(self, name: str = "frame") -> Path:
        """Captures a frame into the test's evidence."""
        if self.recorder is None:
            raise RuntimeError("no evidence recorder")
        return self.recorder.frame(self.display, name)


# ------------------------------------------------------------------------------------------------
# fixtures

@pytest.fixture(scope="session")
def evident_engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[Engine]:
    """One in-process engine per worker; everything it owns is destroyed at the end."""
    given = request.config.getoption("evident_state_dir", None)
    if given:   # shared by the xdist workers: one key, one run log (flock'ed)
        state = Path(given).resolve()
        state.mkdir(parents=True, exist_ok=True)
        os.chmod(state, 0o700)
    else:
        state = tmp_path_factory.mktemp(f"evident-state-{worker_id()}")
    # An explicit runtime dir, so the apps' logs (<runtime>/apps/<app_id>.log) can be copied into
    # the evidence before it goes; removed at the end like the engine's own default one. Made in
    # the system temp dir, not under pytest's basetemp: a display's sockets live below it (the
    # accessibility stack's buses, docs/accessibility.md), and a socket path has ~100 bytes at
    # most, which a deep basetemp (pytester, a CI workspace) exceeds.
    runtime = Path(tempfile.mkdtemp(prefix=f"evident-run-{worker_id()}-"))
    request.config.stash[_RUNTIME_KEY] = runtime
    engine = Engine(state_dir=str(state), runtime_dir=str(runtime))
    try:
        yield engine
    finally:
        engine.close()
        shutil.rmtree(runtime, ignore_errors=True)


def _recorder_for(item: pytest.Item) -> Recorder:
    rec = item.stash.get(_RECORDER_KEY, None)
    if rec is None:
        root = evidence_root(item.config)
        path = root / sanitize_node_id(item.nodeid)
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)  # a previous run of this same test
        rec = Recorder(item.nodeid, path, video=bool(item.config.getoption("evident_video")))
        item.stash[_RECORDER_KEY] = rec
    return rec


@pytest.fixture
def evident_evidence(request: pytest.FixtureRequest) -> Recorder:
    """The test's evidence recorder (frames, sessions, receipts)."""
    return _recorder_for(request.node)


@pytest.fixture
def evident_display(request: pytest.FixtureRequest, evident_engine: Engine,
                    evident_evidence: Recorder) -> Iterator[Display]:
    """A fresh display for this test (destroyed with its apps at teardown)."""
    width, height = _parse_size(request.config.getoption("evident_display_size"))
    depth, dpi = 24, 96
    manage_windows = accessibility = False
    marker = request.node.get_closest_marker("evident_display")
    if marker is not None:
        if marker.args:
            raise pytest.UsageError("evident_display marker takes keyword arguments only")
        width = int(marker.kwargs.get("width", width))
        height = int(marker.kwargs.get("height", height))
        depth = int(marker.kwargs.get("depth", depth))
        dpi = int(marker.kwargs.get("dpi", dpi))
        manage_windows = bool(marker.kwargs.get("manage_windows", False))
        accessibility = bool(marker.kwargs.get("accessibility", False))
    display = evident_engine.create_display(width=width, height=height, depth=depth, dpi=dpi,
                                            manage_windows=manage_windows,
                                            accessibility=accessibility)
    evident_evidence.watch(display)
    with display:
        yield display


@pytest.fixture(scope="session")
def evident_worker_display(request: pytest.FixtureRequest, evident_engine: Engine
                           ) -> Iterator[Display]:
    """One display per worker process, shared by its tests (sized by --evident-display-size)."""
    width, height = _parse_size(request.config.getoption("evident_display_size"))
    with evident_engine.create_display(width=width, height=height) as display:
        yield display


@pytest.fixture
def evident_app(request: pytest.FixtureRequest, evident_display: Display
                ) -> Iterator[Callable[..., App]]:
    """``evident_app(argv, wait_window_ms=5000, display=None, env=None, cwd=None)`` -> App;
    ``env`` and ``cwd`` as for :meth:`evident.Display.launch`; stopped at teardown (its output
    then copied into the evidence per ``--evident-app-output``)."""
    apps: List[App] = []
    request.node.stash[_APPS_KEY] = apps

    def launch(argv: Sequence[str], wait_window_ms: Optional[int] = 5000,
               display: Optional[Display] = None, *, env: Optional[Mapping[str, str]] = None,
               cwd: Optional[str] = None) -> App:
        app = (display or evident_display).launch(argv, wait_window_ms=wait_window_ms, env=env,
                                                  cwd=cwd)
        apps.append(app)
        return app

    yield launch
    for app in reversed(apps):
        app.__exit__(None, None, None)
    _keep_app_output(request.node, apps)


def _keep_app_output(item: pytest.Item, apps: Sequence[App], failed: Optional[bool] = None
                     ) -> None:
    """Copies the output of the test's evident_app apps into its evidence dir when
    ``--evident-app-output`` asks for it: at a failure (so the report can name the files) and
    again after the apps stopped, when their logs are complete."""
    mode = item.config.getoption("evident_app_output")
    if failed is None:
        failed = any(v == "failed" for v in item.stash.get(_PHASES_KEY, {}).values())
    if not apps or mode == "never" or (mode == "on-failure" and not failed):
        return
    stash = item.config.stash
    _recorder_for(item).copy_app_output(apps, stash[_RUNTIME_KEY] if _RUNTIME_KEY in stash else None)


@pytest.fixture
def evident_actions(request: pytest.FixtureRequest, evident_display: Display,
                    evident_evidence: Recorder) -> Actions:
    """Action helpers bound to ``evident_display`` (recording batches with
    ``--evident-record-actions``)."""
    return Actions(evident_display, evident_evidence,
                   record=bool(request.config.getoption("evident_record_actions")))


# ------------------------------------------------------------------------------------------------
# reporting

def _displays_of(item: pytest.Item, rec: Optional[Recorder]) -> List[Display]:
    found: List[Display] = list(rec.displays) if rec else []
    for value in getattr(item, "funcargs", {}).values():
        d = value.display if isinstance(value, Actions) else value
        if isinstance(d, Display) and d not in found:
            found.append(d)
    return found


@hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: "pytest.CallInfo[None]"
                              ) -> Generator[None, Any, None]:
    rec = item.stash.get(_RECORDER_KEY, None)
    failed_now = call.excinfo is not None and call.when in ("setup", "call") \
        and not call.excinfo.errisinstance((pytest.skip.Exception,))
    if failed_now:
        displays = _displays_of(item, rec)
        if displays:
            if rec is None:
                rec = _recorder_for(item)
            for d in displays:
                if d.destroyed or d.engine.closed:
                    continue
                try:
                    rec.frame(d, name=f"final-{call.when}-display{d.id}")
                except (EvidentError, OSError):
                    pass  # the display itself may be what failed
    if rec is not None:
        _before_report(item, call, rec, failed_now)
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    no_phases: Dict[str, str] = {}
    phases = item.stash.setdefault(_PHASES_KEY, no_phases)
    phases[call.when] = report.outcome
    if rec is not None and report.failed and call.when in ("setup", "call"):
        summary = rec.summary()
        for k, v in summary.items():
            if v:
                report.user_properties.append((k, v))
        _junit_properties(item, summary)
        lines = [f"evident evidence dir: {summary['evident_dir']}",
                 f"last frame: {summary['evident_last_frame'] or '(none captured)'}",
                 f"receipt: {summary['evident_receipt'] or '(none: no session was finished)'}"]
        if summary["evident_report"]:
            lines.append(f"report: {summary['evident_report']}")
        for path in rec.app_outputs:
            lines.append(f"app output: {path}")
        report.sections.append(("evident", "\n".join(lines)))
    if call.when == "teardown" and rec is not None:
        keep = item.config.getoption("evident_keep")
        passed = all(v != "failed" for v in phases.values())
        if keep == "on-failure" and passed:
            shutil.rmtree(rec.dir, ignore_errors=True)
        elif rec.dir.is_dir() and not any(rec.dir.iterdir()):
            rec.dir.rmdir()


def _before_report(item: pytest.Item, call: "pytest.CallInfo[None]", rec: Recorder,
                   failed_now: bool) -> None:
    """Readable evidence written before a phase's report is made: reports of the recorded
    sessions (on a setup/call failure, or at teardown with ``--evident-report=always``), and at
    teardown the properties of a passing test and ``timeline.json``."""
    mode = item.config.getoption("evident_report")
    if failed_now and mode != "never":
        rec.write_reports()
    if failed_now:
        no_apps: List[App] = []
        apps = item.stash.get(_APPS_KEY, no_apps)
        _keep_app_output(item, apps, failed=True)
    if call.when != "teardown":
        return
    if mode == "always":
        rec.write_reports()
    failed = any(v == "failed" for v in item.stash.get(_PHASES_KEY, {}).values())
    if not failed and item.config.getoption("evident_keep") == "always" and rec.dir.is_dir():
        _junit_properties(item, rec.summary())
    rec.write_timeline()


def _junit_properties(item: pytest.Item, summary: Dict[str, Optional[str]]) -> None:
    """pytest's junitxml writes the properties of the *teardown* report, which copies
    ``item.user_properties`` when it is made: adding them here puts them in the XML."""
    present = {k for k, _ in item.user_properties}
    for k, v in summary.items():
        if v and k not in present:
            item.user_properties.append((k, v))
