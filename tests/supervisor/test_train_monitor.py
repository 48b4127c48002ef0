"""The train monitor (steps, checkpoints, live diagnostics) and the supervisor acting on it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from supervisor_helpers import World, fake_processes

from diagnostics.findings import Evidence, Finding, Report, Severity, Status
from supervisor.daemon import Plan, Supervisor
from supervisor.secrets import Scrubber
from supervisor.state import FindingsLog
from supervisor.train_monitor import TrainMonitor, TrainVerdict

PREFIX = "[cosmos] 2025-01-01 00:00:00,000 - cosmos - INFO - "


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _finding(fid: str, *, replica: str | None = None, text: str = "evidence line") -> Finding:
    return Finding(
        id=fid,
        severity=Severity.CRITICAL,
        title=fid.replace("_", " "),
        explanation="x",
        evidence=[Evidence(file="/logs/logs_1/rollout_0.log", line=812, text=text)],
        data={"replica": replica} if replica else {},
    )


def _report(*findings: Finding) -> Report:
    status = Status.CRITICAL if findings else Status.OK
    return Report(target="x", status=status, exit_code=status.exit_code, summary="s", findings=list(findings))


def _monitor(tmp_path: Path, reports: list[Report], clock: Clock, events: list[tuple[str, str]]) -> TrainMonitor:
    def diagnose(_path: Path, _run: str | None) -> Report:
        return reports[0] if len(reports) == 1 else reports.pop(0)

    return TrainMonitor(
        log_dir=tmp_path / "logs",
        ranks=lambda: 1,
        diagnose=diagnose,
        interval_s=0.0,
        grace_s=60.0,
        findings=FindingsLog(tmp_path / "findings.jsonl", Scrubber([])),
        emit=lambda kind, message, **_: events.append((kind, message)),
        clock=clock,
    )


def _tick_until(monitor: TrainMonitor, clock: Clock, done: Any, *, advance: float = 0.0) -> TrainVerdict | None:
    verdict = None
    for _ in range(200):
        clock.now += advance
        verdict = monitor.tick(running=True) or verdict
        if done(verdict):
            return verdict
        time.sleep(0.01)
    return verdict


def _run_logs(tmp_path: Path, steps: int, total: int, ckpt: Path | None = None) -> Path:
    logs = tmp_path / "logs" / "logs_20250101-000000"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "controller.log").write_text(
        "".join(f"{PREFIX}Step: {s}/{total}, Reward Mean: 0\n" for s in range(1, steps + 1))
    )
    policy = ""
    if ckpt is not None:
        ckpt.mkdir(parents=True)
        (ckpt / "cosmos_config").write_text("{}")
        (ckpt / "model_rank_0.pth").write_bytes(b"x")
        (ckpt / ".rank_0_complete").write_bytes(b"")
        policy = f"[rank0]:{PREFIX}[Policy] Step: {total}, checkpoint saved successfully at {ckpt}.\n"
    (logs / "policy_0.log").write_text(policy)
    return logs


def test_replica_died_finding_stops_training_with_its_evidence(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    clock, events = Clock(), []  # type: ignore[var-annotated]
    died = _finding("replica_died", replica="rollout_0", text="exitcode  : -9")
    monitor = _monitor(tmp_path, [_report(), _report(died)], clock, events)
    assert monitor.tick(running=True) is None  # no logs_<ts> of this attempt yet: no diagnostics
    _run_logs(tmp_path, 2, 4)
    verdict = _tick_until(monitor, clock, lambda v: v is not None)
    monitor.close()
    assert verdict is not None and verdict.action == "stop_failed"
    assert "replica_died: rollout_0" in verdict.reason and "rollout_0.log:812: exitcode  : -9" in verdict.reason
    assert verdict.failure is not None and verdict.failure["finding"]["id"] == "replica_died"
    records = [json.loads(x) for x in (tmp_path / "findings.jsonl").read_text().splitlines()]
    assert records[0]["change"] == "raised" and records[0]["finding"]["id"] == "replica_died"
    assert ("finding_raised", verdict.reason.split("kept running: ")[1]) in events


def test_shutdown_hang_ends_the_job_after_the_grace_period(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    clock, events = Clock(), []  # type: ignore[var-annotated]
    monitor = _monitor(tmp_path, [_report(_finding("shutdown_hang"))], clock, events)
    _run_logs(tmp_path, 4, 4)  # last step reached, but no checkpoint: only the finding starts the grace
    assert _tick_until(monitor, clock, lambda _v: monitor.hang_since is not None) is None
    clock.now += 59
    assert monitor.tick(running=True) is None
    clock.now += 2
    verdict = monitor.tick(running=True)
    monitor.close()
    assert verdict is not None and verdict.action == "end_finished"
    assert "did not exit within 60s" in verdict.reason


def test_finished_training_starts_the_grace_period_without_diagnostics(tmp_path: Path) -> None:
    clock, events = Clock(), []  # type: ignore[var-annotated]
    (tmp_path / "logs").mkdir()
    monitor = _monitor(tmp_path, [_report()], clock, events)
    _run_logs(tmp_path, 3, 3, ckpt=tmp_path / "out" / "ts" / "checkpoints" / "step_3" / "policy")
    assert monitor.tick(running=True) is None
    assert monitor.complete_since is not None and monitor.progress is not None
    assert monitor.progress.text == "step 3/3"
    clock.now += 61
    verdict = monitor.tick(running=True)
    monitor.close()
    assert verdict is not None and verdict.action == "end_finished"
    assert ("note", "training reached step 3/3 with a complete checkpoint") in events


def test_a_failed_process_line_from_the_launcher_is_fatal(tmp_path: Path) -> None:
    clock, events = Clock(), []  # type: ignore[var-annotated]
    (tmp_path / "logs").mkdir()
    monitor = _monitor(tmp_path, [_report()], clock, events)
    logs = _run_logs(tmp_path, 2, 4)
    (logs / "policy_0.log").write_text("[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate\n")
    monitor.on_launcher_line("Process 1 failed with return code 1")
    verdict = monitor.tick(running=True)
    monitor.close()
    assert verdict is not None and verdict.action == "stop_failed"
    assert "'Process 1 failed with return code 1'" in verdict.reason
    assert "policy_0.log: [rank0]: torch.OutOfMemoryError: CUDA out of memory" in verdict.reason


def test_supervisor_stops_training_when_diagnostics_see_a_dead_replica(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in world.env.items():
        monkeypatch.setenv(key, value)
    world.make_venv()
    world.configure(live_diagnostics=True)
    world.set_modes(train="slow", steps=40)

    def diagnose(_path: Path, run: str | None) -> Report:
        assert run is not None and run.startswith("logs_")
        return _report(_finding("replica_died", replica="policy_0", text="[Controller] Policy abc is dead"))

    code = Supervisor(world.run_dir, Plan(only="train"), diagnose=diagnose, install_signals=False).serve()
    assert code == 1
    train = world.stage("train")
    assert train["status"] == "failed"
    assert "replica_died: policy_0" in train["reason"] and "Policy abc is dead" in train["reason"]
    assert train["failure"]["finding"]["data"] == {"replica": "policy_0"}
    assert fake_processes(world.root) == []
    findings = (world.run_dir / "findings.jsonl").read_text()
    assert '"replica_died"' in findings
