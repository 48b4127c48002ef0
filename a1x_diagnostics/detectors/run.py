"""Every detector on one ``DetectorContext``: ``run_detectors``, and the registry in its fixed order.

Importing this module registers every detector (``@detector`` in each family's module). The package's
``__init__`` leaves it to the first use of a name that needs it, so that reading a run
(``a1x_diagnostics.collect``: the store, the metrics) imports neither the detectors nor the report models
(docs/architecture.md, "Reading in a child process").
"""

from __future__ import annotations

from a1x_diagnostics.detectors import (
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
from a1x_diagnostics.detectors._base import REGISTRY, Conclusion, Detector
from a1x_diagnostics.detectors._context import DetectorContext
from a1x_diagnostics.detectors.facts import RunFacts
from a1x_diagnostics.detectors.outcome import decide_outcome
from a1x_diagnostics.findings import CheckResult, CheckState, Finding, Outcome, RunOutcome

MODULES = tuple(m.__name__ for m in (buffer, closed_loop, collapse, config_runtime, failures, lifecycle, memory,
                                     outcome, placement, prefetch, recipe, weight_sync))
"""The families' modules in the order their detectors run: the order this module imports them in. A
module imported on its own before this one registers its detectors first; the run order stays this one."""


def ordered() -> list[Detector]:
    """The registry in run order: each family's detectors in ``MODULES`` order, in the order each
    module registers them, the concluding ones after all the others."""
    place = {name: i for i, name in enumerate(MODULES)}
    registered = {det_id: i for i, det_id in enumerate(REGISTRY)}
    return sorted(REGISTRY.values(), key=lambda d: (d.concluding, place.get(d.module, len(place)), registered[d.id]))


def run_detectors(ctx: DetectorContext) -> tuple[list[Finding], list[CheckResult], RunOutcome]:
    """Every registered detector, in run order (``ordered``), then the run's outcome and the concluding
    detectors (``detectors.outcome``: what no other finding explains). A detector that crashes is
    reported, not raised."""
    findings: list[Finding] = []
    checks: list[CheckResult] = []
    try:
        facts = RunFacts.of(ctx)
        run_outcome = decide_outcome(ctx, facts)
    except Exception as exc:  # never OK because the outcome could not be read
        facts = RunFacts([], [], None, [])
        run_outcome = RunOutcome(state=Outcome.INCOMPLETE, summary=f"the outcome could not be read: "
                                 f"{type(exc).__name__}: {exc}")
    for det in ordered():
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


__all__ = ["MODULES", "REGISTRY", "ordered", "run_detectors"]
