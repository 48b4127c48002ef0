"""--check's native reader: candidate lines found in C, and the bulk line shapes read there in full.

A gigabyte of a cluster run holds ~170 k lines that give events, and ~85 % of them have one of a
few exact shapes: controller ``Stat:`` and ``weight staleness:`` lines, weight-sync send/receive
timings, ``prompt rejected`` lines, ``Dynamic sampling … {'outdated': N}.``. ``diagnostics._scan.chunk``
finds the lines holding a marker (the Aho-Corasick automaton of ``_scan``) and reads those shapes'
numbers into plain tuples (*records*); every other marked line comes back as text for the Python
parser, exactly as grep's output would. The ``Collector`` takes a record without building its event
(``diagnostics.detectors._store.Pending`` builds it, through the Python parser, only if a detector
quotes it). A template only decides how fast a line is read: a line that does not match one exactly,
to the last byte, goes the Python way (``tests/parsing/test_bulk.py`` holds the record of every
template to the event the parser builds from the same line).

Files are read in ``CHUNK_BYTES`` blocks by a few threads ahead of the parser (the C scan runs
without the GIL), at most ``AHEAD_CHUNKS`` blocks' results waiting per file.
"""

from __future__ import annotations

import enum
import functools
import os
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

from diagnostics.events import Source
from diagnostics.parsing._lines import MAX_LINE_BYTES
from diagnostics.parsing._markers import markers_for
from diagnostics.parsing._parser import GATED_ROLES
from diagnostics.parsing._scan import _automaton

_chunk: Callable[..., tuple[list[Any], int]] | None
try:  # the optional C extension (setup.py); A1X_NO_NATIVE=1 turns it off
    from diagnostics._scan import chunk as _chunk
except ImportError:  # pragma: no cover - depends on the install
    _chunk = None

CHUNK_BYTES = 4 << 20
AHEAD_CHUNKS = 8
WORKERS = int(os.environ.get("A1X_SCAN_WORKERS") or max(1, min(8, os.cpu_count() or 2)))


class Bulk(enum.IntEnum):
    """The templates, by index (a record's first item)."""

    STAT = 0
    STAT_OLD = 1
    STALENESS = 2
    PROMPT_REJECTED = 3
    SEND_DONE = 4
    RECV_DONE = 5
    DYNAMIC_OUTDATED = 6
    PREFETCH = 7
    STEP = 8


# Level and message of a cosmos line (or, starting with '[', a line after its torchrun prefix), with the
# field codes of diagnostics/_scan.c: \x01 digits -> int, \x02 decimal -> float, \x03 signed digits -> int,
# \x04 digits or None, \x05 int without a leading zero, \x06 word -> str, \x07 token -> str, \x08 the
# time, \x09 the rest of the line, \x0a signed decimal with an optional exponent -> float. The shapes are
# the ones the recorded runs print (cosmos-rl.md §4.3-§4.5, §5.2, §6.2, §6.3; alpamayo-recipe.md §9.3);
# tests/parsing/test_bulk.py holds each to its rule in ``_rules``.
TEMPLATES: dict[Bulk, bytes] = {
    Bulk.STAT: b"INFO - [Controller] Stat: \x01 samples, \x01 completion tokens, \x01 pending rollouts, "
               b"\x01 in-flight, \x01 filtered (outdated), \x02s elapsed",
    Bulk.STAT_OLD: b"INFO - [Controller] Stat: \x01 samples, \x01 completion tokens, \x01 pending rollouts, "
                   b"\x02 seconds elapsed",
    Bulk.STALENESS: b"INFO - [Controller] weight staleness: accepted p50=\x03 p99=\x03 max=\x03, "
                    b"discarded=\x01/\x01 (allowed_outdated_steps=\x03, sync_weight_interval=\x03)",
    Bulk.PROMPT_REJECTED: b"INFO - [Rollout rank=\x01] prompt rejected: prompt.weight_version=\x03 "
                          b"current_weight_version=\x03 allowed_outdated=\x03 ceiling=\x03; head-of-queue "
                          b"will be re-checked until current_weight_version advances",
    Bulk.SEND_DONE: b"DEBUG - [Policy] All \x01 at step \x04 send operations of finished in \x02 seconds with "
                    b"\x02 MB sent. While \x01 non-trainable splitted params skipped and \x01 splitted params "
                    b"transferred.",
    Bulk.RECV_DONE: b"INFO - [Rollout] All \x01 at step \x04 recv operations finished in \x02 seconds with "
                    b"\x02 MB received. While \x01 non-trainable splitted params skipped and \x01 trainable "
                    b"splitted params transferred.",
    Bulk.DYNAMIC_OUTDATED: b"INFO - Dynamic sampling rewards distribution so far: {'outdated': \x05}.",
    # The recipe's prefetch server (alpamayo-recipe.md §9.3): level, pid, event name; the k=v rest is
    # only read if the event is quoted.
    Bulk.PREFETCH: b"[AlpamayoPrefetch][\x06] \x08 pid=\x01 \x07\x09",
    # The GRPO Step line of status.py (cosmos-rl.md §4.4): step/total, then 15 numbers.
    Bulk.STEP: b"INFO - Step: \x01/\x01, Reward Mean: \x0a, Reward Std: \x0a, Reward Max: \x0a, Reward Min: \x0a, "
               b"Completion Length Mean: \x0a, Completion Length Max: \x0a, Average loss: \x0a, Max loss: \x0a, "
               b"Learning rate: \x0a, Entropy: \x0a, Effective Entropy: \x0a, Grad Norm: \x0a, KL Loss Avg: \x0a, "
               b"KL Loss Max: \x0a, Iteration time: \x0as.",
}
_TEMPLATE_TUPLE = tuple(TEMPLATES[b] for b in Bulk)

