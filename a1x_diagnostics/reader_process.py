"""``a1x-tui --check``'s reading in a child process, while the parent imports the detectors and the report models.

On two cores one process was paced by the work that holds Python's lock: the imports of the
detectors and of pydantic's report models (~0.15 s), the Collector taking 100-200 k records, the
scan threads building them. A forked child reads the run into a ``collect.Collection`` (which
imports neither) while the parent imports those; the child hands the store and the metrics back
pickled (~3 MB, ~10 ms both ways) and the parent runs the detectors on them: the same report as a
read in one process (``tests/check/test_reader_process.py``), 8-17 % less wall than one process on
the dev VM and the GPU node (docs/parsing.md, "Eleventh pass").

Only where it is safe and useful: Linux (``os.fork`` without ``exec`` on macOS is not), a process
with one thread (the fork happens before anything starts one), the native reader built, and not
``A1X_NO_FORK=1``. Whatever goes wrong in the child (an exception, a signal, a payload that does not
load, another layout than the parent's) makes ``read_into`` answer False, and ``check`` reads the run
itself: never a different report, at worst the child's time and then one process's. A run past
``--timeout`` is a ``CheckTimeout`` either way, and the child is killed. The child holds none of the
caller's standard streams (a harness waiting for the output's end waits for the parent only), and
stops reading when its parent is gone. This module imports nothing heavy: the parent forks right
after the command line is read.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import pickle
import select
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from a1x_diagnostics.engine import Collector
    from a1x_diagnostics.parsing import RunLayout

_READ, _DECLINED, _TIMED_OUT, _FAILED = "read", "declined", "timed out", "failed"


def enabled() -> bool:
    """Whether ``start`` forks here: Linux, one thread, the native reader there (without it the child
    would only decline), not turned off with ``A1X_NO_FORK=1``."""
    return (sys.platform.startswith("linux") and hasattr(os, "fork") and not os.environ.get("A1X_NO_FORK")
            and not os.environ.get("A1X_NO_NATIVE") and threading.active_count() == 1
            and importlib.util.find_spec("a1x_diagnostics._scan") is not None)


def start(path: str, run: str | None, timeout: float | None) -> ChildReader | None:
    """A child process reading the run at ``path`` now; None where it would not help (``enabled``)."""
    if not enabled():
        return None
    deadline = None if timeout is None else time.monotonic() + timeout  # inf, nan: compared, never past
    parent = os.getpid()
    r, w = os.pipe()
    # Ctrl-C held off across the fork: a child interrupted before its try below would unwind into the
    # caller's stack and print a second report.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        pid = os.fork()
    except OSError:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(r)
        os.close(w)
        return None
    if pid == 0:  # pragma: no cover - the child (tests/check/test_reader_process.py runs it)
        status = 1
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            os.close(r)
            _detach()
            _child(w, path, run, deadline, lambda: _parent_there(parent))
            status = 0
        finally:
            os._exit(status)  # never back into the caller's stack (its atexit hooks, its buffered stdout)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    os.close(w)
    return ChildReader(pid, r)


def _detach() -> None:
    """The child's standard streams on /dev/null: a caller reading the command's output to its end
    (``subprocess.run(capture_output=True)``) waits for the parent alone, even one it killed."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _parent_there(parent: int) -> None:
    """Ends the child when its parent is gone (killed, say): nobody is left to read what it reads."""
    if os.getppid() != parent:
        os._exit(1)


def _child(fd: int, path: str, run: str | None, deadline: float | None, watch: Any = None) -> None:
    """The child's work: the run read into a ``Collection``, its state written to ``fd`` pickled
    (``watch``: ``collect.read_into``'s)."""
    payload: tuple[Any, ...]
    try:
        from pathlib import Path

        from a1x_diagnostics.collect import Collection, collector_aside, read_into
        from a1x_diagnostics.deadline import CheckTimeout
        from a1x_diagnostics.parsing import LayoutError, discover, records

        try:
            layout = discover(Path(path), run)
        except (LayoutError, OSError):
            layout = None
        if layout is None or layout.closed_loop is not None or not layout.files or not records.native_available():
            payload = (_DECLINED,)
        else:
            records.prefetch(layout.files)
            collection = Collection()
            collection.note_files(layout)
            try:
                with collector_aside():
                    read_into(collection, layout, deadline, watch)
                payload = (_READ, _files_of(layout), collection.store, collection.metrics, layout.unreadable)
            except CheckTimeout:
                payload = (_TIMED_OUT,)
    except BaseException as exc:  # the parent reads the run itself
        payload = (_FAILED, f"{type(exc).__name__}: {exc}")
    try:
        data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # a value that does not pickle: the parent reads the run itself
        data = pickle.dumps((_FAILED, f"{type(exc).__name__}: {exc}"))
    with open(fd, "wb") as out:
        out.write(data)


def _files_of(layout: RunLayout) -> list[tuple[str, Any]]:
    return [(str(path), source) for path, source in layout.files]


class ChildReader:
    """The parent's end: ``read_into`` takes what the child read (``engine.check``'s ``reader``)."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid: int | None = pid
        self.fd: int | None = fd
        self.taken = False  # whether a Collector took the child's read
        self.why: str | None = None  # why the parent read the run itself, when it did (for the tests)

    def read_into(self, collector: Collector, layout: RunLayout, deadline: float | None) -> bool:
        """The child's store and metrics into ``collector``: True when it read the same files as
        ``layout``'s; False (``why`` says why) when ``collector`` is left for the caller to fill.
        Raises ``CheckTimeout`` past ``deadline``, or when the child's read went past it."""
        from a1x_diagnostics.deadline import CheckTimeout

        try:
            data, status = self._receive(deadline)
        finally:
            self.close()
        if data is None:
            raise CheckTimeout
        payload: Any
        try:
            payload = pickle.loads(data) if data else (_FAILED, f"nothing read (exit status {status})")
        except Exception as exc:
            payload = (_FAILED, f"its answer does not load: {type(exc).__name__}: {exc}")
        if payload[0] == _TIMED_OUT:
            raise CheckTimeout
        # status None: reaped by the system (SIGCHLD ignored by whoever started us); the answer loaded whole
        if payload[0] != _READ or status not in (0, None):
            self.why = payload[1] if payload[0] == _FAILED else f"{payload[0]} (exit status {status})"
            return False
        _, files, store, metrics, unreadable = payload
        if files != _files_of(layout):
            self.why = "it found other files than this process"
            return False
        collector.store, collector.metrics = store, metrics
        layout.unreadable.extend(unreadable)
        self.taken = True
        return True

    def _receive(self, deadline: float | None) -> tuple[bytes | None, int | None]:
        """All the child wrote, and its exit status; (None, None) past ``deadline``."""
        assert self.fd is not None
        chunks: list[bytes] = []
        if deadline is not None and not math.isfinite(deadline):
            deadline = None  # --timeout inf or nan: no limit, as when one process reads (select takes neither)
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.fd], [], [], wait)
            if not ready:
                return None, None
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks), self._reap(block=True)

    def _reap(self, block: bool) -> int | None:
        """The child's exit status once it has ended (None: still running, or reaped by the system where
        SIGCHLD is ignored)."""
        if self.pid is None:
            return None
        try:
            pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            self.pid = None
            return None
        if pid == 0:
            return None
        self.pid = None
        return os.waitstatus_to_exitcode(status)

    def close(self) -> None:
        """The child stopped (killed if still running) and reaped, the pipe closed; idempotent."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self._reap(block=False)  # an ended child is reaped (and its pid let go) here
        if self.pid is not None:  # still running
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            self._reap(block=True)
