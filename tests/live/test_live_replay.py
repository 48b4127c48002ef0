"""The same run, the same verdict, live or batch (issue 34 point 7).

Every recorded run (``tests/fixtures/cosmos/**``, ``tests/fixtures/real-runs/cosmos-rl-*/**``) is replayed
line by line in timestamp order into the live diagnosis (``EngineDiagnosis``, what ``watch``, ``attach``
and the supervisor feed): its files interleaved, in batches of one file's consecutive lines, each file
settled (``end_file``) whenever it went quiet for the follower's ``idle_flush`` and at the end, its
writes dated by its lines' stamps. Judged at the same moment (``now``) as ``--check`` judges the final
files, the open findings are exactly ``--check``'s: just after the last line, an hour later, and after
the fact.

And the real follower (``RunFollower``, what ``watch`` runs), with inotify and polling, on each recorded
run written again into a fresh folder as the run wrote it (``run_writer.RunWriter``: the files created
and appended to in the order of their lines' stamps, the run pressed into half a second): it ends with the
findings and outcome of ``--check`` of the same files, each finding raised once, the run never switched.

And a run is a run from its first Cosmos-RL line: logs holding only the launch scripts' preamble are
followed (``unknown_reason`` is None), not refused as "not a Cosmos-RL run".
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from run_writer import FIXTURES, RunWriter, recorded_runs, timeline

from a1x_diagnostics.engine import check, unknown_reason
from a1x_diagnostics.findings import Status
from a1x_diagnostics.live import (
    EngineDiagnosis,
    FindingRaised,
    FollowOptions,
    RunFollower,
    RunSwitched,
    engine_diagnosis,
)
from a1x_diagnostics.live._findings import finding_key
from a1x_diagnostics.parsing import RunLayout, discover

IDLE_FLUSH = FollowOptions().idle_flush
RUNS = recorded_runs()


def _replayed(layout: RunLayout) -> tuple[EngineDiagnosis, float]:
    """The live diagnosis after the run's lines, fed in the order they were written; its newest stamp."""
    diag = EngineDiagnosis()
    for path, source in layout.files:
        diag.file_stat(source, 0, path.stat().st_mtime)  # as the follower stats a file it opens
    lines = [(t, fi, n, raw.decode("utf-8", "replace").removesuffix("\n")) for t, fi, n, raw in timeline(layout)]
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


# The follower's defaults but for how often it looks and judges: a run written in half a second.
QUICK = FollowOptions(poll_interval=0.2, evaluate_interval=0.2, quiet_evaluate_interval=0.5, rescan_interval=1.0,
                      batch_delay=0.01)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["inotify", "poll"])
@pytest.mark.parametrize("run", RUNS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_the_follower_of_a_run_being_written_ends_with_the_findings_of_check(run: Path, mode: str,
                                                                            tmp_path: Path) -> None:
    # --check first, on the same files written at once: a check beside the follower's thread would race it
    # in CPython 3.11's ast.literal_eval (a SystemError, python/cpython#106905), a problem of neither.
    done = RunWriter(run, tmp_path / "done", span=0.0)
    done.prepare()
    done.write()
    done.close()
    expected = check(done.target, now=time.time())
    want = sorted(map(finding_key, expected.findings))
    assert expected.outcome is not None

    writer = RunWriter(run, tmp_path / "live", span=0.5)
    writer.prepare()
    factory, _ = engine_diagnosis(target=writer.target)
    follower = RunFollower(str(writer.target), options=replace(QUICK, poll=mode == "poll"), diagnosis=factory)
    sub = follower.subscribe({FindingRaised, RunSwitched})
    with follower:
        writer.write()
        writer.close()
        deadline = time.monotonic() + 20
        while True:
            got = sorted(map(finding_key, follower.open_findings()))  # their own keys, as --check's are
            outcome = follower.outcome
            if ((got == want and outcome is not None and outcome.state is expected.outcome.state)
                    or time.monotonic() > deadline):
                break
            time.sleep(0.1)
    messages = sub.drain()
    assert got == want
    assert outcome is not None and outcome.state is expected.outcome.state
    raised = Counter(m.key for m in messages if isinstance(m, FindingRaised))
    assert [k for k, n in raised.items() if n > 1] == []
    assert [m for m in messages if isinstance(m, RunSwitched)] == []


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
