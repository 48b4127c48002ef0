"""``--check``'s native reader leaves the Collector exactly as the events would.

The native reader hands bulk lines on as records and the Collector takes runs of them in columns
(``Collector.run_taker``) without building their events. Everything the detectors can see must be
what ``Collector.add`` of every event gives: each series point, step window, counter, file fact and
mark, and every event kept for evidence (built from its line when read). Checked on every recorded
run, the built-in examples, and random runs that mix bulk lines with everything that can break a
run of them (steps, tracebacks, redraws, damaged and out-of-order lines), in small reading blocks.
"""

from __future__ import annotations

import math
import random
import subprocess
import sys
from array import array
from collections import deque
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import pytest

from a1x_diagnostics.detectors._store import EventStore, FileFacts, Retained
from a1x_diagnostics.engine import Collector, _read_into, check
from a1x_diagnostics.metrics import Metrics, Series, StepWindow, Streak, StreakTracker
from a1x_diagnostics.parsing import _bulk, _prefilter, discover, read_run
from a1x_diagnostics.parsing._layout import RunLayout
from a1x_diagnostics.parsing.records import BATCH_TYPES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "parsing"))
from parsing_helpers import cosmos
from test_bulk import _random_file
from test_failure_lines import tb

pytestmark = pytest.mark.skipif(not _bulk.available(), reason="C extension not built")

ROOT = Path(__file__).resolve().parents[2]
RUNS = sorted(p for p in (ROOT / "tests" / "fixtures" / "cosmos").glob("*/*") if p.is_dir() and any(p.glob("logs_*")))
RUNS += [ROOT / "a1x_diagnostics" / "examples" / "healthy", ROOT / "a1x_diagnostics" / "examples" / "sick"]

_SKIP = {"_step_index", "_recent_hits"}  # caches and de-duplication windows that only look back


