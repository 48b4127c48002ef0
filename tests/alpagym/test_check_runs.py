"""``--check`` on the AlpaGym fixture runs (tests/fixtures/alpagym/README.md: built from upstream message
strings, not recordings): what a user sees — the finding, its evidence, its fix, the exit code, the outcome."""

from __future__ import annotations

from pathlib import Path

import pytest

from a1x_diagnostics.engine import check, unknown_reason
from a1x_diagnostics.findings import SCHEMA_VERSION, Finding, Report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "alpagym"


def run(name: str) -> Report:
    return check(FIXTURES / name)


def ids(report: Report) -> list[str]:
    return [f.id for f in report.findings]


def finding(report: Report, fid: str) -> Finding:
    return next(f for f in report.findings if f.id == fid)


def test_a_healthy_closed_loop_run_is_ok_completed_with_its_closed_loop_metrics() -> None:
    report = run("healthy")
    assert report.exit_code == 0, [(f.id, f.explanation) for f in report.findings]
    assert report.outcome is not None and report.outcome.state.value == "completed"
    assert report.run and report.run.startswith("20260701T120000Z-")
    m = report.metrics
    assert m["step"] == 4 and m["total_steps"] == 4
    assert m["episodes_completed"] == 8 and m["episodes_retried"] == 0 and m["episodes_dropped"] == 0
    assert m["collision_rate"] == 0.0 and m["offroad_rate"] == 0.0
    assert m["progress"] > 0.5
    assert m["sim_episode_s"] == 41.5
    # every file of the run is read: role logs, AlpaSim's worker log, the host's terminal
    assert any(f.endswith("txt-logs/runtime_worker_0.log") for f in report.files)
    assert "host.log" in report.files


def test_the_schema_says_1_3() -> None:
    assert SCHEMA_VERSION == "1.3"
    assert run("healthy").schema_version == "1.3"


@pytest.mark.parametrize(
    ("name", "fid", "quoted", "exit_code", "outcome"),
    [
        ("bringup_failed", "alpasim_bringup_failed", "Wizard exited before readiness with code 1", 2, "crashed"),
        ("horizon", "horizon_mismatch", "AlpaSim rollout horizon does not match", 2, "crashed"),
        ("nurec_denied", "nurec_access_denied", "cannot access the gated dataset", 2, "crashed"),
        ("retry_storm", "episode_failures", "Dropping payload after exhausted retries", 2, "crashed"),
        ("nonfinite", "nonfinite_values", "[GRPO:grad-guard] non-finite reduced gradient", 2, "crashed"),
        ("p2p_hang", "nccl_p2p_hang", "weight sync receives", 2, "stalled"),
        ("port_conflict", "port_conflict", "Controller will be launched locally on port 29501", 1, "completed"),
        ("reward_hacking", "reward_hacking", "Step: 8/8", 1, "completed"),
        ("stopped_early", "run_incomplete", "Step: 2/4", 1, "incomplete"),  # logs that only stop: a warning
    ],
)
def test_each_failure_class_is_named_with_its_lines(name: str, fid: str, quoted: str, exit_code: int,
                                                   outcome: str) -> None:
    report = run(name)
    assert fid in ids(report), (name, ids(report))
    f = finding(report, fid)
    assert any(quoted in e.text for e in f.evidence), [e.text for e in f.evidence]
    assert f.action or f.fixes, fid
    assert report.exit_code == exit_code, (name, ids(report))
    assert report.outcome is not None and report.outcome.state.value == outcome
    assert "unexplained_error" not in ids(report), finding(report, "unexplained_error").explanation \
        if "unexplained_error" in ids(report) else None
    assert "process_crashed" not in ids(report)  # a specific finding explains every crash


def test_a_bringup_failure_says_the_cause_and_what_to_read() -> None:
    f = finding(run("bringup_failed"), "alpasim_bringup_failed")
    assert "exit code 1" in f.explanation and "nothing was trained" in f.explanation
    assert "Wizard" in (f.action or "") and "docker compose logs" in (f.action or "")
    assert any("Error executing job with overrides" in e.text for e in f.evidence)


def test_a_dropped_payload_is_critical_and_names_the_failing_scene() -> None:
    report = run("retry_storm")
    f = finding(report, "episode_failures")
    assert f.severity.value == "critical"
    assert f.data["retried"] == 3 and f.data["dropped"] == 1 and f.data["exhausted"] == 1
    assert "clipgt-01d503d4" in f.explanation and "dataset.scene_ids" in (f.action or "")
    assert report.metrics["episodes_retried"] == 3 and report.metrics["episodes_dropped"] == 1


def test_the_horizon_fix_is_the_closed_loop_step_count() -> None:
    report = run("horizon")
    f = finding(report, "horizon_mismatch")
    assert "expected_valid_steps=22" in (f.action or "")
    lint = [g for g in report.findings if g.id == "horizon_mismatch"]
    assert len(lint) == 1  # the log finding and the lint of resolved_config.yaml merged into one
    assert any(e.file.endswith("resolved_config.yaml") for e in lint[0].evidence)


def test_collisions_rising_with_the_reward_is_a_warning_with_the_episodes() -> None:
    f = finding(run("reward_hacking"), "reward_hacking")
    assert f.severity.value == "warning"
    assert "collision rate rose from 0.00" in f.explanation
    assert any(e.file.startswith("artifacts/") and "collision_any=1" in e.text for e in f.evidence)


def test_a_port_the_launcher_moved_is_named_with_the_configured_one() -> None:
    f = finding(run("port_conflict"), "port_conflict")
    assert "29500" in f.explanation and "29501" in f.explanation
    assert "cosmos.launch.controller_port" in (f.action or "")


def test_a_run_folder_with_only_its_configs_is_not_ok_and_says_where_it_stopped() -> None:
    report = run("config_only")
    assert report.exit_code == 1 and report.outcome is not None
    assert report.outcome.state.value == "not_started"
    assert "simulator's bring-up" in report.outcome.summary and "host.log" in report.outcome.summary
    assert ids(report) == ["run_incomplete"]
    assert unknown_reason(FIXTURES / "config_only") is None  # watch and attach follow it


def test_the_logs_folder_and_a_run_root_are_the_run_too(tmp_path: Path) -> None:
    root = FIXTURES / "healthy"
    run_dir = next(root.iterdir())
    assert check(run_dir / "logs").run == run_dir.name  # <run>/logs
    assert check(root).run == run_dir.name  # the run root: the newest run
    report = check(root, run="20990101T000000Z-00")
    assert report.exit_code == 3 and "no AlpaGym run" in report.summary + " ".join(report.notes)


def test_the_open_loop_part_is_judged_as_for_any_run() -> None:
    report = run("p2p_hang")
    f = finding(report, "nccl_p2p_hang")
    assert "NCCL_P2P_DISABLE=1" in (f.action or "") + " ".join(x.path for x in f.fixes) + f.explanation
