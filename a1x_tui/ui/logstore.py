"""The lines the log views show: the tail of each file and the merged view, within one budget for the run.

The follow worker prepares lines on its own thread (``LineMaker``: masked as ``--check`` masks its
report, stamp and level read, the cosmos prefix folded) and only for the lines kept: a file's
history arrives as its tail, never line by line (``feeds/follow.py``). The UI thread only files them
here. The follower sends a file's history (the lines before following began, numbered) and its live
lines (numbered once the history has been counted); both end up here in file order.

Memory is bounded by one budget for the run: ``RUN_BUDGET`` lines shared by the files (each keeps
its last ``per_file_limit(files)``, at most ``PER_FILE``), and the merged view keeps the newest
``RUN_BUDGET`` by time. Older lines are still in the files: ``Excerpt`` holds a window read from a
file around a line (evidence, go to line) when that line is no longer kept.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter

from a1x_diagnostics.report import env_secrets, redact
from a1x_tui.ui.timestamps import fold

PER_FILE = 20_000  # a file's tail when the run has few files
RUN_BUDGET = 60_000  # lines kept for the whole run (~20 MB), and the merged view's length
MIN_PER_FILE = 20  # a run of thousands of files still shows each one's last lines


def per_file_limit(files: int, budget: int = RUN_BUDGET) -> int:
    """How many lines each file keeps when the run has ``files`` files."""
    return min(PER_FILE, max(MIN_PER_FILE, budget // max(1, files)))


@dataclass(slots=True)
class LogLine:
    """One displayed line. ``lineno`` is None until the follower has counted the lines before it."""

    source: str  # the file as the run names it (``logs_<ts>/rollout_0.log``): evidence refers to it
    label: str  # ``controller``, ``policy_0``, ``[train]``
    lineno: int | None
    text: str  # the whole line, masked
    ts: float
    level: str | None  # "error" / "warning" / None: the colour
    seq: int = 0
    short: str = ""  # the folded prefix: "23:47:03 I" (time and level), "" when none was folded
    start: int = 0  # where the message begins in ``text``

    @property
    def message(self) -> str:
        return self.text[self.start :]


_LINENO, _LABEL, _SHORT = attrgetter("lineno"), attrgetter("label"), attrgetter("short")


@dataclass(slots=True)
class Widths:
    """The widest line number, label and folded prefix a source has held: the view's fixed columns."""

    number: int = 1
    label: int = 0
    short: int = 0

    def note(self, lines: Sequence[LogLine]) -> None:
        if not lines:
            return
        # map/filter/max: loops in C, on the UI thread for a large run's tails (tens of thousands of lines)
        self.number = max(self.number, max(filter(None, map(_LINENO, lines)), default=0))
        self.label = max(self.label, max(map(len, set(map(_LABEL, lines)))))
        self.short = max(self.short, max(map(len, map(_SHORT, lines))))

    def take(self, other: Widths) -> None:
        self.number, self.label, self.short = (
            max(self.number, other.number), max(self.label, other.label), max(self.short, other.short)
        )


class LineMaker:
    """Turns texts into ``LogLine`` objects: run on the follow worker's thread, only for the lines kept.

    A line without a stamp takes the time of the line before it (of the same file); at the start of a
    kept tail, whose earlier lines were not kept, the time of the first stamped line after it."""

    def __init__(self) -> None:
        self.seq = 0
        self._last_ts: dict[tuple[str, bool], float] = {}
        self._secrets = env_secrets()

    def make(
        self, source: str, label: str, first_lineno: int | None, texts: Sequence[str], *, history: bool = False
    ) -> list[LogLine]:
        key = (source, history)
        ts = self._last_ts.get(key)
        out: list[LogLine] = []
        seq = self.seq
        secrets = self._secrets
        waiting: list[LogLine] = []  # leading lines with no time yet
        for i, raw in enumerate(texts):
            text = redact(raw, secrets)
            folded = fold(text)
            if folded.ts is not None:
                ts = folded.ts
                for early in waiting:
                    early.ts = ts
                waiting = []
            seq += 1
            line = LogLine(
                source,
                label,
                None if first_lineno is None else first_lineno + i,
                text,
                ts if ts is not None else 0.0,
                folded.level,
                seq,
                folded.short,
                folded.start,
            )
            if ts is None:
                waiting.append(line)
            out.append(line)
        self.seq = seq
        if ts is not None:
            self._last_ts[key] = ts
        return out

    def forget(self, source: str) -> None:
        self._last_ts.pop((source, True), None)
        self._last_ts.pop((source, False), None)


