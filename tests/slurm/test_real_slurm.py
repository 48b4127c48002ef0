"""Real jobs on a real (single-host) Slurm: submission, tracking, cancel, failure, requeue, findings.

Skipped unless ``sinfo`` answers with a usable node (CI starts one with ``.ci/slurm-up.sh``). The
job steps are ``standin.py`` playing ``launch_controller.sh`` and the ``cosmos-rl`` launcher, so the
sbatch script, the monitor, the part/run layout and our tracking are the real ones.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
import tomlkit
from slurm_helpers import DATA, MOTION_ENTRY, STANDIN, slurm_answers

from a1x_diagnostics.config.edit import Edit, edit_text
from a1x_diagnostics.engine import check
from a1x_diagnostics.parsing import parse_monitor_log, role_logs
from a1x_diagnostics.parsing import read_slurm_layout as read_layout
from a1x_supervisor.secrets import Scrubber
from a1x_supervisor.slurm import (
    ClusterSpec,
    SbatchJob,
    SlurmExecutor,
    SlurmJob,
    prepare_sbatch,
)
from a1x_supervisor.slurm.tracking import cancel_job, query_job
from a1x_supervisor.stagelog import StageLog

STANDIN_COMMAND = f"{shlex.quote(sys.executable)} {shlex.quote(str(STANDIN))}"
_WHY_NOT = slurm_answers()
pytestmark = [
    pytest.mark.slow,  # jobs on a real single-host Slurm (up to a minute each)
    pytest.mark.skipif(_WHY_NOT is not None, reason=_WHY_NOT or ""),
]


class Run:
    def __init__(self, root: Path, job: SlurmJob, mark: str) -> None:
        self.root = root
        self.job = job
        self.mark = mark
        self.slurm = root / "run" / "slurm"

    def wait_state(self, *states: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            info = self.job.refresh(force=True)
            if info is not None and info.state in states:
                return info.state
            time.sleep(0.2)
        raise AssertionError(f"job {self.job.job_id} never reached {states}: {self.job.info}")

    def release_requeued(self, restarts: int, timeout: float = 90.0) -> None:
        """A requeued job waits ~2 min (BeginTime) before it may start again: let it go in 2 s. It is pending
        only once its processes have ended (COMPLETING first), which took over 30 s on a loaded 2-core VM.

        Not at once: slurmd revokes the ended start's job credential, in whole seconds, and refuses a new
        one made in that same second ("Killing non-startable batch JobId=N: Job credential revoked" in
        slurmctld's log, the job FAILED with exit code 1); a fast machine restarted it 0.4 s after its end."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            info = query_job(self.job.job_id)
            if info is not None and info.pending and (info.restarts or 0) >= restarts:
                subprocess.run(["scontrol", "update", f"JobId={self.job.job_id}", "StartTime=now+2"], check=True)
                return
            time.sleep(0.2)
        raise AssertionError(f"job {self.job.job_id} was not requeued: {query_job(self.job.job_id)}")

    def processes(self) -> list[psutil.Process]:
        """Every process of this job: the mark is on the replicas' command lines and in the job's environment."""
        found = []
        for proc in psutil.process_iter(["cmdline", "environ"]):
            environ = proc.info.get("environ") or {}
            if self.mark in " ".join(proc.info.get("cmdline") or []) or environ.get("A1X_STANDIN_MARK") == self.mark:
                found.append(proc)
        return found

    def replicas(self) -> list[psutil.Process]:
        """The stand-in 'replica' children (their command line carries the mark)."""
        return [p for p in psutil.process_iter(["cmdline"]) if self.mark in " ".join(p.info.get("cmdline") or [])]

    def wait_replicas(self) -> None:
        deadline = time.monotonic() + 15
        while not self.replicas() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert self.replicas(), "the stand-in replicas never started"

    def monitor(self) -> list[str]:
        return [
            f"{m.kind}:{m.msg}" for log in read_layout(self.slurm).job_logs for m in parse_monitor_log(log.read_text())
        ]


@pytest.fixture
def submit(tmp_path: Path) -> Iterator[Callable[..., Run]]:
    started: list[Run] = []

    def _submit(
        mode: str,
        *,
        retries: int = 0,
        gpu_agent: bool = False,
        edits: tuple[Edit, ...] = (),
        env: dict[str, str] | None = None,
        **cluster: object,
    ) -> Run:
        cfg = tmp_path / "recipe.toml"
        cfg.write_text(edit_text((DATA / "recipe_local.toml").read_text(), list(edits)))
        spec = ClusterSpec(
            method="sbatch",
            job_name=f"a1x_test_{mode}",
            request_gpus=False,
            exclusive=False,
            retries=retries,
            gpu_agent=gpu_agent,
            a1x_tui=f"{sys.executable} -m a1x_tui",
            env={"ALPAMAYO_PAI_LOCAL_DIR": str(tmp_path)},
            memory="0",
            **cluster,  # type: ignore[arg-type]
        )
        job = SbatchJob(
            run_dir=tmp_path / "run",
            config_path=cfg,
            entry=MOTION_ENTRY,
            workdir=tmp_path,
            venv=Path(sys.prefix),
            cosmos_rl=STANDIN_COMMAND,
            controller=STANDIN_COMMAND,
        )
        submission = prepare_sbatch(spec, tomlkit.parse(cfg.read_text()).unwrap(), job, environ=os.environ)
        mark = f"a1xmark{os.getpid()}x{len(started)}{mode}"
        job_env = dict(os.environ, A1X_STANDIN_MODE=mode, A1X_STANDIN_MARK=mark, **(env or {}))
        log = StageLog(tmp_path / "stage.log", scrubber=Scrubber([]))
        proc = SlurmExecutor(poll_interval_s=0.2).start(submission.argv, cwd=tmp_path, env=job_env, log=log)
        run = Run(tmp_path, proc, mark)
        started.append(run)
        return run

    yield _submit
    for run in started:
        if run.job.poll() is None:
            cancel_job(run.job.job_id)
        run.job.close()


def test_a_healthy_job_is_followed_to_completion_in_the_cosmos_layout(submit: Callable[..., Run]) -> None:
    run = submit("ok", gpu_agent=True)
    assert run.job.wait(30) == 0
    assert run.job.info is not None and run.job.info.state == "COMPLETED"
    layout = read_layout(run.slurm)
    assert (layout.current_part, layout.current_run) == (0, 0)
    assert layout.latest_run == run.slurm / "part_0" / "run_0"
    assert [p.name for p in layout.job_logs] == [f"slurm_{run.job.job_id}.log"]
    names = {(r.name, r.task, r.stream) for r in role_logs(layout.latest_run)}
    assert {("controller", 0, "err"), ("policy", 0, "err"), ("gpu_agent", 0, "err")} <= names
    controller = (layout.latest_run / "controller.err").read_text()
    assert "Step: 3/3, Reward Mean: -0.2500" in controller
    assert "ROLLOUT Replica started at global rank 0" in (layout.latest_run / "policy_0.err").read_text()
    assert "final:Final exit status: 0" in run.monitor()
    stage_log = (run.root / "stage.log").read_text()
    assert f"slurm: job {run.job.job_id} COMPLETED" in stage_log


def test_a_failed_step_fails_the_job_with_its_exit_code_and_raises_a_finding(submit: Callable[..., Run]) -> None:
    run = submit("fail", retries=0)
    assert run.job.wait(30) == 1
    info = run.job.info
    assert info is not None and (info.state, info.exit_code) == ("FAILED", 1)
    monitor = run.monitor()
    assert "step_failed:policy-rollout failed with exit code 1. Terminating other processes." in monitor
    assert "no_retries:Job failed with status 1. No retries remaining." in monitor
    # The traceback a job step wrote is a finding of the diagnostics engine, read from the Slurm layout.
    report = check(run.slurm)
    oom = [f for f in report.findings if f.id == "policy_oom"]
    assert oom, [f.id for f in report.findings]
    assert any("part_0/run_0/policy_0.err" in e.file for e in oom[0].evidence)


def test_cancel_ends_the_job_and_leaves_no_process(submit: Callable[..., Run]) -> None:
    run = submit("hang")
    run.wait_state("RUNNING")
    run.wait_replicas()
    report = run.job.stop(grace_s=20)
    assert report.terminated == [int(run.job.job_id)] and report.survivors == []
    assert run.job.info is not None and run.job.info.state == "CANCELLED"
    deadline = time.monotonic() + 10
    while run.processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert run.processes() == []
    assert run.job.alive() == []


def test_a_failure_retry_starts_a_new_run_of_the_same_part(submit: Callable[..., Run]) -> None:
    run = submit("fail_once", retries=1)
    run.release_requeued(restarts=1)
    assert run.job.wait(40) == 0
    layout = read_layout(run.slurm)
    assert [(p.index, p.runs, p.remaining_retries) for p in layout.parts] == [(0, (0, 1), 0)]
    assert layout.latest_run == run.slurm / "part_0" / "run_1"
    assert "retry:Job failed with status 1. Retries remaining: 0. Requeuing..." in run.monitor()
    assert run.job.info is not None and run.job.info.restarts == 1


def test_the_pre_timeout_signal_requeues_into_a_new_part(submit: Callable[..., Run]) -> None:
    run = submit("until_signal", retries=2)
    run.wait_state("RUNNING")
    run.wait_replicas()
    # What Slurm does at --signal=B:SIGUSR1@<pre-timeout>: signal the batch shell only.
    assert cancel_job(run.job.job_id, signal="USR1").returncode == 0
    run.release_requeued(restarts=1)
    assert run.job.wait(40) == 0
    layout = read_layout(run.slurm)
    assert [(p.index, p.runs, p.remaining_retries) for p in layout.parts] == [(0, (0,), 2), (1, (0,), 2)]
    assert layout.latest_run == run.slurm / "part_1" / "run_0"
    assert (run.slurm / "latest_part").resolve() == run.slurm / "part_1"
    assert any(m.startswith("autoresume:Received signal SIGUSR1") for m in run.monitor())


def _ledger(run: Run) -> list[dict[str, object]]:
    path = run.root / "run" / "standin-steps.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _trained(run: Run, part: str) -> list[int]:
    return [int(str(e["step"])) for e in _ledger(run) if e["part"] == part and "step" in e and "event" not in e]


def _step_folders(outputs: Path) -> dict[int, Path]:
    """Every checkpoint folder under ``outputs`` (all parts write into one ``<stamp>/checkpoints``)."""
    return {int(p.name.removeprefix("step_")): p for p in outputs.glob("*/checkpoints/step_*")}


def test_a_job_that_reaches_its_time_limit_resumes_from_its_last_complete_checkpoint(
    submit: Callable[..., Run], tmp_path: Path
) -> None:
    outputs = tmp_path / "outputs"
    run = submit(
        "train",
        retries=1,
        # The shortest time limit Slurm has, and its SIGUSR1 55 s before it: Slurm sends it at its next
        # time-limit check after 5 s (up to about 30 s later). The first start cannot train 400 steps by then.
        time="1",
        pre_timeout_signal_s=55,
        edits=(Edit("train.output_dir", str(outputs)), Edit("train.ckpt.save_freq", 2), Edit("train.ckpt.max_keep", 3)),
        env={"A1X_STANDIN_STEPS": "400", "A1X_STANDIN_STEP_S": "0.1"},
    )
    run.release_requeued(restarts=1)
    assert run.job.wait(60) == 0
    layout = read_layout(run.slurm)
    assert [(p.index, p.runs) for p in layout.parts] == [(0, (0,)), (1, (0,))]
    monitor = run.monitor()
    assert any(m.startswith("autoresume:Received signal SIGUSR1") for m in monitor)
    # 747d1bd has no SIGUSR1 handler: every step is sent SIGTERM, which srun answers with its forced
    # termination (docs/slurm.md): the trainer is SIGKILLed (137), its own SIGTERM handler never runs, and
    # the save in flight is left unfinished.
    assert any(m.startswith("signal:Signal SIGUSR1 caught. Forwarding SIGTERM to the job steps.") for m in monitor)
    assert any(m.endswith("policy-rollout process exited with code 137") for m in monitor)
    assert not [e for e in _ledger(run) if "ended" in e]

    first, second = _trained(run, "part_0"), _trained(run, "part_1")
    assert first == list(range(1, len(first) + 1)) and 4 <= len(first) < 400
    resumed_lines = [m for m in monitor if m.startswith("resume:Resuming from checkpoint step ")]
    assert len(resumed_lines) == 1
    resumed = int(resumed_lines[0].split("step ")[1].split(":")[0])
    (stamp,) = outputs.iterdir()  # one folder for the whole run: the timestamp is fixed in job.toml
    ckpt = stamp / "checkpoints" / f"step_{resumed}" / "policy"
    assert resumed_lines[0] == f"resume:Resuming from checkpoint step {resumed}: {ckpt}"
    # The kill cut the newest save(s) short: the next start names them, skips them and prunes them.
    skipped = [int(m.split("step ")[1].split(" ")[0]) for m in monitor if m.startswith("resume_skipped:")]
    assert skipped and min(skipped) > resumed and all(n % 2 == 0 for n in skipped)
    for n in skipped:
        assert any(m.endswith(f"Pruned checkpoint of step {n} (the run keeps 3): {stamp / 'checkpoints'}/step_{n}")
                   for m in monitor), n
    # The requeued part trained from the step after the last complete checkpoint to the end: no step up
    # to that checkpoint was trained twice, only those after it that the kill lost.
    assert second == list(range(resumed + 1, 401))
    assert sorted(set(first) & set(second)) == list(range(resumed + 1, first[-1] + 1))
    # One W&B run for both parts (its id is the fixed timestamp), and at most max_keep checkpoints left.
    assert {e["wandb_id"] for e in _ledger(run)} == {stamp.name}
    assert sorted(_step_folders(outputs)) == [396, 398, 400]
    toml = (layout.latest_run / "resume.toml").read_text()
    assert tomlkit.parse(toml)["train"]["resume"] == str(ckpt)  # type: ignore[index]
    assert (layout.latest_run / "resume-step").read_text().strip() == str(resumed)
    assert layout.resumed_from_step == resumed
    # The job's state as `status` and the dashboard show it.
    job = run.job.to_json()
    assert (job["part"], job["resumed_from_step"], job["run"]) == (1, resumed, "part_1/run_0")
    from a1x_tui.console import slurm_line

    assert f"; part 1 resumed from step {resumed}; logs part_1/run_0" in slurm_line(job)
    assert f"slurm: part 1 resumed from checkpoint step {resumed}" in (tmp_path / "stage.log").read_text()
    # What the train stage's verdict reads: the last start reached 400/400 with a complete checkpoint.
    from a1x_supervisor.stages.train import verify_trained

    verdict = verify_trained(run.slurm, ranks=4)
    assert verdict.ok and verdict.reason == "step 400/400; checkpoint step_400 complete", verdict.reason


def _wait_for(predicate: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_three_requeues_keep_at_most_max_keep_checkpoints_in_one_folder(
    submit: Callable[..., Run], tmp_path: Path
) -> None:
    # Each part trains until it is sent the pre-timeout signal (as Slurm sends it: to the batch shell), three
    # times; the fourth part trains to the end. Cosmos-RL's checkpoint manager prunes only what its own
    # start saved (docs/reference/cosmos-rl.md §5.3): without the script's pruning, every part would leave up
    # to max_keep checkpoints of its own.
    outputs = tmp_path / "outputs"
    run = submit(
        "train",
        retries=0,
        edits=(Edit("train.output_dir", str(outputs)), Edit("train.ckpt.save_freq", 2), Edit("train.ckpt.max_keep", 2)),
        env={"A1X_STANDIN_STEPS": "120", "A1X_STANDIN_STEP_S": "0.1", "A1X_STANDIN_EVERY_START": "3"},
    )
    for part in range(3):
        name = f"part_{part}"
        _wait_for(lambda name=name: len(_trained(run, name)) >= 8, f"{name} never trained 8 steps")  # type: ignore[misc]
        assert cancel_job(run.job.job_id, signal="USR1").returncode == 0
        run.release_requeued(restarts=part + 1)
    assert run.job.wait(90) == 0
    layout = read_layout(run.slurm)
    assert [p.index for p in layout.parts] == [0, 1, 2, 3]
    monitor = run.monitor()
    assert len([m for m in monitor if m.startswith("autoresume:")]) == 3

    # Every part resumed where the last one's newest complete checkpoint was, and the steps join up.
    trained = [_trained(run, f"part_{n}") for n in range(4)]
    resumed = [int(m.split("step ")[1].split(":")[0]) for m in monitor if m.startswith("resume:")]
    assert len(resumed) == 3 and resumed == sorted(resumed) and resumed[0] >= 2
    for n in range(1, 4):
        assert trained[n][0] == resumed[n - 1] + 1 and resumed[n - 1] < trained[n - 1][-1] + 1
    assert trained[3][-1] == 120
    # One folder and one W&B run (the fixed timestamp) for the four parts; the checkpoint folders left
    # are max_keep, the newest, every one complete.
    (stamp,) = outputs.iterdir()
    assert {e["wandb_id"] for e in _ledger(run)} == {stamp.name}
    folders = _step_folders(outputs)
    assert sorted(folders) == [118, 120]
    assert all((folders[n] / "policy" / f".rank_{r}_complete").exists() for n in folders for r in range(4))
    # What would be left without the script's pruning: each part's own newest max_keep saves.
    logs = [(run.slurm / f"part_{n}" / "run_0" / "policy_0.err").read_text() for n in range(4)]
    saved = [len(re.findall(r"checkpoint saved successfully", text)) for text in logs]
    assert sum(min(n, 2) for n in saved) == 8, saved
    assert any("Pruned checkpoint of step" in m for m in monitor)


def test_at_head_only_the_policy_step_gets_the_signal_and_the_controller_outlives_its_save(
    submit: Callable[..., Run], tmp_path: Path
) -> None:
    # HEAD's template forwards the pre-timeout SIGUSR1 to the policy only, and keeps the controller and the
    # rollouts up while the policy saves (docs/reference/cosmos-rl.md §11.1).
    outputs = tmp_path / "outputs"
    run = submit(
        "train",
        retries=0,
        cosmos_rev="head",
        edits=(Edit("train.output_dir", str(outputs)), Edit("train.ckpt.save_freq", 1000)),
        env={"A1X_STANDIN_STEPS": "300", "A1X_STANDIN_STEP_S": "0.1", "A1X_STANDIN_REV": "head",
             "A1X_STANDIN_SAVE_S": "3"},
    )
    _wait_for(lambda: len(_trained(run, "part_0")) >= 5, "part_0 never trained 5 steps")
    assert cancel_job(run.job.job_id, signal="USR1").returncode == 0
    run.release_requeued(restarts=1)
    assert run.job.wait(60) == 0
    monitor = run.monitor()
    assert any(
        m == "signal:Signal SIGUSR1 caught. Forwarding SIGUSR1 to the steps that save a checkpoint: policy-rollout"
        for m in monitor
    ), monitor
    assert any(m.endswith("The steps that save have ended. Ending the other steps.") for m in monitor)
    saved = [e for e in _ledger(run) if e.get("event") == "saved_at_exit"]
    assert len(saved) == 1 and saved[0]["part"] == "part_0"
    # The controller was still up when the policy's save at exit was done (3 s after the signal).
    beat = float((tmp_path / "run" / "controller-heartbeat").read_text())
    assert beat >= float(str(saved[0]["t"])), (beat, saved[0])
    # Nothing was lost: the next part resumed from the step the policy saved at exit.
    step = int(str(saved[0]["step"]))
    assert f"resume:Resuming from checkpoint step {step}: " in "\n".join(monitor)
    assert _trained(run, "part_1")[0] == step + 1


def test_every_step_gets_the_cpus_the_job_asked_for(submit: Callable[..., Run]) -> None:
    # srun 22.05+ does not inherit --cpus-per-task (docs/slurm.md): a step without -c would get all of the
    # job's CPUs here (and, with CPU binding, one core per task on a real cluster). The job has 2 CPUs and
    # asks for 1 per task: every step must show CPUs=1.
    run = submit("hang", cpus_per_task=1, extra_sbatch_args=["--mincpus=2"])
    run.wait_state("RUNNING")
    run.wait_replicas()
    script = (run.slurm / "sbatch_script.sh").read_text().splitlines()
    sruns = [line for line in script if "srun " in line and not line.lstrip().startswith("#")]
    assert len(sruns) == 3 and all('--cpus-per-task="$A1X_STEP_CPUS"' in line for line in sruns)
    assert "A1X_STEP_CPUS=1" in script
    job = subprocess.run(["scontrol", "-o", "show", "job", run.job.job_id], capture_output=True, text=True)
    assert "NumCPUs=2 " in job.stdout, job.stdout
    shown = subprocess.run(["scontrol", "-o", "show", "step", run.job.job_id], capture_output=True, text=True)
    steps = [line for line in shown.stdout.splitlines() if re.match(r"StepId=\d+\.\d+ ", line)]
    # the controller and the node's launcher (the step that asked the controller's host name has ended)
    assert len(steps) == 2, shown.stdout
    assert all(" CPUs=1 " in line for line in steps), steps
