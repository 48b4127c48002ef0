"""Log parsing: Cosmos-RL / Alpamayo log files in, typed events (``diagnostics.events``) out.

- ``discover(path, run)`` -> ``RunLayout``: which files make up a run (log dir, ``logs_<ts>``,
  replica folder, SLURM job, our run folder, or one file); ``classify_file`` names one file.
- ``read_run(layout)`` / ``iter_file_events(path, source)``: streamed events, bounded memory; with
  ``keep_unknown=False`` a grep prefilter reads only candidate lines (same events, much faster).
- ``LineParser`` / ``parse_lines``: the pure parser behind both (also for live tails).
- ``file_tail(path)``: the last lines and timestamp of a file, read from its end.

Formats and versions: see ``docs/parsing.md``.
"""

from __future__ import annotations

from diagnostics.parsing._layout import LayoutError, RunLayout, classify_file, discover
from diagnostics.parsing._parser import LineParser, parse_lines
from diagnostics.parsing._reader import FileTail, file_tail, iter_file_events, read_run

__all__ = [
    "FileTail",
    "LayoutError",
    "LineParser",
    "RunLayout",
    "classify_file",
    "discover",
    "file_tail",
    "iter_file_events",
    "parse_lines",
    "read_run",
]
