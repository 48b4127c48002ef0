"""The literal strings every match of a regex must contain, read from the regex itself.

The scanner takes a line logged under a tag gate (``INFO - [Policy] ``: on most lines of a policy
log) only when it holds every such string of one rule logged under that gate, so a line that merely
shares a word with a rule ("preparing send operations") never reaches Python. The strings come
from each rule's own regex (``_rules.RULES``), never from a list kept by hand beside it: a line the
regex matches holds them all, so the lines kept stay a superset of the lines that give an event.
"""

from __future__ import annotations

import importlib
import re
import sys
from typing import Any

# The parser the re module itself uses (sre_parse until 3.10, deprecated under that name after).
if sys.version_info >= (3, 11):
    _c: Any = importlib.import_module("re._constants")
    _p: Any = importlib.import_module("re._parser")
else:  # pragma: no cover - Python 3.10
    import sre_constants as _c
    import sre_parse as _p

MIN_LENGTH = 3
"""Shorter required strings (``": "``, ``" "``) are on nearly every line: not worth a check."""


def required_literals(pattern: re.Pattern[str]) -> tuple[str, ...]:
    """The maximal runs of literal characters that every match of ``pattern`` holds, at least
    ``MIN_LENGTH`` long, in order; () when it cannot tell (case-insensitive or verbose patterns)."""
    if pattern.flags & (re.IGNORECASE | re.VERBOSE):
        return ()
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) >= MIN_LENGTH:
            out.append("".join(run))
        run.clear()

    def walk(items: Any) -> None:
        for op, av in items:
            if op is _c.LITERAL:
                run.append(chr(av))
            elif op is _c.SUBPATTERN and not av[1] & re.IGNORECASE:  # a group: in every match, in place
                walk(av[-1])
            elif op is _c.AT:  # ^, $, \b: zero width, between characters of the run
                continue
            elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT) and av[0] >= 1:
                flush()  # what repeats is in every match, once at least, but not joined to its sides
                walk(av[2])
                flush()
            else:  # a class, a branch, an optional part, a look-around: no fixed text
                flush()

    walk(_p.parse(pattern.pattern, pattern.flags))
    flush()
    return tuple(dict.fromkeys(out))
