"""The lines the log views show: one bounded sequence per file, and one merged by timestamp.

Fed on the UI thread from what the follow worker prepared (``LogLine`` objects with their time and
level already read). The follower sends a file's history (the lines before following began, oldest
first, numbered) and its live lines (numbered once the history has been counted); both end up here
in file order. Memory is bounded: a file keeps its last ``per_file`` lines, the merged view its
last ``merged`` lines; older ones are dropped in batches (they are still in the file).
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from a1x_diagnostics.report import env_secrets, redact
from a1x_tui.ui.timestamps import line_level, line_time

PER_FILE = 20_000
MERGED = 60_000


@dataclass(slots=True)
class LogLine:
    """One displayed line. ``lineno`` is None until the follower has counted the lines before it."""

    source: str  # the file as the run names it (``logs_<ts>/rollout_0.log``): evidence refers to it
    label: str  # ``controller``, ``policy_0``, ``stage train``
    lineno: int | None
    text: str
    ts: float
    level: str | None
    seq: int = 0


def make_lines(
    source: str, label: str, first_lineno: int | None, texts: Iterable[str], last_ts: float, seq: int
) -> tuple[list[LogLine], float, int]:
    """``LogLine`` objects for consecutive lines; a line without a stamp takes the one before it.

    Every displayed line passes the report's ``redact``: a token a log holds is masked here as in
    ``--check`` (by this process's secret values and by the shapes secrets have)."""
    out: list[LogLine] = []
    ts = last_ts
    secrets = env_secrets()
    for i, raw in enumerate(texts):
        text = redact(raw, secrets)
        stamp = line_time(text)
        if stamp is not None:
            ts = stamp
        seq += 1
        lineno = None if first_lineno is None else first_lineno + i
        out.append(LogLine(source, label, lineno, text, ts, line_level(text), seq))
    return out, ts, seq


@dataclass(slots=True)
class FileLines:
    """One file: its history (numbered from the start) followed by its live lines."""

    source: str
    label: str
    history: list[LogLine] = field(default_factory=list)
    live: list[LogLine] = field(default_factory=list)
    history_end: int | None = None  # number of the first line after the history, once it is known
    dropped: int = 0  # lines dropped from the front since the last reset (views keep their place)
    version: int = 0  # changes when lines were inserted before the end or dropped
    last_ts: float = 0.0  # of the last live line (a line without a stamp takes it)
    history_ts: float = 0.0  # the same for the history, which is read separately
    limit: int = PER_FILE

    def __len__(self) -> int:
        return len(self.history) + len(self.live)

    def __getitem__(self, index: int) -> LogLine:
        n = len(self.history)
        return self.history[index] if index < n else self.live[index - n]

    def add_history(self, lines: list[LogLine], *, done: bool) -> None:
        if lines:
            self.history.extend(lines)
            self.version += 1
            last = lines[-1].lineno
            if last is not None:
                self.history_end = last + 1
        if done and self.history_end is None:
            self.history_end = 1
        if done:
            self._number_live()
        self._trim()

    def add_live(self, lines: list[LogLine], first_lineno: int | None) -> None:
        if first_lineno is not None:
            # the lines still unnumbered end just before this message's first line
            k = first_lineno
            for line in reversed(self.live):
                if line.lineno is not None:
                    break
                k -= 1
                line.lineno = k
        self.live.extend(lines)
        self._trim()

    def _number_live(self) -> None:
        if self.history_end is None:
            return
        k = self.history_end
        for line in self.live:
            if line.lineno is None:
                line.lineno = k
            k = line.lineno + 1

    def index_of(self, lineno: int) -> int | None:
        """The position of line ``lineno`` (or the closest kept one after it), None if not kept."""
        best = None
        for i in range(len(self) - 1, -1, -1):
            number = self[i].lineno
            if number is None:
                continue
            if number == lineno:
                return i
            if number < lineno:
                break
            best = i
        return best

    def _trim(self) -> None:
        excess = len(self) - self.limit
        if excess <= 0:
            return
        excess = max(excess, self.limit // 10)  # in batches: deleting from the front of a list is O(n)
        from_history = min(excess, len(self.history))
        del self.history[:from_history]
        del self.live[: excess - from_history]
        self.dropped += excess
        self.version += 1


class MergedLines:
    """Every file's lines in one sequence, ordered by timestamp (ties: the order they arrived)."""

    def __init__(self, limit: int = MERGED) -> None:
        self.limit = limit
        self.lines: list[LogLine] = []
        self._keys: list[tuple[float, int]] = []
        self.dropped = 0
        self.version = 0

    def __len__(self) -> int:
        return len(self.lines)

    def __getitem__(self, index: int) -> LogLine:
        return self.lines[index]

    def add(self, lines: Sequence[LogLine]) -> None:
        if not lines:
            return
        batch = sorted(lines, key=lambda ln: (ln.ts, ln.seq))
        first = (batch[0].ts, batch[0].seq)
        if not self._keys or first >= self._keys[-1]:
            self.lines.extend(batch)
            self._keys.extend((ln.ts, ln.seq) for ln in batch)
        elif len(batch) <= 32:
            for line in batch:
                key = (line.ts, line.seq)
                i = bisect.bisect_right(self._keys, key)
                self._keys.insert(i, key)
                self.lines.insert(i, line)
            self.version += 1
        else:
            self.lines = list(heapq.merge(self.lines, batch, key=lambda ln: (ln.ts, ln.seq)))
            self._keys = [(ln.ts, ln.seq) for ln in self.lines]
            self.version += 1
        excess = len(self.lines) - self.limit
        if excess > 0:
            excess = max(excess, self.limit // 10)
            del self.lines[:excess]
            del self._keys[:excess]
            self.dropped += excess
            self.version += 1

    def remove_source(self, source: str) -> None:
        kept = [ln for ln in self.lines if ln.source != source]
        if len(kept) != len(self.lines):
            self.lines = kept
            self._keys = [(ln.ts, ln.seq) for ln in kept]
            self.version += 1

    def index_of(self, source: str, lineno: int) -> int | None:
        for i in range(len(self.lines) - 1, -1, -1):
            line = self.lines[i]
            if line.source == source and line.lineno == lineno:
                return i
        return None


class LogStore:
    """Every followed file, by source path, plus the merged view."""

    def __init__(self, per_file: int = PER_FILE, merged: int = MERGED) -> None:
        self.per_file = per_file
        self.files: dict[str, FileLines] = {}
        self.merged = MergedLines(merged)
        self.seq = 0
        self.changed = True  # something to redraw since the views last looked

    def file(self, source: str, label: str) -> FileLines:
        lines = self.files.get(source)
        if lines is None:
            lines = self.files[source] = FileLines(source, label, limit=self.per_file)
            self.changed = True
        return lines

    def add(
        self, source: str, label: str, first_lineno: int | None, texts: Sequence[str], *, history: bool, done: bool
    ) -> None:
        """Lines of one file, as one follower message carries them."""
        target = self.file(source, label)
        if history:
            lines, target.history_ts, self.seq = make_lines(
                source, label, first_lineno, texts, target.history_ts, self.seq
            )
            target.add_history(lines, done=done)
        else:
            lines, target.last_ts, self.seq = make_lines(source, label, first_lineno, texts, target.last_ts, self.seq)
            target.add_live(lines, first_lineno)
        self.merged.add(lines)
        self.changed = True

    def reset(self, source: str) -> None:
        """The file started over (truncated, replaced): forget what it showed."""
        old = self.files.get(source)
        if old is None:
            return
        self.files[source] = FileLines(source, old.label, limit=self.per_file, version=old.version + 1)
        self.merged.remove_source(source)
        self.changed = True

    def forget(self, source: str) -> None:
        """The file belongs to a run that is no longer followed."""
        if self.files.pop(source, None) is not None:
            self.merged.remove_source(source)
            self.changed = True

    def clear(self) -> None:
        """Another run is followed now."""
        self.files.clear()
        self.merged = MergedLines(self.merged.limit)
        self.changed = True
