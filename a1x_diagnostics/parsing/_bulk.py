"""--check's native reader: candidate lines found in C, and the bulk line shapes read there in full.

A gigabyte of a cluster run holds ~170 k lines that give events, and ~85 % of them have one of a
few exact shapes: controller ``Stat:`` and ``weight staleness:`` lines, weight-sync send/receive
timings, ``prompt rejected`` lines, ``Dynamic sampling … {'outdated': N}.``. ``a1x_diagnostics._scan.chunk``
finds the lines holding a marker (the Aho-Corasick automaton of ``_scan``) and reads those shapes'
numbers into plain tuples (*records*); every other marked line comes back as text for the Python
parser, exactly as grep's output would. The ``Collector`` takes a record without building its event
(``a1x_diagnostics.detectors._store.Pending`` builds it, through the Python parser, only if a detector
quotes it); a stretch of 33 or more weight sends or receives comes as one batch of their columns
(``BATCH_FIELDS``), with the records of each end. A template only decides how fast a line is read:
a line that does not match one exactly, to the last byte, goes the Python way
(``tests/parsing/test_bulk.py`` holds the record of every template to the event the parser builds
from the same line).

Files are read in ``CHUNK_BYTES`` blocks by a few threads ahead of the parser (the C scan runs
without the GIL), at most ``AHEAD_CHUNKS`` blocks' results waiting per file; ``prefetch`` starts them
before the caller's slower imports.
"""

from __future__ import annotations

import functools
import mmap
import os
import queue
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from a1x_diagnostics.events import Source
from a1x_diagnostics.parsing import _templates
from a1x_diagnostics.parsing._lines import MAX_LINE_BYTES
from a1x_diagnostics.parsing._markers import confirm_for, markers_for
from a1x_diagnostics.parsing._parser import GATED_ROLES
from a1x_diagnostics.parsing._scan import Automaton, _automaton
from a1x_diagnostics.parsing._scan import _native_chunk as _chunk
from a1x_diagnostics.parsing._templates import (
    BATCHED,
    BATCHES,
    FAMILY,
    MOVES_STEP,
    Bulk,
    c_template,
    fields_of,
    record_class,
)

CHUNK_BYTES = 4 << 20
AHEAD_CHUNKS = 8
# More threads than 4 only add contention for the GIL, which building the records needs (docs/parsing.md,
# "The native reader": the figures on the 16-CPU GPU node).
WORKERS = int(os.environ.get("A1X_SCAN_WORKERS") or max(1, min(4, os.cpu_count() or 2)))
AHEAD_FILES = 4 * WORKERS  # files scanned (or being scanned) that the parser has not read to their end
AHEAD_ITEMS = 100_000  # records and candidates waiting for the parser, outside the file it reads (≈40 MB)


TEMPLATES = _templates.TEMPLATES
"""The bulk shapes, each defined once in ``_rules`` (``_templates``: its C template and record derive from it)."""
FIELDS: dict[Bulk, tuple[str, ...]] = {kind: fields_of(t) for kind, t in TEMPLATES.items()}
"""What each record holds after ``RECORD_HEAD``."""
RECORDS: dict[Bulk, type] = {kind: record_class(t) for kind, t in TEMPLATES.items()}
"""The record class (a named tuple) of each shape."""

_TEMPLATE_TUPLE = tuple((c_template(TEMPLATES[b]), RECORDS[b]) for b in Bulk)

Record = Any
"""A bulk line read in C: an instance of ``RECORDS[kind]`` (``kind, line, rank, ts, raw, *fields``)."""

BATCH_KEEP = 16
"""The records a batch keeps at each end: the store keeps 16 of each end of a weight-sync stream
(``EventStore``'s ``k``), the only ones a detector can quote."""
BATCH_LEAST = 2 * BATCH_KEEP + 1
"""The fewest records of a family in a stretch that are read as a batch: below it a batch keeps every
record, and costs more than they do (the tests lower it to 1, to read every stretch in batches)."""
BatchSpecs = tuple[tuple[tuple[type, bytes, int, int, int, int], ...], bytes]


