"""The main thread's share of ``--check`` alone: a run's items fed to a fresh ``Collector``, timed apart
from the reader, with a digest of the state they leave.

Usage: ``python benchmarks/collector_take.py RUN_DIR [--repeat 7]``. Reads every item of the run once
through the native reader (``records.run_items``: events and runs of bulk records, as ``--check``'s
``engine._read_into`` gets them), keeps them in memory, then feeds them to a new ``Collector`` REPEAT
times and prints the least and median CPU seconds of one feed, and a digest of the Collector's state
after it (``state`` of ``tests/check/test_native_reader.py``: every series' points, step window,
counter, file fact and mark, and every event kept for evidence). Two checkouts, run in turn
(``PYTHONPATH=CHECKOUT``), are the A/B of a change to
``a1x_diagnostics.columns``/``metrics``/``detectors._store``: equal digests, then compare times. On a 2-vCPU
VM whose speed drifts, alternate the two several times and compare the least times (docs/parsing.md,
"Ninth pass").
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

from a1x_diagnostics.engine import Collector
from a1x_diagnostics.parsing import discover, records

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "check"))
from test_native_reader import state  # the tests' walk of the Collector's state, not a copy of it


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


def digest(collector: Collector) -> str:
    """A hash of what the detectors can see: ``state`` of the store and the metrics, the walk
    ``tests/check/test_native_reader.py`` holds the native reader to (events kept for evidence built)."""
    return hashlib.sha256(repr((state(collector.store), state(collector.metrics))).encode()).hexdigest()[:16]


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
