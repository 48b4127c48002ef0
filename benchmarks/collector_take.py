"""The main thread's share of ``--check`` alone: a run's items fed to a fresh ``Collector``, timed apart
from the reader, with a digest of the state they leave.

Usage: ``python benchmarks/collector_take.py RUN_DIR [--repeat 7]``. Reads every item of the run once
through the native reader (``records.run_items``: events and runs of bulk records, as ``--check``'s
``engine._read_into`` gets them), keeps them in memory, then feeds them to a new ``Collector`` REPEAT
times and prints the least and median CPU seconds of one feed, and a digest of the Collector's state
after it (every series' points, the step windows, the metrics' counters, each file's facts and marks,
what the store keeps for evidence). Two checkouts, run in turn (``PYTHONPATH=CHECKOUT``), are the A/B of
a change to ``diagnostics.columns``/``metrics``/``detectors._store``: equal digests, then compare times.
On a 2-vCPU VM whose speed drifts, alternate the two several times and compare the least times
(docs/parsing.md, "Ninth pass").
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from diagnostics.engine import Collector
from diagnostics.parsing import discover, records


def _feed(layout: Any, files: list[tuple[Any, Any, list[Any]]]) -> Collector:
    collector = Collector()
    for _, source in layout.files:
        collector.note_file(source)
    for source, mtime, items in files:
        take = collector.run_taker(source, mtime)
        for item in items:
            if item.__class__ is list:
                take(item)
            else:
                collector.add(item)
    return collector


def _kept(retained: Any) -> tuple[Any, ...]:
    """A ``Retained``'s count and what it holds (a record for a ``Pending``, not built)."""
    held = [getattr(x, "record", x) for x in (*retained._first, *retained._last)]
    return retained.count, repr(held)


def _plain(value: Any, depth: int = 0) -> str:
    """``repr``, with objects that have no repr of their own (and a ``Pending``: its record) spelled out
    field by field, so that no address gets into the digest."""
    if type(value).__name__ == "Pending":
        return repr(value.record)
    text = repr(value)
    if " object at 0x" not in text or depth > 6:
        return text
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_plain(v, depth + 1) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_plain(v, depth + 1)}" for k, v in value.items()) + "}"
    names = (vars(value) if hasattr(value, "__dict__")
             else {n: getattr(value, n, None) for n in getattr(type(value), "__slots__", ())})
    return type(value).__name__ + "(" + ", ".join(f"{k}={_plain(v, depth + 1)}" for k, v in sorted(names.items())) + ")"


def digest(collector: Collector) -> str:
    m, store = collector.metrics, collector.store
    parts: list[Any] = []
    for name in sorted(m.series):
        s = m.series[name]
        parts.append((name, s.seen, tuple(s.values), tuple(s.ts), tuple(s.steps), s.last_value, s.last_ts, s.last_step))
    for name, value in sorted(vars(m).items()):
        if name != "series" and not callable(value):
            parts.append((name, _plain(value) if name != "windows" else repr(list(value))))
    parts.append((store.event_count, store.newest_ts, store.oldest_ts))
    for path, facts in sorted(store.files.items()):
        last = facts.last_item
        parts.append((path, facts.first_ts, facts.last_ts, facts.last_line, facts.events, repr(facts.first_marks),
                      repr(facts.marks), repr(getattr(last, "record", last))))
    for name in ("stats", "steps", "train_reports", "staleness", "prompt_rejected", "dynamic_sampling"):
        parts.append((name, _kept(getattr(store, name))))
    for table in ("weight_sync", "prefetch"):
        for key, retained in sorted(getattr(store, table).items()):
            parts.append((table, key, _kept(retained)))
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    if not records.native_available():
        print("collector_take: the C extension is not built (python setup.py build_ext --inplace)", file=sys.stderr)
        return 2
    layout = discover(args.run, None)
    files = [(source, mtime, list(items)) for source, mtime, items in records.run_items(layout.files, print)]
    count = sum(len(i) if i.__class__ is list else 1 for _, _, items in files for i in items)
    gc.freeze()  # as --check sets the collector aside while it reads (a1x_tui/commands/check.py)
    gc.set_threshold(20_000, 20, 20)
    times = []
    collector = None
    for _ in range(max(1, args.repeat)):
        t0 = time.process_time()
        collector = _feed(layout, files)
        times.append(time.process_time() - t0)
    assert collector is not None
    print(f"{args.run.name}: {count} items, feed CPU s least {min(times):.3f} median {statistics.median(times):.3f}"
          f" ({len(times)} feeds), state {digest(collector)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
