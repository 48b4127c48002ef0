"""The demo's training scenario: the real detectors see its three troubles, and no trouble once fixed."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from ui_helpers import REPO

from a1x_diagnostics.engine import check
from a1x_tui.demo.scenario import Trouble, script


def demo_toml(tmp: Path, **changes: float) -> Path:
    from a1x_configs.render import TemplateChoices, render_toml
    from a1x_diagnostics.config.edit import Edit, edit_text

    text = render_toml(
        TemplateChoices(
            alpamayo_version="1.5",
            reward_mode="motion",
            wandb=False,
            compute="local",
            output_dir=str(tmp / "out"),
            model_dir=str(tmp / "model"),
            policy_replicas=1,
            rollout_replicas=1,
        )
    )
    edits = [Edit("policy.parallelism.dp_shard_size", 1), *(Edit(k.replace("__", "."), v) for k, v in changes.items())]
    path = tmp / "train.toml"
    path.write_text(edit_text(text, edits), encoding="utf-8")
    return path


def play(tmp: Path, toml: Path) -> Path:
    log_dir = tmp / "logs"
    temp = tmp / "tmpdir"  # the launcher's config copy goes to TMPDIR, under a unique name, and is removed
    temp.mkdir()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "a1x_tui.demo.programs.launcher",
            "--config",
            str(toml),
            "--log-dir",
            str(log_dir),
            "--run-dir",
            str(tmp),
            "--speed",
            "40",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "TMPDIR": str(temp)},
    )
    assert done.returncode == 0, done.stderr
    copy = re.search(r"Temporary configuration file created at (\S+)", done.stdout)
    assert copy is not None and Path(copy.group(1)).parent == temp and Path(copy.group(1)).name != "tmpa1xdemo.toml"
    assert list(temp.iterdir()) == []
    return log_dir


def test_the_troubles_follow_the_toml(tmp_path: Path) -> None:
    assert Trouble.from_toml(demo_toml(tmp_path)) == Trouble(True, True, True)
    fixed = demo_toml(tmp_path, rollout__gpu_memory_utilization=0.7, rollout__batch_size=1)
    assert Trouble.from_toml(fixed) == Trouble(buffer_growth=False, vllm_oom=False, grpo_collapse=True)


def test_the_script_writes_the_oom_only_while_it_plays() -> None:
    with_oom = [e.text for e in script("rollout", Trouble())]
    without = [e.text for e in script("rollout", Trouble(vllm_oom=False))]
    assert sum("Failed in rollout generation: CUDA out of memory" in t for t in with_oom) == 2
    assert not any("out of memory" in t for t in without)
    times = [e.at for e in script("controller", Trouble(), speed=2.0)]
    assert times == sorted(times) and times[-1] < 30


def test_the_simulated_rollout_gpu_holds_what_the_toml_gives_vllm(tmp_path: Path) -> None:
    """The vllm_oom fix lowers rollout.gpu_memory_utilization to 0.7: the rollout GPU's memory follows it
    (it stayed at 81 % after the fix)."""
    from a1x_tui.demo.gpu import GIB, SimulatedGpus
    from a1x_tui.demo.programs.launcher import _toml, _vllm_fraction

    shares = {}
    for utilization in (0.8, 0.7):
        (tmp_path / str(utilization)).mkdir()
        toml = demo_toml(tmp_path / str(utilization), rollout__gpu_memory_utilization=utilization)
        fraction = _vllm_fraction(_toml(toml))
        t0 = time.time() - 20.0  # the scenario's clock at 20 s: training, the engine up
        gpus = SimulatedGpus(tmp_path, Trouble(vllm_oom=False), speed=1.0, t0=t0, vllm_fraction=fraction)
        gpus._update()
        rollout = gpus.backend.devices[1]
        assert isinstance(rollout.memory_used, int) and isinstance(rollout.memory_total, int)
        shares[utilization] = (rollout.memory_used - 2.1 * GIB) / rollout.memory_total
    assert shares == pytest.approx({0.8: 0.8, 0.7: 0.7}, abs=0.01)


@pytest.mark.slow
def test_the_real_detectors_raise_the_three_findings_and_none_once_fixed(tmp_path: Path) -> None:
    toml = demo_toml(tmp_path)
    log_dir = play(tmp_path, toml)
    report = check(log_dir, config_path=toml)
    assert sorted(f.id for f in report.findings) == ["grpo_collapse", "rollout_buffer_growth", "vllm_oom"]
    growth = next(f for f in report.findings if f.id == "rollout_buffer_growth").explanation
    assert re.search(r"pending rollouts rose from about \d+ to \d+ while", growth), growth  # whole rollouts
    assert (tmp_path / "gpu" / "simulated.jsonl").is_file()
    assert (log_dir / "logs_latest" / "policy_0.log").is_file()

    fixed_dir = tmp_path / "fixed"
    fixed_dir.mkdir()
    fixed = demo_toml(
        fixed_dir, rollout__gpu_memory_utilization=0.7, rollout__batch_size=1, rollout__sampling_config__temperature=1.0
    )
    report = check(play(fixed_dir, fixed), config_path=fixed)
    assert report.findings == [] and report.exit_code == 0


def _json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.mark.slow
def test_the_supervisor_reports_each_finding_once_as_watch_does(tmp_path: Path) -> None:
    """docs/supervisor.md "findings.jsonl": the supervisor's events hold a finding steady, raised once
    and never cleared while it holds, and name the same findings as `a1x-tui watch` on the same run."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "a1x_tui", "demo", "--headless", "--speed", "10", "--dir", str(tmp_path)],
        capture_output=True, text=True, timeout=180, cwd=REPO, env=env, check=False,
    )
    assert done.returncode == 2, done.stderr  # the demo's troubles are critical
    (run_dir,) = (tmp_path / "runs").iterdir()
    # the simulated GPUs alone: no agent sampled this machine beside them ("vm: no GPU readings")
    assert sorted(p.name for p in (run_dir / "gpu").iterdir()) == ["simulated.jsonl"]
    events = _json_lines((run_dir / "events.jsonl").read_text())
    raised = [e["data"]["key"] for e in events if e["kind"] == "finding_raised"]
    assert sorted(raised) == ["grpo_collapse", "rollout_buffer_growth", "vllm_oom@rollout_0"]  # each once
    assert [e for e in events if e["kind"] == "finding_cleared"] == []  # all three hold to the end
    assert sum("finding_raised" in line for line in done.stderr.splitlines()) == 3

    watch = subprocess.Popen(
        [sys.executable, "-m", "a1x_tui", "watch", str(run_dir / "logs"), "--format", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO, env=env,
    )
    assert watch.stdout is not None
    seen: list[dict[str, Any]] = []
    try:
        for line in watch.stdout:  # the history is read, then evaluated once: its findings come next
            seen.append(json.loads(line))
            if seen[-1]["type"] == "outcome" and any(m["type"] == "history_complete" for m in seen):
                break
        watch.send_signal(signal.SIGTERM)
        seen += _json_lines(watch.stdout.read())  # not communicate(): it skips what the loop has buffered
        watch.wait(timeout=30)
    finally:
        if watch.poll() is None:
            watch.kill()
    assert sorted(m["key"] for m in seen if m["type"] == "finding_raised") == sorted(raised)
    assert [m for m in seen if m["type"] == "finding_resolved"] == []
    assert seen[-1]["type"] == "ended" and sorted(seen[-1]["open"]) == sorted(raised)


@pytest.mark.slow
def test_a_stopped_demo_is_reported_as_stopped_not_ok(tmp_path: Path) -> None:
    """`a1x-tui stop` sends SIGTERM to the train stage's process group: the replicas end their logs as
    torchrun does when stopped (docs/reference/cosmos-rl.md, "A job stopped from outside"), so --check says
    terminated."""
    toml = demo_toml(tmp_path)
    log_dir = tmp_path / "logs"
    launcher = subprocess.Popen(
        [sys.executable, "-m", "a1x_tui.demo.programs.launcher", "--config", str(toml), "--log-dir", str(log_dir),
         "--run-dir", str(tmp_path), "--speed", "4"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO, start_new_session=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)},
    )
    controller = log_dir / "logs_latest" / "controller.log"
    try:
        for _ in range(600):  # until the second step is logged (at most 60 s)
            if controller.is_file() and "Step: 2/30" in controller.read_text(errors="replace"):
                break
            assert launcher.poll() is None, "the demo launcher ended before step 2"
            time.sleep(0.1)
        else:
            pytest.fail("the demo never reached step 2")
    finally:
        os.killpg(launcher.pid, signal.SIGTERM)
        launcher.wait(timeout=30)
    report = check(log_dir, config_path=toml)
    assert report.outcome is not None and report.outcome.state.value == "terminated"
    assert report.outcome.summary.startswith("stopped from outside at step")
    assert report.exit_code == 2 and report.status.value != "ok"



