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

``run_events`` keeps up to ``WORKERS`` greps running ahead (one per CPU, at most 4), each feeding
a bounded queue, so memory stays bounded and both cores of a small machine are used.
"""

from __future__ import annotations

import functools
import io
import os
import queue
import shutil
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from diagnostics.events import Event, Source
from diagnostics.parsing._lines import MAX_LINE_BYTES, decode, iter_lines, segments
from diagnostics.parsing._parser import GATED_ROLES, GROUP_STARTS, Key, LineParser
from diagnostics.parsing._rules import GATES, NEEDLES
from diagnostics.parsing._shapes import split_rank

_ALWAYS = (*GROUP_STARTS, "[AlpamayoPrefetch]")
_START_A, _START_B = GROUP_STARTS
GATED_MARKERS: tuple[str, ...] = (*GATES, *_ALWAYS)
ALL_MARKERS: tuple[str, ...] = (*NEEDLES, *_ALWAYS)
WORKERS = max(1, min(4, os.cpu_count() or 1))
_PIPE_CHUNK = 1 << 18
_QUEUE_CHUNKS = 16


def markers_for(source: Source) -> tuple[str, ...]:
    return GATED_MARKERS if source.role in GATED_ROLES else ALL_MARKERS


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


def _grep_command(path: Path, markers: Iterable[str]) -> list[str]:
    exe = grep_path()
    assert exe is not None
    cmd = [exe, "-a", "-b", "-n", "-F"]
    for m in markers:
        cmd += ["-e", m]
    return [*cmd, "--", str(path)]


class _GrepJob:
    """One grep over one file, its output pumped by a thread into a bounded queue."""

    def __init__(self, path: Path, markers: Iterable[str]) -> None:
        env = dict(os.environ, LC_ALL="C")
        self.proc = subprocess.Popen(_grep_command(path, markers), stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.chunks: queue.Queue[bytes | None] = queue.Queue(maxsize=_QUEUE_CHUNKS)
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        out = self.proc.stdout
        assert isinstance(out, io.BufferedReader)
        try:
            while True:
                chunk = out.read1(_PIPE_CHUNK)
                if not chunk:
                    break
                self.chunks.put(chunk)
        except (OSError, ValueError):
            pass
        finally:
            self.chunks.put(None)

    def candidates(self) -> Iterator[tuple[int, int, str]]:
        """``(lineno, byte offset, text)`` of every line holding a marker."""
        limit = MAX_LINE_BYTES + 64
        pending = b""
        skipping = False  # inside an over-long line: drop bytes up to its newline
        while True:
            chunk = self.chunks.get()
            if chunk is None:
                break
            if skipping:
                nl = chunk.find(b"\n")
                if nl < 0:
                    continue
                chunk, skipping = chunk[nl + 1 :], False
            parts = (pending + chunk).split(b"\n")
            pending = parts.pop()
            for raw in parts:
                yield from _candidate(raw)
            if len(pending) > limit:
                yield from _candidate(pending[:limit])
                pending, skipping = b"", True
        if pending and not skipping:
            yield from _candidate(pending)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        while self.thread.is_alive():
            try:
                self.chunks.get_nowait()
            except queue.Empty:
                self.thread.join(0.01)
        self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _candidate(raw: bytes) -> Iterator[tuple[int, int, str]]:
    n, _, rest = raw.partition(b":")
    b, _, content = rest.partition(b":")
    try:
        yield int(n), int(b), decode(content[:MAX_LINE_BYTES])
    except ValueError:
        return


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


def _events(candidates: Iterable[tuple[int, int, str]], path: Path, source: Source,
            mtime: float) -> Iterator[Event]:
    parser = LineParser(source, mtime=mtime, keep_unknown=False)
    consumed: dict[int | None, set[Key]] = {}
    last_taken = 0  # the highest line number any group took: past it, no candidate can be taken
    for lineno, offset, line in candidates:
        for k, seg in enumerate(segments(line)):
            if lineno > last_taken and _START_A not in seg and _START_B not in seg:
                yield from parser.feed(lineno, seg)
                continue
            rank, body = split_rank(seg)
            taken = consumed.get(rank)
            if taken is not None and (lineno, k) in taken:
                continue
            if body.startswith(GROUP_STARTS):
                events, keys = _read_group(path, source, mtime, offset, (lineno, k), rank)
                consumed[rank] = keys
                last_taken = max([last_taken, *(key[0] for key in keys)])
                yield from events
            else:
                yield from parser.feed(lineno, seg)
    yield from parser.flush()


def file_events(path: Path, source: Source, mtime: float) -> Iterator[Event]:
    """Non-``LogLine`` events of one file, from grep's candidate lines."""
    job = _GrepJob(path, markers_for(source))
    try:
        yield from _events(job.candidates(), path, source, mtime)
    finally:
        job.close()


def run_events(files: Iterable[tuple[Path, Source]], on_error: Callable[[str], None]) -> Iterator[Event]:
    """Non-``LogLine`` events of many files, in order; up to ``WORKERS`` greps run ahead.

    A file that cannot be opened is reported through ``on_error`` ("path: reason") and skipped.
    """
    pending = iter(files)
    jobs: deque[tuple[Path, Source, float, _GrepJob]] = deque()

    def start_next() -> bool:
        for path, source in pending:
            try:
                mtime = path.stat().st_mtime
                with open(path, "rb"):
                    pass
            except OSError as e:
                on_error(f"{path}: cannot read ({e.strerror or e})")
                continue
            jobs.append((path, source, mtime, _GrepJob(path, markers_for(source))))
            return True
        return False

    try:
        while len(jobs) < WORKERS and start_next():
            pass
        while jobs:
            path, source, mtime, job = jobs.popleft()
            try:
                yield from _events(job.candidates(), path, source, mtime)
            finally:
                job.close()
            start_next()
    finally:
        for *_, job in jobs:
            job.close()
