"""The fast path of ``iter_file_events`` / ``read_run`` with ``keep_unknown=False``: GNU grep picks lines.

Every line that can give an event other than ``LogLine`` holds a *marker*: a rule's gate in
controller and replica logs (``_rules``: cosmos level prefixes such as `` - INFO - [Controller] ``
and a few tags, about 25 strings), a rule's needle in other files (launcher captures, stage logs),
a group start (``Traceback (most recent call last):``, ``Root Cause (first observed failure):``) or
the prefetch prefix. ``grep -a -b -n -F`` with those fixed strings prints each candidate line with
its number and byte offset at near disk speed, and only those lines reach Python. A group start
is read forward from its byte offset with a fresh ``LineParser`` until that group closes (a
bounded window, ``MAX_GROUP_SPAN`` lines at most); the line numbers it took are then skipped among
the later candidates, exactly as the line-by-line parser would have consumed them. Result: the
same non-``LogLine`` events as the pure-Python path (``tests/parsing`` holds the two to it), with
groups emitted at their first line instead of when they close.

Files go to grep in batches (``-H -Z`` names each line's file), one process per ``BATCH_FILES``
files. ``run_events`` drains every running grep into memory whenever the parser takes a chunk,
without threads, and starts the next batch's grep as soon as one finishes: grep scans ahead on
another core while the parser works, up to ``AHEAD_BYTES`` of waiting output (bounded memory).
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import shutil
import subprocess
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from a1x_diagnostics.events import Event, Source
from a1x_diagnostics.parsing._lines import MAX_LINE_BYTES, decode, iter_lines, segments
from a1x_diagnostics.parsing._markers import markers_for
from a1x_diagnostics.parsing._parser import GROUP_STARTS, Key, LineParser
from a1x_diagnostics.parsing._shapes import split_rank
from a1x_diagnostics.parsing._templates import BATCH_TYPES, TEMPLATES

_START_A, _START_B = GROUP_STARTS
# grep is faster per byte than the parser (docs/parsing.md), so one grep running ahead keeps the parser fed; more
# would take CPU from it on a small machine. Up to ``AHEAD_BYTES`` of output waits in memory.
WORKERS = max(1, min(4, (os.cpu_count() or 2) - 1))
AHEAD_BYTES = 32 << 20
BATCH_FILES = 32  # files per grep: a process per file would cost more CPU than a small file's scan
BATCH_BYTES = 64 << 20
PIPE_BYTES = 1 << 20  # grep's pipe is enlarged to this where Linux allows: fewer wake-ups
_READ_BYTES = 1 << 20
_POSIX = os.name == "posix"
try:
    import fcntl

    _SETPIPE: int | None = getattr(fcntl, "F_SETPIPE_SZ", None)
except ImportError:  # not POSIX
    _SETPIPE = None


@functools.lru_cache(maxsize=1)
def grep_path() -> str | None:
    """GNU grep on PATH (``-b`` byte offsets and ``-a`` are GNU options), or ``None``."""
    exe = shutil.which("grep")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return exe if b"GNU grep" in out else None


def available() -> bool:
    return os.environ.get("A1X_NO_GREP") is None and grep_path() is not None


_ENV: dict[str, str] | None = None


def _grep_env() -> dict[str, str]:
    global _ENV
    if _ENV is None:
        _ENV = dict(os.environ, LC_ALL="C")
    return _ENV


class _GrepJob:
    """One grep over a batch of files; its output is read ahead into memory (``pump``) or on demand.

    ``file_blocks(i)`` hands out the candidate lines of the batch's ``i``-th file, in order; it reads
    through ``take``, which ``run_events`` supplies so that it can pump the other greps meanwhile.
    """

    def __init__(self, paths: list[Path], markers: Iterable[str]) -> None:
        exe = grep_path()
        assert exe is not None
        self.named = len(paths) > 1
        cmd = [exe, "-a", "-b", "-n", "-F"]
        for m in markers:
            cmd += ["-e", m]
        if self.named:
            cmd += ["-H", "-Z"]  # "path\0N:B:text"; a batch never holds a path with a newline
        self.names = [decode(os.fsencode(p)) for p in paths]  # as grep prints them, decoded like its output
        self.proc = subprocess.Popen([*cmd, "--", *map(str, paths)], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=_grep_env(), bufsize=0)
        assert self.proc.stdout is not None
        self.fd = self.proc.stdout.fileno()
        if _SETPIPE is not None:
            with contextlib.suppress(OSError):  # a smaller pipe only means more wake-ups
                fcntl.fcntl(self.fd, _SETPIPE, PIPE_BYTES)
        if _POSIX:
            os.set_blocking(self.fd, False)  # ``pump`` never waits; ``read`` waits in poll
        self.chunks: deque[bytes] = deque()  # output read ahead, not parsed yet
        self.buffered = 0
        self.eof = False
        self.take: Callable[[], bytes] = self.read  # the next chunk of output, b"" at the end
        prefix = max((len(n.encode("utf-8", "surrogateescape")) for n in self.names), default=0) + 1
        self._limit = MAX_LINE_BYTES + 64 + (prefix if self.named else 0)
        self._runs = self._read_runs()
        self._held: tuple[int, list[list[str]]] | None = None

    # -- reading grep's output

    def pump(self, budget: int) -> int:
        """Read what grep has written (never waits), up to about ``budget`` bytes; bytes read."""
        if self.eof or budget <= 0 or not _POSIX:
            return 0
        got = 0
        try:
            while got < budget:
                chunk = os.read(self.fd, _READ_BYTES)
                if not chunk:
                    self.eof = True
                    break
                self.chunks.append(chunk)
                got += len(chunk)
        except BlockingIOError:
            pass
        except OSError:
            self.eof = True
        self.buffered += got
        return got

    def read(self) -> bytes:
        """The next chunk: read ahead, else waited for (POLLHUP at grep's exit wakes the wait too)."""
        while True:
            if self.chunks:
                chunk = self.chunks.popleft()
                self.buffered -= len(chunk)
                return chunk
            if self.eof:
                return b""
            try:
                if _POSIX:
                    waiter = select.poll()  # not select(): no limit on the descriptor's number
                    waiter.register(self.fd, select.POLLIN)
                    waiter.poll()
                    self.pump(_READ_BYTES)
                    continue
                chunk = os.read(self.fd, _READ_BYTES)
            except OSError:
                chunk = b""
            if not chunk:
                self.eof = True
                return b""
            return chunk

    def _raw_lines(self) -> Iterator[list[str]]:
        """grep's output lines (decoded; a text longer than ``MAX_LINE_BYTES`` cut there), a chunk at a time."""
        pending = b""
        skipping = False  # inside an over-long line: drop bytes up to its newline
        while True:
            chunk = self.take()
            if not chunk:
                break
            if skipping:
                nl = chunk.find(b"\n")
                if nl < 0:
                    continue
                chunk, skipping = chunk[nl + 1 :], False
            data = pending + chunk if pending else chunk
            last = data.rfind(b"\n")
            if last < 0:
                pending = data
            else:
                pending = data[last + 1 :]
                if last <= MAX_LINE_BYTES:
                    # No text in it can pass the limit. Decoding the block at once gives what decoding
                    # each line would: "\n" never occurs inside a UTF-8 sequence.
                    yield decode(data[:last]).split("\n")
                else:
                    yield [self._cut(raw) for raw in data[:last].split(b"\n")]
            if len(pending) > self._limit:
                yield [self._cut(pending[: self._limit])]
                pending, skipping = b"", True
        if pending and not skipping:
            yield [self._cut(pending)]

    def _cut(self, raw: bytes) -> str:
        """One output line, its text cut at ``MAX_LINE_BYTES`` before decoding."""
        start = raw.find(b"\0") + 1 if self.named else 0
        colon = raw.find(b":", raw.find(b":", start) + 1)
        if colon < 0:
            return decode(raw)
        return decode(raw[: colon + 1]) + decode(raw[colon + 1 : colon + 1 + MAX_LINE_BYTES])

    def _read_runs(self) -> Iterator[tuple[int, list[list[str]]]]:
        """``(file index, [[lineno, byte offset, text], ...])``: consecutive candidate lines of one file."""
        if not self.named:
            for lines in self._raw_lines():
                rows = [line.split(":", 2) for line in lines]
                if not all(len(r) == 3 and r[0].isdigit() and r[1].isdigit() for r in rows):
                    rows = [r for r in rows if len(r) == 3 and r[0].isdigit() and r[1].isdigit()]  # never from grep
                yield 0, rows
            return
        names, index = self.names, 0
        for lines in self._raw_lines():
            name = names[index]
            run: list[list[str]] = []
            for line in lines:
                head, _, rest = line.partition("\0")
                row = rest.split(":", 2)
                if len(row) != 3 or not (row[0].isdigit() and row[1].isdigit()):
                    continue  # never from GNU grep
                if head != name:
                    if run:
                        yield index, run
                        run = []
                    index = _next_index(names, index, head)
                    name = names[index]
                run.append(row)
            if run:
                yield index, run

    def file_blocks(self, index: int) -> Iterator[list[list[str]]]:
        """The candidate lines of the batch's ``index``-th file (``[lineno, byte offset, text]``, digits)."""
        while True:
            if self._held is None:
                self._held = next(self._runs, None)
                if self._held is None:
                    return
            run_index, rows = self._held
            if run_index > index:
                return  # the next file's lines: this one had no more
            self._held = None
            if run_index == index:
                yield rows

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.chunks.clear()
        self.buffered = 0


def _next_index(names: list[str], index: int, name: str) -> int:
    """Where ``name`` is among the batch's files, searching forward (grep reads them in order)."""
    for i in range(index, len(names)):
        if names[i] == name:
            return i
    return len(names) - 1  # cannot happen with GNU grep; keep the lines with the last file


def _read_group(path: Path, source: Source, mtime: float, offset: int, start: Key,
                rank: int | None) -> tuple[list[Event], set[Key]]:
    """Read forward from a group start until the group of ``rank`` that starts at ``start`` closes.

    Returns its events and the (line, segment) keys it took.
    """
    parser = LineParser(source, mtime=mtime, keep_unknown=False)
    parser.track_groups = True

    def done() -> tuple[list[Event], set[Key]] | None:
        for group, events in parser.closed_groups:
            if group.first_key == start and group.rank == rank:
                return events, set(group.keys)
        parser.closed_groups.clear()
        return None

    try:
        with open(path, "rb") as f:
            f.seek(offset)
            for n, line in iter_lines(f, start[0]):
                for seg in segments(line):
                    parser.feed(n, seg)
                found = done()
                if found is not None:
                    return found
                if n == start[0] and parser.open_group_first_key(rank) != start:
                    return [], set()  # not a group start for this rank after all
    except OSError:
        pass
    parser.flush()
    return done() or ([], set())


# Events whose class a bulk record also stands for: they share its store, marks and series, so a run of
# records is handed on before one of them. Every other event joins the run, in its place (the Collector
# takes the run's events in order, and each record with the step and window it came in).
# The event classes of the bulk shapes: an event of one shares its stores, marks and series with records.
_RECORD_CLASSES = tuple(dict.fromkeys(t.event for t in TEMPLATES.values() if t.event is not None))


def _unbatched(batch: Any) -> list[Any]:
    return [batch]


def _events(blocks: Iterable[Sequence[Sequence[Any]]], path: Path, source: Source, mtime: float,
            unbatch: Callable[[Any], list[Any]] = _unbatched) -> Iterator[Any]:
    """Events of the candidate rows ``(lineno, byte offset, text)`` of one file (grep's, as strings, or
    the native reader's), in order. The native reader's rows also hold bulk records
    (``_bulk.Record``, more than three items): those a group did not take are handed on in *runs*,
    lists of records and the events between them in line order (at most a block's), cut before
    an event of a record's class (``_RECORD_CLASSES``). A block may hold batches (``_bulk.BATCH_FIELDS``:
    a stretch of one family's records no other line cuts, placed where the first was, its ``line``):
    one whose lines a group may have reached is read again one record a line (``unbatch``)."""
    parser = LineParser(source, mtime=mtime, keep_unknown=False)
    # This parser never holds an open group: group starts go to ``_read_group``, and only lines that
    # start none reach it. So a line without ``\r`` can skip ``feed``'s group bookkeeping.
    ungrouped = parser.ungrouped_line_events
    consumed: dict[int | None, set[Key]] = {}
    last_taken = 0  # the highest line number any group took: past it, no candidate can be taken
    run: list[Any] = []
    for block in blocks:
        if block and min(map(len, block)) > 3 and block[0][1] > last_taken:
            # Records only (replica logs), in line order, all past any group's lines: the run takes them.
            run.extend(block)
            yield run
            run = []
            continue
        for row in block:
            if len(row) > 3:  # a bulk record (``records``) or batch: one segment, never a group start
                rec: Any = row
                if rec.line > last_taken:
                    run.append(row)
                elif type(rec) in BATCH_TYPES:
                    run.extend(r for r in unbatch(rec) if type(r) in BATCH_TYPES or r.line > last_taken
                               or (r.line, 0) not in consumed.get(r.rank, ()))
                elif (rec.line, 0) not in consumed.get(rec.rank, ()):
                    run.append(row)
                continue
            number, offset, line = row
            lineno = int(number)
            if lineno > last_taken and _START_A not in line and _START_B not in line and "\r" not in line:
                events = ungrouped(lineno, line)
            else:
                events = []
                for k, seg in enumerate(segments(line)):
                    if lineno > last_taken and _START_A not in seg and _START_B not in seg:
                        events.extend(parser.feed(lineno, seg))
                        continue
                    rank, body = split_rank(seg)
                    taken = consumed.get(rank)
                    if taken is not None and (lineno, k) in taken:
                        continue
                    if body.startswith(GROUP_STARTS):
                        group, keys = _read_group(path, source, mtime, int(offset), (lineno, k), rank)
                        consumed[rank] = keys
                        last_taken = max([last_taken, *(key[0] for key in keys)])
                        events.extend(group)
                    else:
                        events.extend(parser.feed(lineno, seg))
            if not events:
                continue
            if run:
                if not any(isinstance(e, _RECORD_CLASSES) for e in events):
                    run.extend(events)
                    continue
                yield run
                run = []
            yield from events
        if run:
            yield run
            run = []
    yield from parser.flush()


def file_events(path: Path, source: Source, mtime: float) -> Iterator[Event]:
    """Non-``LogLine`` events of one file, from grep's candidate lines."""
    job = _GrepJob([path], markers_for(source))
    try:
        yield from _events(job.file_blocks(0), path, source, mtime)
    finally:
        job.close()


Batch = list[tuple[Path, Source, float]]


def _batches(files: Iterable[tuple[Path, Source]], on_error: Callable[[str], None]) -> Iterator[Batch]:
    """Consecutive readable files with the same markers, ``BATCH_FILES`` / ``BATCH_BYTES`` at most."""
    batch: Batch = []
    size = 0
    for path, source in files:
        try:
            st = path.stat()
            with open(path, "rb"):
                pass
        except OSError as e:
            on_error(f"{path}: cannot read ({e.strerror or e})")
            continue
        alone = "\n" in str(path)  # grep's "path\0N:B:" lines would break inside the name
        if batch and (alone or len(batch) >= BATCH_FILES or size + st.st_size > BATCH_BYTES
                      or markers_for(source) is not markers_for(batch[0][1]) or "\n" in str(batch[0][0])):
            yield batch
            batch, size = [], 0
        batch.append((path, source, st.st_mtime))
        size += st.st_size
    if batch:
        yield batch


class _Pipeline:
    """The greps of ``run_events``: at most ``WORKERS`` running, their output read ahead into memory.

    Each chunk the parser takes from the current grep first drains every running grep (non-blocking
    reads) and starts the next batch's grep when one has finished, as long as less than
    ``AHEAD_BYTES`` wait in memory. Without POSIX non-blocking pipes, one grep runs at a time.
    """

    def __init__(self, batches: Iterator[Batch]) -> None:
        self.batches = batches
        self.jobs: deque[tuple[Batch, _GrepJob]] = deque()
        self.buffered = 0

    def _start(self) -> None:
        running = sum(not job.eof for _, job in self.jobs)
        while running < (WORKERS if _POSIX else 1) and self.buffered < AHEAD_BYTES:
            batch = next(self.batches, None)
            if batch is None:
                return
            job = _GrepJob([path for path, _, _ in batch], markers_for(batch[0][1]))
            job.take = functools.partial(self._take, job)
            self.jobs.append((batch, job))
            running += 1

    def _pump(self) -> None:
        self.buffered = sum(job.buffered for _, job in self.jobs)
        for _, job in self.jobs:
            if not job.eof:
                self.buffered += job.pump(AHEAD_BYTES - self.buffered)
        self._start()

    def _take(self, job: _GrepJob) -> bytes:
        chunk = job.read()
        self._pump()
        return chunk

    def __iter__(self) -> Iterator[tuple[Batch, _GrepJob]]:
        self._start()
        while self.jobs:
            batch, job = self.jobs[0]
            yield batch, job
            job.close()
            self.jobs.popleft()
            self._pump()

    def close(self) -> None:
        for _, job in self.jobs:
            job.close()
        self.jobs.clear()


def run_events(files: Iterable[tuple[Path, Source]], on_error: Callable[[str], None]) -> Iterator[Event]:
    """Non-``LogLine`` events of many files, in order, from greps that run ahead (``_Pipeline``).

    A file that cannot be opened is reported through ``on_error`` ("path: reason") and skipped.
    """
    pipeline = _Pipeline(_batches(files, on_error))
    try:
        for batch, job in pipeline:
            for i, (path, source, mtime) in enumerate(batch):
                yield from _events(job.file_blocks(i), path, source, mtime)
    finally:
        pipeline.close()
