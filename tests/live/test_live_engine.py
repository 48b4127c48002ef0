"""The live diagnosis gives what ``--check`` gives: same events per file, same findings per run."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from live_helpers import FAST, collect

from a1x_diagnostics.engine import check
from a1x_diagnostics.events import Event
from a1x_diagnostics.live import EngineDiagnosis, MetricsUpdated, RunFollower, engine_diagnosis
from a1x_diagnostics.parsing import LineParser, discover

EXAMPLES = Path(__file__).resolve().parents[2] / "a1x_diagnostics" / "examples"
RUNS = sorted(p for p in EXAMPLES.iterdir() if p.is_dir() and not p.name.startswith("_"))


def _all_files() -> list[tuple[Path, object]]:
    return [(path, source) for run in RUNS for path, source in discover(run).files]


@pytest.mark.parametrize(("path", "source"), _all_files(), ids=lambda v: getattr(v, "name", ""))
def test_prefiltered_feeding_gives_the_events_of_feeding_every_line(path: Path, source: object) -> None:
    from a1x_diagnostics.events import Source

    assert isinstance(source, Source)
    lines = path.read_text(errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    reference = LineParser(source, keep_unknown=False)
    expected: list[Event] = []
    for n, text in enumerate(lines, 1):
        for seg in [p for p in text.split("\r") if p] or [""]:
            expected.extend(reference.feed(n, seg))
    expected.extend(reference.flush())

    diag = EngineDiagnosis()
    got: list[Event] = []
    diag.collector.add = got.append  # type: ignore[method-assign]
    rng = random.Random(7)
    i = 0
    while i < len(lines):  # chunks of any size: a traceback may straddle two of them
        k = rng.randint(1, 9)
        diag.feed(source, i + 1, lines[i : i + k])
        i += k
    diag.end_file(source)
    assert got == expected
    assert expected, "an example file without any event tests nothing"


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_following_a_finished_run_finds_what_check_finds(run: Path) -> None:
    factory, _ = engine_diagnosis()
    follower = RunFollower(str(run), options=FAST, diagnosis=factory)
    sub = follower.subscribe({MetricsUpdated})
    with follower:
        collect(sub, lambda ms: any(isinstance(m, MetricsUpdated) for m in ms))  # the first evaluation
        live = sorted(f.id for f in follower.open_findings())
    report = check(run, now=time.time())
    assert live == sorted(f.id for f in report.findings)
