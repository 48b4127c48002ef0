"""How a demo program takes a stop's SIGTERMs: its handler runs once.

A stop often sends two (the process group's, then the launcher's own). The handler blocks SIGTERM
first, so a later one waits; one Python had already taken before that runs the handler again inside
the first, and does nothing. (Setting SIG_IGN there instead raised "Signal 15 ignored due to race
condition" when the second had come: a traceback in the log reads as a crash.)
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from types import FrameType


def on_first_sigterm(stop: Callable[[int], None]) -> None:
    """Make ``stop(signum)`` this process's SIGTERM handler, run for the first SIGTERM only."""
    taken: list[int] = []

    def first(signum: int, _frame: FrameType | None) -> None:
        if taken:
            return
        taken.append(signum)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        stop(signum)

    signal.signal(signal.SIGTERM, first)
