"""The closed-loop reader's parts on their own: lines, artifacts, the resolved config, the live path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from a1x_diagnostics.alpagym.artifacts import read_artifact
from a1x_diagnostics.alpagym.config import ResolvedConfigError, load_resolved
from a1x_diagnostics.alpagym.parser import parse_closed_loop
from a1x_diagnostics.closed_loop_events import CL, ClosedLoop
from a1x_diagnostics.engine import check
from a1x_diagnostics.events import Role, Signal, SignalKind, Source
from a1x_diagnostics.live import engine_diagnosis
from a1x_diagnostics.parsing import discover

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "alpagym"


def kinds(events: list) -> list:
    return [e.kind for e in events]


def test_the_three_families_and_an_exception_line_anywhere() -> None:
    rollout = Source("logs/logs_x/rollout_0.log", Role.ROLLOUT, 0)
    events = parse_closed_loop([
        "[rank0]:2026-07-01 12:00:01,250 INFO alpagym_runtime.alpasim.driver_server: Started AlpaGym driver "
        "session=abc123 seed=7",
        "[rank0]:2026-07-01 12:00:09,000 ERROR alpagym_runtime.x: something no rule names",
        "[rank0]:RuntimeError: Rollout payload exhausted retries: prompt_idx=3 collected=1/2",
        "[rank0]:2026-07-01 12:00:09,000 INFO alpagym_runtime.x: an INFO line no rule names",
    ], rollout)
    assert kinds(events) == [CL.SESSION_STARTED, SignalKind.ERROR_LINE, CL.PAYLOAD_EXHAUSTED]
    started = events[0]
    assert isinstance(started, ClosedLoop) and started.fields == {"uuid": "abc123", "seed": 7}
    assert started.rank == 0 and started.ts is not None and started.ts.second == 1 and started.line == 1
    assert events[2].fields == {"prompt_idx": 3, "collected": 1, "target": 2}
    sim = parse_closed_loop(["12:00:44.500 [W0] INFO:\tSession COMPLETED: uuid=abc123 scene=clipgt-a simulated "
                             "6.00 sim seconds in 41.50 wall clock seconds for 0.14x real time (total rollout 44.50s "
                             "incl. setup/warmup)"], Source("w.log", Role.SIMULATOR, 0))
    assert sim[0].fields["wall_s"] == 41.5 and sim[0].ts is None and sim[0].clock == "12:00:44.500"  # no date


def test_a_host_capture_skips_the_role_logs_it_tees_and_ends_the_launcher() -> None:
    host = Source("host.log", Role.LAUNCHER)
    events = parse_closed_loop([
        "\x1b[36mrollout_0   |\x1b[0m [rank0]:2026-07-01 12:00:01,250 INFO x: Started AlpaGym driver session=a seed=1",
        "2026-07-01 12:09:00,000 INFO root: Cosmos launcher completed",
    ], host)
    assert kinds(events) == [CL.COSMOS_COMPLETED, SignalKind.PROCESS_COMPLETED]
    assert isinstance(events[1], Signal)
    # the host's validation errors are its own: a replica's assertion of the same words is not one
    line = "ValueError: train_batch_per_replica(3) must be divisible by dp_shard_size(2) * mini_batch(1)"
    assert kinds(parse_closed_loop([line], host)) == [CL.HOST_CONFIG_REJECTED]
    assert parse_closed_loop([line], Source("policy_0.log", Role.POLICY, 0)) == []


def test_an_artifact_is_read_from_its_head_and_tail(tmp_path: Path) -> None:
    body = {"scene_id": "s", "session_uuid": "u1", "num_steps": 22,
            "policy_outputs": [{"replay_data": {"payload": [0.5] * 400_000}}], "executed_ego_trajectory": [],
            "route_waypoints": [], "metrics": {"aggregated": {"collision_any": 1.0}, "dense": {}},
            "reward": {"total": float("nan"), "report_metrics": {"progress": 0.5}}, "is_valid": True}
    path = tmp_path / "s_u1_x.json"
    path.write_text(json.dumps(body, indent=2))
    assert path.stat().st_size > 2_000_000
    art = read_artifact(path, "artifacts/s_u1_x.json")
    assert not isinstance(art, str)
    assert (art.uuid, art.scene, art.num_steps, art.metrics, art.terms) == ("u1", "s", 22, {"collision_any": 1.0},
                                                                           {"progress": 0.5})
    assert art.reward is not None and art.reward != art.reward  # NaN kept as NaN
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    problem = read_artifact(bad, "artifacts/bad.json")
    assert isinstance(problem, str) and problem.startswith("artifacts/bad.json: ") and "\n" not in problem


@pytest.mark.parametrize("text", ["a: [1, 2", "- just\n- a list\n", "\xff\xfe"])
def test_a_bad_resolved_config_is_one_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "resolved_config.yaml"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(ResolvedConfigError) as err:
        load_resolved(path)
    assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)


def test_a_bad_resolved_config_is_a_note_not_a_traceback(tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "20260701T120000Z-ab"
    shutil.copytree(next((FIXTURES / "healthy").iterdir()), run)
    (run / "resolved_config.yaml").write_text("cosmos: [unclosed")
    report = check(run)
    assert any(n.startswith("resolved config not used:") for n in report.notes)
    assert report.outcome is not None and report.outcome.state.value == "completed"


@pytest.mark.parametrize("name", ["healthy", "retry_storm", "reward_hacking", "port_conflict"])
def test_watch_reads_a_closed_loop_run_as_check_does(name: str) -> None:
    target = FIXTURES / name
    factory, _notes = engine_diagnosis(target=target)
    diagnosis = factory()
    for path, source in discover(target).files:
        lines = path.read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        diagnosis.feed(source, 1, lines)
        diagnosis.end_file(source)
    live = diagnosis.evaluate(now=0.0)
    assert sorted(f.id for f in live.findings) == sorted(f.id for f in check(target).findings)
    assert live.metrics["episodes_completed"] == check(target).metrics["episodes_completed"]
    series = diagnosis.collector.metrics.get("cl_collision_rate")
    assert series is not None and series.seen  # what the dashboard plots
