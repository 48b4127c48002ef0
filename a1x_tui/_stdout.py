"""A closed stdout ends a command quietly, with the command's own exit code.

``a1x-tui --check RUN | head -1``: once ``head`` has exited, the next write to the pipe fails with
``BrokenPipeError``. Like grep, a command then stops writing and exits with the status it computed
(not 1, not a traceback). ``cli.main`` wraps ``sys.stdout`` in a ``Guard`` for every command: the
first write that finds the reader gone points file descriptor 1 at ``/dev/null`` (so Python's flush
at exit cannot fail either), sets ``closed`` and drops that write and every later one; the command
goes on and returns its own exit code. Commands that print until something else ends them
(``watch``, following a run) look at ``closed`` to stop.

Any other failure to write (``ENOSPC`` on ``>/dev/full``, ``EIO`` on a terminal that went away) is
not a reader that left on purpose: the output is lost, so the guard drops the rest the same way,
keeps the error in ``failure``, and ``cli.main`` says so in one line on stderr and exits with its
failure code.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable
from typing import Any, TextIO

closed = threading.Event()
failure: list[OSError] = []  # the first write error that was not a reader gone (ENOSPC, EIO)


def _silence(fd: int) -> None:
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)


class _BufferGuard:
    """``sys.stdout.buffer`` under the same rule (a command writing bytes)."""

    def __init__(self, inner: Any, owner: Guard) -> None:
        self._inner = inner
        self._owner = owner

    def write(self, data: bytes) -> int:
        if closed.is_set():
            return len(data)
        try:
            return int(self._inner.write(data))
        except OSError as exc:
            self._owner.lost(exc)
            return len(data)

    def flush(self) -> None:
        if closed.is_set():
            return
        try:
            self._inner.flush()
        except OSError as exc:
            self._owner.lost(exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class Guard:
    """Stands in for ``sys.stdout``: writes pass through until the reader is gone, then are dropped."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        if closed.is_set():
            return len(text)
        try:
            return self.inner.write(text)
        except OSError as exc:
            self.lost(exc)
            return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if closed.is_set():
            return
        try:
            self.inner.flush()
        except OSError as exc:
            self.lost(exc)

    @property
    def buffer(self) -> _BufferGuard:
        return _BufferGuard(self.inner.buffer, self)

    def lost(self, exc: OSError) -> None:
        """A write failed: a reader gone (quiet), or output lost (kept in ``failure``)."""
        if not isinstance(exc, BrokenPipeError) and not failure:
            failure.append(exc)
        self.reader_gone()

    def reader_gone(self) -> None:
        closed.set()
        try:
            fd = self.inner.fileno()
        except (OSError, ValueError, AttributeError):  # not a real file (a test's capture)
            return
        _silence(fd)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def install(stdout: TextIO) -> Guard:
    closed.clear()
    failure.clear()
    return Guard(stdout)


def stdout_closed() -> bool:
    """True once a write found that nobody reads this process's stdout any more."""
    return closed.is_set()
