"""Subscriber queues: bursts merge, metrics replace, bounds drop display lines but never findings."""

from __future__ import annotations

import threading

from a1x_diagnostics.events import Role, Source
from a1x_diagnostics.findings import Evidence, Finding, Severity
from a1x_diagnostics.live import (
    FileReset,
    FindingRaised,
    FindingResolved,
    FindingUpdated,
    HistoryLoaded,
    HistoryProgress,
    LinesAppended,
    MetricsUpdated,
    RunSwitched,
    Subscription,
)

A = Source("logs/policy_0.log", Role.POLICY, 0)
B = Source("logs/rollout_0.log", Role.ROLLOUT, 0)


def lines(source: Source, first: int | None, *texts: str, partial: str | None = None) -> LinesAppended:
    return LinesAppended(source=source, first_lineno=first, lines=texts, partial=partial)


def finding(n_evidence: int = 1) -> Finding:
    return Finding(
        id="stalled",
        severity=Severity.CRITICAL,
        title="t",
        explanation="e",
        evidence=[Evidence(file="controller.log", line=i, text="x") for i in range(1, n_evidence + 1)],
    )


def test_lines_of_one_file_merge_while_queued_across_other_files() -> None:
    sub = Subscription()
    sub.put(lines(A, 1, "a1", "a2"))
    sub.put(lines(B, 7, "b7"))
    sub.put(lines(A, 3, "a3", partial="a4 so f"))
    assert sub.drain() == [
        LinesAppended(source=A, first_lineno=1, lines=("a1", "a2", "a3"), partial="a4 so f"),
        LinesAppended(source=B, first_lineno=7, lines=("b7",)),
    ]


def test_a_reset_is_a_barrier_for_merging() -> None:
    sub = Subscription()
    sub.put(lines(A, 10, "old"))
    sub.put(FileReset(source=A, reason="truncated"))
    sub.put(lines(A, 1, "new"))
    got = sub.drain()
    assert [type(m) for m in got] == [LinesAppended, FileReset, LinesAppended]
    assert got[2] == LinesAppended(source=A, first_lineno=1, lines=("new",))


def test_run_switch_is_a_barrier_for_every_file() -> None:
    sub = Subscription()
    sub.put(lines(A, 1, "x"))
    sub.put(RunSwitched(run_name="logs_2", previous="logs_1"))
    sub.put(lines(A, 1, "y"))
    assert len(sub.drain()) == 3


def test_unknown_line_numbers_become_known_when_merged() -> None:
    sub = Subscription()
    sub.put(lines(A, None, "p", "q"))
    sub.put(lines(A, 12, "r"))
    assert sub.drain() == [LinesAppended(source=A, first_lineno=10, lines=("p", "q", "r"))]


def test_history_chunks_merge_and_keep_done() -> None:
    sub = Subscription()
    sub.put(HistoryLoaded(source=A, first_lineno=1, lines=("h1",)))
    sub.put(HistoryLoaded(source=A, first_lineno=2, lines=("h2",), done=True))
    sub.put(HistoryLoaded(source=A, first_lineno=3, lines=(), done=True))
    got = sub.drain()
    assert got[0] == HistoryLoaded(source=A, first_lineno=1, lines=("h1", "h2"), done=True)


def test_metrics_replace_the_one_still_queued() -> None:
    sub = Subscription()
    sub.put(MetricsUpdated(summary={"step": 1}))
    sub.put(lines(A, 1, "x"))
    sub.put(MetricsUpdated(summary={"step": 2}))
    got = sub.drain()
    assert got == [MetricsUpdated(summary={"step": 2}), LinesAppended(source=A, first_lineno=1, lines=("x",))]


def test_history_progress_replaces_the_one_still_queued_and_not_the_metrics() -> None:
    sub = Subscription()
    sub.put(HistoryProgress(bytes_read=1, bytes_total=10, files=1))
    sub.put(MetricsUpdated(summary={"step": 1}))
    sub.put(HistoryProgress(bytes_read=7, bytes_total=10, files=1))
    assert sub.drain() == [HistoryProgress(bytes_read=7, bytes_total=10, files=1), MetricsUpdated(summary={"step": 1})]


def test_finding_updates_fold_into_the_queued_raise_but_not_across_a_resolve() -> None:
    sub = Subscription()
    sub.put(FindingRaised(finding=finding(1), key="stalled"))
    sub.put(FindingUpdated(finding=finding(2), key="stalled"))
    assert sub.drain() == [FindingRaised(finding=finding(2), key="stalled")]
    sub.put(FindingRaised(finding=finding(1), key="stalled"))
    sub.put(FindingResolved(finding_id="stalled", key="stalled"))
    sub.put(FindingRaised(finding=finding(1), key="stalled"))
    sub.put(FindingUpdated(finding=finding(3), key="stalled"))
    got = sub.drain()
    assert [type(m) for m in got] == [FindingRaised, FindingResolved, FindingRaised]
    assert got[0] == FindingRaised(finding=finding(1), key="stalled")
    assert got[2] == FindingRaised(finding=finding(3), key="stalled")


def test_a_slow_consumer_loses_old_display_lines_counted_never_findings() -> None:
    sub = Subscription(max_lines=100, max_messages=5)
    sub.put(FindingRaised(finding=finding(), key="stalled"))
    for i in range(0, 1000, 10):
        sub.put(lines(A, i + 1, *(f"line {i + k + 1}" for k in range(10))))
    for _ in range(20):
        sub.put(FileReset(source=B, reason="deleted"))
    got = sub.drain()
    assert isinstance(got[0], FindingRaised)
    kept = [m for m in got if isinstance(m, LinesAppended)]
    assert sum(len(m.lines) for m in kept) == 100
    assert kept[0].skipped == 900 and kept[0].first_lineno == 901 and kept[0].lines[0] == "line 901"
    assert sub.dropped_lines == 900
    assert sum(isinstance(m, FileReset) for m in got) == 4
    assert sub.dropped_messages == 16


def test_kinds_filter_what_a_subscriber_receives() -> None:
    sub = Subscription({FindingRaised})
    sub.put(lines(A, 1, "x"))
    sub.put(FindingRaised(finding=finding(), key="k"))
    assert [type(m) for m in sub.drain()] == [FindingRaised]


def test_get_waits_for_a_message_and_on_ready_fires_once_per_burst() -> None:
    ready = []
    sub = Subscription(on_ready=lambda: ready.append(1))
    assert sub.get(timeout=0.01) is None
    t = threading.Timer(0.05, lambda: sub.put(lines(A, 1, "late")))
    t.start()
    assert sub.get(timeout=5) == lines(A, 1, "late")
    sub.put(lines(B, 1, "x"))
    sub.put(lines(B, 2, "y"))
    assert ready == [1, 1]
    sub.close()
    assert list(sub) == [lines(B, 1, "x", "y")]
    assert sub.get() is None
