"""Receipt verification from Python (docs/receipts.md).

Two independent verifiers are available and both are used by :func:`verify_receipt`:

* the C++ verifier (``evident verify``), exposed by the compiled module when the engine was built
  with receipts support;
* the pure-Python verifier in :mod:`evident.verify` (written independently from the documented
  algorithm, as a cross-check).

The result is a :class:`Verification`: ``ok`` only if every check of every verifier passed.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, List, Mapping, Optional, Union

from . import verify
from ._native import find_core
from .errors import ReceiptError

__all__ = ["Verification", "VerifyCheck", "verify_receipt", "python_verifier", "cpp_verifier"]


@dataclass(frozen=True)
class VerifyCheck:
    name: str
    ok: bool
    detail: str = ""
    verifier: str = ""


@dataclass(frozen=True)
class Verification:
    """``ok``, ``receipt_id`` and every named check (``verifier`` says which one ran it)."""

    ok: bool
    receipt_id: Optional[str]
    checks: List[VerifyCheck] = field(default_factory=list)
    verifiers: List[str] = field(default_factory=list)

    @property
    def failed(self) -> List[VerifyCheck]:
        return [c for c in self.checks if not c.ok]

    def check(self) -> "Verification":
        """Returns self, or raises ``ReceiptError("verify-failed")`` naming the failed checks."""
        if not self.ok:
            names = ", ".join(f"{c.verifier}:{c.name}" for c in self.failed) or "no verifier ran"
            raise ReceiptError("verify-failed", f"receipt verification failed: {names}")
        return self

    def __bool__(self) -> bool:
        return self.ok


def cpp_verifier() -> Optional[Callable[..., str]]:
    """The C++ verifier function from ``_core``, or None if this build has none."""
    core = find_core()
    return getattr(core, "verify_receipt_file", None) if core is not None else None


def python_verifier() -> ModuleType:
    """The independent pure-Python verifier, :mod:`evident.verify`."""
    return verify


def _checks_from(obj: Any, verifier: str) -> List[VerifyCheck]:
    checks = obj.get("checks") if isinstance(obj, Mapping) else getattr(obj, "checks", None)
    out: List[VerifyCheck] = []
    for c in checks or []:
        if isinstance(c, Mapping):
            out.append(VerifyCheck(str(c.get("name")), bool(c.get("ok")), str(c.get("detail", "")),
                                   verifier))
        else:
            out.append(VerifyCheck(str(getattr(c, "name", "?")), bool(getattr(c, "ok", False)),
                                   str(getattr(c, "detail", "")), verifier))
    return out


def _run_python(module: ModuleType, path: str, frames_dir: Optional[str], png: Optional[str],
                expect_job: Optional[str], expect_uid: Optional[int]) -> List[VerifyCheck]:
    # The independent verifier parses the file itself (strictly), like `evident verify`.
    try:
        receipt = module.load_receipt_file(path)
    except module.ReceiptFormatError as e:
        return [VerifyCheck("load", False, f"{e.code}: {e.message}", "python")]
    result = module.verify_receipt(receipt, frames_dir=frames_dir, png_path=png,
                                   expect_job_sha256=expect_job, expect_uid=expect_uid)
    return _checks_from(result, "python")


def verify_receipt(receipt: Union[str, "os.PathLike[str]", Mapping[str, Any]], *,
                   frames_dir: Optional[str] = None, png_path: Optional[str] = None,
                   expect_job_sha256: Optional[str] = None, expect_uid: Optional[int] = None,
                   use: str = "both") -> Verification:
    """Verifies a receipt (a ``receipt.json`` path or the parsed object).

    ``use``: ``"both"`` (default; every available verifier), ``"cpp"`` or ``"python"``.
    Raises ``ReceiptError("receipt-unreadable")`` for a missing file and
    ``ReceiptError("verify-unavailable")`` when the requested verifier is not available.
    """
    tmp = None
    try:
        if isinstance(receipt, Mapping):
            fd, tmp = tempfile.mkstemp(prefix="evident-receipt-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(receipt, f, ensure_ascii=False, separators=(",", ":"))
            path = tmp
            obj: Mapping[str, Any] = receipt
        else:
            path = os.fspath(receipt)
            try:
                with open(path, "rb") as f:
                    obj = json.loads(f.read().decode("utf-8"))
            except (OSError, ValueError) as e:
                raise ReceiptError("receipt-unreadable", f"cannot read receipt: {e}") from e
        checks: List[VerifyCheck] = []
        verifiers: List[str] = []
        receipt_id = obj.get("receipt_id") if isinstance(obj, Mapping) else None
        if use in ("both", "cpp"):
            fn = cpp_verifier()
            if fn is not None:
                reply = json.loads(fn(path, frames_dir or "", png_path or "",
                                      expect_job_sha256 or "", expect_uid))
                if "error" in reply and "checks" not in reply:
                    err = reply["error"]
                    raise ReceiptError(err.get("code", "verify-failed"), err.get("message", ""))
                checks += _checks_from(reply, "cpp")
                verifiers.append("cpp")
            elif use == "cpp":
                raise ReceiptError("verify-unavailable", "this build has no C++ verifier")
        if use in ("both", "python"):
            checks += _run_python(python_verifier(), path, frames_dir, png_path,
                                  expect_job_sha256, expect_uid)
            verifiers.append("python")
        if not verifiers:
            raise ReceiptError("verify-unavailable", "no receipt verifier is available")
        ok = bool(checks) and all(c.ok for c in checks)
        return Verification(ok, receipt_id if isinstance(receipt_id, str) else None, checks,
                            verifiers)
    finally:
        if tmp is not None:
            os.unlink(tmp)
