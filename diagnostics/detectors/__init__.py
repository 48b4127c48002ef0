"""Detectors: pure functions of a ``DetectorContext`` that return findings with evidence.

One module per pathology family; each registers its checks with ``@detector(<catalog id>)``.
``run_detectors(ctx)`` runs them all and gives a ``CheckResult`` per id plus the findings.
"""

from __future__ import annotations

from diagnostics.detectors import (  # noqa: F401 - imported for their @detector registrations
    buffer,
    closed_loop,
    collapse,
    config_runtime,
    failures,
    lifecycle,
    memory,
    outcome,
    placement,
    prefetch,
    recipe,
    weight_sync,
)
from diagnostics.detectors._base import (
    REGISTRY,
    Conclusion,
    DetectorContext,
    Verdict,
    detector,
    make_finding,
)
from diagnostics.detectors._config import ConfigLike, DumpConfig, RunConfig, clip_text
from diagnostics.detectors._store import EventStore, FileFacts, Retained
from diagnostics.detectors.facts import RunFacts
from diagnostics.detectors.outcome import decide_outcome
from diagnostics.findings import CheckResult, CheckState, Finding, Outcome, RunOutcome


def run_detectors(ctx: DetectorContext) -> tuple[list[Finding], list[CheckResult], RunOutcome]:
    """Every registered detector, in registry order, then the run's outcome and the concluding detectors
    (``detectors.outcome``: what no other finding explains). A detector that crashes is reported, not raised."""
    findings: list[Finding] = []
    checks: list[CheckResult] = []
    try:
        facts = RunFacts.of(ctx)
        run_outcome = decide_outcome(ctx, facts)
    except Exception as exc:  # never OK because the outcome could not be read
        facts = RunFacts([], [], None, [])
        run_outcome = RunOutcome(state=Outcome.INCOMPLETE, summary=f"the outcome could not be read: "
                                 f"{type(exc).__name__}: {exc}")
    ordered = [d for d in REGISTRY.values() if not d.concluding] + [d for d in REGISTRY.values() if d.concluding]
    for det in ordered:
        check_id = det.id
        try:
            verdict = det.fn(Conclusion(ctx, list(findings), run_outcome, facts)) if det.concluding else det.fn(ctx)
        except Exception as exc:  # a bug in one detector must not hide the others' findings
            checks.append(
                CheckResult(id=check_id, state=CheckState.BLIND, note=f"detector error: {type(exc).__name__}: {exc}")
            )
            continue
        findings.extend(verdict.findings)
        checks.append(CheckResult(id=check_id, state=verdict.resolved_state(), note=verdict.note))
    return findings, checks, run_outcome


__all__ = [
    "REGISTRY",
    "Conclusion",
    "ConfigLike",
    "DetectorContext",
    "DumpConfig",
    "EventStore",
    "FileFacts",
    "Retained",
    "RunConfig",
    "Verdict",
    "clip_text",
    "detector",
    "make_finding",
    "run_detectors",
]
