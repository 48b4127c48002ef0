"""The diagnostics engine: a bounded ``Collector`` of events, and the batch ``check()``.

``Collector.add(event)`` is O(1) amortised with bounded memory (metric series in compact arrays,
the first/last few events of each kind for evidence); ``Collector.evaluate()`` runs every detector
on what was collected. ``check(path)`` streams a run's files through one Collector and returns the
``Report`` that ``a1x-tui --check`` prints. The live follower feeds the same Collector line by line.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diagnostics.detectors import (
    ConfigLike,
    DetectorContext,
    DumpConfig,
    EventStore,
    FileFacts,
    RunConfig,
    run_detectors,
)
from diagnostics.events import Event, Source
from diagnostics.findings import CheckResult, Finding, Report
from diagnostics.metrics import SERIES_CAPACITY, Metrics
from diagnostics.report import build_report, merge_findings, unknown_report

DEADLINE_EVERY = 2048  # events between two looks at the clock


class CheckTimeout(Exception):
    """``check()`` ran past its deadline."""


@dataclass(frozen=True, slots=True)
class Assessment:
    findings: list[Finding]
    checks: list[CheckResult]
    metrics: dict[str, float | int | str | None]


class Collector:
    """Everything the detectors need from a stream of events, in bounded memory."""

    def __init__(self, *, keep: int = 16, series_capacity: int = SERIES_CAPACITY) -> None:
        self.store = EventStore(keep)
        self.metrics = Metrics(series_capacity)
        self.checks: list[CheckResult] = []

    def add(self, event: Event) -> None:
        self.metrics.add(event, self.store.add(event))  # the store's epoch(event.ts), not computed twice

    def extend(self, events: Iterable[Event]) -> None:
        for event in events:
            self.add(event)

    def note_file(self, source: Source, *, size: int | None = None, mtime: float | None = None) -> FileFacts:
        """Make a file known (even one without any event) and record its size and mtime."""
        facts = self.store.files.get(source.path)
        if facts is None:
            facts = self.store.files[source.path] = FileFacts(source)
        if size is not None:
            facts.size = size
        if mtime is not None:
            facts.mtime = mtime
        return facts

    def run_config(self, config: ConfigLike | None = None) -> RunConfig:
        """The config detectors see: the logged effective config first, then ``config``."""
        dumps = tuple(DumpConfig(d) for d in self.store.config_dumps if d.config)
        dumps = tuple(sorted(dumps, key=lambda d: d.event.scope != "full"))
        return RunConfig(toml=config, dumps=dumps)

    def context(self, now: float | None = None, config: ConfigLike | None = None) -> DetectorContext:
        return DetectorContext(store=self.store, metrics=self.metrics, config=self.run_config(config), now=now)

    def assess(self, now: float | None = None, config: ConfigLike | None = None) -> Assessment:
        findings, checks = run_detectors(self.context(now, config))
        self.checks = checks
        return Assessment(findings, checks, self.metrics.summary())

    def evaluate(self, now: float | None = None, config: ConfigLike | None = None) -> list[Finding]:
        """Findings now; the per-detector verdicts are left in ``self.checks``."""
        return self.assess(now, config).findings


def _load_toml(config_path: Path, notes: list[str]) -> Any:
    from diagnostics.config import ConfigError, load_config

    try:
        return load_config(config_path)
    except ConfigError as exc:
        notes.append(f"--config not used: {exc}")
        return None


# Lint rules that judge this shell's environment: the run's own environment is unknown to --check, and
# its logs say directly whether W&B worked (wandb_forbidden, the 'Wandb is not available' line).
_ENVIRONMENT_RULES = frozenset({"wandb_key_missing"})


def _lint(loaded: Any, notes: list[str]) -> list[Finding]:
    from diagnostics.config import lint_config

    try:
        return [f for f in lint_config(loaded, env={}) if f.id not in _ENVIRONMENT_RULES]
    except Exception as exc:  # the linter is another module's; its failure must not lose the log findings
        notes.append(f"config lint failed: {type(exc).__name__}: {exc}")
        return []


def check(
    path: str | os.PathLike[str],
    config_path: str | os.PathLike[str] | None = None,
    run: str | None = None,
    now: float | None = None,
    *,
    timeout: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Diagnose the run at ``path``; never raises for bad input (the report says UNKNOWN and why)."""
    from diagnostics.parsing import LayoutError, discover, read_run

    target = str(path)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        layout = discover(Path(path), run)
    except LayoutError as exc:
        return unknown_report(target, str(exc), run=run)
    if not layout.files:
        reason = f"{target}: no log files in this run"
        if layout.run_name:
            # cosmos-rl.md §15: one replica needing more GPUs than the node leaves logs_<ts>/ empty; the
            # error itself went to the launcher's own output.
            reason += (
                f" ({layout.run_name} is empty: the launcher failed before starting any process; its own output "
                "holds the error, e.g. 'Replica with GPUs larger than 8' when a replica needs more GPUs than the node)"
            )
        return unknown_report(target, reason, run=layout.run_name)

    notes: list[str] = []
    collector = Collector()
    for file_path, source in layout.files:
        try:
            st = file_path.stat()
        except OSError:
            continue
        collector.note_file(source, size=st.st_size, mtime=st.st_mtime)

    loaded = _load_toml(Path(config_path), notes) if config_path is not None else None
    if progress is not None:
        size = sum(f.size or 0 for f in collector.store.files.values())
        progress(f"reading {len(layout.files)} file(s), {size / 1e6:.1f} MB")
    try:
        for i, event in enumerate(read_run(layout)):
            collector.add(event)
            if deadline is not None and i % DEADLINE_EVERY == 0 and time.monotonic() > deadline:
                raise CheckTimeout
    except CheckTimeout:
        return unknown_report(target, f"timed out after {timeout:g} s while reading the logs", run=layout.run_name)
    notes.extend(f"unreadable: {u}" for u in layout.unreadable)
    files = [src.path for _, src in layout.files]
    if collector.store.event_count == 0:
        readable = len(layout.files) - len(layout.unreadable)
        reason = (
            f"{target}: none of the {len(layout.files)} log file(s) could be read"
            if readable <= 0
            else f"{target}: no Cosmos-RL line in {readable} log file(s) (empty, or not a Cosmos-RL run)"
        )
        return unknown_report(target, reason, run=layout.run_name, files=files, notes=notes)

    assessment = collector.assess(now, loaded)
    findings = assessment.findings
    if loaded is not None:
        findings = merge_findings(findings, _lint(loaded, notes))
    return build_report(
        target=target,
        run=layout.run_name,
        findings=findings,
        checks=assessment.checks,
        metrics=assessment.metrics,
        files=files,
        notes=notes,
    )
