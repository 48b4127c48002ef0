"""The one reader: a file's bytes -> the lines that can mean something -> the parser -> events.

``FileReader`` reads one file, block by block, whoever hands it the blocks: ``--check`` (``read_file``,
``read_run``: the whole file), ``watch`` and ``attach`` (the live follower: its history and each batch
of new lines). A block is whole lines; the scanner (``_scan``, over the strings ``_markers`` derives
from the catalog) says which of them may give an event, and only those are decoded and parsed, plus
every line while a traceback or torchrun summary is open (``LineParser.in_group``). The events are
those of parsing every line (``keep_unknown=False``: no ``LogLine``), whatever the blocks' sizes.
``file_tail`` reads a file's last lines for a display.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from a1x_diagnostics.events import Event, Source
from a1x_diagnostics.inputs import InputError, open_regular
from a1x_diagnostics.parsing._layout import LayoutError, RunLayout
from a1x_diagnostics.parsing._lines import MAX_LINE_BYTES, decode, segments
from a1x_diagnostics.parsing._markers import scanner_for
from a1x_diagnostics.parsing._parser import LineParser
from a1x_diagnostics.parsing._shapes import shape_of

BLOCK_BYTES = 4 << 20
TAIL_MAX_BYTES = 1 << 20


class FileReader:
    """One file's reader: ``feed`` blocks of its lines in order, ``end`` at its end (or a pause)."""

    __slots__ = ("parser", "scanner")

    def __init__(self, source: Source, *, mtime: float | None = None) -> None:
        self.parser = LineParser(source, mtime=mtime, keep_unknown=False)
        self.scanner = scanner_for(source)

    @property
    def in_group(self) -> bool:
        """A traceback or torchrun summary is open: the next lines may still belong to it."""
        return self.parser.in_group

    def feed(self, first_lineno: int, block: bytes) -> list[Event]:
        """The events of ``block``: whole lines, each ended by a newline but maybe the last, the first
        numbered ``first_lineno``."""
        parser = self.parser
        out: list[Event] = []
        starts = self.scanner.starts(block)
        n, k = len(block), 0
        pos, lineno = 0, first_lineno
        find, count = block.find, block.count
        while pos < n:
            if not parser.in_group:
                while k < len(starts) and starts[k] < pos:
                    k += 1
                if k == len(starts):
                    break
                lineno += count(b"\n", pos, starts[k])
                pos = starts[k]
            nl = find(b"\n", pos)
            text = decode(block[pos : nl if nl >= 0 else n])
            for segment in segments(text) if "\r" in text else (text,):
                out += parser.feed(lineno, segment)
            if nl < 0:
                break
            pos, lineno = nl + 1, lineno + 1
        return out

    def feed_lines(self, first_lineno: int, lines: Sequence[str]) -> list[Event]:
        """``feed`` for lines already cut and decoded (the live follower's)."""
        if not lines:
            return []
        return self.feed(first_lineno, ("\n".join(lines) + "\n").encode("utf-8", "replace"))

    def end(self) -> list[Event]:
        """What is still open (a traceback at the end of the file) closed and given."""
        return self.parser.flush()


def blocks(f: BinaryIO, size: int = BLOCK_BYTES, limit: int | None = None) -> Iterator[tuple[int, bytes]]:
    """``(first line number, block)`` of whole lines of ``f`` (its first ``limit`` bytes); a line longer than
    ``MAX_LINE_BYTES`` is cut there (the rest skipped, the numbering kept), a last line without a newline
    is a line."""
    lineno = 1
    pending = b""
    overflow = False  # the pending line reached MAX_LINE_BYTES: the rest of it is skipped
    left = -1 if limit is None else limit
    while left and (chunk := f.read(size if left < 0 else min(size, left))):
        left -= len(chunk) if left > 0 else 0
        if pending or overflow:
            nl = chunk.find(b"\n")
            if nl < 0:
                if not overflow:
                    pending += chunk
                    pending, overflow = pending[:MAX_LINE_BYTES], len(pending) >= MAX_LINE_BYTES
                continue
            if not overflow:
                pending = (pending + chunk[:nl])[:MAX_LINE_BYTES]
            yield lineno, pending + b"\n"
            lineno += 1
            pending, overflow = b"", False
            chunk = chunk[nl + 1 :]
        last = chunk.rfind(b"\n")
        if last < 0:
            pending, overflow = chunk[:MAX_LINE_BYTES], len(chunk) >= MAX_LINE_BYTES
            continue
        whole = chunk[: last + 1]
        yield lineno, whole
        lineno += whole.count(b"\n")
        pending = chunk[last + 1 :]
    if pending:
        yield lineno, pending


def _open_error(path: Path, e: OSError) -> LayoutError:
    return LayoutError(f"{path}: cannot read ({e.strerror or e})")


def open_log(path: Path) -> tuple[BinaryIO, os.stat_result]:
    """A log file open for reading and its ``fstat``, never blocking (``a1x_diagnostics.inputs.open_regular``:
    a regular file on a disk, not a FIFO, a device or a file of ``/proc``); ``LayoutError`` (one line)."""
    try:
        return open_regular(path)
    except InputError as e:
        raise LayoutError(f"{path}: {e}") from None


def read_file(path: Path, source: Source, *, display_path: str | None = None) -> Iterator[Event]:
    """Events of one log file, streamed; ``LayoutError`` (one line) only if it cannot be opened. A read
    that fails mid-way keeps what was read."""
    path = Path(path)
    if display_path is not None:
        source = Source(display_path, source.role, source.index)
    f, st = open_log(path)
    reader = FileReader(source, mtime=st.st_mtime)
    try:
        # What the file held when it was opened: a file written on meanwhile is read as of then, not chased.
        for first, block in blocks(f, limit=st.st_size):
            yield from reader.feed(first, block)
    except OSError:
        pass
    finally:
        f.close()
    yield from reader.end()


def read_run(layout: RunLayout) -> Iterator[Event]:
    """Events of every file of ``layout``, file after file (in ``layout.files`` order). A file that
    cannot be read is skipped and named in ``layout.unreadable``."""
    for path, source in layout.files:
        try:
            yield from read_file(path, source)
        except LayoutError as e:
            layout.unreadable.append(str(e))


@dataclass
class FileTail:
    path: Path
    size: int
    mtime: float
    last_ts: datetime | None  # the newest timestamp among the last lines (None: none carried one)
    last_lines: list[str]  # up to n lines, oldest first, ``\r`` redraws reduced to the last one


def file_tail(path: Path, n: int = 20) -> FileTail:
    """The last ``n`` lines of a file, read from the end (at most ``TAIL_MAX_BYTES``)."""
    path = Path(path)
    f, st = open_log(path)
    try:
        with f:
            size = st.st_size
            want = min(size, 64 << 10)
            while True:
                f.seek(size - want)
                data = f.read(want)
                if data.count(b"\n") > n or want >= min(size, TAIL_MAX_BYTES):
                    break
                want = min(size, want * 4, TAIL_MAX_BYTES)
    except OSError as e:
        raise _open_error(path, e) from None
    raw_lines = data.split(b"\n")
    if len(data) < size:
        raw_lines = raw_lines[1:]  # the first one is probably cut
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    lines = [segments(decode(r))[-1] for r in raw_lines[-n:]] if n > 0 else []
    ref = datetime.fromtimestamp(st.st_mtime)
    last_ts = None
    for text in reversed(lines):
        ts = shape_of(text, ref).ts
        if ts is not None:
            last_ts = ts
            break
    return FileTail(path, size, st.st_mtime, last_ts, lines)
