"""A wall-clock bound on a block of work (``check(timeout=...)``): past it, ``CheckTimeout`` is raised in it.

Wherever the work is when time runs out (reading a file, a detector, building the report), it stops: no
loop has to look at the clock. In the main thread of a Unix process (``a1x-tui --check``) a ``SIGALRM``
interrupts it, even a system call that waits; elsewhere (a check in a thread of the app or a server) a
watchdog thread raises the exception in the working thread at its next bytecode. Both fire again every
``REPEAT_S`` until the block is left, so a handler that swallowed one (``except BaseException``) cannot
keep the work running. ``CheckTimeout`` is a ``BaseException``, as ``KeyboardInterrupt`` is, so the
``except Exception`` guards on the way (a detector's, a linter's) let it through.
"""

from __future__ import annotations

import ctypes
import math
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

NO_LIMIT_S = 1e8
"""A limit this long (three years) or longer is no limit: more than any run's reading, and more than
``setitimer`` or ``select`` are sure to take."""
REPEAT_S = 0.1


class CheckTimeout(BaseException):
    """``check()`` ran past its deadline."""


def limit_of(seconds: float | None) -> float | None:
    """Seconds to allow, or None for no limit (None, infinity, ``NO_LIMIT_S`` or more). NaN is no limit
    either: the command line refuses it, an API caller gets the kindest reading."""
    if seconds is None or math.isnan(seconds) or seconds >= NO_LIMIT_S:
        return None
    return max(0.0, seconds)


@contextmanager
def bounded(seconds: float | None) -> Iterator[None]:
    """Run the block for at most ``seconds`` (``limit_of``): ``CheckTimeout`` is raised in it past them."""
    limit = limit_of(seconds)
    if limit is None:
        yield
        return
    if limit <= 0:
        raise CheckTimeout
    if _alarm_free():
        with _alarm(limit):
            yield
    else:
        with _watchdog(limit):
            yield


def _alarm_free() -> bool:
    """SIGALRM is ours to use: the main thread of a Unix process, no timer armed, no handler set (a test
    runner's own timeout uses them: then the watchdog thread bounds the work)."""
    return (hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
            and signal.getitimer(signal.ITIMER_REAL)[0] == 0
            and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, signal.SIG_IGN))


def _flush() -> None:
    """A call: the interpreter runs the Python handlers of signals already delivered before it returns."""


@contextmanager
def _alarm(limit: float) -> Iterator[None]:
    armed = [True]

    def on_alarm(signum: int, frame: object) -> None:
        if armed[0]:
            raise CheckTimeout

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit, REPEAT_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        armed[0] = False
        _flush()  # an alarm delivered just now meets the disarmed handler, not the default one (which ends us)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def _watchdog(limit: float) -> Iterator[None]:
    target = threading.get_ident()
    done = threading.Event()
    set_async = ctypes.pythonapi.PyThreadState_SetAsyncExc  # (thread id, exception class or NULL to withdraw)
    lock = threading.Lock()

    def watch() -> None:
        if done.wait(limit):
            return
        while True:
            with lock:
                if done.is_set():
                    return
                set_async(ctypes.c_ulong(target), ctypes.py_object(CheckTimeout))
            if done.wait(REPEAT_S):
                return

    thread = threading.Thread(target=watch, name="a1x-check-deadline", daemon=True)
    thread.start()
    try:
        yield
    finally:
        with lock:
            done.set()
            # An exception the watchdog sent that has not been raised yet is withdrawn: the block is over.
            set_async(ctypes.c_ulong(target), ctypes.c_void_p(0))
        thread.join()