@pytest.mark.slow
def test_a_replica_given_two_sigterms_ends_its_log_once_as_stopped_never_with_a_traceback(tmp_path: Path) -> None:
    """A stop reaches each replica twice (the process group's SIGTERM, then the launcher's own): the second
    used to run the handler inside the first one's flush ("RuntimeError: reentrant call"), and the log
    read as a crash. Timing is random, so the pair is sent many times with a gap of 0-2 ms."""
    import random

    toml = demo_toml(tmp_path)
    shutdown = "INFO:     Shutting down"
    for attempt in range(25):
        log = tmp_path / f"controller_{attempt}.log"
        with log.open("wb") as out:
            replica = subprocess.Popen(
                [sys.executable, "-m", "a1x_tui.demo.programs.replica", "--role", "controller", "--t0",
                 repr(time.time()), "--speed", "4", "--config", str(toml), "--checkpoint-dir",
                 str(tmp_path / "checkpoints")],
                stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
            )
        # its first line is written once its SIGTERM handler is in (before that, on a loaded machine, the
        # signal found Python's default and the replica died at -15, before this test's question arose)
        deadline = time.monotonic() + 30
        while not log.stat().st_size and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(random.random() * 0.2)
        replica.send_signal(signal.SIGTERM)
        time.sleep(random.random() * 0.002)
        replica.send_signal(signal.SIGTERM)
        assert replica.wait(timeout=30) == 128 + signal.SIGTERM
        text = log.read_text(errors="replace")
        assert "Traceback" not in text and text.count(shutdown) == 1, text[-800:]
        assert text.rstrip("\n").endswith(f"Finished server process [{replica.pid}]"), text[-800:]


