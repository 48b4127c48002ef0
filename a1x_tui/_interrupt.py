"""Ctrl-C while a command starts something: noted, never raised in the middle, acted on by the command.

A ``KeyboardInterrupt`` can land anywhere: between a fork and the moment its pid is known, half way
through a run directory, inside Textual's start. Raised there, it printed a traceback and left a
supervisor and its stages running with no word on how to stop them. While a command starts something
(``a1x-tui demo``, ``a1x-tui run``, the app) it takes SIGINT as a note instead, finishes the step it is
in, and then decides: the demo stops what it started, ``run`` detaches and says in one line how to
stop the run, the app quits as if ``q`` had been pressed (``on_interrupt``). Everywhere else Ctrl-C
raises ``KeyboardInterrupt`` as usual and the command ends with exit code 130, no traceback
(``cli.entry``).

Every SIGINT of the program is counted (``entry`` installs ``note_and_raise`` first), so one that came
before a command's guard still counts there, whatever became of the ``KeyboardInterrupt`` it raised
(under load a Ctrl-C pressed while the demo imported its modules was echoed and the demo started all
the same: an exception raised inside C code can be dropped there). A program started with SIGINT
ignored (``cmd &`` in a script) keeps ignoring it.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

INTERRUPTED = 130  # the shell's code for a command ended by SIGINT (128 + 2)

_seen = [0]  # SIGINTs this process has received while a handler of this module was in place


def note_and_raise(_signum: int, _frame: FrameType | None) -> None:
    """Python's own SIGINT handler, counting: a ``KeyboardInterrupt`` where the program is."""
    _seen[0] += 1
    raise KeyboardInterrupt


class Interrupts:
    """``with Interrupts() as i:`` SIGINT only counts (``i.pending``) and calls ``i.on_interrupt``."""

    def __init__(self) -> None:
        self.on_interrupt: Callable[[], None] | None = None
        self._previous: Any = None

    def __enter__(self) -> Interrupts:
        self._previous = signal.getsignal(signal.SIGINT)
        if self._previous is not signal.SIG_IGN:  # started ignoring it (`cmd &` in a script): left so
            signal.signal(signal.SIGINT, self._noted)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    @property
    def pending(self) -> bool:
        """A Ctrl-C came since the program started (inside this guard or before it)."""
        return _seen[0] > 0

    def _noted(self, _signum: int, _frame: FrameType | None) -> None:
        _seen[0] += 1
        if self.on_interrupt is not None:
            self.on_interrupt()
