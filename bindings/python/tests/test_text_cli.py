"""`evident text read|find` (OCR of a display through the daemon, docs/cli.md): a real `evident
daemon` on a private socket, a real Tk app that shows known text and writes where it drew it,
the CLI binary run as a user runs it (the global --socket before the command, --json)."""
import json
import os
import subprocess
import time

import pytest

import evident
from daemon_proc import running_daemon
from evident_bin import find_evident_bin
from procs import inside, text_app_argv

@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    with running_daemon(tmp_path_factory.mktemp("textcli")) as (sock, client):
        yield sock, client


@pytest.fixture(scope="module")
def shown(daemon, tmp_path_factory):
    """A display of the daemon showing the Tk text, and the label's box as Tk drew it."""
    sock, client = daemon
    tmp = tmp_path_factory.mktemp("tk")
    geo = tmp / "geo.json"
    with client.create_display(width=640, height=200) as d:
        d.launch(text_app_argv(geo, title="evident-text-cli"), wait_window_ms=15000)
        evident.wait_for(geo.exists, 10, "the app's geometry file")
        w = d.wait_window(title="evident-text-cli", timeout=5)
        d.wait_stable(timeout=5)
        # tesseract reads the window's area (white), not the black root around it (as in
        # test_screen_text.py, the region is the window's)
        yield sock, d, json.loads(geo.read_text())["a"], f"{w.x},{w.y},{w.width},{w.height}"


def text_cli(sock, *args, env=None):
    r = subprocess.run([find_evident_bin(), "--socket", sock, *args], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **(env or {})))
    return r


def test_text_read_prints_the_lines_where_the_app_drew_them(shown):
    sock, d, label, region = shown
    r = text_cli(sock, "--json", "text", "read", str(d.id), d.generation, "--region", region)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["ok"] is True
    assert doc["region"] == dict(zip(("x", "y", "width", "height"), map(int, region.split(","))))
    line = [ln for ln in doc["lines"] if ln["text"] == "Quarterly Report Ready"]
    assert len(line) == 1, doc["text"]
    assert inside((line[0]["x"], line[0]["y"], line[0]["width"], line[0]["height"]), label)
    # Plain output is the text itself; a region keeps the read inside it.
    plain = text_cli(sock, "text", "read", str(d.id), d.generation, "--region", region)
    assert plain.returncode == 0 and "Quarterly Report Ready" in plain.stdout.splitlines()
    empty = text_cli(sock, "--json", "text", "read", str(d.id), d.generation, "--region", "600,150,40,50")
    assert empty.returncode == 0 and json.loads(empty.stdout)["lines"] == []


def test_text_find_found_and_timeout(shown):
    sock, d, label, region = shown
    r = text_cli(sock, "--json", "text", "find", str(d.id), d.generation, "report ready", "--region", region,
                 "--timeout", "20")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["outcome"] == "found" and doc["checks"] >= 1
    b = doc["box"]
    assert inside((b["x"], b["y"], b["width"], b["height"]), label)
    t0 = time.monotonic()
    miss = text_cli(sock, "--json", "text", "find", str(d.id), d.generation, "Cancel Order", "--region", region,
                    "--timeout", "2")
    elapsed = time.monotonic() - t0
    assert miss.returncode == 1, miss.stdout + miss.stderr     # an answer, but scripts can tell
    doc = json.loads(miss.stdout)
    assert doc["ok"] is True and doc["outcome"] == "timeout" and doc["box"] is None
    assert doc["checks"] == 1 and doc["last_words"] >= 3        # an idle screen is read once
    assert elapsed >= 2
    plain = text_cli(sock, "text", "find", str(d.id), d.generation, "Cancel Order", "--timeout", "1")
    assert plain.returncode == 1 and plain.stdout.startswith("timeout after ")


def test_text_refuses_bad_input_with_stable_codes(shown):
    sock, d, _, _ = shown
    cases = [
        (["text", "read", str(d.id), "0" * 16], 1, "display-generation-mismatch"),
        (["text", "read", "999", d.generation], 1, "display-not-found"),
        (["text", "read", str(d.id), d.generation, "--region", "600,0,100,10"], 2, "usage"),
        (["text", "read", str(d.id), d.generation, "--timeout", "0"], 2, "usage"),
        (["text", "find", str(d.id), d.generation, "   "], 2, "usage"),
        (["text", "read", str(d.id), d.generation, "--region", "1,2,3"], 2, "usage"),
        (["text", "frobnicate"], 2, "usage"),
    ]
    for args, status, code in cases:
        r = text_cli(sock, "--json", *args)
        assert r.returncode == status, (args, r.stdout, r.stderr)
        doc = json.loads(r.stdout)
        assert doc["ok"] is False and doc["error"]["code"] == code, (args, doc)
    # No daemon on the socket: the client's own code.
    r = text_cli(sock + ".none", "--json", "text", "read", str(d.id), d.generation)
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["code"] == "daemon-unavailable"
