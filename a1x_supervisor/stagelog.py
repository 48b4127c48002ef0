"""A stage's log: its output, one timestamped line per line, secrets scrubbed.

Output is split on ``\\r`` as well as ``\\n`` (tqdm redraws its bars with ``\\r``;
docs/reference/alpamayo-recipe.md §5 "a log parser must split on \\r as well as \\n"). Every piece goes to the
progress parser; ``\\r`` redraws are written at most once per ``redraw_interval_s`` so a progress
bar does not fill the disk, and the last one is always kept.

Line format: ``<ISO-8601 local time with offset, milliseconds> <text>``; the supervisor's own
lines have the text prefix ``[a1x-tui] ``.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO

from a1x_supervisor.runfiles import open_file
from a1x_supervisor.secrets import Scrubber

NOTE_PREFIX = "[a1x-tui] "


def timestamp() -> str:
    return datetime.now().astimezone().isoformat(timespec="milliseconds")


class StageLog:
    """Appends to ``stages/<stage>.log``. Thread-safe; ``feed`` takes raw bytes from a pipe."""

    def __init__(
        self,
        path: Path,
        *,
        scrubber: Scrubber,
        on_line: Callable[[str], None] | None = None,
        redraw_interval_s: float = 1.0,
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        fd = open_file(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)  # never through a link (runfiles)
        self._file: IO[str] = os.fdopen(fd, "a", encoding="utf-8")
        self._scrubber = scrubber
        self._on_line = on_line
        self._redraw_interval_s = redraw_interval_s
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._pending_redraw: str | None = None
        self._last_redraw_write = float("-inf")
        self._lock = threading.Lock()

    def feed(self, data: bytes) -> None:
        text = self._decoder.decode(data)
        with self._lock:
            self._split(text)

    def note(self, text: str) -> None:
        """A line from the supervisor itself."""
        with self._lock:
            self._write_line(NOTE_PREFIX + text)

    def close(self) -> None:
        with self._lock:
            tail = self._decoder.decode(b"", final=True)
            self._split(tail)
            rest = self._buffer.rstrip("\r")
            if rest:
                self._emit(rest, redraw=False)
            self._buffer = ""
            self._flush_redraw()
            self._file.close()

    # -- internals ------------------------------------------------------------------------------
    def _split(self, text: str) -> None:
        buf = self._buffer + text
        start = 0
        i = 0
        while i < len(buf):
            ch = buf[i]
            if ch == "\n":
                self._emit(buf[start:i], redraw=False)
                start = i = i + 1
                continue
            if ch == "\r":
                if i + 1 == len(buf):
                    break  # a \r\n pair may be split across reads: decide with the next read
                if buf[i + 1] == "\n":
                    self._emit(buf[start:i], redraw=False)
                    start = i = i + 2
                    continue
                if i > start:
                    self._emit(buf[start:i], redraw=True)
                start = i = i + 1
                continue
            i += 1
        self._buffer = buf[start:]

    def _emit(self, raw: str, *, redraw: bool) -> None:
        line = self._scrubber.scrub(raw)
        if self._on_line is not None:
            with contextlib.suppress(Exception):  # a progress parser must never stop the log
                self._on_line(line)
        if not redraw:
            self._flush_redraw()
            self._write_line(line)
            return
        now = time.monotonic()
        if now - self._last_redraw_write >= self._redraw_interval_s:
            self._last_redraw_write = now
            self._pending_redraw = None
            self._write_line(line)
        else:
            self._pending_redraw = line

    def _flush_redraw(self) -> None:
        if self._pending_redraw is not None:
            self._write_line(self._pending_redraw)
            self._pending_redraw = None

    def _write_line(self, line: str) -> None:
        self._file.write(f"{timestamp()} {line}\n")
        self._file.flush()


def read_since(path: Path, offset: int, *, limit: int = 4 * 1024 * 1024) -> str:
    """The text a log gained after byte ``offset`` (at most ``limit`` bytes, the newest)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            end = fh.tell()
            start = max(offset, end - limit)
            fh.seek(start)
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def strip_timestamp(line: str) -> str:
    """The text of a stage-log line without its timestamp."""
    head, sep, rest = line.partition(" ")
    return rest if sep and len(head) >= 19 and head[4:5] == "-" and head[10:11] == "T" else line


def last_output_line(text: str, width: int) -> str:
    """The last line of a stage log's text that its program wrote (not a note), without its
    timestamp, cut to ``width``; "" when there is none."""
    for raw in reversed(text.splitlines()):
        line = strip_timestamp(raw).strip()
        if line and not line.startswith(NOTE_PREFIX.strip()):
            return line[:width]
    return ""


def run_cleanup(path: Path, cleanup: Callable[[], Sequence[str]], scrubber: Scrubber) -> None:
    """A stage's ``cleanup`` (``StageSpec.cleanup``), its lines noted in the stage log at ``path``; its
    failure is noted too, never raised (it must not hide the stop or the verdict it follows)."""
    log = StageLog(path, scrubber=scrubber)
    try:
        for line in cleanup():
            log.note(f"cleanup: {line}")
    except Exception as exc:
        log.note(f"cleanup failed: {type(exc).__name__}: {exc}")
    finally:
        log.close()
