"""The marker strings of the grep prefilter: a line without one can give no event but ``LogLine``.

Shared by ``--check``'s grep path (``_prefilter``) and the live follower (``diagnostics.live``),
which both only parse lines holding a marker and every line while a multi-line group is open.
"""

from __future__ import annotations

from collections.abc import Iterable

from diagnostics.events import Source
from diagnostics.parsing._parser import ERROR_MARKERS, GATED_ROLES, GROUP_STARTS
from diagnostics.parsing._rules import GATES, NEEDLES

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
