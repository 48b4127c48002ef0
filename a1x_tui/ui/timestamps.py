"""Where a log line says when it was written: for ordering the merged view, and for the level colour.

Only the families whose stamps carry a full date are read (cosmos lines, naive local time with
milliseconds: ``a1x_diagnostics.parsing.COSMOS_STAMP_RE``; docs/supervisor.md: stage logs, ISO-8601 with
offset). Lines without one (vLLM's ``MM-DD`` stamps, tracebacks, shell echoes) take the time of the
line before them.
"""

from __future__ import annotations

import re
from datetime import datetime

from a1x_diagnostics.parsing import COSMOS_STAMP_RE, PREFETCH_LEVEL_RE

_ISO = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?) ")
_FRACTION = re.compile(r"\.(\d+)")
_LEVEL_WORD = re.compile(r"\b(ERROR|CRITICAL|WARNING|Traceback \(most recent call last\)|\w*Error:)")


def line_time(text: str) -> float | None:
    """Epoch seconds of the stamp at the start of ``text``, or None."""
    m = COSMOS_STAMP_RE.match(text)
    if m:
        year, month, day, hour, minute, second, ms = (int(g) for g in m.groups()[:7])
        try:
            return datetime(year, month, day, hour, minute, second, ms * 1000).timestamp()
        except (ValueError, OverflowError, OSError):
            return None
    m = _ISO.match(text)
    if m:
        try:
            # Python 3.10's fromisoformat reads neither "Z" nor a fraction of other than 3 or 6 digits.
            stamp = _FRACTION.sub(lambda f: "." + f.group(1).ljust(6, "0")[:6], m.group(1).replace("Z", "+00:00"))
            return datetime.fromisoformat(stamp).timestamp()
        except (ValueError, OverflowError, OSError):
            return None
    return None


def line_level(text: str) -> str | None:
    """``error`` / ``warning`` for lines worth a colour; None for the rest."""
    m = COSMOS_STAMP_RE.match(text)
    if m:
        level = m.group(8)
        if level in ("ERROR", "CRITICAL"):
            return "error"
        return "warning" if level == "WARNING" else None
    m = PREFETCH_LEVEL_RE.search(text)
    if m:
        return "error" if m.group(1) == "error" else "warning"
    m = _LEVEL_WORD.search(text[:200])
    if m is None:
        return None
    return "warning" if m.group(1) == "WARNING" else "error"
