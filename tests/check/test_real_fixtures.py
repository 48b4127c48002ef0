"""The detectors on REAL Cosmos-RL runs recorded on a GPU (tests/fixtures/cosmos/<version>/<scenario>/).

Most important: the healthy runs of both versions give no finding (docs/reference/cosmos-rl.md §15: healthy runs
print ERROR/WARNING lines that are not failures). The one exception is documented in §15.1: at rev
747d1bd every run, healthy or not, finishes training and then never exits, so a shutdown_hang warning
is the truth there. Each fault scenario must give its finding, and nothing outside its story.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from a1x_diagnostics.engine import check
from a1x_diagnostics.findings import Severity, Status

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "cosmos"
HANG_747 = {"shutdown_hang"}  # §15.1: 747d1bd runs do not exit after the last step

# (version, scenario): (ids that must be raised, ids that may also be raised)
EXPECTED: dict[tuple[str, str], tuple[set[str], set[str]]] = {
    ("v0.4.4", "healthy"): (set(), set()),
    ("v0.4.4", "healthy_debug"): (set(), set()),
    ("747d1bd", "healthy"): (set(), HANG_747),
    ("747d1bd", "healthy_debug"): (set(), HANG_747),
    ("v0.4.4", "grpo_collapse"): ({"grpo_collapse"}, set()),
    ("747d1bd", "grpo_collapse"): ({"grpo_collapse"}, HANG_747),
    # recorded as buffer growth, but the buffer sat at the default throttle ceiling (allowed_outdated_steps = 4,
    # pending 28/32, staleness 4): the throttle doing its job (§13.1, §15), as in every healthy run; the genuine
    # growth is tests/fixtures/real-runs/*/rollout_buffer_growth (a raised ceiling, tests/detectors)
    ("v0.4.4", "buffer_growth"): (set(), set()),
    # cut by the recorder's deadline at step 31/40 (fixtures README): stopped from outside before the end
    ("747d1bd", "buffer_growth"): ({"run_incomplete"}, set()),
    ("v0.4.4", "weight_sync_gating"): ({"weight_sync_lag", "outdated_steps_below_sync"}, set()),
    # 747d1bd's version gate is silent (§14): receives every 4 steps with allowed_outdated_steps 3 show it
    ("747d1bd", "weight_sync_gating"): ({"outdated_steps_below_sync", "weight_sync_lag"}, HANG_747),
    ("v0.4.4", "rollout_killed"): ({"replica_died"}, {"stalled"}),
    ("747d1bd", "rollout_killed"): ({"replica_died"}, {"stalled"}),
    ("v0.4.4", "policy_killed"): ({"replica_died"}, {"stalled"}),
    ("747d1bd", "policy_killed"): ({"replica_died"}, {"stalled"}),
    ("v0.4.4", "rollout_oom"): ({"vllm_oom", "replica_died"}, {"stalled"}),
    ("747d1bd", "rollout_oom"): ({"vllm_oom", "replica_died"}, {"stalled"}),
    ("v0.4.4", "rollout_oom_start"): ({"vllm_oom", "replica_died"}, {"stalled"}),
    ("v0.4.4", "shutdown_hang"): ({"shutdown_hang"}, set()),
    ("v0.4.4", "insufficient_gpus"): ({"insufficient_gpus"}, set()),
    ("747d1bd", "insufficient_gpus"): ({"insufficient_gpus"}, set()),
    # waiting forever for a replica on a node that does not exist, until the recorder's SIGTERM (the outcome
    # says terminated; insufficient_gpus explains it)
    ("v0.4.4", "too_many_replicas"): ({"insufficient_gpus"}, {"stalled"}),
    ("747d1bd", "too_many_replicas"): ({"insufficient_gpus"}, {"stalled"}),
    ("v0.4.4", "ipc_port_collision"): ({"replica_died"}, set()),
    # the second recording (fixtures README "Second recording")
    ("v0.4.4", "healthy_long"): (set(), set()),
    ("747d1bd", "healthy_long"): (set(), HANG_747),
    # frozen, then stopped from outside: both facts (stalled, and run_incomplete for the stop, a warning)
    ("v0.4.4", "policy_stopped"): ({"stalled", "run_incomplete"}, set()),
    ("747d1bd", "policy_stopped"): ({"stalled", "run_incomplete"}, set()),
    ("v0.4.4", "rollout_stopped_start"): ({"stalled", "run_incomplete"}, set()),
    ("747d1bd", "rollout_stopped_start"): ({"stalled", "run_incomplete"}, set()),
    ("v0.4.4", "reward_raises"): ({"replica_died"}, {"stalled"}),
    ("747d1bd", "reward_raises"): ({"replica_died"}, {"stalled"}),
    ("v0.4.4", "entry_import_error"): ({"process_crashed"}, set()),
    ("747d1bd", "entry_import_error"): ({"process_crashed"}, set()),
    ("v0.4.4", "launcher_import_error"): ({"process_crashed"}, set()),
    ("747d1bd", "launcher_import_error"): ({"process_crashed"}, set()),
}
RECORDED = sorted(p for p in FIXTURES.glob("*/*") if p.is_dir() and (any(p.glob("logs_*")) or (p / "run.out").exists()))


def _cases() -> list[tuple[str, str]]:
    return [key for key in EXPECTED if (FIXTURES / key[0] / key[1]).is_dir()]


@pytest.mark.parametrize(("version", "scenario"), _cases(), ids=[f"{v}-{s}" for v, s in _cases()])
def test_recorded_scenario_gives_its_findings_and_no_others(version: str, scenario: str) -> None:
    report = check(FIXTURES / version / scenario)  # post-mortem: now=None
    ids = {f.id for f in report.findings}
    required, allowed = EXPECTED[(version, scenario)]
    assert required <= ids, f"missing {sorted(required - ids)}; got {sorted(ids)}"
    assert ids <= required | allowed, f"unexpected {sorted(ids - required - allowed)}"
    for finding in report.findings:
        assert finding.evidence, finding.id
        assert all(e.line is None or e.line >= 1 for e in finding.evidence)


@pytest.mark.parametrize("version", ["v0.4.4", "747d1bd"])
def test_healthy_runs_are_not_failures(version: str) -> None:
    for scenario in ("healthy", "healthy_debug", "healthy_long"):
        path = FIXTURES / version / scenario
        if not path.is_dir():
            pytest.skip(f"{path} not recorded")
        report = check(path)
        assert report.status in (Status.OK, Status.WARNING), [f.id for f in report.findings]
        assert not [f for f in report.findings if f.severity is Severity.CRITICAL]
        assert report.metrics["step"] == report.metrics["total_steps"]


def test_every_recorded_run_gives_a_report() -> None:
    """Scenarios recorded after this table was written still get checked end to end (no crash)."""
    for path in RECORDED:
        report = check(path)
        assert report.status is not Status.UNKNOWN, (path, report.summary)
        assert report.checks and report.files


def test_vllm_oom_phase_on_real_runs() -> None:
    start = FIXTURES / "v0.4.4" / "rollout_oom_start"
    mid = FIXTURES / "v0.4.4" / "rollout_oom"
    if not (start.is_dir() and mid.is_dir()):
        pytest.skip("OOM scenarios not recorded")
    phase_start = next(f for f in check(start).findings if f.id == "vllm_oom").data["phase"]
    phase_mid = next(f for f in check(mid).findings if f.id == "vllm_oom").data["phase"]
    assert (phase_start, phase_mid) == ("engine_start", "runtime")


@pytest.mark.slow  # every recorded run followed live
def test_live_interleaved_order_gives_the_batch_findings() -> None:
    """The live follower feeds files interleaved: same findings as --check."""
    from itertools import zip_longest

    from a1x_diagnostics.engine import Collector
    from a1x_diagnostics.parsing import discover, read_file

    for path in RECORDED:
        layout = discover(path)
        collector = Collector()
        streams = []
        for file_path, source in layout.files:
            stat = file_path.stat()
            collector.note_file(source, size=stat.st_size, mtime=stat.st_mtime)
            streams.append(list(read_file(file_path, source)))
        for group in zip_longest(*streams):
            for event in group:
                if event is not None:
                    collector.add(event)
        live = {f.id for f in collector.evaluate()}
        assert live == {f.id for f in check(path).findings}, path
