"""``--check`` gives the same report with Hyperscan and with the pure-Python line search, and the
Collector routes by class (a subclass of an event class is treated as that class)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from a1x_diagnostics.engine import Collector, check
from a1x_diagnostics.events import Role, Source, Stat, SyncPhase, WeightSync
from a1x_diagnostics.parsing import _scan

ROOT = Path(__file__).resolve().parents[2]
RUNS = sorted(p for p in (ROOT / "tests" / "fixtures" / "cosmos").glob("*/*") if p.is_dir() and any(p.glob("logs_*")))
RUNS += [ROOT / "a1x_diagnostics" / "examples" / "healthy", ROOT / "a1x_diagnostics" / "examples" / "sick"]


def _report(path: Path) -> str:
    return re.sub(r'"generated_at":"[^"]*"', "", check(path, now=1.75e9).model_dump_json())


@pytest.mark.skipif(not _scan.HYPERSCAN, reason="hyperscan not installed")
@pytest.mark.parametrize("run", RUNS, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_report_is_the_same_with_either_line_search(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_scan, "ENGINE_FROM", 0)  # Hyperscan on every block, however small
    fast = _report(run)
    monkeypatch.setattr(_scan, "HYPERSCAN", False)
    assert _report(run) == fast


@dataclass(frozen=True, slots=True, kw_only=True)
class LateStat(Stat):
    """A subclass, as a later event version might add."""

    note: str = ""


def test_collector_treats_a_subclass_as_its_event_class() -> None:
    src = Source("controller.log", Role.CONTROLLER)
    col = Collector()
    for i in range(3):
        col.add(LateStat(source=src, line=i + 1, text="", ts=datetime(2025, 6, 9, 12, 0, i), samples=i,
                         completion_tokens=10 * i, pending=5 + i, in_flight=1, outdated_filtered=0, elapsed_s=float(i)))
    col.add(WeightSync(source=src, line=9, text="", phase=SyncPhase.RECV_DONE, seconds=1.5))
    assert col.store.stats.count == 3 and col.store.files["controller.log"].has("stat")
    assert col.metrics.last("pending_rollouts") == 7 and col.metrics.last("weight_recv_s") == 1.5
    assert col.store.files["controller.log"].has("sync:recv_done")
