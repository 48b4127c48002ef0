"""The diagnostics engine: a bounded ``Collector`` of events, and the batch ``check()``.

``Collector.add(event)`` is O(1) amortised with bounded memory (metric series in compact arrays,
the first/last few events of each kind for evidence); ``Collector.evaluate()`` runs every detector
on what was collected. ``check(path)`` streams a run's files through one Collector and returns the
``Report`` that ``a1x-tui --check`` prints. The live follower feeds the same Collector line by line.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from a1x_diagnostics.deadline import CheckTimeout as CheckTimeout  # raised in the work past its deadline, caught here
from a1x_diagnostics.deadline import bounded, limit_of
from a1x_diagnostics.detectors import (
    ConfigLike,
    DetectorContext,
    DumpConfig,
    EventStore,
    FileFacts,
    RunConfig,
    run_detectors,
)
from a1x_diagnostics.detectors.launcher import log_dir_of
from a1x_diagnostics.events import Event, Role, SignalKind, Source
from a1x_diagnostics.findings import CheckResult, Finding, Report, RunOutcome, Severity
from a1x_diagnostics.metrics import SERIES_CAPACITY, Metrics
from a1x_diagnostics.report import build_report, merge_findings, unknown_report
from a1x_diagnostics.run_record import launcher_log_dir, user_stop

if TYPE_CHECKING:
    from a1x_diagnostics.parsing import RunLayout


@dataclass(frozen=True, slots=True)
class Assessment:
    findings: list[Finding]
    checks: list[CheckResult]
    metrics: dict[str, float | int | str | None]
    outcome: RunOutcome



class Collector:
    """Everything the detectors need from a stream of events, in bounded memory (the store and the
    metrics), and the detectors run on it (``assess``)."""

    def __init__(self, *, keep: int = 16, series_capacity: int = SERIES_CAPACITY) -> None:
        self.store = EventStore(keep)
        self.metrics = Metrics(series_capacity)
        self.checks: list[CheckResult] = []
        # A closed-loop run's reader (``a1x_diagnostics.alpagym.reader.ClosedLoopRun``): set for AlpaGym runs.
        self.closed_loop: Any = None

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

    def note_files(self, layout: RunLayout) -> None:
        """Every file of ``layout`` known, with its size and mtime now (a file gone meanwhile is left out)."""
        for file_path, source in layout.files:
            try:
                st = file_path.stat()
            except OSError:
                continue
            self.note_file(source, size=st.st_size, mtime=st.st_mtime)

    def run_config(self, config: ConfigLike | None = None) -> RunConfig:
        """The config detectors see: the logged effective config first, then ``config``."""
        dumps = tuple(DumpConfig(d) for d in self.store.config_dumps if d.config)
        dumps = tuple(sorted(dumps, key=lambda d: d.event.scope != "full"))
        return RunConfig(toml=config, dumps=dumps)

    def context(self, now: float | None = None, config: ConfigLike | None = None,
                activity: float | None = None) -> DetectorContext:
        closed = None
        if self.closed_loop is not None:  # hook: the closed-loop series and facts, before every evaluation
            self.closed_loop.finish(self.metrics)
            closed = self.closed_loop.state
        return DetectorContext(store=self.store, metrics=self.metrics, config=self.run_config(config), now=now,
                               activity=activity, closed_loop=closed)

    def assess(self, now: float | None = None, config: ConfigLike | None = None,
               activity: float | None = None) -> Assessment:
        """Every detector on what was collected. ``now``: the wall clock, for a run being written;
        ``activity``: when a live follower last saw it written (``DetectorContext``)."""
        findings, checks, outcome = run_detectors(self.context(now, config, activity))
        self.checks = checks
        summary = self.metrics.summary()
        if self.closed_loop is not None:
            summary.update(self.closed_loop.state.summary())
        return Assessment(findings, checks, summary, outcome)

    def evaluate(self, now: float | None = None, config: ConfigLike | None = None,
                 activity: float | None = None) -> list[Finding]:
        """Findings now; the per-detector verdicts are left in ``self.checks``."""
        return self.assess(now, config, activity).findings


def _read_into(collector: Collector, layout: RunLayout) -> None:
    """Every event of ``layout`` into ``collector`` through the one reader (``read_run``; an AlpaGym
    run's role logs only: the closed-loop reader takes the rest)."""
    from a1x_diagnostics.parsing import read_run

    if layout.closed_loop is not None:
        from dataclasses import replace

        from a1x_diagnostics.alpagym.reader import generic_files

        layout = replace(layout, files=generic_files(layout.files))
    collector.extend(read_run(layout))


def _load_toml(config_path: Path, notes: list[str]) -> Any:
    from a1x_diagnostics.config import ConfigError, load_config

    try:
        return load_config(config_path)
    except ConfigError as exc:
        notes.append(f"--config not used: {exc}")
        return None


# Lint rules that judge this shell's environment: the run's own environment is unknown to --check, and
# its logs say directly whether W&B worked (wandb_forbidden, the 'Wandb is not available' line).
_ENVIRONMENT_RULES = frozenset({"wandb_key_missing"})


def _lint(loaded: Any, notes: list[str]) -> list[Finding]:
    from a1x_diagnostics.config import lint_config

    try:
        return [f for f in lint_config(loaded, env={}) if f.id not in _ENVIRONMENT_RULES]
    except Exception as exc:  # the linter is another module's; its failure must not lose the log findings
        notes.append(f"config lint failed: {type(exc).__name__}: {exc}")
        return []


# Config predictions that a run which trained refutes: each says the run fails before or at its first step
# (the loader rejects a value, placement fails, the model or grader cannot load, the first reward raises).
_FAILS_BEFORE_TRAINING = frozenset({
    "insufficient_gpus", "grader_missing", "recipe_parallelism_unsupported", "wrong_alpamayo_version",
    "batch_not_divisible", "invalid_value", "model_not_converted", "mini_parquet_missing",
})


def _against_logs(predicted: list[Finding], runtime: list[Finding], collector: Collector,
                  notes: list[str]) -> list[Finding]:
    """The config's findings as the logs leave them (docs/findings.md, its head): a prediction of failure that
    the run's own steps refute is a note, never a finding; on a run that trained, none is critical (CRITICAL
    needs a line that shows a failure); all are marked as the config's (``data.origin``), so the report
    lists them after what the logs show."""
    steps = collector.metrics.step
    rewards = collector.metrics.get("reward_mean")
    logged = {f.id for f in runtime}
    kept = []
    for f in predicted:
        refuted = steps is not None and f.id not in logged and (
            f.id in _FAILS_BEFORE_TRAINING or (f.id == "grpo_became_sft" and rewards is not None and len(rewards)))
        if refuted:
            first = f.explanation.split(". ")[0].rstrip(".")
            notes.append(f"--config predicted {f.id} ({first}), but the logs show {steps} training step(s): it did "
                         "not happen, so it is not a finding of this run")
            continue
        if f.id in logged:
            kept.append(f)  # merged into the logs' own finding
            continue
        update: dict[str, Any] = {"data": {**f.data, "origin": "config"}}
        if steps is not None and f.severity is Severity.CRITICAL:
            update["severity"] = Severity.WARNING
            update["explanation"] = (f"{f.explanation} (The logs show {steps} training step(s): the run got past "
                                     "this, so it is a warning here, not a failure of this run.)")
        kept.append(f.model_copy(update=update))
    return kept


def _closed_loop_toml(found: Any, notes: list[str]) -> Any:
    """The Cosmos-RL TOML an AlpaGym host generated for its run: the config the detectors see."""
    if found.cosmos_config is None:
        return None
    return _load_toml(found.cosmos_config, notes)


def _closed_loop_lint(cl: Any, loaded: Any, config_path: Any, notes: list[str]) -> list[Finding]:
    """An AlpaGym run's own generated configs, linted as ``a1x-tui lint`` lints them (the open-loop rules
    its TOML shares, and the Hydra choices of ``resolved_config.yaml``)."""
    from a1x_diagnostics.alpagym.lint import lint_closed_loop

    try:
        return [f for f in lint_closed_loop(loaded, cl.config, env={}) if f.id not in _ENVIRONMENT_RULES]
    except Exception as exc:  # the linter's failure must not lose the log findings
        notes.append(f"config lint failed: {type(exc).__name__}: {exc}")
        return []


def _read_named_folder(collector: Collector, layout: RunLayout, notes: list[str]) -> str | None:
    """A launcher capture checked on its own: read the log folder it names too, where it can be reached
    (``run_record.launcher_log_dir``); ``layout.files`` gains its files. The folder's name, or None."""
    from a1x_diagnostics.parsing import LayoutError, discover

    capture = layout.files[0][0]
    printed = log_dir_of(collector.store.signal(SignalKind.PROCESS_PLANNED).items())
    if printed is None:
        return None
    folder = launcher_log_dir(capture, printed)
    if folder is None:
        notes.append(f"the launcher wrote its processes' logs to {printed}/: not found there nor beside "
                     f"{capture.name}, so only the launcher's own lines were read")
        return None
    try:
        inner = discover(folder)
    except LayoutError as exc:
        notes.append(f"the log folder the launcher names could not be read: {exc}")
        return None
    base = capture.parent.resolve()

    def shown(p: Path, src: Source) -> Source:  # named as a check of the folder above both would name it
        where = p.resolve()
        path = where.relative_to(base).as_posix() if where.is_relative_to(base) else str(where)
        return Source(path, src.role, src.index)

    inner.files = [(p, shown(p, src)) for p, src in inner.files if p.resolve() != capture.resolve()]
    collector.note_files(inner)
    _read_into(collector, inner)
    layout.files = inner.files + layout.files
    layout.unreadable.extend(inner.unreadable)
    notes.append(f"read the log folder the launcher names ({printed}/) from {folder}")
    return inner.run_name or folder.name


def _no_files_reason(target: str, layout: RunLayout) -> str:
    reason = f"{target}: no log files in this run"
    if layout.run_name:
        # docs/reference/cosmos-rl.md §15: one replica needing more GPUs than the node leaves logs_<ts>/ empty; the
        # error itself went to the launcher's own output.
        reason += (
            f" ({layout.run_name} is empty: the launcher failed before starting any process; its own output "
            "holds the error, e.g. 'Replica with GPUs larger than 8' when a replica needs more GPUs than the node)"
        )
    return reason


def _no_events_reason(target: str, layout: RunLayout) -> str:
    readable = len(layout.files) - len(layout.unreadable)
    if readable <= 0:
        return f"{target}: none of the {len(layout.files)} log file(s) could be read"
    return f"{target}: no Cosmos-RL line in {readable} log file(s) (empty, or not a Cosmos-RL run)"


def unknown_reason(path: str | os.PathLike[str], run: str | None = None) -> str | None:
    """The one line ``check`` would give for ``path`` with status UNKNOWN before any detector runs (no
    such path, no run there, no log file, no Cosmos-RL line in any file), None when it holds a run.

    For ``a1x-tui attach`` and ``watch``, which refuse what ``--check`` calls UNKNOWN with the same
    reason. Cheap on a run: the files are read only up to their first Cosmos-RL line."""
    from a1x_diagnostics.parsing import LayoutError, discover, read_run

    target = str(path)
    try:
        layout = discover(Path(path), run)
    except LayoutError as exc:
        return str(exc)
    if layout.closed_loop is not None:
        return None  # an AlpaGym run folder is a run from the moment the host wrote its configs
    if not layout.files:
        return _no_files_reason(target, layout)
    events = read_run(layout)
    try:
        if next(events, None) is not None:
            return None
    finally:
        events.close()  # type: ignore[attr-defined]
    return _no_events_reason(target, layout)


def check(
    path: str | os.PathLike[str],
    config_path: str | os.PathLike[str] | None = None,
    run: str | None = None,
    now: float | None = None,
    *,
    timeout: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Diagnose the run at ``path``; never raises for bad input (the report says UNKNOWN and why).

    ``timeout``: seconds of wall clock for all of it (finding the files, reading them, the detectors, the
    report), past which the report is UNKNOWN ("timed out"); None, infinity or ``NO_LIMIT_S`` and more: no
    limit (``a1x_diagnostics.deadline``)."""
    doing = ["finding the logs"]
    notes: list[str] = []
    try:
        with bounded(timeout):
            return _check(str(path), config_path, run, now, progress, doing, notes)
    except CheckTimeout:
        limit = limit_of(timeout)
        return unknown_report(str(path), f"timed out after {limit or 0:g} s while {doing[0]}", run=run, notes=notes)


def _check(target: str, config_path: str | os.PathLike[str] | None, run: str | None, now: float | None,
           progress: Callable[[str], None] | None, doing: list[str], notes: list[str]) -> Report:
    """``check``'s work; ``doing[0]`` says what it is doing, for a timeout's message."""
    from a1x_diagnostics.parsing import LayoutError, discover

    # Read first, so that every report, UNKNOWN ones included, says when the --config was not used.
    loaded = _load_toml(Path(config_path), notes) if config_path is not None else None
    try:
        layout = discover(Path(target), run)
    except LayoutError as exc:
        return unknown_report(target, str(exc), run=run, notes=notes)
    if not layout.files and layout.closed_loop is None:
        return unknown_report(target, _no_files_reason(target, layout), run=layout.run_name, notes=notes)

    collector = Collector()
    if layout.closed_loop is not None:  # hook: an AlpaGym run (a1x_diagnostics/alpagym/)
        from a1x_diagnostics.alpagym.reader import ClosedLoopRun

        collector.closed_loop = ClosedLoopRun(layout.closed_loop)
        notes.extend(collector.closed_loop.notes)
        if loaded is None:
            loaded = _closed_loop_toml(layout.closed_loop, notes)
    collector.note_files(layout)

    if progress is not None:
        size = sum(f.size or 0 for f in collector.store.files.values())
        progress(f"reading {len(layout.files)} file(s), {size / 1e6:.1f} MB")
    doing[0] = "reading the logs"
    run_name = layout.run_name
    _read_into(collector, layout)
    if layout.kind == "single_file" and layout.files[0][1].role is Role.LAUNCHER:
        run_name = _read_named_folder(collector, layout, notes) or run_name
    if collector.closed_loop is not None:
        from a1x_diagnostics.alpagym.reader import read_into

        read_into(collector, collector.closed_loop, layout.files, unreadable=layout.unreadable.append)
    if layout.kind == "run_dir":
        stop = user_stop(layout.target)
        if stop is not None:
            collector.add(stop)
    notes.extend(f"unreadable: {u}" for u in layout.unreadable)
    files = [src.path for _, src in layout.files]
    if collector.store.event_count == 0 and collector.closed_loop is None:
        reason = _no_events_reason(target, layout)
        return unknown_report(target, reason, run=layout.run_name, files=files, notes=notes)

    doing[0] = "judging the logs (the detectors)"
    assessment = collector.assess(now, loaded)
    findings = assessment.findings
    if collector.closed_loop is not None:
        findings = merge_findings(findings, _closed_loop_lint(collector.closed_loop, loaded, config_path, notes))
    elif loaded is not None:
        findings = merge_findings(findings, _against_logs(_lint(loaded, notes), findings, collector, notes))
    doing[0] = "writing the report"
    return build_report(
        target=target,
        run=run_name,
        findings=findings,
        checks=assessment.checks,
        metrics=assessment.metrics,
        files=files,
        notes=notes,
        outcome=assessment.outcome,
    )
