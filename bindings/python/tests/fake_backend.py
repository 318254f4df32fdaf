"""A scripted stand-in for ``_core.Engine`` (``call(text) -> text``) used only by unit tests of
the pure-Python layer: sequence bookkeeping, error mapping, Ctrl-C handling. Every behaviour
that involves X is tested against the real engine in test_engine.py."""
import json
import threading


class FakeBackend:
    def __init__(self):
        self.requests = []          # decoded envelopes, in order
        self.handlers = {}          # op -> fn(args) -> reply dict
        self.closed = False
        self.lock = threading.Lock()

    def on(self, op, fn):
        self.handlers[op] = fn

    def call(self, text):
        env = json.loads(text)
        with self.lock:
            self.requests.append(env)
        fn = self.handlers.get(env["op"])
        if fn is None:
            return json.dumps({"ok": False, "error": {"code": "request-op", "message": "unknown op",
                                                      "retryable": False}})
        return json.dumps(fn(env["args"]))

    def close(self):
        self.closed = True


class FakeSessions:
    """Enough of the session protocol (docs/protocol.md §5) to exercise evident.Session's bookkeeping."""

    def __init__(self, backend, block=None):
        self.phase = None
        self.sequence = 0
        self.block = block          # optional callable run inside `actions` (to hold a call)
        self.ops = []
        backend.on("session", self.handle)

    def snap(self, **extra):
        frame = {"sha256": f"{self.sequence:064x}", "byte_length": 10, "width": 8, "height": 8,
                 "path": None}
        base = {"ok": True, "session_id": "ses-" + "a" * 32, "sequence": self.sequence,
                "phase": self.phase, "frame": frame, "results": None, "receipt": None,
                "evidence_dir": None}
        base.update(extra)
        return base

    @staticmethod
    def err(code):
        return {"ok": False, "error": {"code": code, "message": code, "retryable": False}}

    def handle(self, args):
        req = json.loads(args["request"])
        op = req["op"]
        self.ops.append((op, req.get("sequence")))
        if op == "begin":
            self.phase, self.sequence = "stage", 0
            return self.snap()
        if op == "status":
            return self.snap()
        if req.get("sequence") != self.sequence:
            return self.err("session-sequence")
        if op == "abort":
            self.phase = "closed"
            return {"ok": True, "aborted": True}
        expected = {"actions": "stage", "freeze": "stage", "observe": "frozen",
                    "finish": "observed", "close": "finished"}[op]
        if self.phase != expected:
            return self.err("session-phase")
        if op == "actions":
            if self.block:
                self.block()
            self.sequence += 1
            return self.snap(results=[{"index": i, "type": a["type"], "status": "injected",
                                       "detail": ""} for i, a in enumerate(req["actions"])])
        if op == "close":
            self.phase = "closed"
            return {"ok": True, "closed": True, "cleanup_complete": True, "receipt_id": "ecr-x"}
        self.sequence += 1
        self.phase = {"freeze": "frozen", "observe": "observed", "finish": "finished"}[op]
        if op == "finish":
            assert req["observation_sha256"] == f"{self.sequence - 1:064x}"
            return self.snap(receipt={"receipt_id": "ecr-x", "claims": req["claims"]})
        return self.snap()