@functools.lru_cache(maxsize=4)
def _batch_specs(keep: int, least: int) -> BatchSpecs:
    """``chunk``'s ``batches`` and ``beside``: each family's class, shapes, fields' places, ends kept and
    fewest records; the shapes whose records may stand beside a batch (any but those that move the step)."""
    specs = []
    for family, (value, step) in BATCHED.items():
        kinds = [k for k in Bulk if FAMILY[k] is family]
        places = {(FIELDS[k].index(value) if value else -1, FIELDS[k].index(step) if step else -1) for k in kinds}
        assert len(places) == 1, f"{family.name}: its shapes keep their fields in other places"
        (value_at, step_at), = places
        specs.append((BATCHES[family], bytes(kinds), value_at, step_at, keep, least))
    beside = bytes(k for k in Bulk if k not in MOVES_STEP and FAMILY[k] not in BATCHED)
    return tuple(specs), beside


_NO_BATCHES: BatchSpecs = ((), b"")


SIMD = 0 if os.environ.get("A1X_NO_SIMD") else 2
"""The widest prefilter the C scan may use where the CPU has it: 2 tests 32 positions at a time
(x86-64 with AVX2), 1 tests 16 (SSSE3), 0 one at a time."""


def available() -> bool:
    return _chunk is not None and not os.environ.get("A1X_NO_NATIVE")


@functools.lru_cache(maxsize=4096)
def minute_base(y: int, mo: int, d: int, hh: int, mi: int) -> int | None:
    """Seconds since the epoch of a local wall-clock minute, as ``datetime.timestamp()`` reads it.

    The C side adds the seconds and milliseconds, the same sum ``timestamp()`` makes, which holds
    where the local offset does not change inside the minute; ``None`` where it does (offsets with
    seconds, before 1972 in some zones) or where ``timestamp()`` fails: those lines go the Python way.
    """
    try:
        base = datetime(y, mo, d, hh, mi).timestamp()
        if datetime(y, mo, d, hh, mi, 59).timestamp() - base != 59:
            return None
        return int(base)
    except (OverflowError, OSError, ValueError):
        return None


def _templates_for(source: Source) -> tuple[tuple[bytes, type], ...]:
    return _TEMPLATE_TUPLE if source.role in GATED_ROLES else ()


BATCHING = not os.environ.get("A1X_NO_BATCHES")
"""Whether stretches of records give their weight-sync records in batches (``A1X_NO_BATCHES=1``: one
record a line, as the tests that hold a block's items to a whole file's turn it off)."""


def _batches_for(source: Source) -> BatchSpecs:
    return _batch_specs(BATCH_KEEP, BATCH_LEAST) if source.role in GATED_ROLES and BATCHING else _NO_BATCHES


def _automaton_for(source: Source) -> Automaton:
    return _automaton(markers_for(source), *(confirm_for(source) or ()))


def block_buffer() -> mmap.mmap:
    """A block's buffer: it holds at least one line's searched part, and a page more. Anonymous memory,
    so it starts a page (a ``bytearray``'s bytes start 16 bytes past one: malloc's header)."""
    return mmap.mmap(-1, max(CHUNK_BYTES, MAX_LINE_BYTES) + mmap.PAGESIZE)


def scan_file(path: Path, source: Source, buf: mmap.mmap | bytearray | None = None) -> Iterator[list[Any]]:
    """The items of one file, a block at a time: candidates ``(lineno, offset, text)`` and records,
    in line order. Raises ``OSError`` if the file cannot be opened; a read error ends the file.

    ``buf``: a ``block_buffer()`` to read into, which a worker keeps for all its files (nothing read
    refers to it once the file is done): a new one a file zeroed 4 MiB with the GIL held and faulted its
    pages in again, 193 times in a cluster run (docs/parsing.md, "Any mix of lines")."""
    automaton = _automaton_for(source)
    templates = _templates_for(source)
    batches = _batches_for(source)
    max_line = MAX_LINE_BYTES
    size = max(CHUNK_BYTES, max_line)  # a block holds at least one line's searched part
    page = mmap.PAGESIZE
    if buf is None or len(buf) < size + page:
        buf = block_buffer()
    whole = memoryview(buf)
    lineno, offset = 1, 0  # of the block's first byte
    # Where the block starts in buf: always offset % page, where its offset lies in a page, so that each
    # read lands where its source lies in the page cache's page. A read 1-31 bytes past that took the
    # kernel 4x longer to copy on the dev VM (docs/parsing.md, "Reads where they land").
    start = 0
    filled = 0
    skipping = False  # inside an over-long line, past its searched part: drop bytes up to its newline

    def scan(end: int) -> tuple[list[Any], int]:
        """The items and the number of lines of the block's first ``end`` bytes."""
        assert _chunk is not None
        return _chunk(whole[start:start + end], *automaton, templates, lineno, offset, max_line, minute_base, SIMD,
                      *batches)

    def keep(at: int, n: int) -> int:
        """Moves the block's ``n`` bytes from ``at`` to the new block's start (``offset``, already moved to
        them, decides where); returns it."""
        new = offset % page
        whole[new:new + n] = whole[start + at:start + at + n]
        return new

    with open(path, "rb", buffering=0) as f:
        while True:
            try:
                got = f.readinto(whole[start + filled:start + size])
            except OSError:
                got = 0
            if not got:
                if filled and not skipping:
                    items, _ = scan(filled)
                    if items:
                        yield items
                return
            if skipping:
                nl = buf.find(b"\n", start, start + got) - start
                if nl < 0:
                    offset += got
                    start = offset % page
                    continue
                skipping = False
                lineno += 1
                offset += nl + 1
                start, filled = keep(nl + 1, got - nl - 1), got - nl - 1
                continue
            filled += got
            last = buf.rfind(b"\n", start, start + filled) - start
            if last < 0:
                if filled < size:
                    continue
                # One line fills the block: search its first max_line bytes, skip the rest.
                items, _ = scan(filled)
                if items:
                    yield items
                offset += filled
                start = offset % page
                filled = 0
                skipping = True
                continue
            items, lines = scan(last + 1)
            if items:
                yield items
            lineno += lines
            offset += last + 1
            start, filled = keep(last + 1, filled - last - 1), filled - last - 1


