"""The strings a line must hold to give an event other than ``LogLine``: derived from the catalog's rules.

Outside a multi-line group (``LineParser.in_group``), a line can give an event only if it holds:

- a level gate, a group start (``Traceback (most recent call last):``, torchrun's ``Root Cause``, a frame line
  of a traceback whose header was lost), the prefetch server's prefix, or an error word (an error line no entry
  names);
- in a controller or replica log, a gate of some rule: for a *tag* gate (`` - INFO - [Rollout``, on
  most lines of its file) the needle of a rule logged under it instead, since a line the rule reads
  holds its needle too; any other gate (``[WeightSyncThread] ``, ``NCCL WARN``, an own needle) itself;
- in any other file (read without gates), the needle of some rule.

So the lines found are a superset of the lines that give events; the parser decides.
"""

from __future__ import annotations

import functools

from a1x_diagnostics.events import Source
from a1x_diagnostics.parsing._parser import ERROR_MARKERS, FRAME_MARK, GATED_ROLES, GROUP_STARTS
from a1x_diagnostics.parsing._rules import LEVEL_GATES, NEEDLES, RULES
from a1x_diagnostics.parsing._scan import Scanner

ALWAYS = (*LEVEL_GATES, *GROUP_STARTS, FRAME_MARK, "[AlpamayoPrefetch]", *ERROR_MARKERS)
TAG_GATE = " - INFO - "
"""Gates starting so are the cosmos INFO prefix with a tag: on most lines of their file."""


def _gated() -> tuple[str, ...]:
    out = list(ALWAYS)
    for r in RULES:
        for gate in r.gates - set(LEVEL_GATES):
            out.append(r.needle if gate.startswith(TAG_GATE) else gate)
    return tuple(dict.fromkeys(out))


GATED_MARKERS: tuple[str, ...] = _gated()
"""What a line of a controller or replica log (``GATED_ROLES``) must hold to be read."""
ALL_MARKERS: tuple[str, ...] = tuple(dict.fromkeys((*ALWAYS, *NEEDLES)))
"""What a line of any other file must hold to be read."""


def markers_for(source: Source) -> tuple[str, ...]:
    return GATED_MARKERS if source.role in GATED_ROLES else ALL_MARKERS


@functools.cache
def _scanner(gated: bool) -> Scanner:
    return Scanner(GATED_MARKERS if gated else ALL_MARKERS)


def scanner_for(source: Source) -> Scanner:
    """The scanner of a file of ``source``'s role (built once per kind of file)."""
    return _scanner(source.role in GATED_ROLES)
