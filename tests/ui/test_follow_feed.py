"""The follow worker's translation of follower messages: batches, finding bookkeeping, run switches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from a1x_diagnostics.events import Role, Source
from a1x_diagnostics.findings import Evidence, Finding, Severity
from a1x_diagnostics.live import (
    FileAppeared,
    FindingRaised,
    FindingResolved,
    HistoryComplete,
    HistoryLoaded,
    HistoryProgress,
    LinesAppended,
    MetricsUpdated,
    RunSwitched,
)
from a1x_tui.ui.feeds.follow import FollowFeed
from a1x_tui.ui.messages import FindingsChanged, FollowedRunChanged, HistoryRead, LinesArrived, LogFileSeen
from a1x_tui.ui.messages import HistoryProgress as ReadingProgress

ROLLOUT = Source("logs_1/rollout_0.log", Role.ROLLOUT, 0)
STAGE = Source("stages/train.log", Role.STAGE)
OOM = Finding(
    id="vllm_oom",
    severity=Severity.CRITICAL,
    title="t",
    explanation="e",
    evidence=[Evidence(file=ROLLOUT.path, line=3, text="x")],
)


def feed() -> tuple[FollowFeed, list[Any]]:
    posted: list[Any] = []
    return FollowFeed(Path("/nowhere"), None, posted.append), posted


def test_lines_of_a_batch_become_one_message_with_labels() -> None:
    f, posted = feed()
    f.flush(
        [
            FileAppeared(source=ROLLOUT),
            HistoryLoaded(source=ROLLOUT, first_lineno=1, lines=("a", "b"), done=True),
            LinesAppended(source=ROLLOUT, first_lineno=3, lines=("c",)),
            LinesAppended(source=STAGE, first_lineno=1, lines=("s",)),
        ]
    )
    assert isinstance(posted[0], LogFileSeen) and posted[0].label == "rollout_0"
    lines = [m for m in posted if isinstance(m, LinesArrived)]
    assert len(lines) == 1
    assert [(c.label, c.history, tuple(ln.text for ln in c.lines)) for c in lines[0].chunks] == [
        ("rollout_0", True, ("a", "b")),
        ("rollout_0", False, ("c",)),
        ("[train]", False, ("s",)),
    ]


def test_findings_move_from_open_to_resolved_and_a_run_switch_forgets_them() -> None:
    f, posted = feed()
    f.flush([FindingRaised(finding=OOM, key="vllm_oom@rollout_0")])
    assert posted[-1] == FindingsChanged({"vllm_oom@rollout_0": OOM}, {})
    f.flush([FindingResolved(finding_id="vllm_oom", key="vllm_oom@rollout_0", finding=OOM)])
    assert posted[-1] == FindingsChanged({}, {"vllm_oom@rollout_0": OOM})
    f.flush([RunSwitched(run_name="logs_2", previous="logs_1")])
    assert isinstance(posted[-2], FollowedRunChanged) and posted[-1] == FindingsChanged({}, {})


def test_the_first_evaluation_says_its_findings_even_none_and_marks_them_as_the_runs_past() -> None:
    f, posted = feed()
    f.flush([MetricsUpdated(summary={"step": 3})])
    assert posted[-1] == FindingsChanged({}, {}, first=True)
    f.flush([FindingRaised(finding=OOM, key="vllm_oom@rollout_0"), MetricsUpdated(summary={"step": 4})])
    assert posted[-1] == FindingsChanged({"vllm_oom@rollout_0": OOM}, {}, first=False)


def test_a_files_history_tail_is_posted_prepared_and_numbered_with_where_the_file_is() -> None:
    """The follower sends a file's history as its tail (FollowOptions.history_tail, held in tests/live):
    the feed prepares those lines, numbered from where the tail starts, and says where the file is."""
    f, posted = feed()
    f.flush([FileAppeared(source=ROLLOUT, path="/runs/x/logs_1/rollout_0.log"),
             HistoryLoaded(source=ROLLOUT, first_lineno=4901, lines=tuple(f"l{n}" for n in range(4901, 5001)),
                           done=True)])
    seen, arrived = posted
    assert isinstance(seen, LogFileSeen) and seen.path == "/runs/x/logs_1/rollout_0.log"
    assert isinstance(arrived, LinesArrived)
    (chunk,) = arrived.chunks
    assert chunk.history and chunk.done and [ln.lineno for ln in chunk.lines] == list(range(4901, 5001))
    assert chunk.lines[-1].text == "l5000"


def test_history_progress_is_the_followers_bytes_read_until_the_history_is_read() -> None:
    f, posted = feed()
    f.flush([HistoryProgress(bytes_read=0, bytes_total=2**30, files=193)])
    f.flush([HistoryProgress(bytes_read=2**29, bytes_total=2**30, files=193)])
    f.flush([HistoryProgress(bytes_read=2**29 + 1, bytes_total=2**30, files=193)])  # the same percent: not again
    f.flush([HistoryProgress(bytes_read=2**30, bytes_total=2**30, files=193)])  # read, not yet evaluated: 99 %
    f.flush([HistoryComplete(files=193, lines=10, seconds=1.0), HistoryProgress(bytes_read=2**30, bytes_total=2**30,
                                                                                 files=193)])
    said = [(m.percent, m.files, m.total) for m in posted if isinstance(m, ReadingProgress)]
    assert said == [(0, 193, 2**30), (50, 193, 2**30), (99, 193, 2**30)]
    assert isinstance(posted[-1], HistoryRead)


def test_the_follow_worker_runs_in_a_child_process_and_ends_with_its_stop() -> None:
    import threading
    import time

    from ui_helpers import OOM_RUN

    from a1x_tui.ui.feeds.follow_child import follow_apart
    from a1x_tui.ui.messages import HistoryRead

    posted: list[Any] = []
    stop = threading.Event()
    worker = threading.Thread(target=follow_apart, args=(OOM_RUN, None, posted.append, stop))
    worker.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(isinstance(m, FindingsChanged) and m.open for m in posted):
        time.sleep(0.1)
    stop.set()
    worker.join(10)
    assert not worker.is_alive()  # the child was stopped and reaped
    assert any(isinstance(m, HistoryRead) and m.files >= 3 for m in posted)
    lines = [ln for m in posted if isinstance(m, LinesArrived) for c in m.chunks for ln in c.lines]
    assert any(ln.source.endswith("rollout_0.log") and ln.lineno == 128 for ln in lines)
    found = next(m for m in posted if isinstance(m, FindingsChanged) and m.open)
    assert {f.id for f in found.open.values()} >= {"vllm_oom", "replica_died"}


def test_the_verdict_is_the_check_report_keyed_as_the_follower_keys_findings() -> None:
    import threading

    from ui_helpers import OOM_RUN

    from a1x_diagnostics.live import finding_key
    from a1x_tui.ui.feeds.verdict import read_verdict
    from a1x_tui.ui.messages import VerdictRead

    posted: list[Any] = []
    read_verdict(OOM_RUN, None, posted.append, threading.Event())
    (verdict,) = posted
    assert isinstance(verdict, VerdictRead) and verdict.report is not None and verdict.error is None
    assert verdict.report.outcome is not None and verdict.report.outcome.state.value == "crashed"
    assert set(verdict.findings) == {finding_key(f) for f in verdict.report.findings}
    assert {f.id for f in verdict.findings.values()} >= {"vllm_oom", "replica_died"}


def test_the_remote_feed_prepares_lines_says_progress_and_marks_a_runs_first_findings_as_its_past() -> None:
    """attach HOST:PATH: the far side's stream gives the dashboard what the follow worker gives it."""
    from a1x_tui.ui.feeds.remote import RemoteFeed
    from a1x_tui.ui.messages import HistoryProgress as ReadingProgress

    posted: list[Any] = []
    import types

    remote = RemoteFeed(types.SimpleNamespace(host="node1"), posted.append, Path("/nowhere"))
    remote.take({"type": "file", "file": ROLLOUT.path, "role": "rollout", "replica": "rollout_0"})
    remote.take({"type": "progress", "percent": 42, "files": 193, "total": 2**30})
    remote.take({"type": "lines", "file": ROLLOUT.path, "role": "rollout", "replica": "rollout_0", "first_lineno": 7,
                 "lines": ["[cosmos] 2026-12-04 23:47:03,218 - cosmos - INFO - hello"], "history": True,
                 "done": True})
    remote.take({"type": "history_complete", "files": 1, "lines": 7, "seconds": 1.0})
    finding = OOM.model_dump(mode="json")
    remote.take({"type": "finding_raised", "key": "vllm_oom@rollout_0", "finding": finding})
    remote.take({"type": "finding_raised", "key": "stalled", "finding": {**finding, "id": "stalled"}})
    assert posted[1] == ReadingProgress(42, 193, 2**30)
    (chunk,) = next(m for m in posted if isinstance(m, LinesArrived)).chunks
    (line,) = chunk.lines
    assert (line.lineno, line.label, chunk.history, chunk.done) == (7, "rollout_0", True, True)
    assert line.text.endswith("hello") and line.ts is not None  # stamped and folded as the follow worker does
    said = [m for m in posted if isinstance(m, FindingsChanged)]
    assert [(sorted(m.open), m.first) for m in said] == [(["vllm_oom@rollout_0"], True),
                                                         (["stalled", "vllm_oom@rollout_0"], False)]
