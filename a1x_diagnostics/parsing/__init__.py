"""Log parsing: Cosmos-RL / Alpamayo log files in, typed events (``a1x_diagnostics.events``) out; and the
one owner of the Cosmos-RL run layout and line formats that the supervisor and the UI read.

- ``discover(path, run)`` -> ``RunLayout``: which files make up a run (log dir, ``logs_<ts>``,
  replica folder, SLURM job, our run folder, or one file); ``classify_file`` names one file.
- ``FileReader(source)``: the one reader, ``feed(first_lineno, block)`` / ``feed_lines(first_lineno, lines)``
  then ``end()``: the lines that can mean something (``scanner_for``), parsed, as events; ``read_file``,
  ``read_run(layout)``: a file, a run, streamed in bounded memory (``--check``); the live follower feeds
  the same reader (``watch``, ``attach``).
- ``LineParser`` / ``parse_lines``: the parser behind it (every line it is given).
- ``file_tail(path)``: the last lines and timestamp of a file, read from its end.
- ``markers_for(source)`` (``GATED_MARKERS``, ``ALL_MARKERS``): the strings a line must hold to
  give an event other than ``LogLine`` (outside multi-line groups, ``LineParser.in_group``), derived
  from the catalog; ``scanner_for(source)`` (``Scanner``): which lines of a block hold one.
- ``MAX_LINE_BYTES``, ``split_segments``: how files are cut into lines and ``\\r`` segments;
  ``iter_lines(f)``: the numbered lines of a binary file cut so (the AlpaGym reader's too).
- The runs of a log source by path (``_runs``): ``log_runs``, ``latest_logs_dir``, ``run_name``,
  ``logs_dirs``, ``slurm_runs``, ``is_slurm_dir``, ``controller_logs``, ``replica_logs``, ``numbered``.
- A Slurm job's folder now (``_slurm_job``): ``read_slurm_layout`` -> ``SlurmLayout`` (``Part``),
  ``role_logs`` / ``pinned_role_logs`` -> ``RoleLog``, ``parse_monitor_log`` -> ``MonitorLine``.
- ``regex_needles(pattern, flags)``: a regex compiled and its needles, the strings of which a line it
  matches holds one, read from the regex as the rules' own are (``_required``; the AlpaGym parser's).
- ``read_line(text, role)``: the events one raw line gives (what the supervisor asks of a line).
- Line prefixes over raw lines (``_formats``): ``COSMOS_STAMP_RE``, ``PREFETCH_LEVEL_RE``,
  ``REPLICA_CAUSE_RE``; ``PROCESS_FAILED_RE``, the catalog's launcher line 'Process {i} failed with
  return code {rc}'.

Names are imported on first use, so the supervisor reading a run's layout does not load the parser.
Formats and versions: see ``docs/parsing.md``.
"""

from __future__ import annotations

import importlib
import re
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "ALL_MARKERS": "_markers",
    "GATED_MARKERS": "_markers",
    "scanner_for": "_markers",
    "markers_for": "_markers",
    "MAX_LINE_BYTES": "_lines",
    "iter_lines": "_lines",
    "FileTail": "_reader",
    "FileReader": "_reader",
    "file_tail": "_reader",
    "read_file": "_reader",
    "read_run": "_reader",
    "LayoutError": "_layout",
    "RunLayout": "_layout",
    "classify_file": "_layout",
    "discover": "_layout",
    "LineParser": "_parser",
    "parse_lines": "_parser",
    "read_line": "_parser",
    "Scanner": "_scan",
    "shape_of": "_shapes",
    "controller_logs": "_runs",
    "is_slurm_dir": "_runs",
    "latest_logs_dir": "_runs",
    "log_runs": "_runs",
    "logs_dirs": "_runs",
    "numbered": "_runs",
    "replica_logs": "_runs",
    "run_name": "_runs",
    "slurm_runs": "_runs",
    "MonitorLine": "_slurm_job",
    "Part": "_slurm_job",
    "RoleLog": "_slurm_job",
    "SlurmLayout": "_slurm_job",
    "parse_monitor_log": "_slurm_job",
    "pinned_role_logs": "_slurm_job",
    "read_slurm_layout": "_slurm_job",
    "role_logs": "_slurm_job",
    "regex_needles": "_required",
    "COSMOS_STAMP_RE": "_formats",
    "PREFETCH_LEVEL_RE": "_formats",
    "REPLICA_CAUSE_RE": "_formats",
}

