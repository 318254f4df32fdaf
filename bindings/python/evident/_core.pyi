# Type stubs for the private compiled module evident._core (bindings/core/src/core_module.cpp).
# bindings/python/tests/test_core_stub.py checks them against the built module (names, parameters,
# types, defaults, return types: pybind11 writes the real signatures into the docstrings).
from typing import Optional

version: str
max_request_bytes: int
has_verify: bool

class Engine:
    def __init__(self, state_dir: str = "", runtime_dir: str = "", *,
                 warm: list[list[int]] = ...) -> None: ...
    def wait_warm(self, timeout_ms: int) -> bool: ...
    def call(self, request_json: str) -> str:
        """One envelope {"op","args"} as JSON text -> the reply as JSON text. Releases the GIL."""
    def call_inline(self, request_json: str) -> Optional[str]:
        """The reply when the request is short and bounded (ping, a cu.actions batch of bounded
        kinds without settle), else None and nothing ran. Releases the GIL."""
    def call_inline_object(self, envelope: object) -> object:
        """call_inline without JSON text: the envelope as Python objects. The reply as objects
        (a dict, or its JSON text), None when the request does not run inline, False when the
        envelope must go as text; nothing ran in those two cases."""
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...

def verify_receipt_file(path: str, frames_dir: str = "", png_path: str = "",
                        expect_job_sha256: str = "", expect_uid: Optional[int] = None) -> str:
    """The C++ verifier (present when has_verify is True); returns the CLI's JSON text."""

def write_report(evidence_dir: str, out_path: str = "", format: str = "html",
                 frames_dir: str = "", key_path: str = "") -> str:
    """`evident report` in-process (present when built with engine/report); the CLI's --json
    result as text."""
