"""Scenario: a model-free agent fills in a form, then proves the result (docs/agents.md).

What it shows:
  * Python scripting of an agent: ``evident.agent.run_task`` gives a policy the screen turn by
    turn and sends its provider-native answer to the engine's task lane, which checks each turn
    whole, runs it with real input and returns the next frame;
  * a real policy without a model: ``OcrFormPolicy`` reads the screen with tesseract, finds the
    labelled fields and the Submit button itself (no coordinates in this file), types, submits,
    and answers with the result line it reads back;
  * stage, then attest: the stage task fills and submits the form; the attest task (screenshot
    only, input sealed) proves the result on a fresh frame, with the stage receipt as lineage;
  * checking where it lands: the fixture app's own log holds exactly what was typed, once, and
    nothing arrived during attest;
  * two verified, linked receipts: ``evident verify`` on each, the attest one with ``--prior``.
"""
import json
import os
import subprocess
import sys

import pytest

from evident.agent import OcrFormPolicy, run_task

from scenario_support import REPO, wait_for

FORM_APP = REPO / "fixtures" / "form" / "form_app.py"
VALUES = {"Name": "Ada Lovelace", "Email": "ada@example.org"}
# What the app draws after the submit (fixtures/form/README.md): the policy must read exactly this.
RESULT_LINE = "Submitted: Ada Lovelace / ada@example.org"
EVIDENT = os.environ.get("EVIDENT_BIN", str(REPO / "build" / "engine" / "cli" / "evident"))


def read_log(path):
    try:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    except FileNotFoundError:
        return []


def evident_verify(*args):
    """``evident verify ... --json``: the exit status and the parsed result."""
    proc = subprocess.run([EVIDENT, "--json", "verify", *map(str, args)], capture_output=True,
                          text=True, timeout=60)
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.evident_display(width=960, height=360)
def test_ocr_agent_fills_the_form_then_attests(evident_display, evident_app, tmp_path):
    log = tmp_path / "form.jsonl"
    app = evident_app([sys.executable, str(FORM_APP), "--log", str(log)], wait_window_ms=10000)
    # The app says when it is drawn (a mapped window is not yet a drawn form).
    wait_for(lambda: any(e["event"] == "ready" for e in read_log(log)), timeout=10,
             what="the form's ready line")

    # Stage: the policy fills and submits the form, then reads the result line.
    stage = run_task(evident_display, app, OcrFormPolicy(VALUES),
                     task="Fill in Name and Email, submit the form, report the result line")
    assert stage.receipt["mode"] == "stage"
    assert stage.receipt["result"] == {"result_line": RESULT_LINE, "confirmed": True}
    # The app received exactly the typed values, in one submit.
    submits = [e for e in read_log(log) if e["event"] == "submit"]
    assert submits == [{"event": "submit", "n": 1, "fields": VALUES}]

    # Attest: a fresh policy proves the result on screen, screenshot only, linked to the stage.
    attest = run_task(evident_display, app, OcrFormPolicy(VALUES),
                      task="Show that the form was submitted", mode="attest", prior=stage)
    assert attest.receipt["mode"] == "attest"
    assert attest.receipt["result"] == {"result_line": RESULT_LINE, "confirmed": True}
    assert attest.receipt["prior_receipt_id"] == stage.receipt_id
    assert attest.receipt["input_event_count"] == 0
    assert [e for e in read_log(log) if e["event"] == "submit"] == submits   # nothing new arrived

    # Both receipts verify, frames included; the attest one against its prior.
    rc, result = evident_verify(stage.receipt_path, "--frames", stage.evidence_dir)
    assert rc == 0 and result["ok"], result
    rc, result = evident_verify(attest.receipt_path, "--frames", attest.evidence_dir,
                                "--prior", stage.receipt_path)
    assert rc == 0 and result["ok"], result
