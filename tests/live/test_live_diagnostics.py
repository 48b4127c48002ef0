"""Findings on a live run, with the real parsers and detectors, and the ``a1x-tui watch`` stream.

A writer process appends Cosmos-RL controller lines in their real format (docs/reference/cosmos-rl.md §3.3, §4.3,
§4.5): steps that stopped 20 minutes ago raise ``stalled``; a fresh step resolves it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from live_helpers import FAST, collect

from a1x_diagnostics.engine import check
from a1x_diagnostics.findings import Evidence, Finding, Outcome, Severity
from a1x_diagnostics.live import (
    FindingRaised,
    FindingResolved,
    HistoryComplete,
    OutcomeChanged,
    RunFollower,
    engine_diagnosis,
)

RUN = "logs_20250101-000000"
REPO = Path(__file__).resolve().parents[2]


def cosmos(ts: datetime, msg: str, level: str = "INFO") -> str:
    return f"[cosmos] {ts.strftime('%Y-%m-%d %H:%M:%S,%f')[:-3]} - cosmos - {level} - {msg}\n"


def step_line(ts: datetime, n: int, total: int = 40) -> str:
    return cosmos(
        ts,
        f"Step: {n}/{total}, Reward Mean: -0.2740, Reward Std: 0.2164, Reward Max: 0.0000, Reward Min: -1.0000, "
        "Completion Length Mean: 1.00, Completion Length Max: 1.00, Average loss: 0.01204, Max loss: 0.03612, "
        "Learning rate: 2.00000e-06, Entropy: 0.41250, Effective Entropy: 0.41250, Grad Norm: 0.19630, "
        "KL Loss Avg: 0.00000, KL Loss Max: 0.00000, Iteration time: 4.73s.",
    )


def stat_line(ts: datetime, samples: int, pending: int) -> str:
    return cosmos(
        ts,
        f"[Controller] Stat: {samples} samples, {samples} completion tokens, {pending} pending rollouts, "
        f"{samples // 2}.0 seconds elapsed",
    )


def write_with_process(path: Path, text: str) -> None:
    """Append ``text`` from another process, as a replica would."""
    script = "import sys\nwith open(sys.argv[1], 'a') as f:\n    f.write(sys.stdin.read())\n"
    subprocess.run([sys.executable, "-c", script, str(path)], input=text, text=True, check=True)


def stalled_run(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "logs"
    folder = root / RUN
    folder.mkdir(parents=True)
    controller = folder / "controller.log"
    start = datetime.now() - timedelta(minutes=30)
    controller.write_text(cosmos(start, "Successfully loaded configuration from /tmp/run.toml"))
    (folder / "policy_0.log").write_text("")
    (folder / "rollout_0.log").write_text("")
    os.symlink(RUN, root / "logs_latest")
    return root, controller


def stalled_steps() -> str:
    """Steps every 10 s, the last one 20 minutes ago; rollouts still arrive now (the run is alive)."""
    last = datetime.now() - timedelta(minutes=20)
    lines = []
    for n in range(1, 6):
        ts = last - timedelta(seconds=10 * (5 - n))
        lines.append(stat_line(ts - timedelta(seconds=2), 24 * n, 0))
        lines.append(step_line(ts, n))
    lines.append(stat_line(datetime.now(), 24 * 6, 24))
    return "".join(lines)


def test_stalled_is_raised_on_a_live_run_then_resolved_when_steps_resume(tmp_path: Path) -> None:
    root, controller = stalled_run(tmp_path)
    factory, notes = engine_diagnosis()
    assert notes == []
    follower = RunFollower(str(root), options=FAST, diagnosis=factory)
    sub = follower.subscribe({FindingRaised, FindingResolved, HistoryComplete, OutcomeChanged})
    with follower:
        collect(sub, lambda ms: any(isinstance(m, HistoryComplete) for m in ms))
        assert "stalled" not in follower.findings_by_key()
        write_with_process(controller, stalled_steps())
        got = collect(sub, lambda ms: any(isinstance(m, OutcomeChanged) and m.outcome.state is Outcome.STALLED
                                          for m in ms))
        raised = next(m for m in got if isinstance(m, FindingRaised) and m.key == "stalled")
        assert raised.finding.data["live"] is True
        assert any("Step: 5/40" in ev.text and ev.line == 11 for ev in raised.finding.evidence)
        assert follower.outcome is not None and follower.outcome.state is Outcome.STALLED
        write_with_process(controller, step_line(datetime.now(), 6))
        got = collect(sub, lambda ms: any(isinstance(m, OutcomeChanged) and m.outcome.state is Outcome.RUNNING
                                          for m in ms))
        assert any(isinstance(m, FindingResolved) and m.key == "stalled" for m in got)
        assert "stalled" not in follower.findings_by_key()
        back = next(m for m in got if isinstance(m, OutcomeChanged) and m.outcome.state is Outcome.RUNNING)
        assert back.previous is not None and back.previous.state is Outcome.STALLED


def _watch(root: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "a1x_tui", "watch", str(root), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )


def _read_until(proc: subprocess.Popen[str], want: str, key: str, timeout: float = 20) -> list[dict[str, object]]:
    assert proc.stdout is not None
    seen: list[dict[str, object]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        assert line, f"watch ended early: {proc.stderr.read() if proc.stderr else ''}"
        obj = json.loads(line)
        seen.append(obj)
        if obj["type"] == want and obj.get("key") == key:
            return seen
    raise AssertionError(f"no {want} {key} within {timeout} s: {seen}")


def test_watch_streams_json_lines_and_ends_cleanly_on_sigterm(tmp_path: Path) -> None:
    root, controller = stalled_run(tmp_path)
    proc = _watch(root, "--format", "json", "--interval", "0.1")
    try:
        seen: list[dict[str, object]] = []
        write_with_process(controller, stalled_steps())
        seen += _read_until(proc, "finding_raised", "stalled")
        write_with_process(controller, step_line(datetime.now(), 6))
        seen += _read_until(proc, "finding_resolved", "stalled")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    seen += [json.loads(line) for line in out.splitlines()]
    assert all({"type", "time"} <= set(obj) for obj in seen)
    assert {"file_appeared", "history_complete", "finding_raised", "finding_resolved"} <= {o["type"] for o in seen}
    ended = seen[-1]
    assert ended["type"] == "ended" and ended["reason"] == "SIGTERM"
    assert proc.returncode == ended["exit_code"]
    assert "stalled" not in ended["open"]  # type: ignore[operator]
    expected = {"ok": 0, "warning": 1, "critical": 2}[str(ended["status"])]
    assert proc.returncode == expected
    assert "Traceback" not in err
    assert "following" in err


def test_watch_exit_code_is_the_status_of_the_findings_still_open(tmp_path: Path) -> None:
    root, controller = stalled_run(tmp_path)
    write_with_process(controller, stalled_steps())
    proc = _watch(root, "--format", "json", "--interval", "0.1", "--poll")
    try:
        _read_until(proc, "finding_raised", "stalled")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    ended = json.loads(out.splitlines()[-1])
    assert ended["reason"] == "SIGINT" and "stalled" in ended["open"]
    assert proc.returncode == 2  # stalled is critical
    assert "polling" in err


def test_watch_names_a_missing_path_in_one_line(tmp_path: Path) -> None:
    proc = _watch(tmp_path / "nope")
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 3
    assert out == ""
    assert err.strip().splitlines() == [f"a1x-tui watch: {tmp_path / 'nope'}: no such file or folder"]


def test_the_stream_never_carries_a_secret(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from a1x_tui.commands.watch import _Printer

    monkeypatch.setenv("WANDB_API_KEY", "0123456789abcdef0123")
    finding = Finding(
        id="wandb_forbidden",
        severity=Severity.WARNING,
        title="W&B refused the run",
        explanation="key 0123456789abcdef0123 was refused",
        evidence=[Evidence(file="policy_0.log", line=3, text="wandb: WANDB_API_KEY=0123456789abcdef0123 403")],
    )
    for fmt in ("text", "json"):
        printer = _Printer(fmt)
        printer.message(FindingRaised(finding=finding, key="wandb_forbidden"))
    out = capsys.readouterr().out
    assert "0123456789abcdef0123" not in out
    assert out.count("***") >= 3


def test_watch_text_stream_on_a_finished_run_ends_with_the_check_status() -> None:
    sick = REPO / "a1x_diagnostics" / "examples" / "sick"
    expected = check(sick, now=time.time())
    proc = _watch(sick, "--interval", "0.1")
    try:
        assert proc.stdout is not None
        raised: list[str] = []
        seen: list[str] = []  # the OUTCOME line may come between the RAISED ones
        deadline = time.monotonic() + 20
        while len(raised) < len(expected.findings):
            assert time.monotonic() < deadline, raised
            line = proc.stdout.readline()
            assert line, "watch ended early"
            seen.append(line)
            if " RAISED " in line:
                raised.append(line)
        proc.send_signal(signal.SIGTERM)
        out = proc.stdout.read()  # not communicate(): it would skip what readline() already buffered
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert sorted(line.split()[3].split("@")[0].rstrip(":") for line in raised) == sorted(
        f.id for f in expected.findings
    )
    last = out.strip().splitlines()[-1]
    assert expected.outcome is not None
    assert f"ENDED {expected.status.value.upper()} (SIGTERM, run {expected.outcome.state.value})" in last
    assert f"OUTCOME {expected.outcome.state.value}: " in "".join(seen) + out
    assert proc.returncode == expected.exit_code


def test_a_traceback_that_ends_a_quiet_file_is_judged_without_waiting_for_the_quiet_interval(tmp_path: Path) -> None:
    """The process writes its traceback and goes quiet: the follower closes it after ``group_flush`` and
    evaluates at once (``urgent_evaluate_interval``), not after ``quiet_evaluate_interval``; set here far
    beyond the test's deadline, so only that mechanism can make the finding appear in time."""
    from dataclasses import replace

    root, controller = stalled_run(tmp_path)
    rollout = controller.parent / "rollout_0.log"
    write_with_process(controller, "".join(step_line(datetime.now() - timedelta(seconds=20 - n), n) for n in (1, 2)))
    slow = replace(FAST, evaluate_interval=60.0, quiet_evaluate_interval=60.0, group_flush=0.2,
                   urgent_evaluate_interval=0.1)
    factory, _ = engine_diagnosis()
    follower = RunFollower(str(root), options=slow, diagnosis=factory)
    sub = follower.subscribe({FindingRaised, HistoryComplete, OutcomeChanged})
    with follower:
        collect(sub, lambda ms: any(isinstance(m, HistoryComplete) for m in ms))
        stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S,000")
        write_with_process(rollout, (
            f"[rank0]:[cosmos] {stamp} - cosmos - INFO - [Rollout] generating\n"
            "[rank0]:Traceback (most recent call last):\n"
            '[rank0]:  File "/work/reward.py", line 9, in score\n'
            "[rank0]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        ))
        got = collect(sub, lambda ms: any(isinstance(m, OutcomeChanged) and m.outcome.state is Outcome.CRASHED
                                          for m in ms), timeout=20)
    raised = {m.finding.id for m in got if isinstance(m, FindingRaised)}
    assert raised & {"vllm_oom", "replica_died"}, raised
