"""Physical lines of a log file: streaming, bounded memory, any bytes.

Lines are split on ``\\n`` and numbered from 1 like ``grep -n`` and editors do; a line is then
split on ``\\r`` (tqdm and huggingface_hub redraw bars with it, docs/reference/alpamayo-recipe.md §5) into
segments that share its number. Bytes are decoded as UTF-8 with replacement characters. A line
longer than ``MAX_LINE_BYTES`` is cut there (the rest is skipped, the numbering stays right).
A last line without a newline is still a line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

CHUNK_BYTES = 1 << 20
MAX_LINE_BYTES = 4 << 20


def decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def segments(line: str) -> tuple[str, ...] | list[str]:
    """``"a\\rb\\r"`` -> ``["a", "b"]``; a line that is only ``\\r`` characters -> ``[""]``."""
    if "\r" not in line:
        return (line,)
    parts = [p for p in line.split("\r") if p]
    return parts or [""]


def iter_lines(f: BinaryIO, first_lineno: int = 1) -> Iterator[tuple[int, str]]:
    """``(lineno, text)`` for every line read from ``f`` (text without ``\\n``, ``\\r`` kept)."""
    lineno = first_lineno
    pending = b""
    overflow = False  # the current line passed MAX_LINE_BYTES: skip to its end
    while True:
        chunk = f.read(CHUNK_BYTES)
        if not chunk:
            break
        start = 0
        if pending or overflow:
            nl = chunk.find(b"\n")
            if nl < 0:
                if not overflow:
                    pending += chunk
                    if len(pending) >= MAX_LINE_BYTES:
                        pending, overflow = pending[:MAX_LINE_BYTES], True
                continue
            if not overflow:
                pending = (pending + chunk[:nl])[:MAX_LINE_BYTES]
            yield lineno, decode(pending)
            lineno += 1
            pending, overflow = b"", False
            start = nl + 1
        last = chunk.rfind(b"\n", start)
        if last < 0:
            pending = chunk[start:]
            continue
        for line in decode(chunk[start:last]).split("\n"):
            yield lineno, line
            lineno += 1
        pending = chunk[last + 1 :]
    if pending:
        yield lineno, decode(pending)
