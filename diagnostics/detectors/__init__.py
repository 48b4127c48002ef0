"""Detectors: pure functions of a ``DetectorContext`` that return findings with evidence.

One module per pathology family; each registers its checks with ``@detector(<catalog id>)``.
``run_detectors(ctx)`` runs them all and gives a ``CheckResult`` per id plus the findings.
"""

from __future__ import annotations

from diagnostics.detectors import (  # noqa: F401 - imported for their @detector registrations
    buffer,
    collapse,
    config_runtime,
    failures,
    gpus,
    lifecycle,
    memory,
    prefetch,
    recipe,
    weight_sync,
)
from diagnostics.detectors._base import (
    REGISTRY,
    DetectorContext,
    Verdict,
    detector,
    make_finding,
)
from diagnostics.detectors._config import ConfigLike, DumpConfig, RunConfig
from diagnostics.detectors._store import EventStore, FileFacts, Retained
from diagnostics.findings import CheckResult, CheckState, Finding


def run_detectors(ctx: DetectorContext) -> tuple[list[Finding], list[CheckResult]]:
    """Every registered detector, in registry order. A detector that crashes is reported, not raised."""
    findings: list[Finding] = []
    checks: list[CheckResult] = []
    for check_id, det in REGISTRY.items():
        try:
            verdict = det.fn(ctx)
        except Exception as exc:  # a bug in one detector must not hide the others' findings
            checks.append(
                CheckResult(id=check_id, state=CheckState.BLIND, note=f"detector error: {type(exc).__name__}: {exc}")
            )
            continue
        findings.extend(verdict.findings)
        checks.append(CheckResult(id=check_id, state=verdict.resolved_state(), note=verdict.note))
    return findings, checks


__all__ = [
    "REGISTRY",
    "ConfigLike",
    "DetectorContext",
    "DumpConfig",
    "EventStore",
    "FileFacts",
    "Retained",
    "RunConfig",
    "Verdict",
    "detector",
    "make_finding",
    "run_detectors",
]
