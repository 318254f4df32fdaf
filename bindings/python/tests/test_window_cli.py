"""`evident window list|wait|capture` (and `wait pixels --until`, `wait image`, `display create
--keyboard-layout` and `--manage-windows`) as a user runs them: the built CLI binary against a real `evident daemon` on
a private socket, a real xmessage, PNGs decoded by Pillow. Exit codes: 0 done, 1 a wait's
timeout, 2 usage."""
import io
import json
import os
import signal
import subprocess
import time

import pytest
from PIL import Image

import evident
from evident_bin import find_evident_bin

EVIDENT = find_evident_bin()
pytestmark = pytest.mark.skipif(EVIDENT is None, reason="the evident CLI is not built")


@pytest.fixture
def cli(tmp_path):
    sock_dir = tmp_path / "run"
    sock_dir.mkdir(mode=0o700)
    sock = str(sock_dir / "evident.sock")
    log = tmp_path / "daemon.log"
    with open(log, "wb") as log_file:
        proc = subprocess.Popen([EVIDENT, "daemon", "--socket", sock,
                                 "--state-dir", str(tmp_path / "state")],
                                stdout=log_file, stderr=subprocess.STDOUT)

    def run(*args, json_out=True, timeout=60):
        argv = [EVIDENT, "--socket", sock] + (["--json"] if json_out else []) + list(args)
        p = subprocess.run(argv, capture_output=True, timeout=timeout, text=True)
        return p.returncode, (json.loads(p.stdout) if json_out else p.stdout), p.stderr

    def ready():
        assert proc.poll() is None, log.read_text()[-2000:]
        return run("display", "list")[0] == 0

    evident.wait_for(ready, 20, "the daemon's socket")
    try:
        yield run
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


def _display(cli, *extra):
    rc, out, _ = cli("display", "create", "--width", "320", "--height", "240", *extra)
    assert rc == 0 and out["ok"], out
    return str(out["display"]["id"]), out["display"]["generation"], out


def test_window_list_wait_and_capture_through_the_daemon(cli, tmp_path):
    did, gen, _ = _display(cli)
    rc, out, _ = cli("window", "list", did, gen)
    assert rc == 0 and not any(w["mapped"] for w in out["windows"])
    rc, out, _ = cli("app", "launch", did, gen, "--wait-window-ms", "10000", "--",
                     "xmessage", "-geometry", "120x50+10+20", "-title", "cli-title", "hello")
    assert rc == 0, out
    pid = out["app"]["pid"]
    # wait: found (exit 0), with the window's owner and geometry.
    rc, out, _ = cli("window", "wait", did, gen, "--title", "cli-title", "--timeout-ms", "5000")
    assert rc == 0 and out["outcome"] == "found"
    w = out["window"]
    assert (w["pid"], w["class"], w["x"], w["y"], w["width"], w["height"]) == \
        (pid, "Xmessage", 11, 21, 120, 50)
    # wait: timeout (exit 1) after at least its bound, saying what it saw.
    t0 = time.monotonic()
    rc, out, _ = cli("window", "wait", did, gen, "--class", "NoSuchClass", "--timeout-ms", "300")
    assert rc == 1 and out["ok"] and out["outcome"] == "timeout"
    assert time.monotonic() - t0 >= 0.3 and out["window"] is None
    assert "1 of those considered mapped" in out["seen"]
    # list: the window, in the JSON and in the human table.
    rc, out, _ = cli("window", "list", did, gen, "--mapped-only")
    assert rc == 0 and [x["id"] for x in out["windows"]] == [w["id"]]
    rc, text, _ = cli("window", "list", did, gen, "--mapped-only", json_out=False)
    assert rc == 0 and f"{w['id']}" in text and "120x50+11+21" in text and "cli-title" in text
    # capture: a PNG of exactly the window's area, equal to that crop of a screenshot.
    rc, out, _ = cli("wait", "stable", did, gen, "--timeout-ms", "5000")
    assert rc == 0 and out["outcome"] == "stable"
    png = str(tmp_path / "win.png")
    rc, out, _ = cli("window", "capture", did, gen, str(w["id"]), "--out", png)
    assert rc == 0 and out["png"]["width"] == 120 and not out["clipped"]
    assert oct(os.stat(png).st_mode & 0o777) == "0o600"
    shot = str(tmp_path / "shot.png")
    rc, _, _ = cli("display", "screenshot", did, gen, "--out", shot)
    assert rc == 0
    crop = Image.open(shot).convert("RGB").crop((11, 21, 131, 71))
    assert Image.open(png).convert("RGB").tobytes() == crop.tobytes()
    # Refusals: an unknown window, a bad region, and a missing required option.
    rc, out, _ = cli("window", "capture", did, gen, "12345", "--out", png)
    assert rc != 0 and out["error"]["code"] == "window-not-found"
    rc, out, _ = cli("window", "capture", did, gen, str(w["id"]))
    assert rc == 2
    # wait pixels --until differs: the window's area differs from the empty screen's.
    ref = Image.new("RGB", (40, 40), (0, 0, 0))
    buf = io.BytesIO()
    Image.open(shot).convert("RGB").crop((200, 150, 240, 190)).save(buf, "PNG")
    empty = str(tmp_path / "empty.png")
    with open(empty, "wb") as f:
        f.write(buf.getvalue())
    rc, out, _ = cli("wait", "pixels", did, gen, "--region", "200,150,40,40", "--reference", empty,
                     "--until", "differs", "--timeout-ms", "300")
    assert rc == 1 and out["until"] == "differs" and out["checks"] == 1
    ref.save(empty)
    rc, out, _ = cli("wait", "pixels", did, gen, "--region", "11,21,40,40", "--reference", empty,
                     "--until", "differs", "--timeout-ms", "3000")
    assert rc == 0 and out["outcome"] == "matched"