def state(value: Any) -> Any:
    """Everything reachable from ``value``, as plain data (NaN as a string, events by their repr)."""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else value
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, Retained):
        return ("retained", value.count, [repr(e) for e in value.items()])
    if isinstance(value, FileFacts):
        out = {f.name: state(getattr(value, f.name)) for f in fields(value) if f.name != "last_item"}
        out["last_event"] = repr(value.last_event)
        return out
    if isinstance(value, Streak):
        return ("streak", value.length, repr(value.start), repr(value.end))
    if isinstance(value, Series):
        return ("series", value.seen, value.stride, [state(p) for p in value.points()])
    if isinstance(value, (EventStore, Metrics, StreakTracker)):
        names = getattr(value, "__slots__", None) or vars(value)
        return {n: state(getattr(value, n)) for n in names if n not in _SKIP}
    if isinstance(value, StepWindow) or (is_dataclass(value) and not hasattr(value, "source")):
        return {f.name: state(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {repr(k): state(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, deque, array)):
        return [state(v) for v in value]
    return repr(value)  # events and sources: their repr holds every field


def _by_events(layout: RunLayout) -> Collector:
    collector = Collector()
    for _, source in layout.files:
        collector.note_file(source)
    for event in read_run(layout):
        collector.add(event)
    return collector


def _natively(layout: RunLayout) -> Collector:
    collector = Collector()
    for _, source in layout.files:
        collector.note_file(source)
    _read_into(collector, layout, None)
    return collector


def _same(layout: RunLayout) -> None:
    want = _by_events(layout)
    got = _natively(layout)
    assert state(got.store) == state(want.store)
    assert state(got.metrics) == state(want.metrics)
    assert [(f.id, f.evidence) for f in got.evaluate(now=1.75e9)] == [(f.id, f.evidence) for f in
                                                                       want.evaluate(now=1.75e9)]


# Weight-sync records come in batches where a stretch of records holds ``BATCH_LEAST`` of a family (33):
# at 1, every stretch is read in batches, in blocks too small for 33.
LEAST = pytest.mark.parametrize("least", [_bulk.BATCH_LEAST, 1], ids=["batches-of-33", "every-stretch-batched"])


@pytest.mark.skipif(not _prefilter.available(), reason="GNU grep not installed")
@pytest.mark.parametrize("run", RUNS, ids=lambda p: f"{p.parent.name}-{p.name}")
@LEAST
def test_recorded_runs_leave_the_same_state(run: Path, least: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_bulk, "CHUNK_BYTES", 4096)  # many blocks even in a small file
    monkeypatch.setattr(_bulk, "BATCH_LEAST", least)
    _same(discover(run))


@pytest.mark.skipif(not _prefilter.available(), reason="GNU grep not installed")
@pytest.mark.parametrize("seed", range(6))
@LEAST
def test_random_runs_leave_the_same_state(tmp_path: Path, seed: int, least: int,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_bulk, "CHUNK_BYTES", 1024)
    monkeypatch.setattr(_bulk, "BATCH_LEAST", least)
    rng = random.Random(seed)
    logs = tmp_path / "logs_20250609-120000"
    logs.mkdir()
    names = ["controller.log", *(f"policy_{i}.log" for i in range(3)), *(f"rollout_{i}.log" for i in range(4))]
    for name in names:
        (logs / name).write_text("".join(_random_file(rng) + "\n" for _ in range(rng.randint(1, 4))),
                                 encoding="utf-8", newline="")
    layout = discover(logs)
    assert len(layout.files) == len(names)
    _same(layout)


def _receive(second: int, step: object, tail: bool) -> str:
    line = (f"[cosmos] 2025-06-09 12:00:{second:02d},250 - cosmos - INFO - [Rollout] All 27 at step {step} recv "
            "operations finished in 0.057 seconds with 0.470947265625 MB received.")
    return line + (" While 0 non-trainable splitted params skipped and 27 trainable splitted params transferred."
                   if tail else "")


@pytest.mark.skipif(not _prefilter.available(), reason="GNU grep not installed")
@pytest.mark.parametrize("shapes", ["new", "old", "both"])
@pytest.mark.parametrize("unstamped", [False, True], ids=["all-at-a-step", "one-at-step-None"])
@LEAST
def test_the_latest_weight_receive_of_a_block_out_of_order_is_the_events(tmp_path: Path, shapes: str,
                                                                          unstamped: bool, least: int,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A replica's receives in one block, out of time order, and one at step None or not: what the
    weight-sync detectors read as the last receive, (time, step), is the latest of them, as the events
    give it (taken one record a line, and as a batch)."""
    monkeypatch.setattr(_bulk, "BATCH_LEAST", least)
    logs = tmp_path / "logs_20250609-120000"
    logs.mkdir()
    order = [(1, 3), (3, 5), (2, 7), *([(4, "None")] if unstamped else []), (3, 2)]
    lines = [_receive(sec, step, tail=shapes == "new" or (shapes == "both" and i % 2 == 0))
             for i, (sec, step) in enumerate(order)]
    (logs / "rollout_0.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    layout = discover(logs)
    _same(layout)
    last = _natively(layout).metrics.last_recv
    assert last is not None and last[1] == 5  # 12:00:03 is the latest time, and 5 its highest step


def _batches_read(layout: RunLayout) -> list[Any]:
    """The batches the native reader hands on for ``layout``'s files."""
    return [item for _, _, items in _bulk.run_items(layout.files, print) for run in items if type(run) is list
            for item in run if type(item) in BATCH_TYPES]


def _replica_log(rng: random.Random, lines: int, rank: int | None = None) -> list[str]:
    """A rollout replica's receives in both shapes, now and then a prompt rejected or a line that gives no
    record (a candidate: it ends a stretch), out of time order here and there, one at step None."""
    out = []
    prefix = "" if rank is None else f"[rank{rank}]:"
    for i in range(lines):
        r = rng.random()
        if r < 0.03:
            out.append(cosmos("Number of rollout replicas: 2 with 1 gpus each", ts="2025-06-09 12:00:00,000"))
            continue
        if r < 0.08:
            out.append(prefix + cosmos("[Rollout rank=0] prompt rejected: prompt.weight_version=3, current weight "
                                       "version=9, allowed outdated=4, ceiling=7", ts="2025-06-09 12:00:01,000"))
            continue
        step = "None" if i == lines // 2 else i // 3 + rng.choice([0, 0, 0, -2])
        out.append(prefix + _receive(rng.randint(0, 59), step, tail=rng.random() < 0.5))
    return out


@pytest.mark.skipif(not _prefilter.available(), reason="GNU grep not installed")
@pytest.mark.parametrize("block", [16384, 1 << 20])
def test_a_long_replica_log_in_batches_leaves_the_same_state(tmp_path: Path, block: int,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Stretches of hundreds of receives and sends: read in batches that keep each end's 16 records and
    only count the rest, the store, series and latest receive are what their events give."""
    monkeypatch.setattr(_bulk, "CHUNK_BYTES", block)
    rng = random.Random(block)
    logs = tmp_path / "logs_20250609-120000"
    logs.mkdir()
    for i in range(2):
        (logs / f"rollout_{i}.log").write_text("\n".join(_replica_log(rng, 900)) + "\n", encoding="utf-8")
    send = ("[rank0]:[cosmos] 2025-06-09 12:00:{:02d},500 - cosmos - DEBUG - [Policy] All 27 at step {} send "
            "operations of finished in 0.004 seconds with 0.470947265625 MB sent. While 0 non-trainable splitted "
            "params skipped and 27 splitted params transferred.")  # as 747d1bd prints it (the recorded fixtures)
    (logs / "policy_0.log").write_text("\n".join(send.format(rng.randint(0, 59), k) for k in range(400)) + "\n",
                                       encoding="utf-8")
    layout = discover(logs)
    batches = _batches_read(layout)
    assert sum(b.n for b in batches) > 1500 and max(b.n for b in batches) > 2 * _bulk.BATCH_KEEP
    assert {type(b).__name__ for b in batches} == {"RecvDoneBatch", "SendDoneBatch"}
    _same(layout)


@pytest.mark.skipif(not _prefilter.available(), reason="GNU grep not installed")
@pytest.mark.parametrize("tb_rank", [0, None], ids=["another-rank", "no-rank"])
def test_a_traceback_across_a_batch_leaves_the_same_state(tmp_path: Path, tb_rank: int | None,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A traceback whose lines lie among a stretch of receives (another rank's, as torchrun interleaves
    them, or its own): the batch is read again one record a line, and every record no group took is
    taken, as the events give them."""
    calls: list[bool] = []
    unbatch = _bulk.unbatch

    def spy(path: Path, source: Any, batch: Any) -> list[Any]:
        got = unbatch(path, source, batch)
        calls.append(got != [batch])
        return got

    monkeypatch.setattr(_bulk, "unbatch", spy)
    monkeypatch.setattr(_bulk, "BATCH_LEAST", 1)  # the traceback's lines that hold a marker end stretches
    rng = random.Random(3)
    logs = tmp_path / "logs_20250609-120000"
    logs.mkdir()
    body = tb("torch.OutOfMemoryError: CUDA out of memory.", tb_rank)
    lines = _replica_log(rng, 60, rank=1)
    between = _replica_log(random.Random(4), 3 * len(body), rank=1)
    lines += [line for k, tb_line in enumerate(body) for line in (tb_line, *between[3 * k:3 * k + 3])]
    lines += _replica_log(rng, 60, rank=1)
    (logs / "rollout_0.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    layout = discover(logs)
    _same(layout)
    assert calls and all(calls)


def test_a_batch_whose_file_shrank_is_handed_on_as_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Read again after its file shrank, a batch stays what was read (not a partial set of records)."""
    logs = tmp_path / "logs_20250609-120000"
    logs.mkdir()
    path = logs / "rollout_0.log"
    path.write_text("\n".join(_receive(k % 60, k, tail=True) for k in range(100)) + "\n", encoding="utf-8")
    layout = discover(logs)
    (batch,) = _batches_read(layout)
    source = layout.files[0][1]
    assert [r.line for r in _bulk.unbatch(path, source, batch)] == list(range(1, 101))
    path.write_bytes(path.read_bytes()[:5000])
    assert _bulk.unbatch(path, source, batch) == [batch]


@pytest.mark.parametrize("run", RUNS[-2:], ids=lambda p: p.name)
def test_report_is_the_same_with_and_without_the_native_reader(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    native = check(run, now=1.75e9).model_dump(exclude={"generated_at"})
    monkeypatch.setenv("A1X_NO_NATIVE", "1")
    assert check(run, now=1.75e9).model_dump(exclude={"generated_at"}) == native


def test_a_prefetched_read_gives_the_same_report(tmp_path: Path) -> None:
    run = RUNS[-1]
    want = check(run, now=1.75e9).model_dump(exclude={"generated_at"})
    _bulk.prefetch(discover(run).files)  # what `a1x-tui --check` does before importing the detectors
    assert _bulk._started is not None
    assert check(run, now=1.75e9).model_dump(exclude={"generated_at"}) == want
    assert _bulk._started is None  # taken by that read
    _bulk.prefetch(discover(RUNS[0]).files)  # started for other files: not used, stopped
    stale = _bulk._started
    assert check(run, now=1.75e9).model_dump(exclude={"generated_at"}) == want
    assert stale is not None and stale.stop.is_set()


def test_an_abandoned_prefetch_does_not_hold_the_process(tmp_path: Path) -> None:
    logs = tmp_path / "logs_20250609-120000"
    logs.mkdir()
    line = b"[cosmos] 2025-06-09 12:00:00,000 - cosmos - INFO - [Controller] Stat: 1 samples, 2 completion tokens, " \
           b"3 pending rollouts, 0.5 seconds elapsed\n"
    for i in range(40):
        (logs / f"rollout_{i}.log").write_bytes(line * 20000)
    code = ("import sys; from pathlib import Path; from a1x_diagnostics.parsing import _bulk, discover; "
            "_bulk.AHEAD_CHUNKS = 1; _bulk.CHUNK_BYTES = 4096; _bulk.prefetch(discover(Path(sys.argv[1])).files)")
    done = subprocess.run([sys.executable, "-c", code, str(logs)], timeout=30, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
