"""Following a Cosmos-RL run while it writes: tailer, incremental diagnostics, messages.

No Textual import: the app, the supervisor and ``a1x-tui watch`` all subscribe the same way::

    factory, notes = engine_diagnosis(config_path)   # notes: a TOML that could not be used...
    follower = RunFollower(path, diagnosis=factory)
    sub = follower.subscribe({FindingRaised, FindingResolved})
    follower.start()
    for message in sub:  # ends when the follower stops
        ...

Design and measured overhead: ``docs/live.md``.
"""

from __future__ import annotations

from a1x_diagnostics.live._diagnose import Diagnosis, DiagnosisFactory, Evaluation
from a1x_diagnostics.live._engine import EngineDiagnosis, engine_diagnosis
from a1x_diagnostics.live._findings import FindingTracker, finding_key
from a1x_diagnostics.live._follower import FollowOptions, RunFollower
from a1x_diagnostics.live._layout import Layout
from a1x_diagnostics.live._layout import resolve as resolve_layout
from a1x_diagnostics.live._mounts import filesystem_type, is_network_fs
from a1x_diagnostics.live._queue import Subscription
from a1x_diagnostics.live.messages import (
    MESSAGE_TYPES,
    FileAppeared,
    FileReset,
    FindingRaised,
    FindingResolved,
    FindingUpdated,
    FollowError,
    HistoryComplete,
    HistoryLoaded,
    HistoryProgress,
    LinesAppended,
    Message,
    MetricsUpdated,
    OutcomeChanged,
    RunSwitched,
)

__all__ = [
    "MESSAGE_TYPES",
    "Diagnosis",
    "DiagnosisFactory",
    "EngineDiagnosis",
    "Evaluation",
    "FileAppeared",
    "FileReset",
    "FindingRaised",
    "FindingResolved",
    "FindingTracker",
    "FindingUpdated",
    "FollowError",
    "FollowOptions",
    "HistoryComplete",
    "HistoryLoaded",
    "HistoryProgress",
    "Layout",
    "LinesAppended",
    "Message",
    "MetricsUpdated",
    "OutcomeChanged",
    "RunFollower",
    "RunSwitched",
    "Subscription",
    "engine_diagnosis",
    "filesystem_type",
    "finding_key",
    "is_network_fs",
    "resolve_layout",
]
