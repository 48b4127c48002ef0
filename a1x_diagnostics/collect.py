"""Reading a run into bounded memory: the ``Collection`` (the store and the metrics) and ``read_into``.

What a run's events leave for the detectors, without the detectors: ``engine.Collector`` adds them
(``assess``). This module imports neither the detectors nor the report models (pydantic), so that
``a1x-tui --check`` can read a run in a child process while its parent imports those
(``a1x_diagnostics.reader_process``; docs/architecture.md, "Reading in a child process"); a test holds
that import apart.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from a1x_diagnostics.deadline import CheckTimeout
from a1x_diagnostics.detectors import EventStore, FileFacts
from a1x_diagnostics.events import Event, Source
from a1x_diagnostics.metrics import SERIES_CAPACITY, Metrics

if TYPE_CHECKING:
    from a1x_diagnostics.parsing import RunLayout

DEADLINE_EVERY = 2048  # events between two looks at the clock


class Collection:
    """Everything the detectors need from a stream of events, in bounded memory."""

    def __init__(self, *, keep: int = 16, series_capacity: int = SERIES_CAPACITY) -> None:
        self.store = EventStore(keep)
        self.metrics = Metrics(series_capacity)

    def add(self, event: Event) -> None:
        self.metrics.add(event, self.store.add(event))  # the store's epoch(event.ts), not computed twice

    def extend(self, events: Iterable[Event]) -> None:
        for event in events:
            self.add(event)

    def run_taker(self, source: Source, mtime: float | None) -> Callable[[list[tuple[Any, ...]]], None]:
        """What ``add`` does with each event, for runs of consecutive bulk records of one file
        (``parsing._bulk``): the same store and metrics, without building the events (a ``Pending``
        stands for each one kept for evidence, built if a detector reads it). Within a run only the
        order of records of one family matters (each feeds its own series, marks and store), so a
        run is taken a family at a time, in columns. ``tests/check/test_native_reader.py`` holds
        the two ways to the same state."""
        from a1x_diagnostics.columns import RunTaker

        return RunTaker(self.store, self.metrics, self.note_file(source), self.add, source, mtime).take

    def note_file(self, source: Source, *, size: int | None = None, mtime: float | None = None) -> FileFacts:
        """Make a file known (even one without any event) and record its size and mtime."""
        facts = self.store.files.get(source.path)
        if facts is None:
            facts = self.store.files[source.path] = FileFacts(source)
        if size is not None:
            facts.size = size
        if mtime is not None:
            facts.mtime = mtime
        return facts

    def note_files(self, layout: RunLayout) -> None:
        """Every file of ``layout`` known, with its size and mtime now (a file gone meanwhile is left out)."""
        for file_path, source in layout.files:
            try:
                st = file_path.stat()
            except OSError:
                continue
            self.note_file(source, size=st.st_size, mtime=st.st_mtime)


def read_into(collection: Collection, layout: RunLayout, deadline: float | None,
              watch: Callable[[], None] | None = None) -> None:
    """Every event of ``layout``'s files into ``collection``: through the native reader where it is
    built (bulk lines as records), else ``read_run``. Raises ``CheckTimeout`` past ``deadline``
    (``time.monotonic()``). ``watch`` is called as often as the clock is looked at (``--check``'s
    child process: whether its parent is still there)."""
    from a1x_diagnostics.parsing import read_run, records

    if records.native_available():
        add = collection.add
        n = DEADLINE_EVERY  # look at the clock after the first item, then every DEADLINE_EVERY events
        for source, mtime, items in records.run_items(layout.files, layout.unreadable.append):
            take = collection.run_taker(source, mtime)
            for item in items:
                if item.__class__ is list:
                    take(item)
                    n += len(item)
                else:
                    add(item)
                    n += 1
                if n >= DEADLINE_EVERY:
                    n = 0
                    if watch is not None:
                        watch()
                    if deadline is not None and time.monotonic() > deadline:
                        raise CheckTimeout
        return
    for i, event in enumerate(read_run(layout)):
        collection.add(event)
        if i % DEADLINE_EVERY == 0:
            if watch is not None:
                watch()
            if deadline is not None and time.monotonic() > deadline:
                raise CheckTimeout


@contextlib.contextmanager
def collector_aside() -> Iterator[None]:
    """While a run is read: what exists now (the imports' modules, classes, schemas) is left out of the
    cycle collector's walks, and it collects every 20,000 allocations, not 700, as records stream in
    (docs/parsing.md, "Fifth pass": 5-8 % of the wall on the dev VM). Undone after, for a caller that
    goes on in the same process (the tests call the CLI in theirs)."""
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