_DONE = object()


class _Reader:
    """``WORKERS`` daemon threads scanning files in order, each file's blocks into its own queue;
    started at once (``prefetch``), read by ``run_blocks``.

    What waits in memory is bounded three ways: ``AHEAD_CHUNKS`` blocks per file, ``AHEAD_FILES``
    files taken and not yet read to their end, and ``AHEAD_ITEMS`` items (records and candidate
    lines, what the memory of a block's result grows with) over all files but the one being read,
    which is never held back (so the reader always moves on). Daemon threads, and a stop flag they
    look at while waiting: an abandoned reader never holds the process at exit."""

    def __init__(self, files: Iterable[tuple[Path, Source]]) -> None:
        self.files = list(files)
        self.stop = threading.Event()
        self.entries: list[tuple[Path, Source, float | OSError, queue.Queue[Any]]] = []
        for path, source in self.files:
            try:
                stamp: float | OSError = path.stat().st_mtime
            except OSError as e:
                stamp = e
            self.entries.append((path, source, stamp, queue.Queue(AHEAD_CHUNKS)))
        self.ahead = threading.Semaphore(AHEAD_FILES)  # files taken and not yet read to their end
        self.budget = threading.Condition()
        self.waiting_items = 0  # items scanned and not yet taken by the reader
        self.head = 0  # the entry being read
        self.dropped: set[int] = set()  # entries the reader left before their end
        self.todo: queue.SimpleQueue[int] = queue.SimpleQueue()
        for i, entry in enumerate(self.entries):
            if not isinstance(entry[2], OSError):
                self.todo.put(i)
        self.threads = [threading.Thread(target=self._work, name=f"a1x-scan-{k}", daemon=True)
                        for k in range(min(WORKERS, max(1, len(self.entries))))]
        for thread in self.threads:
            thread.start()

    def _put(self, i: int, item: Any) -> bool:
        """Hand ``item`` to entry ``i``'s reader; False when it will never be read."""
        if isinstance(item, list):
            with self.budget:  # the file being read is never held back
                while (self.waiting_items and self.waiting_items + len(item) > AHEAD_ITEMS and i != self.head
                       and not self.stop.is_set()):
                    self.budget.wait(0.1)
                self.waiting_items += len(item)
        out = self.entries[i][3]
        while not self.stop.is_set() and i not in self.dropped:
            try:
                out.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def taken(self, item: Any) -> None:
        """The reader took ``item`` from a queue."""
        if isinstance(item, list):
            with self.budget:
                self.waiting_items -= len(item)
                self.budget.notify_all()

    def reading(self, i: int) -> None:
        with self.budget:
            self.head = i
            self.budget.notify_all()

    def _work(self) -> None:
        buf = block_buffer()  # this thread's, for each file it reads in turn
        while not self.stop.is_set():
            if not self.ahead.acquire(timeout=0.1):
                continue
            try:
                i = self.todo.get_nowait()
            except queue.Empty:
                self.ahead.release()
                return
            path, source, _, _ = self.entries[i]
            try:
                for items in scan_file(path, source, buf):
                    if not self._put(i, items):
                        break
                else:
                    self._put(i, _DONE)
            except BaseException as e:  # handed to the reader, which must not wait forever
                self._put(i, e)

    def close(self) -> None:
        self.stop.set()


