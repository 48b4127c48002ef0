"""What the live follower tells its subscribers: small frozen dataclasses named as past events.

toolong's habit (Textualize/toolong keeps its messages in one ``messages.py``, one concept per
module): every message a consumer can receive is declared here, and high-rate messages can be
merged or replaced while still queued so that a fast log cannot flood a slow consumer
(``a1x_diagnostics.live._queue``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from a1x_diagnostics.events import Source
from a1x_diagnostics.findings import CheckResult, Finding, RunOutcome


@dataclass(frozen=True, slots=True, kw_only=True)
class LinesAppended:
    """Complete lines appended to ``source`` (merged while queued: consecutive lines of one file).

    ``first_lineno`` is the 1-based number of ``lines[0]`` in the file, or ``None`` while the lines
    before the point where following began are still being counted by the back-fill (a file that
    was already large when the run was opened); from then on it is exact. ``offset`` is the byte
    offset of ``lines[0]``, always exact. ``skipped`` lines were dropped before ``lines[0]``
    because this subscriber fell too far behind (they are still in the file). ``partial`` is the
    file's unterminated last line, shown provisionally after an idle time; the next message for
    this file supersedes it.
    """

    source: Source
    first_lineno: int | None
    lines: tuple[str, ...]
    offset: int = 0
    skipped: int = 0
    partial: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryLoaded:
    """Lines from before the point where following began (back-fill), oldest first, in chunks.

    They precede every ``LinesAppended`` of the same file. ``done`` marks the last chunk;
    ``abandoned`` says the history was cut short because the file was truncated, rotated or deleted
    while it was being read. ``skipped``: lines dropped before ``lines[0]`` for a slow subscriber.
    With ``FollowOptions.history_tail`` a file's history comes as one message, its last lines
    (``first_lineno`` says where they start), once it is read.
    """

    source: Source
    first_lineno: int
    lines: tuple[str, ...]
    done: bool = False
    abandoned: bool = False
    skipped: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class FileAppeared:
    """A log file of the run is now followed (at start, or created later: a new replica, a stage).
    ``path``: where it is on disk (``source.path`` is its name in the run)."""

    source: Source
    path: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryProgress:
    """How much of the history is read: ``bytes_read`` of ``bytes_total`` (the bytes before the live
    start of the ``files`` opened at their end). Replaces the one still queued; none after
    ``HistoryComplete``."""

    bytes_read: int
    bytes_total: int
    files: int


@dataclass(frozen=True, slots=True, kw_only=True)
class FileReset:
    """A followed file started over: its later lines are numbered from 1 again.

    ``reason``: ``truncated`` (copytruncate or an in-place rewrite), ``replaced`` (renamed away or
    deleted, and a new file took its name), ``deleted`` (gone; followed again if re-created).
    ``cut``: the truncation cut a partial line, which was dropped (never delivered as a line).
    """

    source: Source
    reason: str
    cut: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSwitched:
    """The followed run changed (``logs_latest`` moved to a new ``logs_<ts>``): forget the old one.

    Findings and metrics of the previous run are dropped without ``FindingResolved`` messages:
    they were not cured, the run they described is over.
    """

    run_name: str | None
    previous: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FindingRaised:
    """A finding appeared. Its key (``finding_key``) identifies it until it is resolved."""

    finding: Finding
    key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FindingUpdated:
    """An open finding changed: more evidence, new numbers or another severity."""

    finding: Finding
    key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FindingResolved:
    """The condition behind an open finding cleared (e.g. steps resumed after ``stalled``)."""

    finding_id: str
    key: str
    finding: Finding | None = None  # the last version seen, for display


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricsUpdated:
    """A fresh metrics summary and the state of each check (replaces any older one still queued)."""

    summary: dict[str, Any]
    checks: tuple[CheckResult, ...] = ()
    outcome: RunOutcome | None = None  # how the run ended or stands (``a1x_diagnostics.findings.RunOutcome``)


@dataclass(frozen=True, slots=True, kw_only=True)
class OutcomeChanged:
    """The run's outcome moved to another state (running -> stalled, -> crashed, -> completed...)."""

    outcome: RunOutcome
    previous: RunOutcome | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryComplete:
    """Every file open at start has been read from its beginning; findings are evaluated from now on.

    Until this message no finding is raised: a detector that sees half of a run's history would
    raise false alarms (``stalled`` on a run whose last steps are not read yet).
    """

    files: int
    lines: int
    seconds: float


@dataclass(frozen=True, slots=True, kw_only=True)
class FollowError:
    """Something the follower could not do (a directory it cannot read, a detector that crashed)."""

    message: str
    path: str | None = None


Message = (
    LinesAppended
    | HistoryLoaded
    | FileAppeared
    | FileReset
    | RunSwitched
    | FindingRaised
    | FindingUpdated
    | FindingResolved
    | MetricsUpdated
    | OutcomeChanged
    | HistoryComplete
    | HistoryProgress
    | FollowError
)

MESSAGE_TYPES: tuple[type, ...] = (
    LinesAppended,
    HistoryLoaded,
    FileAppeared,
    FileReset,
    RunSwitched,
    FindingRaised,
    FindingUpdated,
    FindingResolved,
    MetricsUpdated,
    OutcomeChanged,
    HistoryComplete,
    HistoryProgress,
    FollowError,
)