def test_display_create_with_a_keyboard_layout_through_the_cli(cli):
    did, gen, out = _display(cli, "--keyboard-layout", "de")
    assert out["keyboard_layout"] == "de"
    rc, out, _ = cli("display", "status", did, gen)
    assert rc == 0 and out["keyboard_layout"] == "de"
    rc, out, _ = cli("display", "create", "--width", "320", "--height", "240",
                     "--keyboard-layout", "nosuchlayout")
    assert rc != 0 and out["error"]["code"] == "display-keyboard-layout"


def test_a_managed_display_and_wait_image_through_the_cli(cli, tmp_path):
    did, gen, out = _display(cli, "--manage-windows")
    assert out["manage_windows"] is True
    # 500 pixels wide on a 320-pixel display: the keeper fits it in and focuses it.
    rc, out, _ = cli("app", "launch", did, gen, "--wait-window-ms", "10000", "--",
                     "xmessage", "-geometry", "500x100+0+200", "-title", "cli-managed", "managed")
    assert rc == 0, out
    rc, out, _ = cli("window", "wait", did, gen, "--title", "cli-managed", "--timeout-ms", "5000")
    assert rc == 0 and out["managed"] is True
    w = out["window"]
    assert w["focused"] and w["x"] >= 0 and w["y"] >= 0
    assert w["x"] + w["width"] <= 320 and w["y"] + w["height"] <= 240 and w["width"] < 500
    rc, out, _ = cli("display", "status", did, gen)
    assert rc == 0 and out["window_keeper"]["fitted"] == 1 and out["window_keeper"]["focused"] >= 1
    # wait image: a crop of the window's top-left corner is found where the X server says the
    # window is (exit 0); a template that is never shown times out after one look (exit 1).
    rc, out, _ = cli("wait", "stable", did, gen, "--timeout-ms", "5000")
    assert rc == 0
    shot = str(tmp_path / "shot.png")
    assert cli("display", "screenshot", did, gen, "--out", shot)[0] == 0
    tpl = str(tmp_path / "tpl.png")
    Image.open(shot).convert("RGB").crop((w["x"], w["y"], w["x"] + 80, w["y"] + 40)).save(tpl)
    rc, out, _ = cli("wait", "image", did, gen, "--template", tpl, "--timeout-ms", "3000")
    assert rc == 0 and out["outcome"] == "found"
    assert (out["match"]["x"], out["match"]["y"]) == (w["x"], w["y"])
    assert out["match"]["score_permille"] >= 999
    rc, text, _ = cli("wait", "image", did, gen, "--template", tpl, "--timeout-ms", "0",
                      json_out=False)
    assert rc == 0 and text.startswith("found after") and f"80x40+{w['x']}+{w['y']}" in text
    rnd = __import__("random").Random(5)
    noise = Image.new("RGB", (40, 30))
    noise.putdata([(rnd.randrange(256), rnd.randrange(256), rnd.randrange(256))
                   for _ in range(40 * 30)])
    absent = str(tmp_path / "absent.png")
    noise.save(absent)
    t0 = time.monotonic()
    rc, out, _ = cli("wait", "image", did, gen, "--template", absent, "--timeout-ms", "400")
    assert rc == 1 and out["ok"] and out["outcome"] == "timeout" and out["match"] is None
    assert time.monotonic() - t0 >= 0.4 and out["checks"] == 1
    rc, out, _ = cli("wait", "image", did, gen, "--timeout-ms", "400")
    assert rc == 2  # --template is required