_started: _Reader | None = None


def prefetch(files: Iterable[tuple[Path, Source]]) -> None:
    """Start scanning ``files`` now (``--check`` does, before its slower imports); ``run_blocks`` over
    the same files then reads what was scanned meanwhile."""
    global _started
    if _started is not None:
        _started.close()
    _started = _Reader(files) if available() else None


def run_blocks(
    files: Iterable[tuple[Path, Source]],
    on_error: Callable[[str], None],
) -> Iterator[tuple[Path, Source, float, Iterator[list[Any]]]]:
    """``(path, source, mtime, blocks)`` for each readable file, in order; its blocks are scanned by
    ``WORKERS`` threads ahead of the caller. An unreadable file goes to ``on_error`` and is skipped."""
    global _started
    files = list(files)
    reader, _started = _started, None
    if reader is None or reader.files != files:
        if reader is not None:
            reader.close()
        reader = _Reader(files)

    settled: set[int] = set()

    def settle(i: int, q: queue.Queue[Any], ended: bool) -> None:
        """Entry ``i`` is done with: its permit back; left before its end, its worker stops."""
        if i in settled:
            return
        settled.add(i)
        if not ended:
            reader.dropped.add(i)
            while not q.empty():
                reader.taken(q.get_nowait())
        reader.ahead.release()  # a worker may take one more file

    def blocks(i: int, q: queue.Queue[Any], path: Path) -> Generator[list[Any], None, None]:
        ended = False
        try:
            while True:
                item = q.get()
                reader.taken(item)
                if isinstance(item, list):
                    yield item
                    continue
                ended = True
                if isinstance(item, OSError):
                    on_error(f"{path}: cannot read ({item.strerror or item})")
                elif isinstance(item, BaseException):
                    raise item
                return
        finally:
            settle(i, q, ended)

    try:
        for i, (path, source, stamp, q) in enumerate(reader.entries):
            if isinstance(stamp, OSError):
                on_error(f"{path}: cannot read ({stamp.strerror or stamp})")
                continue
            reader.reading(i)
            file_blocks = blocks(i, q, path)
            yield path, source, stamp, file_blocks
            file_blocks.close()  # read to its end, or left: either way settled
            settle(i, q, False)  # a no-op unless its blocks were never asked for
    finally:
        reader.close()


def unbatch(path: Path, source: Source, batch: Any) -> list[Any]:
    """The records of ``batch``, one a line, read again from its block (its family's records from its
    first line to its last, a stretch no other line cuts): for the rare batch some of whose lines a
    group may have taken (``_prefilter._events``). ``[batch]`` where the block is no
    longer what it was (the file shrank or was rewritten meanwhile), as it was read then."""
    try:
        with open(path, "rb", buffering=0) as f:
            f.seek(batch.offset)
            data = f.read(batch.nbytes)
    except OSError:
        return [batch]
    if len(data) != batch.nbytes:
        return [batch]
    automaton = _automaton_for(source)
    assert _chunk is not None  # a batch came from it
    items, _ = _chunk(data, *automaton, _templates_for(source), batch.lineno0, batch.offset, MAX_LINE_BYTES,
                      minute_base, SIMD, *_NO_BATCHES)
    kind, first, last = FAMILY[Bulk(batch.kind)], batch.line, batch.last_line
    records = [r for r in items if len(r) > 3 and first <= r.line <= last and FAMILY[r.kind] is kind]
    if len(records) != batch.n or records[0].line != first or records[-1].line != last:
        return [batch]
    return records


def run_items(
    files: Iterable[tuple[Path, Source]],
    on_error: Callable[[str], None],
) -> Iterator[tuple[Source, float, Iterator[Any]]]:
    """``(source, mtime, items)`` per readable file, in order: the same events as ``read_run``, except
    that a line of a bulk shape comes as its record (``Record``) instead of its event, and a stretch's
    weight-sync records may come as a batch (``BATCH_FIELDS``)."""
    from a1x_diagnostics.parsing._prefilter import _events

    for path, source, mtime, blocks in run_blocks(files, on_error):
        yield source, mtime, _events(blocks, path, source, mtime, functools.partial(unbatch, path, source))
