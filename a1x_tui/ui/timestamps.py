"""Where a log line says when it was written, how bad it is, and where its message begins.

Only the families whose stamps carry a full date are read (cosmos lines, naive local time with
milliseconds: ``a1x_diagnostics.parsing.COSMOS_STAMP_RE``; docs/supervisor.md: stage logs, ISO-8601 with
offset). Lines without one (vLLM's ``MM-DD`` stamps, tracebacks, shell echoes) take the time of the
line before them. ``fold`` shortens the prefix a person does not read at 80 columns
(``[rank0]:[cosmos] 2026-12-04 23:47:03,218 - cosmos - INFO - ``) to ``23:47:03 I``.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import NamedTuple

from a1x_diagnostics.parsing import COSMOS_STAMP_RE, PREFETCH_LEVEL_RE

_ISO = re.compile(r"^(\d{4}-\d\d-\d\dT(\d\d:\d\d:\d\d)(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?) ")
_FRACTION = re.compile(r"\.(\d+)")
_LEVEL_WORD = re.compile(r"\b(ERROR|CRITICAL|WARNING|Traceback \(most recent call last\)|\w*Error:)")
_COLOUR = {"ERROR": "error", "CRITICAL": "error", "WARNING": "warning"}


class Folded(NamedTuple):
    """What the log view needs of a line, read once when it is stored."""

    ts: float | None  # epoch seconds of its stamp, None without one
    level: str | None  # "error" / "warning" for lines worth a colour
    short: str  # "23:47:03 I" for the prefix folded away; "" when nothing was folded
    start: int  # where the message begins in the line


def fold(text: str) -> Folded:
    m = COSMOS_STAMP_RE.match(text)
    if m:
        year, month, day, hour, minute, second, ms = (int(g) for g in m.groups()[:7])
        try:
            ts: float | None = datetime(year, month, day, hour, minute, second, ms * 1000).timestamp()
        except (ValueError, OverflowError, OSError):
            ts = None
        word = m.group(8)
        short = f"{hour:02d}:{minute:02d}:{second:02d} {word[0]}"
        if text.startswith("[rank") and not text.startswith("[rank0]:"):  # another rank: worth keeping
            short += " r" + text[5 : text.index("]")]
        return Folded(ts, _COLOUR.get(word), short, m.end())
    m = _ISO.match(text)
    if m:
        return Folded(_iso_time(m.group(1)), _level(text), m.group(2), m.end())
    start = 8 if text.startswith("[rank0]:") else 0
    return Folded(None, _level(text), "", start)


def _iso_time(stamp: str) -> float | None:
    try:
        # Python 3.10's fromisoformat reads neither "Z" nor a fraction of other than 3 or 6 digits.
        stamp = _FRACTION.sub(lambda f: "." + f.group(1).ljust(6, "0")[:6], stamp.replace("Z", "+00:00"))
        return datetime.fromisoformat(stamp).timestamp()
    except (ValueError, OverflowError, OSError):
        return None


def _level(text: str) -> str | None:
    m = PREFETCH_LEVEL_RE.search(text)
    if m:
        return "error" if m.group(1) == "error" else "warning"
    m = _LEVEL_WORD.search(text[:200])
    if m is None:
        return None
    return "warning" if m.group(1) == "WARNING" else "error"


def line_time(text: str) -> float | None:
    """Epoch seconds of the stamp at the start of ``text``, or None."""
    return fold(text).ts


def line_level(text: str) -> str | None:
    """``error`` / ``warning`` for lines worth a colour; None for the rest."""
    return fold(text).level
