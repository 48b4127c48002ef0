"""Reading files: ``iter_file_events`` (one file), ``read_run`` (a layout), ``file_tail`` (the end).

``iter_file_events`` streams: memory stays bounded whatever the file size (lines are cut at
``MAX_LINE_BYTES``, groups at ``MAX_GROUP_LINES``). With ``keep_unknown=False`` it uses the grep
prefilter (``_prefilter``) when GNU grep is on ``PATH``; both paths give the same non-``LogLine``
events (a test holds them to it).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from a1x_diagnostics.events import Event, Source
from a1x_diagnostics.parsing._layout import LayoutError, RunLayout
from a1x_diagnostics.parsing._lines import decode, iter_lines, segments
from a1x_diagnostics.parsing._parser import LineParser
from a1x_diagnostics.parsing._shapes import shape_of

TAIL_MAX_BYTES = 1 << 20


def _open_error(path: Path, e: OSError) -> LayoutError:
    return LayoutError(f"{path}: cannot read ({e.strerror or e})")


def iter_file_events(
    path: Path,
    source: Source,
    *,
    display_path: str | None = None,
    keep_unknown: bool = True,
) -> Iterator[Event]:
    """Events of one log file, streamed. Never raises on content; ``LayoutError`` if it cannot be opened."""
    path = Path(path)
    if display_path is not None:
        source = Source(display_path, source.role, source.index)
    try:
        mtime = path.stat().st_mtime
    except OSError as e:
        raise _open_error(path, e) from None
    if not keep_unknown:
        from a1x_diagnostics.parsing import _prefilter

        if _prefilter.available():
            yield from _prefilter.file_events(path, source, mtime)
            return
    yield from _pure_file_events(path, source, mtime, keep_unknown)


def _pure_file_events(path: Path, source: Source, mtime: float, keep_unknown: bool) -> Iterator[Event]:
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed in finally; a generator must not hold a with-block open
    except OSError as e:
        raise _open_error(path, e) from None
    parser = LineParser(source, mtime=mtime, keep_unknown=keep_unknown)
    try:
        for lineno, line in iter_lines(f):
            for seg in segments(line):
                yield from parser.feed(lineno, seg)
        yield from parser.flush()
    except OSError:
        yield from parser.flush()  # the file vanished or a read failed mid-way: keep what was read
    finally:
        f.close()


def read_run(layout: RunLayout, *, keep_unknown: bool = False) -> Iterator[Event]:
    """Events of every file of ``layout``, file after file (in ``layout.files`` order).

    A file that cannot be read is skipped and named in ``layout.unreadable``.
    """
    if not keep_unknown:
        from a1x_diagnostics.parsing import _prefilter

        if _prefilter.available():
            yield from _prefilter.run_events(layout.files, layout.unreadable.append)
            return
    for path, source in layout.files:
        try:
            yield from iter_file_events(path, source, keep_unknown=keep_unknown)
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
    try:
        st = path.stat()
        with open(path, "rb") as f:
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
