"""The follow worker: the live follower's messages, turned into the app's, at most four times a second.

It runs ``a1x_diagnostics.live.RunFollower`` over the target with the same diagnosis as
``a1x-tui watch`` (``engine_diagnosis``: the parsers and detectors of ``--check``, plus the TOML's
lint when one is known), and keeps, per evaluation, the tail of the series the plots draw.

Lines are prepared here, off the UI thread, and only those the log views keep
(``a1x_tui.ui.logstore``): of a file's history only its tail (``per_file_limit``) is kept, and
posted once that file's history is read; of a burst of numbered live lines, only the last ones.
While the history is read, ``HistoryProgress`` says how far (bytes, estimated from the lines seen:
the follower tells lines, not offsets).
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.message import Message

from a1x_diagnostics.events import Role, Source
from a1x_diagnostics.findings import Finding
from a1x_tui.ui.logstore import LineMaker, per_file_limit
from a1x_tui.ui.messages import (
    FindingsChanged,
    FollowedRunChanged,
    FollowProblem,
    HistoryProgress,
    HistoryRead,
    LineChunk,
    LinesArrived,
    LogFileReset,
    LogFileSeen,
    MetricsChanged,
    SeriesChanged,
)

FLUSH_EVERY_S = 0.25  # <= 4 redraws a second from log traffic (SSH-friendly)
POINTS = 240  # values kept per plotted series
LINES_PER_POST = 10_000
PLOTTED = (
    "reward_mean",
    "reward_std",
    "traj_l2",
    "pending_rollouts",
    "weight_staleness_max",
    "prompt_version_gap",
    "step_time_s",
    # closed-loop (AlpaGym) runs: a1x_diagnostics.alpagym.state.ClosedLoopState.publish
    "cl_collision_rate",
    "cl_offroad_rate",
    "cl_progress",
    "cl_episodes_completed",
)

Post = Callable[[Message], Any]


def source_label(source: Source) -> str:
    """``controller``, ``policy_0``, ``[train]`` (a stage's log), ``launcher``."""
    if source.role is Role.STAGE:
        return f"[{Path(source.path).stem}]"
    if source.role in (Role.LAUNCHER, Role.UNKNOWN, Role.SIMULATOR):
        return Path(source.path).stem
    return source.replica


class SeriesDiagnosis:
    """A ``Diagnosis`` that also copies the plotted series' tails at each evaluation (on the follower's
    thread, where the series are written; the worker reads the copy)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.snapshot: dict[str, list[float]] = {}

    def feed(self, source: Source, first_lineno: int, lines: Sequence[str]) -> None:
        self.inner.feed(source, first_lineno, lines)

    def end_file(self, source: Source) -> None:
        self.inner.end_file(source)

    def file_stat(self, source: Source, size: int, mtime: float) -> None:
        self.inner.file_stat(source, size, mtime)

    def evaluate(self, now: float) -> Any:
        evaluation = self.inner.evaluate(now)
        metrics = getattr(getattr(self.inner, "collector", None), "metrics", None)
        if metrics is not None:
            snapshot = {}
            for name in PLOTTED:
                series = metrics.get(name)
                if series is not None and series.seen:
                    snapshot[name] = [float(v) for v in series.tail(POINTS)]
            self.snapshot = snapshot
        return evaluation


@dataclass(slots=True)
class _HistoryTail:
    """The last lines of one file's history read so far (the rest is never prepared)."""

    lines: deque[str]
    next_lineno: int = 1


@dataclass(slots=True)
class _Progress:
    """How much of the history is read: bytes to read (the files' sizes when they were opened) and read."""

    total: int = 0
    read: float = 0.0
    files: int = 0
    shown: int = -1
    complete: bool = False

    @property
    def percent(self) -> int:
        if self.complete or not self.total:
            return 100
        return min(99, int(100 * self.read / self.total))


@dataclass(slots=True)
class _Sources:
    """The files of the run the feed has seen, and where each is on disk."""

    root: Path
    seen: dict[str, str | None] = field(default_factory=dict)  # source path -> where it is on disk
    found: dict[str, str] | None = None  # the run's layout by source path, listed once when needed

    def path_of(self, source: str) -> str | None:
        if source in self.seen:
            return self.seen[source]
        candidate = self.root / source
        if candidate.is_file():
            return str(candidate)
        if self.found is None:
            from a1x_diagnostics.parsing import LayoutError, discover

            try:
                self.found = {src.path: str(p) for p, src in discover(self.root).files}
            except (LayoutError, OSError):
                self.found = {}
        return self.found.get(source)


class FollowFeed:
    """Follows ``path`` until ``stop`` is set, posting the app's messages through ``post``."""

    def __init__(self, path: Path, config: Path | None, post: Post) -> None:
        self.path = path
        self.config = config
        self.post = post
        self.open: dict[str, Finding] = {}
        self.resolved: dict[str, Finding] = {}
        self._gap: deque[tuple[int, float]] = deque(maxlen=POINTS)
        self._diagnosis: SeriesDiagnosis | None = None
        self.maker = LineMaker()
        self._tails: dict[str, _HistoryTail] = {}
        self._progress = _Progress()
        self._sources = _Sources(path if path.is_dir() else path.parent)
        self._evaluated = False  # the current run's first evaluation has been posted

    def run(self, stop: threading.Event) -> None:
        from a1x_diagnostics.live import FollowOptions, RunFollower, engine_diagnosis  # as `a1x-tui watch` does

        def make() -> SeriesDiagnosis:
            # Called again for every new logs_<ts>: the TOML is read then, so one written by the configure
            # stage after the dashboard opened (or changed by a fix) is used from the next attempt on.
            config = self.config if self.config is not None and self.config.is_file() else None
            factory, notes = engine_diagnosis(config, target=self.path)
            for note in notes:
                self.post(FollowProblem(note))
            self._diagnosis = SeriesDiagnosis(factory())
            return self._diagnosis

        follower = RunFollower(str(self.path), options=FollowOptions(evaluate_interval=1.0), diagnosis=make)
        # The queue's line bound is the memory bound of lines in flight: the views keep only tails.
        sub = follower.subscribe(max_lines=20_000)
        follower.start()
        pending: list[Any] = []
        next_flush = time.monotonic() + FLUSH_EVERY_S
        try:
            while not stop.is_set():
                message = sub.get(timeout=0.1)
                if message is not None:
                    # A file's history is folded into its tail as it arrives: what waits for the flush holds
                    # no history lines (a cluster run's history arrives far faster than four times a second).
                    pending.extend(self.absorb([message, *sub.drain()]))
                if pending and time.monotonic() >= next_flush:
                    self.flush(pending)
                    pending = []
                    next_flush = time.monotonic() + FLUSH_EVERY_S
        finally:
            follower.stop(timeout=2.0)

    def absorb(self, messages: list[Any]) -> list[Any]:
        """The messages with each history chunk folded into its file's tail: a file's whole history, once
        read, becomes one prepared ``LineChunk``; the rest pass unchanged."""
        from a1x_diagnostics.live import FileAppeared, HistoryLoaded

        out: list[Any] = []
        for m in messages:
            if isinstance(m, FileAppeared):
                self._seen(m.source)  # counted at once: each file's share of the line budget depends on it
                out.append(m)
            elif isinstance(m, HistoryLoaded):
                chunk = self._history(m.source, m.first_lineno, m.lines, done=m.done, skipped=m.skipped)
                if chunk is not None:
                    out.append(chunk)
            else:
                out.append(m)
        return out

    def flush(self, messages: list[Any]) -> None:
        """Turn a batch of follower messages into the app's (public for tests)."""
        from a1x_diagnostics.live import (
            FileAppeared,
            FileReset,
            FindingRaised,
            FindingResolved,
            FindingUpdated,
            FollowError,
            HistoryComplete,
            LinesAppended,
            MetricsUpdated,
            RunSwitched,
        )
        from a1x_diagnostics.report import env_secrets, redact, redact_finding, redact_outcome

        # What a screen shows is masked as --check masks its report (log lines: by the LineMaker).
        secrets = env_secrets()
        chunks: list[LineChunk] = []
        findings_changed = False
        first_evaluation = False
        out: list[Message] = []

        def flush_chunks() -> None:
            # At most LINES_PER_POST lines a message: the tails of a cluster run's files, read at once, reach
            # the screen in several short steps rather than one long one (a key may come in between).
            group: list[LineChunk] = []
            size = 0
            for chunk in chunks:
                if group and size + len(chunk.lines) > LINES_PER_POST:
                    out.append(LinesArrived(group))
                    group, size = [], 0
                group.append(chunk)
                size += len(chunk.lines)
            if group:
                out.append(LinesArrived(group))
            chunks.clear()

        for m in self.absorb(messages):
            if isinstance(m, LinesAppended):
                if m.lines:
                    chunks.append(self._live(m.source, m.first_lineno, m.lines))
            elif isinstance(m, LineChunk):  # a file's history, read: its tail
                chunks.append(m)
            elif isinstance(m, FileAppeared):
                flush_chunks()
                out.append(self._appeared(m.source))
            elif isinstance(m, FileReset):
                flush_chunks()
                self._tails.pop(m.source.path, None)
                out.append(LogFileReset(m.source.path, m.reason))
            elif isinstance(m, RunSwitched):
                flush_chunks()
                self.open.clear()
                self.resolved.clear()
                self._gap.clear()
                self._evaluated = False
                findings_changed = True
                out.append(FollowedRunChanged(m.run_name, m.previous))
            elif isinstance(m, FindingRaised | FindingUpdated):
                self.open[m.key] = redact_finding(m.finding, secrets)
                self.resolved.pop(m.key, None)
                findings_changed = True
            elif isinstance(m, FindingResolved):
                last = self.open.pop(m.key, None) or (redact_finding(m.finding, secrets) if m.finding else None)
                if last is not None:
                    self.resolved[m.key] = last
                findings_changed = True
            elif isinstance(m, MetricsUpdated):
                outcome = redact_outcome(m.outcome, secrets) if m.outcome is not None else None
                out.append(MetricsChanged(dict(m.summary), outcome))
                out.append(SeriesChanged(self._series(m.summary)))
                if not self._evaluated:  # the run's first verdict: said even when it has no finding
                    self._evaluated = first_evaluation = findings_changed = True
            elif isinstance(m, HistoryComplete):
                self._progress.complete = True
                flush_chunks()  # the last tails before the news that the history is read
                out.append(HistoryRead(m.files, m.lines, m.seconds))
            elif isinstance(m, FollowError):
                out.append(FollowProblem(redact(m.message, secrets)))
        flush_chunks()
        progress = self._progress
        if not progress.complete and progress.files and progress.percent != progress.shown:
            progress.shown = progress.percent
            out.append(HistoryProgress(progress.percent, progress.files, progress.total))
        if findings_changed:
            out.append(FindingsChanged(dict(self.open), dict(self.resolved), first=first_evaluation))
        for message in out:
            self.post(message)

    def _keep(self) -> int:
        return per_file_limit(len(self._sources.seen))

    def _seen(self, source: Source) -> None:
        if source.path in self._sources.seen:
            return
        path = self._sources.seen[source.path] = self._sources.path_of(source.path)
        if path is not None and not self._progress.complete:
            try:
                self._progress.total += os.stat(path).st_size
                self._progress.files += 1
            except OSError:
                pass

    def _appeared(self, source: Source) -> LogFileSeen:
        self._seen(source)
        return LogFileSeen(source.path, source_label(source), self._sources.path_of(source.path))

    def _live(self, source: Source, first_lineno: int | None, lines: Sequence[str]) -> LineChunk:
        keep = self._keep()
        if first_lineno is not None and len(lines) > keep:  # the rest would be dropped at once
            first_lineno += len(lines) - keep
            lines = lines[-keep:]
        made = self.maker.make(source.path, source_label(source), first_lineno, lines)
        return LineChunk(source.path, source_label(source), first_lineno, tuple(made))

    def _history(
        self, source: Source, first_lineno: int, lines: Sequence[str], *, done: bool, skipped: int = 0
    ) -> LineChunk | None:
        """Keep the tail of a file's history; the chunk to post once that file's history is read."""
        tail = self._tails.get(source.path)
        if tail is None:
            tail = self._tails[source.path] = _HistoryTail(deque(maxlen=self._keep()), first_lineno)
        if first_lineno != tail.next_lineno:  # lines were skipped in between: what was kept is not contiguous
            tail.lines.clear()
        if lines:
            tail.lines.extend(lines[-(tail.lines.maxlen or 1) :])
            tail.next_lineno = first_lineno + len(lines)
            sample = lines[-64:]
            self._progress.read += (len(lines) + skipped) * (sum(map(len, sample)) / len(sample) + 1)
        if not done:
            return None
        del self._tails[source.path]
        kept = list(tail.lines)
        first = tail.next_lineno - len(kept)
        made = self.maker.make(source.path, source_label(source), first, kept, history=True)
        return LineChunk(source.path, source_label(source), first, tuple(made), history=True, done=True)

    def _series(self, summary: dict[str, Any]) -> dict[str, list[float]]:
        series = dict(self._diagnosis.snapshot) if self._diagnosis is not None else {}
        step, gap = summary.get("step"), summary.get("weight_version_gap")
        if isinstance(step, int) and isinstance(gap, (int, float)):
            if not self._gap or self._gap[-1][0] != step:
                self._gap.append((step, float(gap)))
            else:
                self._gap[-1] = (step, float(gap))
        if self._gap:
            series["weight_version_gap"] = [g for _, g in self._gap]
        return series
