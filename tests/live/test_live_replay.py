"""The same run, the same verdict, live or batch (issue 34 point 7).

Every recorded run (``tests/fixtures/cosmos/**``, ``tests/fixtures/real-runs/cosmos-rl-*/**``) is replayed
line by line in timestamp order into the live diagnosis (``EngineDiagnosis``, what ``watch``, ``attach``
and the supervisor feed): its files interleaved, in batches of one file's consecutive lines, each file
settled (``end_file``) whenever it went quiet for the follower's ``idle_flush`` and at the end, its
writes dated by its lines' stamps. Judged at the same moment (``now``) as ``--check`` judges the final
files, the open findings are exactly ``--check``'s: just after the last line, an hour later, and after
the fact.

And a run is a run from its first Cosmos-RL line: logs holding only the launch scripts' preamble are
followed (``unknown_reason`` is None), not refused as "not a Cosmos-RL run".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from a1x_diagnostics.engine import check, unknown_reason
from a1x_diagnostics.events import epoch
from a1x_diagnostics.findings import Status
from a1x_diagnostics.live import EngineDiagnosis, FollowOptions
from a1x_diagnostics.live._findings import finding_key
from a1x_diagnostics.parsing import LayoutError, RunLayout, discover, iter_lines
from a1x_diagnostics.parsing._shapes import shape_of

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
IDLE_FLUSH = FollowOptions().idle_flush


def _runs() -> list[Path]:
    """Every recorded run folder; where the launcher failed before any role log, its captured output."""
    out = []
    folders = [p for p in sorted((FIXTURES / "cosmos").glob("*/*")) if p.is_dir() and p.parent.name != "recording"]
    for folder in folders + [p for p in sorted(FIXTURES.glob("real-runs/cosmos-rl-*/*")) if p.is_dir()]:
        try:
            discover(folder)
            out.append(folder)
        except LayoutError:
            out.append(folder / "run.out")
    return out


RUNS = _runs()


def _timeline(layout: RunLayout) -> list[tuple[float, int, int, str]]:
    """(time, file index, line number, text) of every line, in the order they were written: by stamp, a
    line without one at its predecessor's (a file's first lines at its first stamp)."""
    out: list[tuple[float | None, int, int, str]] = []
    first: dict[int, float] = {}
    for fi, (path, _) in enumerate(layout.files):
        last: float | None = None
        with open(path, "rb") as f:
            for lineno, text in iter_lines(f):
                ts = epoch(shape_of(text).ts)
                if ts is not None:
                    last = ts
                    first.setdefault(fi, ts)
                out.append((last, fi, lineno, text))
    timed = [(t if t is not None else first.get(fi, 0.0), fi, n, x) for t, fi, n, x in out]
    return sorted(timed, key=lambda r: (r[0], r[1], r[2]))


def _replayed(layout: RunLayout) -> tuple[EngineDiagnosis, float]:
    """The live diagnosis after the run's lines, fed in the order they were written; its newest stamp."""
    diag = EngineDiagnosis()
    for path, source in layout.files:
        diag.file_stat(source, 0, path.stat().st_mtime)  # as the follower stats a file it opens
    lines = _timeline(layout)
    batch: list[tuple[int, str]] = []
    current: int | None = None
    last_write: dict[int, float] = {}

    def give() -> None:
        if batch and current is not None:
            source = layout.files[current][1]
            diag.feed(source, batch[0][0], [text for _, text in batch])
            diag.file_stat(source, 0, last_write[current])  # written when its stamp says
            batch.clear()

    for t, fi, n, text in lines:
        if fi != current:
            give()
            current = fi
        if fi in last_write and t - last_write[fi] > IDLE_FLUSH:  # quiet meanwhile: the follower settled it
            give()
            diag.end_file(layout.files[fi][1])
        batch.append((n, text))
        last_write[fi] = t
    give()
    for _, source in layout.files:
        diag.end_file(source)
    return diag, max((t for t, *_ in lines), default=0.0)


@pytest.mark.parametrize("run", RUNS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_a_run_replayed_line_by_line_ends_with_the_findings_of_check(run: Path) -> None:
    layout = discover(run)
    diag, newest = _replayed(layout)
    for moment in (newest + 5.0, newest + 3600.0, None):
        live = diag.evaluate(moment) if moment is not None else diag.collector.assess(None)
        batch = check(run, now=moment)
        assert sorted(map(finding_key, live.findings)) == sorted(map(finding_key, batch.findings)), moment
        assert live.outcome.state is batch.outcome.state, moment  # type: ignore[union-attr]


def test_a_run_is_a_run_from_its_first_cosmos_rl_line(tmp_path: Path) -> None:
    """Replica logs holding only ``launch_replica.sh``'s preamble, a controller log only
    ``launch_controller.sh``'s (docs/reference/cosmos-rl.md §2.8): the run has begun."""
    logs = tmp_path / "logs_20261205-120000"
    logs.mkdir()
    (tmp_path / "logs_latest").symlink_to(logs.name)
    (logs / "controller.log").write_text("[Controller] Using script: /opt/entry.py\n"
                                         "Controller CMD: python /opt/entry.py --port 8100 --config /tmp/x.toml\n")
    (logs / "rollout_0.log").write_text("[Cosmos-RL] ROLLOUT Pre-setting environment variable NCCL_CUMEM_ENABLE=0\n"
                                        "Launching command: torchrun --nproc-per-node=1 --nnodes=1 /opt/entry.py\n")
    (logs / "policy_0.log").write_text("[Cosmos-RL] POLICY Pre-setting environment variable NCCL_CUMEM_ENABLE=0\n")
    assert unknown_reason(tmp_path) is None
    report = check(tmp_path)
    assert report.status is not Status.UNKNOWN and report.outcome is not None