@pytest.mark.slow  # a whole closed-loop demo
def test_the_closed_loop_demo_runs_the_alpagym_stages_and_its_two_findings_are_raised(tmp_path: Path) -> None:
    """`a1x-tui demo --closed-loop`: the supervisor follows the simulated AlpaGym run folder with the
    closed-loop reader; the retried scene and the collisions rising with the reward are what it reports."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "a1x_tui", "demo", "--closed-loop", "--headless", "--speed", "10", "--dir",
         str(tmp_path)],
        capture_output=True, text=True, timeout=180, cwd=REPO, env=env, check=False,
    )
    assert done.returncode == 1, done.stderr  # warnings: a closed-loop run that completed
    (run_dir,) = (tmp_path / "runs").iterdir()
    state = json.loads((run_dir / "state.json").read_text())
    assert [(s["name"], s["status"]) for s in state["stages"]] == [
        ("convert", "succeeded"), ("train", "succeeded"), ("export", "succeeded"), ("verify", "succeeded")]
    events = _json_lines((run_dir / "events.jsonl").read_text())
    raised = sorted(e["data"]["finding_id"] for e in events if e["kind"] == "finding_raised")
    assert raised == ["episode_failures", "reward_hacking"]
    assert done.stdout.startswith("A1X-TUI WARNING - completed: episode_failures, reward_hacking (step 10/10)")
    (alpagym_run,) = (run_dir / "alpagym").iterdir()
    assert "Cosmos launcher completed" in (alpagym_run / "host.log").read_text()
