"""Lines the log views no longer keep, read from the file: a window around one line.

A large run keeps only the tail of each file in memory (``a1x_tui.ui.logstore``); evidence and
"go to line" may point further back. Lines are counted as the follower counts them (a line ends
with ``\\n``; a trailing ``\\r`` is not part of it; bytes are UTF-8 with replacement characters).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.message import Message

from a1x_tui.ui.logstore import LineMaker
from a1x_tui.ui.messages import ExcerptRead

BLOCK = 4 * 1024 * 1024
BEFORE, AFTER = 200, 200  # lines around the one asked for
MAX_CHARS = 64 * 1024  # a longer line is cut: it is shown, not parsed


def read_lines(path: str, first: int, count: int) -> list[str]:
    """Lines ``first`` .. ``first + count - 1`` of the file (1-based; fewer at its end)."""
    out: list[str] = []
    with open(path, "rb") as f:
        line = 1  # the number of the line that starts at the beginning of the next block's first byte
        pending = b""
        while len(out) < count:
            block = f.read(BLOCK)
            if not block:
                if pending and line >= first:
                    out.append(_text(pending))
                break
            if line < first:
                newlines = block.count(b"\n")
                if line + newlines < first:  # the wanted lines begin in a later block
                    line += newlines
                    continue
                at = -1
                while line < first:
                    at = block.index(b"\n", at + 1)
                    line += 1
                block = block[at + 1 :]
            pieces = (pending + block).split(b"\n")
            pending = pieces.pop()
            out.extend(_text(p) for p in pieces[: count - len(out)])
    return out


def _text(raw: bytes) -> str:
    return raw[:MAX_CHARS].decode("utf-8", errors="replace").removesuffix("\r")


def read_excerpt(
    path: str, source: str, label: str, lineno: int, post: Callable[[Message], Any], maker: LineMaker | None = None
) -> None:
    """Post ``ExcerptRead`` with the lines around ``lineno`` of ``path`` (masked and folded as the views show them)."""
    first = max(1, lineno - BEFORE)
    try:
        texts = read_lines(path, first, lineno - first + 1 + AFTER)
    except (OSError, ValueError) as exc:
        post(ExcerptRead(source, lineno, first, (), f"cannot read {path}: {exc}"))
        return
    if len(texts) < lineno - first + 1:
        post(ExcerptRead(source, lineno, first, (), f"{source} has {first + len(texts) - 1} lines now, not {lineno}"))
        return
    lines = (maker or LineMaker()).make(source, label, first, texts)
    post(ExcerptRead(source, lineno, first, tuple(lines)))
