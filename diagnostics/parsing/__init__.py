"""Log parsing: Cosmos-RL / Alpamayo log files in, typed events (``diagnostics.events``) out.

- ``discover(path, run)`` -> ``RunLayout``: which files make up a run (log dir, ``logs_<ts>``,
  replica folder, SLURM job, our run folder, or one file); ``classify_file`` names one file.
- ``read_run(layout)`` / ``iter_file_events(path, source)``: streamed events, bounded memory; with
  ``keep_unknown=False`` a grep prefilter reads only candidate lines (same events, much faster).
- ``LineParser`` / ``parse_lines``: the pure parser behind both (also for live tails).
- ``file_tail(path)``: the last lines and timestamp of a file, read from its end.
- ``markers_for(source)`` (``GATED_MARKERS``, ``ALL_MARKERS``): the strings a line must hold to
  give an event other than ``LogLine`` (outside multi-line groups, ``LineParser.in_group``).
- ``MarkerScanner(markers).lines(lines)``: which lines of a block hold a marker (C when built).
- ``MAX_LINE_BYTES``, ``split_segments``: how files are cut into lines and ``\\r`` segments.
- ``PROCESS_FAILED_RE``: the launcher's 'Process {i} failed with return code {rc}' line.

Formats and versions: see ``docs/parsing.md``.
"""

from __future__ import annotations

import re

from diagnostics.parsing._layout import LayoutError, RunLayout, classify_file, discover
from diagnostics.parsing._lines import MAX_LINE_BYTES
from diagnostics.parsing._lines import segments as split_segments
from diagnostics.parsing._markers import ALL_MARKERS, GATED_MARKERS, markers_for
from diagnostics.parsing._parser import LineParser, parse_lines
from diagnostics.parsing._reader import FileTail, file_tail, iter_file_events, read_run
from diagnostics.parsing._rules import PROCESS_FAILED_PATTERN
from diagnostics.parsing._scan import MarkerScanner

PROCESS_FAILED_RE = re.compile(PROCESS_FAILED_PATTERN)

__all__ = [
    "ALL_MARKERS",
    "GATED_MARKERS",
    "MAX_LINE_BYTES",
    "PROCESS_FAILED_RE",
    "FileTail",
    "LayoutError",
    "LineParser",
    "MarkerScanner",
    "RunLayout",
    "classify_file",
    "discover",
    "file_tail",
    "iter_file_events",
    "markers_for",
    "parse_lines",
    "read_run",
    "split_segments",
]
