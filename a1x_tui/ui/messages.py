"""Every message the app's workers post to its screens, and its screens to the app: small dataclasses
named as past events.

toolong's habit (Textualize/toolong: one concept per module): workers read
files and sockets and post these; widgets only ever see these. The follow worker posts at most four
times a second, so a fast log cannot flood the UI. A screen never imports the app or another screen
(the contracts in pyproject.toml): it posts ``RunChosen`` or ``NewRunChosen``, which bubble up to the
app, and the app changes screens (docs/ui.md, "How it is built").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.message import Message

from a1x_diagnostics.findings import Finding, Report, RunOutcome
from a1x_diagnostics.gpu import GpuSnapshot, ProcessSample
from a1x_tui.ui.logstore import LogLine
from a1x_tui.ui.target import RunTarget


@dataclass(frozen=True, slots=True)
class LineChunk:
    """Consecutive lines of one file, prepared by the follow worker (``LineMaker``): only those kept.

    A history chunk is the tail of the file's history (``done``: the history of that file is read)."""

    source: str
    label: str
    first_lineno: int | None
    lines: tuple[LogLine, ...]
    history: bool = False
    done: bool = False


@dataclass
class LinesArrived(Message):
    chunks: list[LineChunk]


@dataclass
class LogFileSeen(Message):
    """A file of the run is followed now (it may still be empty); ``path``: where it is on disk."""

    source: str
    label: str
    path: str | None = None


@dataclass
class LogFileReset(Message):
    source: str
    reason: str


@dataclass
class FollowedRunChanged(Message):
    """``logs_latest`` moved to another ``logs_<ts>``: what was shown belongs to the old run."""

    run_name: str | None
    previous: str | None


@dataclass
class FindingsChanged(Message):
    """The open findings (by key) and the ones that resolved while the app watched. ``first``: the run's
    first evaluation (its findings are the run's past, not news)."""

    open: dict[str, Finding]
    resolved: dict[str, Finding]
    first: bool = False


@dataclass
class MetricsChanged(Message):
    summary: dict[str, Any]
    outcome: RunOutcome | None = None  # how the run ended or stands, from its logs


@dataclass
class SeriesChanged(Message):
    """The plotted series: name -> the last values (one per step, or per Stat line)."""

    series: dict[str, list[float]]


@dataclass
class HistoryRead(Message):
    """Every file open at start has been read from its beginning (the follower's ``HistoryComplete``)."""

    files: int
    lines: int
    seconds: float


@dataclass
class HistoryProgress(Message):
    """How much of the history (the bytes before following began) is read: ``percent`` of ``total`` bytes."""

    percent: int
    files: int
    total: int


@dataclass
class VerdictRead(Message):
    """``a1x-tui --check``'s report on the run, read at the start of a read-only attach (its findings by
    ``finding_key``, as the follower keys them); or why there is none."""

    report: Report | None
    findings: dict[str, Finding] = field(default_factory=dict)
    error: str | None = None


@dataclass
class LinesWanted(Message):
    """The logs tab asks for lines it no longer keeps: a window of ``source`` around ``lineno``."""

    source: str
    lineno: int


@dataclass
class ExcerptRead(Message):
    """Lines of ``source`` read from its file around ``lineno`` (``error``: why not)."""

    source: str
    lineno: int
    first_lineno: int
    lines: tuple[LogLine, ...]
    error: str | None = None


@dataclass
class FollowProblem(Message):
    message: str


@dataclass
class RunStateChanged(Message):
    """The supervisor's state (``state.json``'s object); ``live``: a supervisor answered on the socket."""

    state: dict[str, Any] | None
    live: bool
    note: str | None = None


@dataclass(frozen=True, slots=True)
class HostGpus:
    """One node's GPUs as last sampled."""

    host: str
    snapshot: GpuSnapshot | None
    processes: tuple[ProcessSample, ...] = ()
    driver: str | None = None
    simulated: bool = False
    note: str | None = None  # NVML unavailable there, the role join's caveat...


@dataclass
class GpusSampled(Message):
    hosts: list[HostGpus]
    note: str | None = None  # why there is nothing to show


@dataclass(frozen=True, slots=True)
class RunSummary:
    """A run directory the start screen lists."""

    run_dir: Path
    status: str
    message: str = ""
    current_stage: str | None = None
    updated_at: str | None = None
    live: bool = False


@dataclass
class RunsListed(Message):
    runs: list[RunSummary]
    roots: list[Path] = field(default_factory=list)


@dataclass
class RunChosen(Message):
    """A run to open: picked on the runs list, or the one the wizard has just started. The app shows
    its dashboard over the runs list."""

    target: RunTarget


@dataclass
class NewRunChosen(Message):
    """``n`` on the runs list: the app opens the wizard."""


@dataclass
class DiskChecked(Message):
    """Free space beside one path field of the wizard."""

    field_id: str
    text: str


@dataclass
class PreflightFinished(Message):
    report: Report | None
    text: str
    error: str | None = None


@dataclass
class RunLaunched(Message):
    run_dir: Path | None
    output: str
    error: str | None = None


@dataclass
class FixPlanned(Message):
    """The TOML change that cures a finding (``diff``), or why there is none (``refused``)."""

    key: str
    toml: Path | None
    diff: str | None
    refused: str | None = None
    sha256: str | None = None


@dataclass
class FixApplied(Message):
    key: str
    toml: Path
    backup: Path | None
    summary: str
    error: str | None = None
    written: bool = True  # False: the file already said what the fix sets


@dataclass
class CommandFinished(Message):
    """An ``a1x-tui stop/restart`` the dashboard ran: its one-line answer."""

    action: str
    ok: bool
    output: str
