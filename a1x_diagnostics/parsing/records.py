"""Records: the bulk lines ``--check``'s native reader reads in C, and the events they stand for.

A record is a named tuple ``kind, line, rank, ts, raw, *fields`` (``RECORDS[kind]``; its fields are
those of its shape's definition in ``_rules``, ``_templates``); the Collector takes runs of them in
columns (``a1x_diagnostics.engine``) instead of building an event for each. A record kept for evidence
is a ``Pending`` until a detector reads it: its event is then built from its line by the parser.

A stretch of records (no other line between them) gives its weight-sync records as a *batch* a
family (``BATCHES``, of ``BATCH_FIELDS``): their count, times and values in columns, and the records
of each end, the only ones the store keeps. The native reader itself: ``native_available()`` (the C
extension is built and not turned off), ``prefetch(files)`` (start its threads early),
``run_items(files, on_error)`` (per file, events and runs of records in line order).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from a1x_diagnostics.events import Event, Source
from a1x_diagnostics.parsing._bulk import FIELDS, RECORDS, TEMPLATES, prefetch, run_items
from a1x_diagnostics.parsing._bulk import available as native_available
from a1x_diagnostics.parsing._parser import LineParser
from a1x_diagnostics.parsing._templates import (
    BATCH_FIELDS,
    BATCH_TYPES,
    BATCHES,
    FAMILY,
    MOVES_STEP,
    RECORD_HEAD,
    Bulk,
    event_kwargs,
)

RECORD_TYPES: frozenset[type] = frozenset(RECORDS.values())


def is_record(item: Any) -> bool:
    """Whether ``item`` (an item of the native reader's runs) is a record rather than an event."""
    return type(item) in RECORD_TYPES


class Pending(NamedTuple):
    """An event not built yet: the record of a bulk line and where it was read."""

    source: Source
    mtime: float | None
    record: Any

    def event(self) -> Event:
        """The event the parser reads from the record's line (the same, field for field:
        tests/parsing/test_bulk.py)."""
        parser = LineParser(self.source, mtime=self.mtime, keep_unknown=False)
        rec = self.record
        events = parser.ungrouped_line_events(rec.line, rec.raw.decode("utf-8", "replace"))
        if len(events) != 1:
            raise AssertionError(f"{self.source.path}:{rec.line}: a bulk line gave {len(events)} events")
        return events[0]


def event_fields(record: Any) -> dict[str, Any]:
    """The fields of the event ``record`` stands for, as its shape's definition folds them (a Train
    report's ``metrics`` read from the pairs' text), beyond the line's context."""
    t = TEMPLATES[record.kind]
    return event_kwargs(t, {name: getattr(record, name) for name in FIELDS[record.kind]})


def built(item: Any) -> Any:
    """``item``, or the event of a ``Pending``."""
    return item.event() if type(item) is Pending else item


__all__ = ["BATCHES", "BATCH_FIELDS", "BATCH_TYPES", "FAMILY", "FIELDS", "MOVES_STEP", "RECORDS", "RECORD_HEAD",
           "RECORD_TYPES", "Bulk", "Pending", "built", "event_fields", "is_record", "native_available", "prefetch",
           "run_items"]
