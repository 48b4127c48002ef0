"""The train monitor (steps, checkpoints, the live follower's findings) and the supervisor acting on it."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from live_fakes import Rule, Script
from supervisor_helpers import REPO, World, fake_processes

from a1x_diagnostics.live import DiagnosisFactory, FollowOptions
from a1x_supervisor.daemon import Plan, Supervisor
from a1x_supervisor.secrets import Scrubber
from a1x_supervisor.state import FindingsLog
from a1x_supervisor.train_monitor import TrainMonitor, TrainVerdict, load_diagnosis

PREFIX = "[cosmos] 2025-01-01 00:00:00,000 - cosmos - INFO - "
RUN = "logs_20250101-000000"
EARLIER = "logs_20241231-000000"
# Short periods so a test sees a finding within a few ticks (the defaults: 1 s / 5 s, docs/live.md).
FAST = FollowOptions(evaluate_interval=0.05, quiet_evaluate_interval=0.05, idle_flush=0.1, batch_delay=0.01)
KILLED = REPO / "tests" / "fixtures" / "cosmos" / "v0.4.4" / "rollout_killed" / "logs_20261129-145605"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _monitor(
    tmp_path: Path, clock: Clock, events: list[tuple[str, str]], diagnosis: DiagnosisFactory | None = None
) -> TrainMonitor:
    return TrainMonitor(
        log_dir=tmp_path / "logs",
        ranks=lambda: 1,
        diagnosis=diagnosis,
        grace_s=60.0,
        findings=FindingsLog(tmp_path / "findings.jsonl", Scrubber([])),
        emit=lambda kind, message, **_: events.append((kind, message)),
        clock=clock,
        options=FAST,
    )


def _tick_until(monitor: TrainMonitor, done: Callable[[TrainVerdict | None], bool]) -> TrainVerdict | None:
    verdict = None
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        verdict = monitor.tick(running=True) or verdict
        if done(verdict):
            return verdict
        time.sleep(0.02)
    raise AssertionError(f"not reached in 15 s (verdict {verdict})")


def _run_logs(tmp_path: Path, steps: int, total: int, ckpt: Path | None = None, *, name: str = RUN) -> Path:
    logs = tmp_path / "logs" / name
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
    (logs / "rollout_0.log").write_text(f"[rank0]:{PREFIX}[Rollout] Engine initialized.\n")
    latest = tmp_path / "logs" / "logs_latest"
    if latest.is_symlink():
        latest.unlink()
    latest.symlink_to(name)  # the launcher re-points it at each start (docs/reference/cosmos-rl.md §3.1)
    return logs


def _records(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "findings.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _follower_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "a1x-live-follower"]


def test_a_replica_death_in_the_followed_logs_stops_training_with_its_evidence(tmp_path: Path) -> None:
    earlier = _run_logs(tmp_path, 4, 4, name=EARLIER)  # an earlier attempt, whose rollout died
    (earlier / "rollout_0.log").write_text("exitcode  : -9\n")
    threads_before = set(threading.enumerate())
    clock, events = Clock(), []  # type: ignore[var-annotated]
    script = Script(Rule("exitcode  : -9", "replica_died", replica="rollout_0"))
    monitor = _monitor(tmp_path, clock, events, script.factory)
    assert monitor.tick(running=True) is None
    assert monitor.follower is None  # no logs_<ts> of this attempt yet: nothing is followed, nothing judged

    run = _run_logs(tmp_path, 2, 4)
    assert _tick_until(monitor, lambda _v: script.evaluations() > 0) is None  # the new run, healthy so far
    with open(run / "rollout_0.log", "a") as log:  # the replica dies while the launcher keeps running
        log.write("[rank0]: torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\nexitcode  : -9\n")
    verdict = _tick_until(monitor, lambda v: v is not None)
    monitor.close()

    assert verdict is not None and verdict.action == "stop_failed"
    assert "replica_died: rollout_0" in verdict.reason and "rollout_0.log:3: exitcode  : -9" in verdict.reason
    assert verdict.failure is not None and verdict.failure["finding"]["id"] == "replica_died"
    assert not [p for p in script.fed_files() if EARLIER in p]  # the earlier attempt's logs were never read
    records = _records(tmp_path)
    assert [(r["change"], r["finding"]["id"]) for r in records] == [("raised", "replica_died")]
    assert records[0]["finding"]["evidence"][0]["text"] == "exitcode  : -9"
    assert ("finding_raised", verdict.reason.split("kept running: ")[1]) in events
    assert set(threading.enumerate()) - threads_before == set()  # follower and watchdog threads joined


def test_findings_raised_and_cleared_are_recorded_without_stopping_training(tmp_path: Path) -> None:
    clock, events = Clock(), []  # type: ignore[var-annotated]
    script = Script(Rule("no rollout for 600s", "stalled", cure="Step: 3/4"))
    monitor = _monitor(tmp_path, clock, events, script.factory)
    run = _run_logs(tmp_path, 2, 4)
    with open(run / "controller.log", "a") as log:
        log.write(f"{PREFIX}[Controller] no rollout for 600s\n")
    _tick_until(monitor, lambda _v: bool(_records(tmp_path)))
    with open(run / "controller.log", "a") as log:
        log.write(f"{PREFIX}Step: 3/4, Reward Mean: 0\n")
    verdict = _tick_until(monitor, lambda _v: len(_records(tmp_path)) == 2)
    monitor.close()
    assert verdict is None
    records = _records(tmp_path)
    assert [(r["change"], r["stage"]) for r in records] == [("raised", "train"), ("cleared", "train")]
    assert records[0]["finding"]["id"] == "stalled" and records[1]["id"] == "stalled"
    assert [k for k, _ in events if k.startswith("finding_")] == ["finding_raised", "finding_cleared"]
    assert monitor.last_step == (3, 4)


def test_shutdown_hang_ends_the_job_after_the_grace_period(tmp_path: Path) -> None:
    clock, events = Clock(), []  # type: ignore[var-annotated]
    script = Script(Rule("waiting for replicas to exit", "shutdown_hang"))
    monitor = _monitor(tmp_path, clock, events, script.factory)
    run = _run_logs(tmp_path, 4, 4)  # last step reached, but no checkpoint: only the finding starts the grace
    with open(run / "controller.log", "a") as log:
        log.write(f"{PREFIX}[Controller] waiting for replicas to exit\n")
    assert _tick_until(monitor, lambda _v: monitor.hang_since is not None) is None
    clock.now += 59
    assert monitor.tick(running=True) is None
    clock.now += 2
    verdict = monitor.tick(running=True)
    monitor.close()
    assert verdict is not None and verdict.action == "end_finished"
    assert "did not exit within 60s" in verdict.reason


def test_the_engine_following_a_run_finds_the_killed_rollout(tmp_path: Path) -> None:
    """The real parsers and detectors behind the follower (a recorded v0.4.4 run, docs/reference/cosmos-rl.md §15)."""
    factory = load_diagnosis()
    assert factory is not None
    clock, events = Clock(), []  # type: ignore[var-annotated]
    monitor = _monitor(tmp_path, clock, events, factory)
    shutil.copytree(KILLED, tmp_path / "logs" / KILLED.name)
    verdict = _tick_until(monitor, lambda v: v is not None)
    monitor.close()
    assert verdict is not None and verdict.action == "stop_failed"
    assert "replica_died: rollout_0 — rollout_0.log:86: torch.distributed.elastic" in verdict.reason
    assert [r["finding"]["id"] for r in _records(tmp_path) if r["change"] == "raised"] == ["replica_died"]
    assert not _follower_threads()
    # the run's outcome is in the events too, from the same evaluation
    outcomes = [message for kind, message in events if kind == "outcome"]
    assert outcomes and outcomes[-1].startswith("run crashed: rollout_0 crashed at step 2/40")
    assert monitor.outcome is not None and monitor.outcome["state"] == "crashed"


def test_finished_training_starts_the_grace_period_without_diagnostics(tmp_path: Path) -> None:
    clock, events = Clock(), []  # type: ignore[var-annotated]
    (tmp_path / "logs").mkdir()
    monitor = _monitor(tmp_path, clock, events)
    _run_logs(tmp_path, 3, 3, ckpt=tmp_path / "out" / "ts" / "checkpoints" / "step_3" / "policy")
    assert monitor.tick(running=True) is None
    assert monitor.follower is None
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
    monitor = _monitor(tmp_path, clock, events)
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
    script = Script(Rule("Step: 2/40", "replica_died", replica="policy_0"))

    code = Supervisor(world.run_dir, Plan(only="train"), diagnose=script.factory, install_signals=False).serve()
    assert code == 1
    train = world.stage("train")
    assert train["status"] == "failed"
    assert "replica_died: policy_0" in train["reason"] and "controller.log:2:" in train["reason"]
    assert train["failure"]["finding"]["data"] == {"replica": "policy_0"}
    assert fake_processes(world.root) == []
    assert not _follower_threads()  # the stage ended: its follower with it
    fed = script.fed_files()
    assert fed and all(p.startswith("logs_") for p in fed)  # this attempt's logs_<ts> only
    findings = (world.run_dir / "findings.jsonl").read_text()
    assert '"replica_died"' in findings


def test_a_finding_whose_evidence_moves_on_is_one_finding_updated_not_raised_again(tmp_path: Path) -> None:
    log = FindingsLog(tmp_path / "findings.jsonl", Scrubber([]), update_every_s=60.0)

    def growth(line: int, severity: str = "warning") -> dict[str, Any]:
        return {"id": "rollout_buffer_growth", "severity": severity, "evidence": [{"file": "c.log", "line": line}]}

    first = log.observe({"rollout_buffer_growth": growth(80)}, stage="train", now=0.0)
    assert [k for k, _ in first.raised] == ["rollout_buffer_growth"]
    for second in range(1, 60):  # new evidence at every evaluation: nothing new to say yet
        changes = log.observe({"rollout_buffer_growth": growth(80 + second)}, stage="train", now=float(second))
        assert changes == type(changes)([], [], [])
    assert [k for k, _ in log.observe({"rollout_buffer_growth": growth(200)}, stage="train", now=60.0).updated] == [
        "rollout_buffer_growth"
    ]
    worse = log.observe({"rollout_buffer_growth": growth(201, "critical")}, stage="train", now=61.0)
    assert [f["severity"] for _, f in worse.updated] == ["critical"]  # a change of severity is said at once
    assert [k for k, _ in log.observe({}, stage="train", now=62.0).cleared] == ["rollout_buffer_growth"]
    assert [r["change"] for r in _records(tmp_path)] == ["raised", "updated", "updated", "cleared"]
