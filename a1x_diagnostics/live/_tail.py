"""Following one log file: a state machine over stat and read results.

``FileTail`` never calls the operating system itself: it asks a ``FileSystem`` for the identity
of the path (stat) and reads through a ``Handle`` (an open file: fstat, pread). ``_osfs`` is the
thin real driver; the tests drive the same machine with an in-memory file system, so rotation,
truncation, deletion and re-creation are checked step by step.

The rules, per check of the path:

* Nothing open, path present: open it. The first open of a file that existed when the run was
  opened starts at the beginning of its last (possibly partial) line, so live lines flow at once;
  the lines before that point are read later by ``backfill`` (oldest first, bounded chunks).
  A file that appears later is read from byte 0.
* Path that cannot be looked at (``UNREADABLE``: a permission flipped on it or a folder above):
  the open file is read on as before (its descriptor still reads), nothing is reset; ``blocked``
  says so until the path can be looked at again. A file not open yet is tried again at each check.
* Path gone or naming another file (rename + new file, delete + re-create): the open handle is
  read to its end first (nothing the writer put in the old file is lost), its held partial line
  becomes a line, then the new file is followed from byte 0.
* Same file, size below our offset, or the bytes just before our offset changed (copytruncate,
  then more bytes written than we had read): truncated, restart at 0. Before a file is given up
  (renamed, deleted, closed) and when asked (``verify``, once a file has gone quiet), those and its
  first bytes are compared whatever its size: a truncated file regrown to exactly our offset shows
  nothing in its size. Lines written between our last read and the
  truncation are gone from the file and cannot be recovered; everything after it is read. A
  partial line held at that moment is dropped (``Reset.cut``): its end is among what is gone, and
  emitting its first half as a line would report a line nobody wrote.
* Same file, grown: read the new bytes (at most ``budget`` per check, so one busy file cannot
  starve the others), cut them into lines.

Line numbers: the number of the first live line of a file opened at its end is unknown until the
back-fill has counted the lines before it; live lines carry ``None`` until then.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from a1x_diagnostics.live._lines import MAX_LINE_BYTES, LineAssembler

HEAD_BYTES = 64
"""Bytes at the start of a file remembered to notice a truncation the size alone cannot show."""
TAIL_BYTES = 64
"""Bytes just before the live offset remembered for the same reason: a file whose first bytes are
the same in every generation (a banner without a time stamp) still differs there."""
READ_CHUNK = 256 * 1024


@dataclass(frozen=True, slots=True)
class FileId:
    """Which file a path names: (device, inode)."""

    dev: int
    ino: int


UNREADABLE = FileId(-1, -1)
"""``FileSystem.identity`` when the path cannot be looked at now (permission denied on it or a folder
above, an I/O error): not a sign that the file is gone."""


class Handle(Protocol):
    """An open file."""

    @property
    def ident(self) -> FileId: ...

    def size(self) -> int: ...

    def read(self, offset: int, size: int) -> bytes: ...

    def close(self) -> None: ...


class FileSystem(Protocol):
    def identity(self, path: str) -> FileId | None:
        """The regular file ``path`` names now; None when nothing (or no regular file) is there;
        ``UNREADABLE`` when it cannot be told (permission denied, an I/O error)."""
        ...

    def open(self, path: str) -> Handle | None:
        """Open ``path`` for reading, or None if it vanished or cannot be read."""
        ...


@dataclass(frozen=True, slots=True)
class Lines:
    """Complete lines read live. ``diag``: also for the diagnostics (history has caught up)."""

    first_lineno: int | None
    lines: list[str]
    offset: int
    diag: bool


@dataclass(frozen=True, slots=True)
class Reset:
    """The file started over (``truncated``/``replaced``/``deleted``); later lines count from 1.

    ``cut``: a truncation cut the partial line the tail held; it was dropped, never emitted as a line
    (its end was written, then truncated away before it was read)."""

    reason: str
    cut: bool = False


@dataclass(frozen=True, slots=True)
class Opened:
    """A file is open: ``at_end`` says it was opened at its end with history left to back-fill."""

    at_end: bool


@dataclass(frozen=True, slots=True)
class History:
    """Lines from the back-fill. ``display``: before the live start (shown as history); otherwise
    they are read only for the diagnostics, which must see every line in file order."""

    first_lineno: int
    lines: list[str]
    display: bool
    done: bool = False  # the display part is complete
    abandoned: bool = False


TailOutput = Lines | Reset | Opened | History


class _Backfill:
    """The history cursor: reads [0, live boundary) forward and counts lines from 1."""

    __slots__ = ("assembler", "base", "lines_before_base", "next_lineno")

    def __init__(self, base: int, max_line: int) -> None:
        self.base = base
        self.assembler = LineAssembler(0, max_line=max_line)
        self.next_lineno = 1
        self.lines_before_base: int | None = 0 if base == 0 else None


class FileTail:
    """Follows one path through appends, truncation, rotation, deletion and re-creation."""

    def __init__(
        self,
        path: str,
        fs: FileSystem,
        *,
        from_end: bool,
        max_line: int = MAX_LINE_BYTES,
        chunk: int = READ_CHUNK,
    ) -> None:
        self.path = path
        self.fs = fs
        self.max_line = max_line
        self.chunk = chunk
        self._from_end = from_end
        self._handle: Handle | None = None
        self._head = b""
        self._last = b""  # the bytes just before the live offset, as this tail read them
        self._live = LineAssembler(0, max_line=max_line)
        self._live_count = 0  # live lines emitted since the live start
        self._next_lineno: int | None = 1
        self._backfill: _Backfill | None = None
        self.bytes_read = 0
        self.blocked = False  # at the last check the path could not be looked at or opened

    # --- state, for the follower and the tests -------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._handle is not None

    @property
    def ident(self) -> FileId | None:
        """The file held open now."""
        return None if self._handle is None else self._handle.ident

    @property
    def head(self) -> bytes:
        """The first bytes of the file held open (its fingerprint)."""
        return self._head

    @property
    def line_start(self) -> int:
        """Offset of the held partial line (or of the next line)."""
        return self._live.line_start

    @property
    def offset(self) -> int:
        """Next byte the live reader will read."""
        return self._live.pos

    @property
    def caught_up(self) -> bool:
        """True once the diagnostics have seen every line up to the live reader."""
        return self._backfill is None

    @property
    def history_size(self) -> int:
        """Bytes of history before the live start, for a file opened at its end (else 0)."""
        bf = self._backfill
        return bf.base if bf is not None else 0

    @property
    def history_pending(self) -> bool:
        return self._backfill is not None

    def partial(self) -> str | None:
        return self._live.partial()

    @property
    def next_lineno(self) -> int | None:
        return self._next_lineno

    # --- the live side ---------------------------------------------------------------------------

    def unchanged(self) -> bool:
        """The open file's size is still the live reader's offset: ``poll(check_path=False)`` would
        find nothing. One ``fstat`` and none of ``poll``'s bookkeeping, for scans of quiet files."""
        handle = self._handle
        return handle is not None and handle.size() == self._live.pos

    def poll(
        self, budget: int = 4 * 1024 * 1024, *, check_path: bool = True, verify: bool = False
    ) -> tuple[list[TailOutput], bool]:
        """Check the path once; return what happened and whether bytes are left to read.

        ``check_path=False``: only look at the open file (its size, the bytes before our offset), not
        at what the path names now; for frequent size scans when rename/delete events come separately.
        ``verify``: compare the remembered bytes even when the size is our offset (two reads).
        """
        out: list[TailOutput] = []
        handle = self._handle
        if handle is None:
            ident = self.fs.identity(self.path)
            opened = ident is not None and ident != UNREADABLE and self._open(out)
            self.blocked = ident is not None and not opened
            if not opened:
                return out, False
        elif check_path:
            ident = self.fs.identity(self.path)
            # UNREADABLE: which file the path names cannot be told now; the one open is read on.
            self.blocked = ident == UNREADABLE
            if not self.blocked and ident != handle.ident:
                self._drain(out)
                self._close(out)
                out.append(Reset("replaced" if ident is not None else "deleted"))
                if ident is None or not self._open(out):
                    self.blocked = ident is not None
                    return out, False
        assert self._handle is not None
        size = self._check_truncation(out, force=verify)
        more = self._read(out, size, budget)
        return out, more

    def close(self) -> list[TailOutput]:
        """Stop following: read what is left, flush the partial line, release the handle."""
        out: list[TailOutput] = []
        if self._handle is not None:
            self._drain(out)
            self._close(out)
        return out

    def release(self) -> None:
        """Let go of the file at once, reading nothing more (the follower is stopping)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        self._backfill = None

    def _open(self, out: list[TailOutput]) -> bool:
        handle = self.fs.open(self.path)
        if handle is None:
            return False
        self._handle = handle
        self._head = self._last = b""
        start = 0
        if self._from_end:
            start = _last_line_start(handle, handle.size(), self.max_line)
            if start > 0:
                self._head = handle.read(0, min(start, HEAD_BYTES))
                self._last = handle.read(max(0, start - TAIL_BYTES), min(start, TAIL_BYTES))
        self._from_end = False  # a later generation of this path is new: read it whole
        self._live = LineAssembler(start, max_line=self.max_line)
        self._live_count = 0
        if start > 0:
            self._backfill = _Backfill(start, self.max_line)
            self._next_lineno = None
        else:
            self._backfill = None
            self._next_lineno = 1
        out.append(Opened(at_end=start > 0))
        return True

    def _close(self, out: list[TailOutput]) -> None:
        if self._handle is not None:
            self._handle.close()
        self._handle = None
        self._abandon_backfill(out)

    def _check_truncation(self, out: list[TailOutput], *, force: bool = False) -> int:
        """Restart at 0 if the open file was truncated or rewritten; returns its size.

        ``force``: also when the size is our offset (nothing to read, but the file may have been
        truncated and regrown to exactly our offset)."""
        assert self._handle is not None
        size = self._handle.size()
        offset = self._live.pos
        if size < offset or ((force or size != offset) and self._rewritten(head=force)):
            self._truncated(out)
        return size

    def _rewritten(self, *, head: bool) -> bool:
        """The last bytes we read before our offset (and, with ``head``, the first bytes of the file)
        are no longer there: truncated and written again, or rewritten in place.

        A look at a grown file compares the bytes before the offset only (one read, as many as
        before this check had them): they differ after any regrowth of timestamped lines, also
        where every generation starts alike. The last look before a file is given up compares both.
        Both hold only bytes this tail has read itself: bytes taken later could already be the
        rewritten ones.
        """
        handle = self._handle
        assert handle is not None
        first, last = self._head, self._last
        if last and handle.read(self._live.pos - len(last), len(last)) != last:
            return True
        return head and bool(first) and handle.read(0, len(first)) != first

    def _truncated(self, out: list[TailOutput]) -> None:
        cut = self._live.holding  # the first part of a line whose end the truncation took: dropped
        self._abandon_backfill(out)
        out.append(Reset("truncated", cut=cut))
        self._head = self._last = b""
        self._live = LineAssembler(0, max_line=self.max_line, skip_nul=True)
        self._live_count = 0
        self._next_lineno = 1

    def _read(self, out: list[TailOutput], size: int, budget: int) -> bool:
        assert self._handle is not None
        lines: list[str] = []
        first_offset = self._live.line_start
        left = budget
        while self._live.pos < size and left > 0:
            want = min(self.chunk, size - self._live.pos, left)
            at = self._live.pos
            data = self._handle.read(at, want)
            if not data:
                break
            if at == len(self._head) < HEAD_BYTES:
                self._head += data[: HEAD_BYTES - at]
            self._last = data[-TAIL_BYTES:] if len(data) >= TAIL_BYTES else (self._last + data)[-TAIL_BYTES:]
            self.bytes_read += len(data)
            left -= len(data)
            offset, new = self._live.feed(data)
            if new:
                if not lines:
                    first_offset = offset
                lines.extend(new)
        if lines:
            self._emit_live(out, first_offset, lines)
        return self._live.pos < size

    def _drain(self, out: list[TailOutput]) -> None:
        """Read the open handle to its end (the file may be renamed or deleted), flush the partial."""
        assert self._handle is not None
        # It may have been truncated before it was renamed or deleted, and regrown to any size,
        # ours included: this is the last look at it.
        self._check_truncation(out, force=True)
        while True:
            size = self._handle.size()
            if size < self._live.pos:
                break
            if not self._read(out, size, size - self._live.pos + 1):
                break
        self._emit_live(out, *self._live.flush())

    def _emit_live(self, out: list[TailOutput], offset: int, lines: list[str]) -> None:
        if not lines:
            return
        out.append(Lines(self._next_lineno, lines, offset, diag=self._backfill is None))
        self._live_count += len(lines)
        if self._next_lineno is not None:
            self._next_lineno += len(lines)

    # --- the back-fill ---------------------------------------------------------------------------

    def backfill(self, budget: int = READ_CHUNK) -> list[TailOutput]:
        """Read up to ``budget`` bytes of history; returns the lines read (maybe none)."""
        bf = self._backfill
        handle = self._handle
        if bf is None or handle is None:
            return []
        out: list[TailOutput] = []
        asm = bf.assembler
        in_display = asm.pos < bf.base
        end = bf.base if in_display else self._live.line_start
        want = min(budget, end - asm.pos)
        if want > 0:
            data = handle.read(asm.pos, want)
            if len(data) < want:  # the file shrank under us: truncated, its history is gone
                self._abandon_backfill(out)
                return out
            self.bytes_read += len(data)
            _, lines = asm.feed(data)
            if asm.pos >= end:
                _, tail = asm.flush()  # a region always ends on a newline; this is a guard
                lines.extend(tail)
            if lines:
                out.append(History(bf.next_lineno, lines, display=in_display))
                bf.next_lineno += len(lines)
        if in_display and asm.pos >= bf.base:
            bf.lines_before_base = bf.next_lineno - 1
            self._next_lineno = bf.lines_before_base + self._live_count + 1
            out.append(History(bf.next_lineno, [], display=True, done=True))
        if asm.pos >= self._live.line_start:  # history and diagnostics met the live reader
            self._backfill = None
        return out

    def _abandon_backfill(self, out: list[TailOutput]) -> None:
        """History cut short by a truncation, rotation or deletion: what was not read is skipped."""
        bf = self._backfill
        if bf is None:
            return
        self._backfill = None
        if bf.lines_before_base is None:
            out.append(History(bf.next_lineno, [], display=True, done=True, abandoned=True))


def _last_line_start(handle: Handle, size: int, max_line: int) -> int:
    """Offset just after the last newline before ``size`` (0 if none within reach)."""
    reach = min(size, 2 * max_line)
    pos = size
    step = 64 * 1024
    while pos > size - reach:
        start = max(size - reach, pos - step)
        data = handle.read(start, pos - start)
        nl = data.rfind(b"\n")
        if nl >= 0:
            return start + nl + 1
        pos = start
    return 0 if size <= reach else size - reach
