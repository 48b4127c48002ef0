"""The literal strings every match of a regex must contain, read from the regex itself.

The scanner takes a line logged under a tag gate (``INFO - [Policy] ``: on most lines of a policy
log) only when it holds every such string of one rule logged under that gate, so a line that merely
shares a word with a rule ("preparing send operations") never reaches Python. The strings come
from each rule's own regex (``_rules.RULES``), never from a list kept by hand beside it: a line the
regex matches holds them all, so the lines kept stay a superset of the lines that give an event.
Each rule's needle is one of them too (``needles``, for ``_rules`` and, through ``regex_needles``,
the AlpaGym parser); ``read`` gives them with the compiled regex, from one parse.
"""

from __future__ import annotations

import importlib
import re
import sys
from typing import Any

# The parser and compiler the re module itself uses (sre_parse/sre_compile until 3.10, deprecated under
# those names after).
if sys.version_info >= (3, 11):
    _c: Any = importlib.import_module("re._constants")
    _p: Any = importlib.import_module("re._parser")
    _k: Any = importlib.import_module("re._compiler")
else:  # pragma: no cover - Python 3.10
    import sre_constants as _c
    import sre_parse as _p

    _k = importlib.import_module("sre_compile")

_LITERAL, _SUBPATTERN, _AT, _REPEATS = _c.LITERAL, _c.SUBPATTERN, _c.AT, (_c.MAX_REPEAT, _c.MIN_REPEAT)

MIN_LENGTH = 3
"""Shorter required strings (``": "``, ``" "``) are on nearly every line: not worth a check."""


def required_literals(pattern: re.Pattern[str]) -> tuple[str, ...]:
    """The maximal runs of literal characters that every match of ``pattern`` holds, at least
    ``MIN_LENGTH`` long, in order; () when it cannot tell (case-insensitive or verbose patterns)."""
    if pattern.flags & (re.IGNORECASE | re.VERBOSE):
        return ()
    return _strings(_p.parse(pattern.pattern, pattern.flags))


def read(source: str, flags: int = 0) -> tuple[re.Pattern[str], tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """``re.compile(source, flags)``, the strings every match holds (``required_literals``) and, where
    it has none and its top level is ``A|B|...``, those of each alternative (else ``()``), from one parse.

    ``re.compile`` parses the regex as this does; compiling the tree read here (``re``'s own last
    step) spares each rule's regex the second parse that reading its strings would cost at import."""
    tree = _p.parse(source, flags)
    if flags & (re.IGNORECASE | re.VERBOSE):
        literals: tuple[str, ...] = ()
        alternatives: tuple[tuple[str, ...], ...] = ()
    else:
        literals = _strings(tree)
        alternatives = () if literals else tuple(_strings(alt) for alt in _branches(tree))
    return _compile(source, flags, tree), literals, alternatives


def needles(pattern: str, literals: tuple[str, ...], alternatives: tuple[tuple[str, ...], ...],
            gates: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The needles of a regex from what ``read`` gave of it: the longest string every match holds that
    ``gates`` do not already say (``[Controller] `` is in every line of the gate `` - INFO - [Controller] ``),
    else the longest; for a regex ``A|B`` with no such string, one per alternative. A regex with neither is
    refused: no line could be looked up by it."""

    def best(strings: tuple[str, ...]) -> str:
        telling = [s for s in strings if not any(s in g for g in gates)] or strings
        return max(telling, key=len)

    if literals:
        return (best(literals),)
    if alternatives and all(alternatives):
        return tuple(dict.fromkeys(best(a) for a in alternatives))
    raise ValueError(f"{pattern!r}: no string of {MIN_LENGTH}+ characters that every match (or every "
                     "match of one top-level alternative) holds")


def regex_needles(pattern: str, flags: int = 0) -> tuple[re.Pattern[str], tuple[str, ...]]:
    """``re.compile(pattern, flags)`` and its needles (``needles``): strings of which a line the regex
    matches holds one, a quick ``in`` test before the regex that can lose no match. Raises
    ``ValueError`` for a regex that requires no such string (or is read case-insensitively: ``read``
    tells none then)."""
    compiled, literals, alternatives = read(pattern, flags)
    return compiled, needles(pattern, literals, alternatives)


def _strings(items: Any) -> tuple[str, ...]:
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) >= MIN_LENGTH:
            out.append("".join(run))
        run.clear()

    def walk(items: Any) -> None:
        for op, av in items.data:  # the parse tree's own list: indexing the tree costs a call an item
            if op is _LITERAL:
                run.append(chr(av))
            elif op is _SUBPATTERN and not av[1] & re.IGNORECASE:  # a group: in every match, in place
                walk(av[-1])
            elif op is _AT:  # ^, $, \b: zero width, between characters of the run
                continue
            elif op in _REPEATS and av[0] >= 1:
                flush()  # what repeats is in every match, once at least, but not joined to its sides
                walk(av[2])
                flush()
            else:  # a class, a branch, an optional part, a look-around: no fixed text
                flush()

    walk(items)
    flush()
    return tuple(dict.fromkeys(out))


def _branches(items: Any) -> list[Any]:
    """The alternatives of a regex whose top level is one branch (``A|B``, ``(?:A|B)``, ``^(A|B)$``)."""
    ops = [(op, av) for op, av in items.data if op is not _c.AT]
    if len(ops) == 1 and ops[0][0] is _c.SUBPATTERN and not ops[0][1][1] & re.IGNORECASE:
        return _branches(ops[0][1][-1])
    if len(ops) == 1 and ops[0][0] is _c.BRANCH:
        return list(ops[0][1][1])
    return []


def _compile(source: str, flags: int, tree: Any) -> re.Pattern[str]:
    """What ``re.compile(source, flags)`` returns (an equal pattern), from ``tree``; ``re.compile``
    itself where this Python's ``re`` is not built as expected."""
    try:
        code = _k._code(tree, flags)
        state = tree.state
        index: list[str | None] = [None] * state.groups
        for name, i in state.groupdict.items():
            index[i] = name
        compiled: re.Pattern[str] = _k._sre.compile(source, flags | state.flags, code, state.groups - 1,
                                                    state.groupdict, tuple(index))
        return compiled
    except (AttributeError, TypeError):  # pragma: no cover - another re's internals
        return re.compile(source, flags)