@dataclass(slots=True)
class FileLines:
    """One file: the tail of its history (numbered from the start) followed by its live lines."""

    source: str
    label: str
    path: str | None = None  # on disk, for what is no longer kept (``Excerpt``)
    history: list[LogLine] = field(default_factory=list)
    live: list[LogLine] = field(default_factory=list)
    history_end: int | None = None  # number of the first line after the history, once it is known
    dropped: int = 0  # lines dropped from the front since the last reset (views keep their place)
    version: int = 0  # changes when lines were inserted before the end or dropped
    widths: Widths = field(default_factory=Widths)

    def __len__(self) -> int:
        return len(self.history) + len(self.live)

    def __getitem__(self, index: int) -> LogLine:
        n = len(self.history)
        return self.history[index] if index < n else self.live[index - n]

    def add_history(self, lines: list[LogLine], *, done: bool, limit: int) -> None:
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
        self.widths.note(lines)
        self._trim(limit)

    def add_live(self, lines: list[LogLine], first_lineno: int | None, *, limit: int) -> None:
        if first_lineno is not None:
            # the lines still unnumbered end just before this message's first line
            k = first_lineno
            for line in reversed(self.live):
                if line.lineno is not None:
                    break
                k -= 1
                line.lineno = k
        self.live.extend(lines)
        self.widths.note(lines)
        self._trim(limit)

    def _number_live(self) -> None:
        if self.history_end is None:
            return
        k = self.history_end
        for line in self.live:
            if line.lineno is None:
                line.lineno = k
            k = line.lineno + 1
        self.widths.note(self.live[-1:])

    def index_of(self, lineno: int) -> int | None:
        """The position of line ``lineno``; None when it is not kept (older, or not counted yet)."""
        for i in range(len(self) - 1, -1, -1):
            number = self[i].lineno
            if number is None:
                continue
            if number == lineno:
                return i
            if number < lineno:
                break
        return None

    def _trim(self, limit: int) -> None:
        excess = len(self) - limit
        if excess <= 0:
            return
        excess = max(excess, limit // 10)  # in batches: deleting from the front of a list is O(n)
        from_history = min(excess, len(self.history))
        del self.history[:from_history]
        del self.live[: excess - from_history]
        self.dropped += excess
        self.version += 1


# The merged view's order: time, then the order the lines were read (``seq``). Lines reach ``add`` in
# that second order (the follow worker numbers them as it prepares them), so a stable sort by time alone
# keeps it: floats compare far faster than (time, seq) tuples.
_time = attrgetter("ts")

class MergedLines:
    """Every file's lines in one sequence, ordered by timestamp (ties: the order they were read).
    ``widths``: the files' (``LogStore`` keeps them), not re-read from the lines."""

    def __init__(self, limit: int = RUN_BUDGET) -> None:
        self.limit = limit
        self.lines: list[LogLine] = []
        self.dropped = 0
        self.version = 0
        self.widths = Widths()

    def __len__(self) -> int:
        return len(self.lines)

    def __getitem__(self, index: int) -> LogLine:
        return self.lines[index]

    def add(self, lines: Sequence[LogLine]) -> None:
        """Lines read after every line added before (``seq`` higher), in the order they were read."""
        if not lines:
            return
        kept = self.lines
        if kept and len(kept) + len(lines) > self.limit:
            # Lines older than every kept one that the trim below would drop at once are not sorted in
            # (the tails of a large run's files, read after the live lines).
            oldest = kept[0].ts
            newer = [ln for ln in lines if ln.ts >= oldest]
            if len(kept) + len(lines) - self.limit >= len(lines) - len(newer):
                lines = newer
            if not lines:
                return
        batch = sorted(lines, key=_time)
        if not kept or batch[0].ts >= kept[-1].ts:
            kept.extend(batch)
        elif len(batch) <= 32:
            for line in batch:
                kept.insert(bisect.bisect_right(kept, line.ts, key=_time), line)
            self.version += 1
        else:  # two sorted runs: the sort merges them in one pass
            kept.extend(batch)
            kept.sort(key=_time)
            self.version += 1
        excess = len(kept) - self.limit
        if excess > 0:
            excess = max(excess, self.limit // 10)
            del kept[:excess]
            self.dropped += excess
            self.version += 1

    def remove_source(self, source: str) -> None:
        kept = [ln for ln in self.lines if ln.source != source]
        if len(kept) != len(self.lines):
            self.lines = kept
            self.version += 1

    def index_of(self, source: str, lineno: int) -> int | None:
        for i in range(len(self.lines) - 1, -1, -1):
            line = self.lines[i]
            if line.source == source and line.lineno == lineno:
                return i
        return None


class Excerpt:
    """Lines read from a file around one line (beyond what the store keeps), shown in place of its tail."""

    dropped = 0
    version = 0

    def __init__(self, file: FileLines, lines: list[LogLine], wanted: int) -> None:
        self.file = file
        self.lines = lines
        self.wanted = wanted
        self.widths = Widths()
        self.widths.note(lines)

    @property
    def source(self) -> str:
        return self.file.source

    def __len__(self) -> int:
        return len(self.lines)

    def __getitem__(self, index: int) -> LogLine:
        return self.lines[index]

    def index_of(self, lineno: int) -> int | None:
        first = self.lines[0].lineno if self.lines else None
        if first is None or not 0 <= lineno - first < len(self.lines):
            return None
        return lineno - first


class LogStore:
    """Every followed file, by source path, plus the merged view."""

    def __init__(self, budget: int = RUN_BUDGET) -> None:
        self.budget = budget
        self.files: dict[str, FileLines] = {}
        self.merged = MergedLines(budget)
        self.maker = LineMaker()  # for callers on the UI thread (tests, fixed data)
        self.changed = True  # something to redraw since the views last looked

    @property
    def per_file(self) -> int:
        return per_file_limit(len(self.files), self.budget)

    def file(self, source: str, label: str, path: str | None = None) -> FileLines:
        lines = self.files.get(source)
        if lines is None:
            lines = self.files[source] = FileLines(source, label, path)
            self.changed = True
        elif path is not None:
            lines.path = path
        return lines

    def add(
        self,
        source: str,
        label: str,
        first_lineno: int | None,
        lines: Sequence[LogLine],
        *,
        history: bool,
        done: bool,
        merge: bool = True,
    ) -> None:
        """Prepared lines of one file, as one follower message carries them. ``merge=False``: the caller
        adds the lines of several files to ``merged`` at once (one sort, not one per file)."""
        target = self.file(source, label)
        limit = self.per_file
        if history:
            target.add_history(list(lines), done=done, limit=limit)
        else:
            target.add_live(list(lines), first_lineno, limit=limit)
        self.merged.widths.take(target.widths)
        if merge:
            self.merged.add(lines)
        self.changed = True

    def add_texts(
        self, source: str, label: str, first_lineno: int | None, texts: Sequence[str], *, history: bool, done: bool
    ) -> None:
        """``add`` for raw texts, prepared here (tests and fixed data; the follow worker prepares its own)."""
        lines = self.maker.make(source, label, first_lineno, texts, history=history)
        self.add(source, label, first_lineno, lines, history=history, done=done)

    def reset(self, source: str) -> None:
        """The file started over (truncated, replaced): forget what it showed."""
        old = self.files.get(source)
        if old is None:
            return
        self.files[source] = FileLines(source, old.label, old.path, version=old.version + 1)
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
