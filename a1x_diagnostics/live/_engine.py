"""``Diagnosis`` over the real parsers and detectors: the same ``Collector`` as ``--check``.

Each file gets its own ``a1x_diagnostics.parsing.FileReader``, the reader ``--check`` reads whole files
with (tracebacks and torchrun failure summaries span lines, so it keeps state between batches); its
events go into one bounded ``a1x_diagnostics.engine.Collector`` for the run. Nothing is re-read: an
evaluation runs the detectors on what the collector holds. With ``--config``, the TOML's lint findings
are merged in as ``--check --config`` does.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from a1x_diagnostics.engine import Collector
from a1x_diagnostics.events import Event, SignalKind, Source, Traceback
from a1x_diagnostics.findings import Finding
from a1x_diagnostics.live._diagnose import DiagnosisFactory, Evaluation
from a1x_diagnostics.parsing import FileReader

# Events that may change a verdict at once (a crash, an OOM, a stop): the follower evaluates soon after them.
_URGENT_CLASSES = frozenset({Traceback})
_URGENT_KINDS = frozenset({
    SignalKind.OOM, SignalKind.CHILD_FAILED, SignalKind.FATAL_SIGNAL, SignalKind.DEATH_SIGNAL, SignalKind.NCCL_ERROR,
    SignalKind.REPLICA_DEAD, SignalKind.PROCESS_FAILED, SignalKind.PROCESS_EXITED_EARLY, SignalKind.TERMINATED_ALL,
    SignalKind.GPU_LAYOUT_ERROR, SignalKind.CONFIG_LOAD_FAILED, SignalKind.JOB_CANCELLED,
})


class EngineDiagnosis:
    def __init__(self, config: Any = None, lint: Sequence[Finding] = (), closed_loop: Any = None) -> None:
        self.collector = Collector()
        # An AlpaGym run (``a1x_diagnostics.alpagym.reader.ClosedLoopRun``): its lines and artifacts too.
        self.collector.closed_loop = closed_loop
        self.config = config
        self.lint = list(lint)
        self._readers: dict[str, FileReader] = {}
        self._mtimes: dict[str, float] = {}
        self.urgent = False  # an event that may be a failure came in since the follower last looked

    def feed(self, source: Source, first_lineno: int, lines: Sequence[str]) -> None:
        if self.collector.closed_loop is not None:
            kept = self.collector.closed_loop.feed(self.collector, source, first_lineno, lines)
            if kept is None:
                return
            lines = kept
        reader = self._readers.get(source.path)
        if reader is None:
            reader = self._readers[source.path] = FileReader(source, mtime=self._mtimes.get(source.path))
        self._take(reader.feed_lines(first_lineno, lines))

    def _take(self, events: list[Event]) -> None:
        add = self.collector.add
        for event in events:
            add(event)
            if event.__class__ in _URGENT_CLASSES or getattr(event, "kind", None) in _URGENT_KINDS:
                self.urgent = True

    def end_file(self, source: Source) -> None:
        reader = self._readers.pop(source.path, None)
        if reader is not None:
            events = reader.end()
            self._take(events)
            self.urgent = self.urgent or bool(events)

    def in_group(self, source: Source) -> bool:
        """A traceback or torchrun summary of ``source`` is open (its next lines may still belong to it)."""
        reader = self._readers.get(source.path)
        return reader is not None and reader.in_group

    def file_stat(self, source: Source, size: int, mtime: float) -> None:
        self._mtimes[source.path] = mtime
        self.collector.note_file(source, size=size, mtime=mtime)

    def evaluate(self, now: float) -> Evaluation:
        # Following a run being written: its newest write, as the follower saw it, dates the silence since
        # (the wall clock on both sides, whatever time zone the log stamps were written in).
        activity = max(self._mtimes.values()) if self._mtimes else None
        if self.collector.closed_loop is not None:
            from a1x_diagnostics.alpagym.reader import ARTIFACTS_PER_POLL

            self.collector.closed_loop.poll(ARTIFACTS_PER_POLL)
        assessment = self.collector.assess(now, self.config, activity)
        findings = assessment.findings
        if self.lint:
            from a1x_diagnostics.report import merge_findings

            findings = merge_findings(findings, self.lint)
        return Evaluation(findings=list(findings), checks=list(assessment.checks), metrics=dict(assessment.metrics),
                          outcome=assessment.outcome)


def engine_diagnosis(config_path: str | os.PathLike[str] | None = None, *,
                     target: str | os.PathLike[str] | None = None) -> tuple[DiagnosisFactory, list[str]]:
    """A factory of ``EngineDiagnosis`` for the run, and notes for the user (a TOML not used...).

    The TOML is loaded and linted once; every run followed (``logs_latest`` moving) starts a
    fresh collector with it. ``target``: the path followed; an AlpaGym run there is read closed-loop
    (its AlpaGym and AlpaSim lines, its artifacts, its generated configs as the TOML).
    """
    notes: list[str] = []
    config: Any = None
    lint: list[Finding] = []
    if config_path is not None:
        from a1x_diagnostics.config import ConfigError, lint_config, load_config

        try:
            config = load_config(Path(config_path))
        except ConfigError as exc:
            notes.append(f"--config not used: {exc}")
        else:
            try:
                lint = list(lint_config(config))
            except Exception as exc:  # the linter's failure must not stop the log findings
                notes.append(f"config lint failed: {type(exc).__name__}: {exc}")

    def factory() -> EngineDiagnosis:
        closed = _closed_loop(target)
        if closed is not None and config is None:
            return EngineDiagnosis(_generated_toml(closed), lint, closed)
        return EngineDiagnosis(config, lint, closed)

    return factory, notes


def _closed_loop(target: str | os.PathLike[str] | None) -> Any:
    """The AlpaGym run at ``target`` as a ``ClosedLoopRun`` (None for other runs, or no target)."""
    if target is None:
        return None
    from a1x_diagnostics.parsing.alpagym_layout import NotAlpaGym, find_run

    try:
        found = find_run(Path(target))
    except (NotAlpaGym, OSError):
        return None
    if found is None:
        return None
    from a1x_diagnostics.alpagym.reader import ClosedLoopRun

    return ClosedLoopRun(found)


def _generated_toml(closed: Any) -> Any:
    if closed.found.cosmos_config is None:
        return None
    from a1x_diagnostics.config import ConfigError, load_config

    try:
        return load_config(closed.found.cosmos_config)
    except ConfigError:
        return None
