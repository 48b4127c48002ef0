"""Real jobs on a real (single-host) Slurm: submission, tracking, cancel, failure, requeue, findings.

Skipped unless ``sinfo`` answers with a usable node (CI starts one with ``.ci/slurm-up.sh``). The
job steps are ``standin.py`` playing ``launch_controller.sh`` and the ``cosmos-rl`` launcher, so the
sbatch script, the monitor, the part/run layout and our tracking are the real ones.
"""

from __future__ import annotations

import json
import os
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
        edits=(Edit("train.output_dir", str(outputs)), Edit("train.ckpt.save_freq", 2)),
        env={"A1X_STANDIN_STEPS": "400", "A1X_STANDIN_STEP_S": "0.1"},
    )
    run.release_requeued(restarts=1)
    assert run.job.wait(60) == 0
    layout = read_layout(run.slurm)
    assert [(p.index, p.runs) for p in layout.parts] == [(0, (0,)), (1, (0,))]
    monitor = run.monitor()
    assert any(m.startswith("autoresume:Received signal SIGUSR1") for m in monitor)
    # 747d1bd has no SIGUSR1 handler: the steps were ended with SIGTERM, the save in flight left unfinished.
    assert any(m.startswith("signal:Signal SIGUSR1 caught. Forwarding SIGTERM") for m in monitor)

    steps = [json.loads(line) for line in (tmp_path / "run" / "standin-steps.jsonl").read_text().splitlines()]
    first = [s["step"] for s in steps if s["part"] == "part_0"]
    second = [s["step"] for s in steps if s["part"] == "part_1"]
    assert first == list(range(1, len(first) + 1)) and 4 <= len(first) < 400
    # Checkpoints of the first start, every 2 steps (two saves, the first completed by the second, fit in
    # a loaded machine's first start): the kill cut the newest save short (no markers).
    (stamp,) = [p for p in outputs.iterdir() if (p / "checkpoints" / f"step_{second[0] - 1}").is_dir()]
    folders = {int(p.name.removeprefix("step_")): p / "policy" for p in (stamp / "checkpoints").iterdir()}
    complete = sorted(n for n, f in folders.items() if all((f / f".rank_{r}_complete").exists() for r in range(4)))
    unfinished = sorted(set(folders) - set(complete))
    resumed = complete[-1]
    assert unfinished and min(unfinished) > resumed and complete == list(range(2, resumed + 1, 2))
    for n in unfinished:
        assert f"resume_skipped:Checkpoint of step {n} is not complete, not resuming from it: {folders[n]}" in monitor
    ckpt = folders[resumed]
    assert f"resume:Resuming from checkpoint step {resumed}: {ckpt}" in monitor
    # The requeued part trained from the step after the last complete checkpoint to the end: no step up
    # to that checkpoint was trained twice, only those after it that the kill lost.
    assert second == list(range(resumed + 1, 401))
    assert sorted(set(first) & set(second)) == list(range(resumed + 1, first[-1] + 1))
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
