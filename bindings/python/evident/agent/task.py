"""``run_task``: a policy drives a bounded agent task on an owned display (docs/agents.md, "How
to write a policy"; the lane itself: "The lane").

The engine's ``task`` op carries one raw task request (``{"op":"begin"|"turn"|"abort"|"status",
...}``) as text; every reply is a snapshot. :class:`Task` keeps the bookkeeping (``task_id``, the
current ``sequence``) the way :class:`evident.Session` does for sessions, and
:func:`run_task` loops: begin, then per turn an :class:`Observation` for the policy and its raw
provider response sent as ``turn``, until the engine finishes the task (the receipt) or refuses
a turn (the mapped :class:`evident.EvidentError`; the engine has ended the task). Ctrl-C or an
error in the policy aborts the task."""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
import secrets
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Protocol, Union

from .._call import Caller, InterruptHook, PendingCall
from ..errors import AgentError, EvidentError, error_from_reply
from .policy import Observation, Policy, check_response

__all__ = ["Task", "TaskRun", "run_task", "task_sha256", "PHASES_ENDED"]

# Phases in which the engine has ended the task (docs/agents.md, "The lane").
PHASES_ENDED = frozenset({"finished", "aborted", "failed", "expired"})
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_DATA_URL = "data:image/png;base64,"


class DisplayRef(Protocol):
    """What a task needs of a display: its engine and exact name (an :class:`evident.Display`)."""

    engine: Caller
    id: int
    generation: str


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def task_sha256(task: str) -> str:
    """The task digest ``task.begin`` binds: SHA-256 of the task text's UTF-8 bytes (the text
    itself never reaches the engine or the receipt)."""
    return hashlib.sha256(task.encode("utf-8")).hexdigest()


def _png_size(png: bytes) -> "tuple[int, int]":
    if len(png) < 24 or not png.startswith(_PNG_MAGIC):
        raise AgentError("agent-frame", "the engine's image is not a PNG")
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def _images_in(value: Any) -> Iterator[str]:
    """Every base64 PNG in a provider-native tool result, in order: Anthropic ``source.data``
    (media_type image/png), OpenAI ``image_url`` data URLs, Gemini ``inlineData.data``
    (mimeType image/png), the ``evident`` adapter's ``png_base64``."""
    if isinstance(value, dict):
        if value.get("media_type") == "image/png" and isinstance(value.get("data"), str):
            yield value["data"]
        elif value.get("mimeType") == "image/png" and isinstance(value.get("data"), str):
            yield value["data"]
        for k, v in value.items():
            if k == "png_base64" and isinstance(v, str):
                yield v
            elif k == "image_url" and isinstance(v, str) and v.startswith(_DATA_URL):
                yield v[len(_DATA_URL):]
            else:
                yield from _images_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from _images_in(v)


