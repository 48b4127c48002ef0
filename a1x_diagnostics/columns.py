"""The column path: runs of the native reader's bulk records into the store and the metrics.

``--check``'s native reader (``a1x_diagnostics.parsing._bulk``) hands a file's lines of the bulk shapes
as records (``a1x_diagnostics.parsing.records``: named tuples of each shape's fields) in *runs*: lists
of records and, between them, the events of other classes. ``RunTaker.take`` does to the
``Collector``'s store and metrics what ``Collector.add`` would do with each record's event, without
building it: events and the records that move the step (``Step``) in order, each record with the
step and window it came in; then each family's store, marks and series in columns. A record kept
for evidence is a ``Pending``, built if a detector reads it. A batch (``records.BATCHES``: a stretch
of weight sends or receives in columns, with the records of each end) stands for its records, all
at the step it came in. ``tests/check/test_native_reader.py`` holds the two ways to the same state.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

from a1x_diagnostics.detectors import EventStore, FileFacts
from a1x_diagnostics.events import Event, Source, SyncPhase
from a1x_diagnostics.metrics import Metrics
from a1x_diagnostics.parsing.records import (
    BATCH_TYPES,
    BATCHES,
    FAMILY,
    MOVES_STEP,
    RECORD_TYPES,
    RECORDS,
    Bulk,
    event_fields,
)

_RECORDS = RECORD_TYPES
# The family of a record or batch by its class, for the records not taken in place: one lookup a record
# in ``take``'s loops, where an event or a record taken in place finds none.
_CLASS_FAMILY: dict[type, Bulk] = {
    **{cls: FAMILY[kind] for kind, cls in RECORDS.items() if kind not in MOVES_STEP},
    **{cls: family for family, cls in BATCHES.items()},
}
# Each shape has a class of its own, so a run's set of classes says its kinds without a loop in Python.
_NOT_IN_PLACE = frozenset(_CLASS_FAMILY)
_TS = attrgetter("ts")


def _segments(items: list[Any]) -> list[Any]:
    """A family's items in order: each batch alone, the records between them as lists."""
    out: list[Any] = []
    records: list[Any] = []
    for item in items:
        if type(item) in BATCH_TYPES:
            if records:
                out.append(records)
                records = []
            out.append(item)
        else:
            records.append(item)
    if records:
        out.append(records)
    return out


def _parts(items: list[Any], steps: list[Any] | None, now: Any) -> list[tuple[Any, Any]]:
    """``_segments`` of a family's items, each with its steps (``RunTaker.take``'s ``at``): a batch's
    one step (``now``, the metrics' step, without ``steps``), a list of records' steps, or None for all
    at the metrics' step."""
    if steps is None:
        return [(seg, now if type(seg) in BATCH_TYPES else None) for seg in _segments(items)]
    out: list[tuple[Any, Any]] = []
    i = 0
    for seg in _segments(items):
        if type(seg) in BATCH_TYPES:
            out.append((seg, steps[i]))
            i += 1
        else:
            out.append((seg, steps[i:i + len(seg)]))
            i += len(seg)
    return out


