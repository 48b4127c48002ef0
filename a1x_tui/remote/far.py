"""What the far side of ``HOST:PATH`` does for the near side: end with the ssh connection.

A command run by sshd without a terminal gets no signal when the connection goes (a laptop that sleeps,
a network cut): it would follow a quiet run forever. The near side keeps the command's stdin open and
never writes to it, so stdin's end is the connection's end (``watch --end-with-stdin``).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable


def end_with_stdin(stop: threading.Event, on_end: Callable[[], None] | None = None) -> None:
    """Set ``stop`` once stdin reaches its end (read in a thread of its own)."""

    def wait() -> None:
        try:
            fd = sys.stdin.fileno() if sys.stdin is not None else -1
            while fd >= 0 and os.read(fd, 65536):
                pass
        except (OSError, ValueError, AttributeError):
            pass
        if on_end is not None:
            on_end()
        stop.set()

    threading.Thread(target=wait, name="a1x-stdin-end", daemon=True).start()
