"""Log text made safe for a terminal: control characters shown, never sent.

A log line can hold anything a process wrote: ANSI colour codes, a stray ``\\x1b]`` that retitles
the terminal, backspaces, the NUL bytes of a binary file read as a log. Invalid UTF-8 is already
``U+FFFD`` (every reader decodes with ``errors="replace"``, docs/parsing.md); ``printable`` escapes
the rest: C0 controls but the tab, DEL and the C1 controls become ``\\xNN`` (``\\x1b[31m``), so the
view shows what is in the file and the terminal's state is never changed by it. Characters that are
invisible yet change how the text around them reads are escaped too, as ``\\uNNNN``: the bidirectional
embeddings, overrides and isolates (U+202A-202E, U+2066-2069, U+061C, U+200E/200F), which can reorder
a quoted evidence line on screen, the zero-width ones (U+200B-200D, U+2060-2064, U+FEFF, U+180E,
U+00AD) and the line and paragraph separators (U+2028, U+2029), which some terminals break lines at.
"""

from __future__ import annotations

_CONTROLS = [*range(0x00, 0x09), *range(0x0A, 0x20), *range(0x7F, 0xA0)]
_INVISIBLE = [
    0x00AD, 0x061C, 0x180E, *range(0x200B, 0x2010), 0x2028, 0x2029, *range(0x202A, 0x202F),
    *range(0x2060, 0x2065), *range(0x2066, 0x206A), 0xFEFF,
]
_TABLE = {c: f"\\x{c:02x}" for c in _CONTROLS} | {c: f"\\u{c:04x}" for c in _INVISIBLE}


def printable(text: str) -> str:
    """``text`` with every control character but the tab written as ``\\xNN``, and every invisible
    character that reorders or breaks the text as ``\\uNNNN``."""
    if text.isprintable():  # the common case, in C: nothing to do (none of the escaped is printable)
        return text
    return text.translate(_TABLE)
