"""The follow worker: the live follower's messages, turned into the app's, at most four times a second.

It runs ``a1x_diagnostics.live.RunFollower`` over the target with the same diagnosis as
``a1x-tui watch`` (``engine_diagnosis``: the parsers and detectors of ``--check``, plus the TOML's
lint when one is known), and keeps, per evaluation, the tail of the series the plots draw.

Lines are prepared here, off the UI thread, and only those the log views keep
(``a1x_tui.ui.logstore``): of a file's history the follower sends only its tail
(``FollowOptions.history_tail``: ``per_file_limit``), once that file's history is read; of a burst of
numbered live lines, only the last ones are kept. While the history is read, ``HistoryProgress`` says
how far (the follower's bytes read of bytes to read).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
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
from a1x_tui.ui.series import POINTS, SeriesDiagnosis

FLUSH_EVERY_S = 0.25  # <= 4 redraws a second from log traffic (SSH-friendly)
LINES_PER_POST = 10_000
Post = Callable[[Message], Any]


def source_label(source: Source) -> str:
    """``controller``, ``policy_0``, ``[train]`` (a stage's log), ``launcher``."""
    if source.role is Role.STAGE:
        return f"[{Path(source.path).stem}]"
    if source.role in (Role.LAUNCHER, Role.UNKNOWN, Role.SIMULATOR):
        return Path(source.path).stem
    return source.replica


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
        self._files: set[str] = set()  # the files seen: each one's share of the line budget depends on them
        self._reading: tuple[int, int, int] | None = None  # the history: bytes read, bytes to read, files
        self._shown = -1  # the percent last posted
        self._complete = False
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

        # Of a file's history only the tail the views keep is sent; the diagnostics read every line.
        options = FollowOptions(evaluate_interval=1.0, history_tail=per_file_limit)
        follower = RunFollower(str(self.path), options=options, diagnosis=make)
        # The queue's line bound is the memory bound of lines in flight: the views keep only tails.
        sub = follower.subscribe(max_lines=20_000)
        follower.start()
        pending: list[Any] = []
        next_flush = time.monotonic() + FLUSH_EVERY_S
        try:
            while not stop.is_set():
                message = sub.get(timeout=0.1)
                if message is not None:
                    pending.extend([message, *sub.drain()])
                if pending and time.monotonic() >= next_flush:
                    self.flush(pending)
                    pending = []
                    next_flush = time.monotonic() + FLUSH_EVERY_S
        finally:
            follower.stop(timeout=2.0)

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
            HistoryLoaded,
            LinesAppended,
            MetricsUpdated,
            RunSwitched,
        )
        from a1x_diagnostics.live import HistoryProgress as BytesRead
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

        for m in messages:
            if isinstance(m, LinesAppended):
                if m.lines:
                    chunks.append(self._live(m.source, m.first_lineno, m.lines))
            elif isinstance(m, HistoryLoaded):  # a file's history, read: its tail
                chunks.append(self._history(m.source, m.first_lineno, m.lines, done=m.done))
            elif isinstance(m, BytesRead):
                self._reading = (m.bytes_read, m.bytes_total, m.files)
            elif isinstance(m, FileAppeared):
                flush_chunks()
                self._files.add(m.source.path)
                out.append(LogFileSeen(m.source.path, source_label(m.source), m.path or None))
            elif isinstance(m, FileReset):
                flush_chunks()
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
                self._complete = True
                flush_chunks()  # the last tails before the news that the history is read
                out.append(HistoryRead(m.files, m.lines, m.seconds))
            elif isinstance(m, FollowError):
                out.append(FollowProblem(redact(m.message, secrets)))
        flush_chunks()
        if self._reading is not None and not self._complete:
            read, total, files = self._reading
            percent = min(99, 100 * read // total) if total else 99
            if percent != self._shown:
                self._shown = percent
                out.append(HistoryProgress(percent, files, total))
        if findings_changed:
            out.append(FindingsChanged(dict(self.open), dict(self.resolved), first=first_evaluation))
        for message in out:
            self.post(message)

    def _keep(self) -> int:
        return per_file_limit(len(self._files))

    def _live(self, source: Source, first_lineno: int | None, lines: Sequence[str]) -> LineChunk:
        keep = self._keep()
        if first_lineno is not None and len(lines) > keep:  # the rest would be dropped at once
            first_lineno += len(lines) - keep
            lines = lines[-keep:]
        made = self.maker.make(source.path, source_label(source), first_lineno, lines)
        return LineChunk(source.path, source_label(source), first_lineno, tuple(made))

    def _history(self, source: Source, first_lineno: int, lines: Sequence[str], *, done: bool) -> LineChunk:
        made = self.maker.make(source.path, source_label(source), first_lineno, lines, history=True)
        return LineChunk(source.path, source_label(source), first_lineno, tuple(made), history=True, done=done)

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