def _object(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    """A snapshot counter (null once the task has ended: 0)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _decode(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise AgentError("agent-frame", "an image in the engine's tool results is not base64") from None


class Task:
    """One live task. Attributes mirror the latest snapshot (``task_id``, ``sequence``,
    ``phase``, ``frame``, ``tool_results``, ``retry_prompt``, ``results``, ``receipt``...)."""

    def __init__(self, engine: Caller, snapshot: Mapping[str, Any], mode: str = "") -> None:
        self.engine = engine
        self.snapshot: Dict[str, Any] = dict(snapshot)
        self.task_id: str = str(snapshot["task_id"])
        self.sequence: int = int(snapshot.get("sequence", 0))
        self.mode: str = str(snapshot.get("mode") or mode)
        self.aborted = False
        self._abort_scheduled = False

    # -- plumbing ---------------------------------------------------------------------------
    @staticmethod
    def _send(engine: Caller, request: Mapping[str, Any],
              on_interrupt: Optional[InterruptHook] = None) -> Dict[str, Any]:
        reply = engine.request("task", {"request": _dumps(request)}, on_interrupt=on_interrupt)
        if reply.get("ok") is not True:
            raise error_from_reply(reply)
        return reply

    def _update(self, snapshot: Mapping[str, Any]) -> Dict[str, Any]:
        self.snapshot = dict(snapshot)
        if "sequence" in snapshot:
            self.sequence = int(snapshot["sequence"])
        return self.snapshot

    def _interrupted(self, pending: PendingCall) -> None:
        # Ctrl-C while a turn was in flight: the engine completes it (input already sent cannot
        # be recalled; held keys and buttons are released by the engine); once it returns, the
        # task is aborted so the display is released (as evident.Session does).
        self._abort_scheduled = True

        def cleanup(_: PendingCall) -> None:
            self.end_quietly()

        pending.add_done_callback(cleanup)

    # -- protocol ---------------------------------------------------------------------------
    @classmethod
    def begin(cls, engine: Caller, display: DisplayRef, app_id: str, *, mode: str, task_sha256: str,
              policy: Mapping[str, str], attempt_id: str,
              prior_receipt_id: Optional[str] = None,
              settle: Union[bool, Mapping[str, int], None] = None) -> "Task":
        """``begin``: the engine checks everything (mode, policy, lineage, settle) and answers
        the first snapshot, with the frame the policy sees first. ``settle`` (sent only when
        given): ``False`` (each frame straight after its action), ``True`` (the default: quiet
        for 300 ms, at most 2000 ms) or ``{"quiet_ms": Q, "cap_ms": C}``."""
        request: Dict[str, Any] = {"op": "begin", "mode": mode, "display_id": display.id,
                                   "generation": display.generation, "app_id": app_id,
                                   "attempt_id": attempt_id, "task_sha256": task_sha256,
                                   "policy": dict(policy)}
        if prior_receipt_id is not None:
            request["prior_receipt_id"] = prior_receipt_id
        if settle is not None:
            request["settle"] = settle if isinstance(settle, bool) else dict(settle)
        return cls(engine, cls._send(engine, request, on_interrupt=cls._begin_interrupted(engine)), mode)

    @staticmethod
    def _begin_interrupted(engine: Caller) -> Callable[[PendingCall], None]:
        # Ctrl-C while begin was in flight: once the engine answers, abort the task it began.
        def hook(pending: PendingCall) -> None:
            def cleanup(p: PendingCall) -> None:
                try:
                    reply = json.loads(p.result or "")
                except ValueError:
                    return
                if isinstance(reply, dict) and reply.get("ok") is True and isinstance(reply.get("task_id"), str):
                    Task(engine, reply).end_quietly()

            pending.add_done_callback(cleanup)

        return hook

    def turn(self, response: Mapping[str, Any]) -> Dict[str, Any]:
        """``turn``: the provider's response exactly as received; the next snapshot."""
        request = {"op": "turn", "task_id": self.task_id, "sequence": self.sequence,
                   "response": response}
        return self._update(self._send(self.engine, request, on_interrupt=self._interrupted))

    def status(self) -> Dict[str, Any]:
        """Where the task stands; changes nothing."""
        return self._send(self.engine, {"op": "status", "task_id": self.task_id})

    def abort(self) -> Dict[str, Any]:
        """Ends the task without a receipt (status first, so the sequence is current)."""
        try:
            self.sequence = int(self.status().get("sequence", self.sequence))
        except EvidentError:
            pass
        reply = self._send(self.engine, {"op": "abort", "task_id": self.task_id,
                                         "sequence": self.sequence})
        self.aborted = True
        return self._update(reply)

    def end_quietly(self) -> None:
        """Aborts the task if the engine still runs it; never raises an :class:`EvidentError`
        (a task the engine already ended, or an engine already closed, is left as it is)."""
        if self.engine.closed:
            return
        try:
            status = self.status()
            if status.get("phase") in PHASES_ENDED:
                self._update(status)
                return
            self.sequence = int(status.get("sequence", self.sequence))
            self._update(self._send(self.engine, {"op": "abort", "task_id": self.task_id,
                                                  "sequence": self.sequence}))
            self.aborted = True
        except EvidentError:
            pass

    # -- views ------------------------------------------------------------------------------
    @property
    def phase(self) -> str:
        return str(self.snapshot.get("phase", ""))

    @property
    def ended(self) -> bool:
        return self.phase in PHASES_ENDED

    @property
    def receipt(self) -> Optional[Dict[str, Any]]:
        r = self.snapshot.get("receipt")
        return r if isinstance(r, dict) else None

    def observation(self) -> Observation:
        """What the policy sees now: the snapshot's ``frame`` (the image the model is shown: the
        display frame, or the engine's scaled copy when the provider needs a smaller one), read
        from the file it names with its digest checked, or, without a readable file, the image
        of ``tool_results`` with that digest (else the last one); its size, the counters and
        the engine's answer to the previous turn."""
        snap = self.snapshot
        frame = _object(snap.get("frame"))
        want = frame.get("sha256")
        png: Optional[bytes] = None
        path = frame.get("path")
        if isinstance(path, str) and path:
            try:
                with open(path, "rb") as f:
                    png = f.read()
            except OSError:
                png = None
            if png is not None and hashlib.sha256(png).hexdigest() != want:
                raise AgentError("agent-frame", "the frame file's digest differs from the snapshot's")
        if png is None:
            images = [_decode(i) for i in _images_in(snap.get("tool_results"))]
            matching = [i for i in images if hashlib.sha256(i).hexdigest() == want]
            png = matching[-1] if matching else (images[-1] if images else None)
        if png is None:
            raise AgentError("agent-frame", "the snapshot names no readable frame and carries no image")
        width, height = _png_size(png)
        results = snap.get("results")
        display_frame = _object(snap.get("display_frame")) or frame
        return Observation(
            png=png, sha256=hashlib.sha256(png).hexdigest(), width=width, height=height,
            turn=_int(snap.get("turn_count")), turns_left=_int(snap.get("turns_left")),
            actions_left=_int(snap.get("actions_left")),
            deadline_ms_left=_int(snap.get("deadline_ms_left")),
            tool_results=snap.get("tool_results"), retry_prompt=snap.get("retry_prompt"),
            results=list(results) if isinstance(results, list) else [], mode=self.mode,
            frame_sha256=str(display_frame.get("sha256", "")))

    def ended_error(self) -> EvidentError:
        """Why an ended task has no receipt: the engine's error in ``ended.error`` (mapped to
        its class), else ``agent-task-ended``."""
        err = _object(self.snapshot.get("ended")).get("error")
        if isinstance(err, Mapping) and isinstance(err.get("code"), str):
            return error_from_reply({"ok": False, "error": err})
        return AgentError("agent-task-ended", f"the engine ended the task without a receipt (phase {self.phase})")

    def __repr__(self) -> str:
        return f"<evident.agent.Task {self.task_id} {self.mode} seq={self.sequence} phase={self.phase}>"


@dataclass(frozen=True)
class TaskRun:
    """A finished task: the receipt and where its evidence is. ``shown`` lists the digest of
    every image the policy was given, turn by turn (what the model saw)."""

    task_id: str
    mode: str
    attempt_id: str
    policy: Dict[str, str]
    receipt: Dict[str, Any]
    receipt_path: Optional[str]
    evidence_dir: Optional[str]
    turn_count: int
    shown: List[str] = field(default_factory=list)
    snapshot: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def receipt_id(self) -> str:
        return str(self.receipt.get("receipt_id", ""))

    @property
    def result(self) -> Any:
        """The final answer the engine accepted: the receipt's ``result`` (its claims)."""
        return self.receipt.get("result")


def _declared_policy(policy: Policy, adapter: Optional[str], provider: Optional[str],
                     model: Optional[str]) -> Dict[str, str]:
    declared = getattr(policy, "policy", None)
    base: Dict[str, Any] = dict(declared) if isinstance(declared, Mapping) else {}
    for name, value in (("adapter", adapter), ("provider", provider), ("model", model)):
        if value is not None:
            base[name] = value
        elif name not in base and isinstance(getattr(policy, name, None), str):
            base[name] = getattr(policy, name)
    out: Dict[str, str] = {}
    for name in ("adapter", "provider", "model"):
        value = base.get(name)
        if not isinstance(value, str) or not value:
            raise AgentError("agent-task-args", f"the policy's {name} is unknown: pass {name}=")
        out[name] = value
    return out


def _prior_parts(prior: Union[TaskRun, Mapping[str, Any], str, None]) -> "tuple[Optional[str], Optional[str]]":
    """(prior_receipt_id, its attempt_id when known) from a TaskRun, a receipt or an id."""
    if prior is None:
        return None, None
    if isinstance(prior, TaskRun):
        return prior.receipt_id, prior.attempt_id
    if isinstance(prior, str):
        return prior, None
    if isinstance(prior, Mapping):
        binding = prior.get("binding")
        attempt = binding.get("attempt_id") if isinstance(binding, Mapping) else None
        rid = prior.get("receipt_id")
        return (rid if isinstance(rid, str) else None), (attempt if isinstance(attempt, str) else None)
    raise AgentError("agent-task-args", "prior must be a TaskRun, a task receipt or a receipt id")


def run_task(display: DisplayRef, app: Any, policy: Policy, *, task: str, mode: str = "stage",
             prior: Union[TaskRun, Mapping[str, Any], str, None] = None,
             adapter: Optional[str] = None, provider: Optional[str] = None,
             model: Optional[str] = None, attempt_id: Optional[str] = None,
             engine: Optional[Caller] = None,
             settle: Union[bool, Mapping[str, int], None] = None) -> TaskRun:
    """Runs one bounded task: ``policy`` sees the screen and answers in its provider's format
    until the engine finishes the task.

    ``app`` is an :class:`evident.App` (or its ``app_id``); ``task`` the task text (only its
    SHA-256 is sent); ``mode`` ``stage`` or ``attest``. ``attest`` needs ``prior``: the stage
    run (a :class:`TaskRun`), its receipt or its ``receipt_id``; the attempt id then defaults to
    the stage's. ``adapter``/``provider``/``model`` default to the policy's own (a transport's
    or the OCR policy's ``.policy``). ``settle`` is ``task.begin``'s (``False``, ``True`` or
    ``{"quiet_ms", "cap_ms"}``; default the engine's: on). Returns a :class:`TaskRun` with the
    receipt.

    A refused turn raises the engine's error (``TaskError`` & co.; the engine has ended the
    task, and nothing of that turn ran); an error in the policy, or Ctrl-C, aborts the task
    and propagates. A task the engine ended without a receipt (failed, aborted, expired) in
    a reply that was not an error raises the error the snapshot's ``ended`` names (else
    ``TaskError("agent-task-ended")``)."""
    if not isinstance(task, str) or not task:
        raise AgentError("agent-task-args", "task must be a non-empty string")
    caller = engine if engine is not None else display.engine
    declared = _declared_policy(policy, adapter, provider, model)
    prior_id, prior_attempt = _prior_parts(prior)
    attempt = attempt_id or prior_attempt or f"att-{secrets.token_hex(8)}"
    app_id = app if isinstance(app, str) else str(getattr(app, "app_id"))
    t = Task.begin(caller, display, app_id, mode=mode, task_sha256=task_sha256(task), policy=declared,
                   attempt_id=attempt, prior_receipt_id=prior_id, settle=settle)
    shown: List[str] = []
    try:
        while not t.ended:
            obs = t.observation()
            shown.append(obs.sha256)
            response = check_response(policy(obs))
            t.turn(response)
    except KeyboardInterrupt:
        if not t._abort_scheduled:  # interrupted in the policy: no engine call is in flight
            t.end_quietly()
        raise
    except BaseException:
        t.end_quietly()
        raise
    receipt = t.receipt
    if t.phase != "finished" or receipt is None:
        raise t.ended_error()
    snap = t.snapshot
    return TaskRun(task_id=t.task_id, mode=t.mode, attempt_id=attempt, policy=declared, receipt=receipt,
                   receipt_path=snap.get("receipt_path") if isinstance(snap.get("receipt_path"), str) else None,
                   evidence_dir=snap.get("evidence_dir") if isinstance(snap.get("evidence_dir"), str) else None,
                   turn_count=int(snap.get("turn_count", len(shown))), shown=shown, snapshot=snap)
