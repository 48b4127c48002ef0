"""Log text made safe for a terminal: control characters shown, never sent.

A log line can hold anything a process wrote: ANSI colour codes, a stray ``\\x1b]`` that retitles
the terminal, backspaces, the NUL bytes of a binary file read as a log. Invalid UTF-8 is already
``U+FFFD`` (every reader decodes with ``errors="replace"``, docs/parsing.md); ``printable`` escapes
the rest: C0 controls but the tab, DEL and the C1 controls become ``\\xNN`` (``\\x1b[31m``), so the
view shows what is in the file and the terminal's state is never changed by it.
"""

from __future__ import annotations

_CONTROLS = [*range(0x00, 0x09), *range(0x0A, 0x20), *range(0x7F, 0xA0)]
_TABLE = {c: f"\\x{c:02x}" for c in _CONTROLS}


def printable(text: str) -> str:
    """``text`` with every control character but the tab written as ``\\xNN``."""
    if text.isprintable():  # the common case, in C: nothing to do
        return text
    return text.translate(_TABLE)