Record = tuple[Any, ...]
"""``(Bulk, lineno, rank, ts, raw bytes, *fields)`` as ``_scan.chunk`` builds it."""


SIMD = not os.environ.get("A1X_NO_SIMD")
"""Let the C scan test 16 positions at a time where the CPU can (x86-64 with SSSE3)."""


def available() -> bool:
    return _chunk is not None and not os.environ.get("A1X_NO_NATIVE")


@functools.lru_cache(maxsize=4096)
def minute_base(y: int, mo: int, d: int, hh: int, mi: int) -> int | None:
    """Seconds since the epoch of a local wall-clock minute, as ``datetime.timestamp()`` reads it.

    The C side adds the seconds and milliseconds, the same sum ``timestamp()`` makes (the offset of
    local time never changes inside a minute); ``None`` where ``timestamp()`` fails (the line then
    goes the Python way, which gives it no time).
    """
    try:
        return int(datetime(y, mo, d, hh, mi).timestamp())
    except (OverflowError, OSError, ValueError):
        return None


def _templates_for(source: Source) -> tuple[bytes, ...]:
    return _TEMPLATE_TUPLE if source.role in GATED_ROLES else ()


def scan_file(path: Path, source: Source) -> Iterator[list[Any]]:
    """The items of one file, a block at a time: candidates ``(lineno, offset, text)`` and records,
    in line order. Raises ``OSError`` if the file cannot be opened; a read error ends the file."""
    assert _chunk is not None
    automaton = _automaton(markers_for(source))
    templates = _templates_for(source)
    max_line = MAX_LINE_BYTES
    size = max(CHUNK_BYTES, max_line)  # a block holds at least one line's searched part
    buf = bytearray(size)
    view = memoryview(buf)
    lineno, offset = 1, 0  # of buf[0]
    filled = 0
    skipping = False  # inside an over-long line, past its searched part: drop bytes up to its newline
    with open(path, "rb", buffering=0) as f:
        while True:
            try:
                got = f.readinto(view[filled:])
            except OSError:
                got = 0
            if not got:
                if filled and not skipping:
                    items, _ = _chunk(view[:filled], *automaton, templates, lineno, offset, max_line,
                                      minute_base, SIMD)
                    if items:
                        yield items
                return
            if skipping:
                nl = buf.find(b"\n", 0, got)
                if nl < 0:
                    offset += got
                    continue
                skipping = False
                lineno += 1
                offset += nl + 1
                rest = got - nl - 1
                view[:rest] = view[nl + 1 : got]
                filled = rest
                continue
            filled += got
            last = buf.rfind(b"\n", 0, filled)
            if last < 0:
                if filled < size:
                    continue
                # One line fills the block: search its first max_line bytes, skip the rest.
                items, _ = _chunk(view[:filled], *automaton, templates, lineno, offset, max_line, minute_base, SIMD)
                if items:
                    yield items
                offset += filled
                filled = 0
                skipping = True
                continue
            items, lines = _chunk(view[: last + 1], *automaton, templates, lineno, offset, max_line, minute_base,
                                  SIMD)
            if items:
                yield items
            lineno += lines
            offset += last + 1
            rest = filled - last - 1
            view[:rest] = view[last + 1 : filled]
            filled = rest


_DONE = object()


def _produce(path: Path, source: Source, out: queue.Queue[Any], stop: threading.Event) -> None:
    try:
        for items in scan_file(path, source):
            while not stop.is_set():
                try:
                    out.put(items, timeout=0.1)
                    break
                except queue.Full:
                    continue
            if stop.is_set():
                return
    except OSError as e:
        out.put(e)
        return
    except BaseException as e:  # hand any failure to the reader: it must not wait forever
        out.put(e)
        return
    out.put(_DONE)


def run_blocks(
    files: Iterable[tuple[Path, Source]],
    on_error: Callable[[str], None],
) -> Iterator[tuple[Path, Source, float, Iterator[list[Any]]]]:
    """``(path, source, mtime, blocks)`` for each readable file, in order; its blocks are scanned by
    ``WORKERS`` threads ahead of the caller. An unreadable file goes to ``on_error`` and is skipped."""
    stop = threading.Event()
    pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="a1x-scan")
    pending: list[tuple[Path, Source, float, queue.Queue[Any]]] = []
    files_iter = iter(files)

    def submit() -> bool:
        for path, source in files_iter:
            try:
                mtime = path.stat().st_mtime
            except OSError as e:
                on_error(f"{path}: cannot read ({e.strerror or e})")
                continue
            q: queue.Queue[Any] = queue.Queue(AHEAD_CHUNKS)
            pool.submit(_produce, path, source, q, stop)
            pending.append((path, source, mtime, q))
            return True
        return False

    def blocks(q: queue.Queue[Any], path: Path) -> Iterator[list[Any]]:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, OSError):
                on_error(f"{path}: cannot read ({item.strerror or item})")
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    try:
        for _ in range(WORKERS * 2):
            if not submit():
                break
        while pending:
            path, source, mtime, q = pending.pop(0)
            submit()
            yield path, source, mtime, blocks(q, path)
    finally:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)


def run_items(
    files: Iterable[tuple[Path, Source]],
    on_error: Callable[[str], None],
) -> Iterator[tuple[Source, float, Iterator[Any]]]:
    """``(source, mtime, items)`` per readable file, in order: the same events as ``read_run``, except
    that a line of a bulk shape comes as its record (``Record``) instead of its event."""
    from diagnostics.parsing._prefilter import _events

    for path, source, mtime, blocks in run_blocks(files, on_error):
        yield source, mtime, _events(blocks, path, source, mtime)
