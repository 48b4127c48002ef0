"""SlurmExecutor: the supervisor's executor seam over a Slurm job, driven by scripted command answers."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from a1x_supervisor.executor import Executor, ProcessHandle
from a1x_supervisor.secrets import Scrubber
from a1x_supervisor.slurm import JobInfo, SlurmExecutor, SubmitError, exit_status
from a1x_supervisor.slurm.tracking import CommandResult
from a1x_supervisor.stagelog import StageLog


def scontrol(
    state: str,
    *,
    reason: str = "None",
    nodes: str = "(null)",
    exit_code: str = "0:0",
    restarts: int = 0,
    job: str = "4242",
) -> str:
    # The fields our parser reads, in the order and shape of `scontrol -o show job` (recorded/…oneliner.txt).
    return (
        f"JobId={job} JobName=a1x_rl UserId=root(0) GroupId=root(0) JobState={state} Reason={reason} "
        f"Dependency=(null) Requeue=1 Restarts={restarts} BatchFlag=1 Reboot=0 ExitCode={exit_code} "
        f"NodeList={nodes} BatchHost=node001\n"
    )


class Script:
    """Answers ``scontrol`` with the next scripted state (the last one repeats); records every call."""

    def __init__(self, *states: str) -> None:
        self.states = list(states)
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        self.calls.append(list(argv))
        if argv[0] == "scontrol":
            text = self.states.pop(0) if len(self.states) > 1 else self.states[0]
            if not text:
                return CommandResult(1, "", "slurm_load_jobs error: Invalid job id specified")
            return CommandResult(0, text)
        if argv[0] == "sacct":
            return CommandResult(1, "", "Slurm accounting storage is disabled")
        if argv[0] == "squeue":
            return CommandResult(1, "", "slurm_load_jobs error: Invalid job id specified")
        return CommandResult(0, "")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def executor(runner: Script, clock: Clock) -> SlurmExecutor:
    return SlurmExecutor(runner=runner, poll_interval_s=5.0, clock=clock, sleep=clock.sleep)


def stage_log(tmp_path: Path) -> StageLog:
    return StageLog(tmp_path / "train.log", scrubber=Scrubber([]))


def notes(tmp_path: Path) -> list[str]:
    return [line.split(" ", 1)[1] for line in (tmp_path / "train.log").read_text().splitlines()]


def fake_sbatch(tmp_path: Path, output: str, rc: int = 0) -> list[str]:
    """A stand-in for ``sbatch --parsable <run>/slurm/sbatch_script.sh`` printing ``output``."""
    exe = tmp_path / "bin" / "sbatch"
    exe.parent.mkdir(parents=True, exist_ok=True)
    exe.write_text(f"#!{sys.executable}\nimport sys\nsys.stdout.write({output!r})\nsys.exit({rc})\n")
    exe.chmod(0o755)
    return [str(exe), "--parsable", str(tmp_path / "run" / "slurm" / "sbatch_script.sh")]


def test_it_has_the_executor_shape() -> None:
    ex: Executor = SlurmExecutor()
    assert ex.name == "slurm"


def test_a_job_is_followed_from_pending_through_a_requeue_to_its_exit_code(tmp_path: Path) -> None:
    clock = Clock()
    runner = Script(
        scontrol("PENDING", reason="Resources"),
        scontrol("RUNNING", nodes="node[001-080]"),
        scontrol("PENDING", reason="BeginTime", restarts=1),
        scontrol("RUNNING", nodes="node[001-080]", restarts=1),
        scontrol("COMPLETED", nodes="node[001-080]", restarts=1),
    )
    log = stage_log(tmp_path)
    job = executor(runner, clock).start(fake_sbatch(tmp_path, "4242;a1xci\n"), cwd=tmp_path, env={}, log=log)
    assert job.handle == ProcessHandle(
        executor="slurm", pid=0, pgid=0, create_time=job.handle.create_time, job_id="4242"
    )
    assert job.slurm_dir == tmp_path / "run" / "slurm"
    assert job.poll() is None and job.alive() == [4242]
    assert job.wait(60) == 0
    log.close()
    assert notes(tmp_path)[1:] == [
        f"[a1x-tui] slurm: submitted job 4242 on cluster a1xci; job files in {tmp_path / 'run' / 'slurm'}",
        "[a1x-tui] slurm: job 4242 PENDING (Resources: waiting for nodes to become free)",
        "[a1x-tui] slurm: job 4242 RUNNING on node[001-080]",
        "[a1x-tui] slurm: job 4242 PENDING (BeginTime: not allowed to start yet (a requeued job waits about two "
        "minutes)) requeued, restart 1",
        "[a1x-tui] slurm: job 4242 RUNNING on node[001-080]",
        "[a1x-tui] slurm: job 4242 COMPLETED on node[001-080] exit code 0",
    ]
    assert clock.now <= 30  # one query per poll interval, no busy loop


def test_polls_are_rate_limited(tmp_path: Path) -> None:
    clock = Clock()
    runner = Script(scontrol("RUNNING", nodes="n1"))
    job = executor(runner, clock).start(fake_sbatch(tmp_path, "7\n"), cwd=tmp_path, env={}, log=stage_log(tmp_path))
    for _ in range(10):
        job.poll()
    clock.now += 5
    job.poll()
    assert sum(1 for c in runner.calls if c[0] == "scontrol") == 2


@pytest.mark.parametrize(
    "info,rc",
    [
        (JobInfo("1", "COMPLETED", exit_code=0), 0),
        (JobInfo("1", "FAILED", exit_code=3, signal=0), 3),
        (JobInfo("1", "CANCELLED", exit_code=0, signal=15), 143),
        (JobInfo("1", "CANCELLED"), 143),
        (JobInfo("1", "TIMEOUT", exit_code=0), 124),
        (JobInfo("1", "NODE_FAIL", exit_code=0), 1),
        (JobInfo("1", "OUT_OF_MEMORY", exit_code=0, signal=9), 137),
        (JobInfo("1", "FAILED", exit_code=0, signal=9), 137),
    ],
)
def test_exit_status_of_ended_jobs(info: JobInfo, rc: int) -> None:
    assert exit_status(info) == rc


def test_a_job_slurm_forgot_takes_its_exit_from_the_monitor_log(tmp_path: Path) -> None:
    clock = Clock()
    runner = Script(scontrol("RUNNING", nodes="n1"), "")
    log = stage_log(tmp_path)
    job = executor(runner, clock).start(fake_sbatch(tmp_path, "4242\n"), cwd=tmp_path, env={}, log=log)
    (tmp_path / "run" / "slurm").mkdir(parents=True)
    (tmp_path / "run" / "slurm" / "slurm_4242.log").write_text(
        "[2026-03-01 11:06:00.100 AM UTC][a1x-tui-sbatch]: Final exit status: 3\n"
    )
    assert job.wait(60) == 3
    log.close()
    assert "[a1x-tui] slurm: job 4242 is no longer known to Slurm; exit 3 (from the job's monitor log)" in notes(
        tmp_path
    )


def test_stop_is_scancel_then_a_kill_when_the_job_outlives_the_grace(tmp_path: Path) -> None:
    clock = Clock()
    runner = Script(
        scontrol("RUNNING", nodes="n1"), scontrol("RUNNING", nodes="n1"), scontrol("CANCELLED", exit_code="0:15")
    )
    job = executor(runner, clock).start(fake_sbatch(tmp_path, "4242\n"), cwd=tmp_path, env={}, log=stage_log(tmp_path))
    report = job.stop(grace_s=10)
    assert (report.terminated, report.killed, report.survivors) == ([4242], [], [])
    assert ["scancel", "4242"] in runner.calls
    assert job.poll() == 143 and job.alive() == []

    stuck = Script(scontrol("RUNNING", nodes="n1", job="9"))
    report = executor(stuck, clock).stop_handle(
        ProcessHandle(executor="slurm", pid=0, pgid=0, create_time=0, job_id="9"), 2
    )
    assert (report.terminated, report.killed, report.survivors) == ([9], [9], [9])
    assert ["scancel", "--full", "--signal=KILL", "9"] in stuck.calls


def test_recorded_handles_are_asked_about_by_job_id() -> None:
    clock = Clock()
    handle = ProcessHandle(executor="slurm", pid=0, pgid=0, create_time=0, job_id="4242")
    assert executor(Script(scontrol("PENDING", reason="Priority")), clock).alive(handle) == [4242]
    assert executor(Script(scontrol("FAILED", exit_code="1:0")), clock).alive(handle) == []
    assert executor(Script(""), clock).alive(handle) == []


def test_a_failed_submission_is_one_line(tmp_path: Path) -> None:
    clock = Clock()
    with pytest.raises(SubmitError, match=r"^sbatch failed with exit code 1: sbatch: error: Invalid account"):
        executor(Script(""), clock).start(
            fake_sbatch(tmp_path, "sbatch: error: Invalid account or account/partition combination\n", rc=1),
            cwd=tmp_path,
            env={},
            log=stage_log(tmp_path),
        )
    with pytest.raises(SubmitError, match="printed no job id"):
        executor(Script(""), clock).start(
            fake_sbatch(tmp_path, "hello\n"), cwd=tmp_path, env={}, log=stage_log(tmp_path)
        )
    with pytest.raises(SubmitError, match="not found on this node"):
        executor(Script(""), clock).start(["/nonexistent/sbatch"], cwd=tmp_path, env={}, log=stage_log(tmp_path))


def test_dispatch_job_submissions_are_found_in_its_output(tmp_path: Path) -> None:
    clock = Clock()
    script = tmp_path / "dispatch_job.py"
    script.write_text(
        "import sys\n"
        "print('2026-03-01 10:00:00,000 - INFO - dispatch_job.py:371 - Output directory: /lustre/runs/a1x_rl_1',"
        " file=sys.stderr)\n"
        "print('Submitted batch job 31337')\n"
    )
    job = executor(Script(scontrol("PENDING", reason="Priority")), clock).start(
        [sys.executable, str(script)], cwd=tmp_path, env={}, log=stage_log(tmp_path)
    )
    assert (job.job_id, job.slurm_dir) == ("31337", Path("/lustre/runs/a1x_rl_1/slurm"))
