"""``evident report`` from Python: one self-contained HTML page (or a Markdown summary) of a
session's evidence directory, written by the C++ report module (docs/evidence.md)."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ._native import find_core
from .errors import EvidentError, error_class_for


@dataclass(frozen=True)
class ReportResult:
    """A written report: ``path``, ``ok`` (every check passed), ``checks`` and ``signature``."""

    path: str
    ok: bool
    checks: List[Dict[str, Any]] = field(default_factory=list)
    signature: str = ""
    receipt_id: Optional[str] = None

    @property
    def failed(self) -> List[str]:
        return [c["name"] for c in self.checks if not c.get("ok")]


def write_report(evidence_dir: str, out: Optional[str] = None, *, format: str = "html",
                 frames_dir: Optional[str] = None) -> ReportResult:
    """Writes the report of ``evidence_dir`` (default ``<evidence_dir>/report.html`` or
    ``report.md``) and returns what it found. A report whose checks fail is still written
    (``ok`` is False); raises :class:`EvidentError` (``report-*``, ``receipt-*``, ``fs-error``)
    only when nothing was written, or ``report-unavailable`` when this build has no report
    module."""
    if format not in ("html", "markdown"):
        raise error_class_for("report-usage")("report-usage", "format must be html or markdown",
                                              False)
    core = find_core()
    fn = getattr(core, "write_report", None) if core is not None else None
    if fn is None:
        raise error_class_for("report-unavailable")(
            "report-unavailable", "this build of evident._core has no report module", False)
    reply = json.loads(fn(os.fspath(evidence_dir), os.fspath(out) if out else "", format,
                          os.fspath(frames_dir) if frames_dir else "", ""))
    report = reply.get("report")
    if report is None:
        err = reply.get("error") or {}
        code = str(err.get("code", "internal"))
        raise error_class_for(code)(code, str(err.get("message", "")), bool(err.get("retryable")))
    return ReportResult(report["path"], bool(reply.get("ok")), list(reply.get("checks") or []),
                        str(reply.get("signature", "")), reply.get("receipt_id"))


__all__ = ["ReportResult", "write_report", "EvidentError"]