__all__ = [
    "ALL_MARKERS",
    "COSMOS_STAMP_RE",
    "GATED_MARKERS",
    "MAX_LINE_BYTES",
    "PREFETCH_LEVEL_RE",
    "PROCESS_FAILED_RE",
    "REPLICA_CAUSE_RE",
    "FileReader",
    "FileTail",
    "LayoutError",
    "LineParser",
    "MonitorLine",
    "Part",
    "RoleLog",
    "RunLayout",
    "Scanner",
    "SlurmLayout",
    "classify_file",
    "controller_logs",
    "discover",
    "file_tail",
    "is_slurm_dir",
    "iter_lines",
    "latest_logs_dir",
    "log_runs",
    "logs_dirs",
    "markers_for",
    "numbered",
    "parse_lines",
    "parse_monitor_log",
    "pinned_role_logs",
    "read_file",
    "read_line",
    "read_run",
    "read_slurm_layout",
    "regex_needles",
    "replica_logs",
    "role_logs",
    "run_name",
    "scanner_for",
    "shape_of",
    "slurm_runs",
    "split_segments",
]

if TYPE_CHECKING:
    from a1x_diagnostics.parsing._formats import (
        COSMOS_STAMP_RE,
        PREFETCH_LEVEL_RE,
        REPLICA_CAUSE_RE,
    )
    from a1x_diagnostics.parsing._layout import LayoutError, RunLayout, classify_file, discover
    from a1x_diagnostics.parsing._lines import MAX_LINE_BYTES, iter_lines
    from a1x_diagnostics.parsing._lines import segments as split_segments
    from a1x_diagnostics.parsing._markers import ALL_MARKERS, GATED_MARKERS, markers_for, scanner_for
    from a1x_diagnostics.parsing._parser import LineParser, parse_lines, read_line
    from a1x_diagnostics.parsing._reader import FileReader, FileTail, file_tail, read_file, read_run
    from a1x_diagnostics.parsing._required import regex_needles
    from a1x_diagnostics.parsing._runs import (
        controller_logs,
        is_slurm_dir,
        latest_logs_dir,
        log_runs,
        logs_dirs,
        numbered,
        replica_logs,
        run_name,
        slurm_runs,
    )
    from a1x_diagnostics.parsing._scan import Scanner
    from a1x_diagnostics.parsing._shapes import shape_of
    from a1x_diagnostics.parsing._slurm_job import (
        MonitorLine,
        Part,
        RoleLog,
        SlurmLayout,
        parse_monitor_log,
        pinned_role_logs,
        read_slurm_layout,
        role_logs,
    )

    PROCESS_FAILED_RE: re.Pattern[str]


def __getattr__(name: str) -> Any:
    if name == "PROCESS_FAILED_RE":
        from a1x_diagnostics.parsing._rules import PROCESS_FAILED_PATTERN

        value: Any = re.compile(PROCESS_FAILED_PATTERN)
    elif name == "split_segments":
        from a1x_diagnostics.parsing._lines import segments as value
    elif name in _EXPORTS:
        value = getattr(importlib.import_module(f"a1x_diagnostics.parsing.{_EXPORTS[name]}"), name)
    else:
        raise AttributeError(f"module 'a1x_diagnostics.parsing' has no attribute {name!r}")
    globals()[name] = value  # once: later reads find it without this function
    return value
