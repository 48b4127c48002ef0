"""Incremental diagnostics: lines in (per file, in order), findings out on demand.

The follower feeds every line of every file exactly once and in file order (history first, then
live lines), and asks for an evaluation every few seconds. ``Diagnosis`` is that contract; the
implementation over ``a1x_diagnostics.parsing`` and ``a1x_diagnostics.engine`` lives in ``_engine``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from a1x_diagnostics.events import Source
from a1x_diagnostics.findings import CheckResult, Finding, RunOutcome


@dataclass(slots=True)
class Evaluation:
    findings: list[Finding] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    outcome: RunOutcome | None = None


class Diagnosis(Protocol):
    def feed(self, source: Source, first_lineno: int, lines: Sequence[str]) -> None:
        """Lines ``first_lineno``.. of ``source``, in order, each exactly once."""
        ...

    def end_file(self, source: Source) -> None:
        """``source`` ended (EOF before a reset, deletion, close): flush what spans lines."""
        ...

    def file_stat(self, source: Source, size: int, mtime: float) -> None:
        """The file's size and modification time, as last seen."""
        ...

    def evaluate(self, now: float) -> Evaluation:
        """Findings, check states and a metrics summary for the run as read so far."""
        ...


# Optional, read by the follower with getattr (``EngineDiagnosis`` has both; test doubles need neither):
#   urgent: bool               - set by ``feed``/``end_file`` after an event that may be a failure; the
#                                follower then evaluates within ``urgent_evaluate_interval`` and clears it
#   in_group(source) -> bool   - a traceback or torchrun summary of ``source`` is still open: worth closing
#                                after ``group_flush`` of quiet (docs/live.md "Latency of a failure")

DiagnosisFactory = Callable[[], Diagnosis]
"""Makes a fresh ``Diagnosis`` for a run (called again when the run switches)."""