class RunTaker:
    """One file's runs of bulk records into ``store`` and ``metrics`` (``add``: the Collector's, for events)."""

    def __init__(self, store: EventStore, metrics: Metrics, facts: FileFacts, add: Callable[[Event], None],
                 source: Source, mtime: float | None) -> None:
        self.store, self.metrics, self.facts, self.add = store, metrics, facts, add
        self.head = (source, mtime)  # where a Pending's record was read

    def _mark(self, name: str, recs: list[Any]) -> None:
        self.facts.mark(name, recs[0].line, recs[0].ts)
        if len(recs) > 1:
            self.facts.mark(name, recs[-1].line, recs[-1].ts)

    def take(self, run: list[Any]) -> None:
        """One run: bulk records and, between them, events of other classes."""
        store, facts, metrics, head = self.store, self.facts, self.metrics, self.head
        families: dict[Bulk, tuple[list[Any], list[Any] | None]] = {}
        new_steps: list[Any] = []
        pending: list[int] = []  # the window's part of the records since the last event
        staleness: list[Any] = []
        step = metrics.step
        n = 0
        records = _RECORDS
        classes = set(map(type, run))
        records_only = classes <= _NOT_IN_PLACE
        # A batch's records share one step: no line between them moves it (``_bulk``, ``chunk``'s stretches).
        batched = not classes.isdisjoint(BATCH_TYPES)
        if records_only:
            # Records only, none that moves the step (replica logs): one step for all, families at once.
            n = len(run)
            if len(classes) == 1:
                families[_CLASS_FAMILY[type(run[0])]] = (run, None)
            else:
                for r in run:
                    kin = _CLASS_FAMILY[type(r)]
                    slot = families.get(kin)
                    if slot is None:
                        families[kin] = ([r], None)
                    else:
                        slot[0].append(r)
            stats_family = families.get(Bulk.STAT)
            if stats_family is not None:
                pending = [r.pending for r in stats_family[0]]
            stale_family = families.get(Bulk.STALENESS)
            if stale_family is not None:
                staleness = stale_family[0]
        class_family = _CLASS_FAMILY
        stat, stale = Bulk.STAT, Bulk.STALENESS
        for item in () if records_only else run:
            family = class_family.get(type(item))
            if family is None:
                # An event, or a record taken in place: it may close the step window, so the records
                # before it close their part.
                metrics.window_segment(pending, staleness)
                pending, staleness = [], []
                if type(item) not in records:
                    self.add(item)
                    step = metrics.step
                    continue
                if item.kind == Bulk.TRAIN_REPORT:
                    metrics.train_report(event_fields(item)["metrics"], item.ts, store.pending(head, item))
                elif metrics.step_record(item, store.pending(head, item)):
                    new_steps.append(item)
                step = metrics.step
                family = FAMILY[item.kind]  # a Bulk is an int: its kind finds it
            n += 1
            slot = families.get(family)
            if slot is None:
                slot = families[family] = ([], [])
            slot[0].append(item)
            slot[1].append(step)  # type: ignore[union-attr]
            if family is stat:
                pending.append(item.pending)
            elif family is stale:
                staleness.append(item)
        metrics.window_segment(pending, staleness)
        if not n:
            return
        low = high = None
        last_rec: Any = None
        seg: Any  # a batch, or a list of records (``_segments``)
        seg_at: Any
        for family, (recs, _) in families.items():
            for seg in _segments(recs) if batched and family in BATCHES else (recs,):
                if type(seg) in BATCH_TYPES:
                    lo, hi, end = seg.lo, seg.hi, seg.kept[-1]
                    n += seg.n - 1
                else:
                    times = list(map(_TS, seg))
                    lo, hi, end = min(times), max(times), seg[-1]
                low = lo if low is None or lo < low else low
                high = hi if high is None or hi > high else high
                if last_rec is None or end.line > last_rec.line:
                    last_rec = end
        assert low is not None and high is not None
        store.event_count += n
        facts.events += n
        if last_rec.line > facts.last_line:
            facts.last_line = last_rec.line
        # The run's last line, where it ends with records: those after its last event are in line order
        # but for batches, each where its first record was, so the latest of the families' last records.
        last = type(run[-1])
        if last in records or last in BATCH_TYPES:
            facts.last_item = store.pending(head, last_rec)
        if facts.first_ts is None or low < facts.first_ts:
            facts.first_ts = low
        if facts.last_ts is None or high > facts.last_ts:
            facts.last_ts = high
        if store.newest_ts is None or high > store.newest_ts:
            store.newest_ts = high
        if store.oldest_ts is None or low < store.oldest_ts:
            store.oldest_ts = low
        for family, (recs, steps) in families.items():
            # The metrics' step only grows: first and last equal to it, no event of the run changed it.
            at: list[Any] | None = None if steps is None or steps[0] == steps[-1] == metrics.step else steps
            if family == Bulk.STAT:
                store.stats.extend_pending(head, recs)
                self._mark("stat", recs)
                metrics.stats(recs, at)
            elif family == Bulk.RECV_DONE:
                for seg, seg_at in _parts(recs, at, metrics.step) if batched else ((recs, at),):
                    if type(seg) in BATCH_TYPES:
                        store.sync_records(SyncPhase.RECV_DONE, facts, head, seg.kept, seg.n)
                        metrics.recv_batch(seg, seg_at)
                    else:
                        store.sync_records(SyncPhase.RECV_DONE, facts, head, seg)
                        metrics.recvs(seg, seg_at)
            elif family == Bulk.PREFETCH:  # kept per event name, 8 each (``EventStore._prefetch``)
                name = recs[0].event
                if all(r.event == name for r in recs):
                    store.retain_pending(store.prefetch, name, head, recs, 8)
                else:
                    by_name: dict[str, list[Any]] = {}
                    for r in recs:
                        by_name.setdefault(r.event, []).append(r)
                    for name, named in by_name.items():
                        store.retain_pending(store.prefetch, name, head, named, 8)
                self._mark("prefetch", recs)
            elif family == Bulk.SEND_DONE:
                for seg in _segments(recs) if batched else (recs,):
                    if type(seg) in BATCH_TYPES:
                        store.sync_records(SyncPhase.POLICY_SEND_DONE, facts, head, seg.kept, seg.n)
                    else:
                        store.sync_records(SyncPhase.POLICY_SEND_DONE, facts, head, seg)
            elif family == Bulk.PROMPT_REJECTED:
                store.prompt_rejected.extend_pending(head, recs)
                self._mark("prompt_rejected", recs)
                metrics.prompt_gaps(recs, at)
            elif family == Bulk.STALENESS:
                store.staleness.extend_pending(head, recs)
                metrics.stalenesses(recs, at)
            elif family == Bulk.TRAIN_REPORT:
                store.train_reports.extend_pending(head, recs)
                self._mark("train_report", recs)
            elif family == Bulk.STEP:
                store.steps.extend_pending(head, recs)
                self._mark("step", recs)
                if new_steps:
                    metrics.step_series(new_steps)
            else:  # Bulk.DYNAMIC_OUTDATED
                store.dynamic_sampling.extend_pending(head, recs)
                metrics.dynamic_counts({"outdated": sum(r.outdated for r in recs)})
