"""The marker strings of the grep prefilter: a line without one can give no event but ``LogLine``.

Shared by ``--check``'s grep path (``_prefilter``) and the live follower (``a1x_diagnostics.live``),
which both only parse lines holding a marker and every line while a multi-line group is open.
"""

from __future__ import annotations

from collections.abc import Iterable

from a1x_diagnostics.events import Source
from a1x_diagnostics.parsing._parser import ERROR_MARKERS, GATED_ROLES, GROUP_STARTS
from a1x_diagnostics.parsing._rules import GATES, LEVEL_GATES, NEEDLES, RULES, literals_of
from a1x_diagnostics.parsing._scan import Confirm, MarkerScanner, group_key

_ALWAYS = (*GROUP_STARTS, "[AlpamayoPrefetch]", *ERROR_MARKERS)


def _grep_markers(strings: Iterable[str]) -> tuple[str, ...]:
    """The strings without their leading spaces and dashes, deduplicated.

    A line holding a string holds it without its head too, so the candidates stay a superset (the
    parser applies the real gates). grep's multi-string search skips ahead by bytes absent from
    the strings' ends, and a leading `` - `` (in every cosmos line) makes it a third slower.
    """
    return tuple(dict.fromkeys(s.lstrip(" -") or s for s in strings))


GATED_MARKERS: tuple[str, ...] = _grep_markers((*GATES, *_ALWAYS))
"""Markers of controller and replica logs (``GATED_ROLES``): the rules' gates and group starts."""
ALL_MARKERS: tuple[str, ...] = _grep_markers((*NEEDLES, *_ALWAYS))
"""Markers of every other file (launcher captures, stage logs): the rules' needles and group starts."""


def markers_for(source: Source) -> tuple[str, ...]:
    """The markers for a file of ``source``'s role (the same tuple object for every call)."""
    return GATED_MARKERS if source.role in GATED_ROLES else ALL_MARKERS


def _confirm() -> Confirm:
    """The gate markers that let a line through only with every required string of one rule logged
    under a gate that is not a level (``INFO - [Policy] ``: on most lines of a policy log), and those
    strings, one tuple a rule (``_rules.literals_of``: from the rule's regex), and each marker's keys
    (the longest of each of its rules' strings). A line a rule's regex matches holds its strings, and
    the level gates and ``_ALWAYS`` markers always count, so the lines kept stay a superset of those
    that give an event."""
    always = set(_grep_markers((*LEVEL_GATES, *_ALWAYS)))
    tags = [g for g in GATES if g not in LEVEL_GATES]
    confirmed = frozenset(m for m in _grep_markers(tags) if m not in always)
    groups = tuple(dict.fromkeys(literals_of(r) for r in RULES if any(g in r.gates for g in tags)))
    # Each confirmed marker's keys: the key of each group of a rule logged under it (_scan._automaton).
    keys: dict[str, dict[str, None]] = {m: {} for m in confirmed}
    for r in RULES:
        for gate in r.gates:
            marker = _grep_markers((gate,))[0]
            if marker in keys:
                keys[marker][group_key(literals_of(r))] = None
    gate_keys = tuple((m, tuple(k)) for m, k in sorted(keys.items()))
    return confirmed, groups, gate_keys


GATED_CONFIRM = _confirm()


def confirm_for(source: Source) -> Confirm | None:
    """``MarkerScanner``'s ``confirm`` for a file of ``source``'s role (None: every marker counts)."""
    return GATED_CONFIRM if source.role in GATED_ROLES else None


def scanner_for(source: Source) -> MarkerScanner:
    """The scanner of a file of ``source``'s role: its markers, and in a controller or replica log its
    tag gates counting only with every string of one of their rules (``confirm_for``)."""
    return MarkerScanner(markers_for(source), confirm_for(source))
