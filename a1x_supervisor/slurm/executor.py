"""``SlurmExecutor``: the supervisor's ``Executor`` seam (``a1x_supervisor.executor``) for Slurm jobs.

``start(argv, ...)`` runs the submission command on this (login) node — ``sbatch --parsable
<run>/slurm/sbatch_script.sh`` or Cosmos-RL's ``python dispatch_job.py ...`` (``submit.py`` builds
both) — writes its output to the stage log and returns a ``SlurmJob`` that follows the job id
through Slurm: ``poll()`` is ``None`` while the job is pending, running or requeued, then its exit
code. Pending reasons, node lists, requeues and new ``part_<N>/run_<M>`` directories are written
to the stage log as they change. ``stop()`` is ``scancel`` (Slurm sends SIGTERM to every step,
then SIGKILL after its KillWait), then ``scancel --signal=KILL`` if the job outlives the grace.

There are no local processes to list: ``alive()`` is ``[job number]`` while the job has not
ended, ``[]`` after. ``ProcessHandle.pid``/``pgid`` are 0 and ``job_id`` is the Slurm job.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from a1x_diagnostics.parsing import SlurmLayout, parse_monitor_log, read_slurm_layout
from a1x_supervisor.executor import ProcessHandle, StopReport
from a1x_supervisor.slurm.tracking import (
    JobInfo,
    Runner,
    SlurmParseError,
    cancel_job,
    job_id_from_dispatch_output,
    parse_sbatch,
    query_job,
    run_command,
    run_dir_from_dispatch_output,
)
from a1x_supervisor.stagelog import StageLog

# Exit codes for jobs that ended without one of their own (shell conventions).
_SIGNAL_BASE = 128
_STATE_RC = {"TIMEOUT": 124, "NODE_FAIL": 1, "BOOT_FAIL": 1, "PREEMPTED": 1, "OUT_OF_MEMORY": 137, "DEADLINE": 1}
_LOST_AFTER = 3  # polls in a row that find no trace of a job we saw before


def exit_status(info: JobInfo) -> int:
    """One number for an ended job: its exit code, 128+signal when killed, or a state's convention."""
    if info.state == "COMPLETED":
        return info.exit_code or 0
    if info.state == "CANCELLED":
        return _SIGNAL_BASE + (info.signal or 15)
    if info.exit_code:
        return info.exit_code
    if info.signal:
        return _SIGNAL_BASE + info.signal
    return _STATE_RC.get(info.state, 1)


def resume_text(job: Mapping[str, Any]) -> str:
    """``; part 1 resumed from step 40`` once the job (``SlurmJob.to_json()``) was requeued
    (docs/slurm.md, "Resuming"); "" before."""
    part, step = job.get("part"), job.get("resumed_from_step")
    if isinstance(step, int) and step > 0:
        return f"; part {part} resumed from step {step}"
    if isinstance(step, int) and (part or job.get("restarts")):
        return f"; part {part} trains from step 0 (no complete checkpoint to resume from)"
    return f"; part {part}" if isinstance(part, int) and part > 0 else ""


def _job_number(job_id: str) -> int:
    m = re.match(r"\d+", job_id)
    return int(m.group(0)) if m else 0


class SubmitError(RuntimeError):
    """The submission command failed or printed no job id; ``str(exc)`` is one line."""


class SlurmJob:
    """A submitted job, followed through Slurm (the ``StageProcess`` of ``SlurmExecutor``)."""

    def __init__(
        self,
        job_id: str,
        log: StageLog,
        *,
        runner: Runner,
        slurm_dir: Path | None,
        poll_interval_s: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.handle = ProcessHandle(executor="slurm", pid=0, pgid=0, create_time=time.time(), job_id=job_id)
        self.job_id = job_id
        self.slurm_dir = slurm_dir
        self.info: JobInfo | None = None
        self.layout: SlurmLayout | None = None
        self._log = log
        self._runner = runner
        self._interval = poll_interval_s
        self._clock = clock
        self._sleep = sleep
        self._last_query = -1e18
        self._missing = 0
        self._rc: int | None = None
        self._seen_runs: set[tuple[int, int]] = set()
        self._noted_resume: tuple[Path | None, int | None] = (None, None)

    # -- following the job ------------------------------------------------------------------------------

    def refresh(self, *, force: bool = False) -> JobInfo | None:
        """Ask Slurm (at most once per poll interval unless ``force``); log what changed."""
        if self._rc is not None:
            return self.info
        now = self._clock()
        if not force and now - self._last_query < self._interval:
            return self.info
        self._last_query = now
        info = query_job(self.job_id, self._runner)
        self._follow_layout()
        if info is None:
            self._missing += 1
            if self.info is not None and self._missing >= _LOST_AFTER:
                self._rc = self._rc_from_monitor()
                self._log.note(
                    f"slurm: job {self.job_id} is no longer known to Slurm; "
                    f"exit {self._rc if self._rc is not None else 'unknown'} (from the job's monitor log)"
                )
                if self._rc is None:
                    self._rc = 1
            return self.info
        self._missing = 0
        self._note_change(self.info, info)
        self.info = info
        if info.terminal:
            self._rc = exit_status(info)
        return info

    def _note_change(self, old: JobInfo | None, new: JobInfo) -> None:
        if old is not None and (old.state, old.reason, old.nodes, old.restarts) == (
            new.state,
            new.reason,
            new.nodes,
            new.restarts,
        ):
            return
        parts = [f"slurm: job {self.job_id} {new.state}"]
        if new.reason_text:
            parts.append(f"({new.reason_text})")
        if new.nodes and new.state not in ("PENDING",):
            parts.append(f"on {new.nodes}")
        if old is not None and new.restarts and new.restarts != (old.restarts or 0):
            parts.append(f"requeued, restart {new.restarts}")
        if new.terminal:
            parts.append(f"exit code {new.exit_code if new.exit_code is not None else '?'}")
            if new.signal:
                parts.append(f"signal {new.signal}")
        self._log.note(" ".join(parts))

    def _follow_layout(self) -> None:
        if self.slurm_dir is None:
            return
        layout = read_slurm_layout(self.slurm_dir)
        self.layout = layout
        for part in layout.parts:
            for run in part.runs:
                if (part.index, run) not in self._seen_runs:
                    self._seen_runs.add((part.index, run))
                    self._log.note(f"slurm: logs of this start in {part.path / f'run_{run}'}")
        resume = (layout.latest_run, layout.resumed_from_step)
        if layout.resumed_from_step and resume != self._noted_resume:
            self._noted_resume = resume
            self._log.note(f"slurm: part {layout.current_part} resumed from checkpoint step {layout.resumed_from_step}")

    def _rc_from_monitor(self) -> int | None:
        if self.slurm_dir is None:
            return None
        log = self.slurm_dir / f"slurm_{self.job_id}.log"
        try:
            lines = parse_monitor_log(log.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            return None
        finals = [ln for ln in lines if ln.kind == "final"]
        return int(finals[-1].data["status"]) if finals else None

    def to_json(self) -> dict[str, Any]:
        """What ``state.json`` and ``a1x-tui status`` show about the job (no query: the last answer)."""
        info = self.info
        layout = self.layout
        run = None
        if layout is not None and layout.current_part is not None and layout.current_run is not None:
            run = f"part_{layout.current_part}/run_{layout.current_run}"
        return {
            "job_id": self.job_id,
            "state": info.state if info is not None else "SUBMITTED",
            "reason": info.reason if info is not None and info.reason not in (None, "None") else None,
            "reason_text": info.reason_text if info is not None else None,
            "nodes": info.nodes if info is not None else None,
            "exit_code": self._rc,
            "restarts": info.restarts if info is not None else None,
            "run": run,
            "part": layout.current_part if layout is not None else None,
            "resumed_from_step": layout.resumed_from_step if layout is not None else None,
            "slurm_dir": str(self.slurm_dir) if self.slurm_dir is not None else None,
        }

    # -- StageProcess ---------------------------------------------------------------------------------

    def poll(self) -> int | None:
        self.refresh()
        return self._rc

    def wait(self, timeout: float) -> int | None:
        deadline = self._clock() + timeout
        while True:
            rc = self.poll()
            if rc is not None:
                return rc
            left = deadline - self._clock()
            if left <= 0:
                return None
            self._sleep(min(left, max(self._interval - (self._clock() - self._last_query), 0.05)))

    def track(self) -> None:
        self.refresh()

    def alive(self) -> list[int]:
        self.refresh(force=True)
        return [] if self._rc is not None else [_job_number(self.job_id)]

    def stop(self, grace_s: float) -> StopReport:
        return _stop_job(self.job_id, grace_s, self._runner, self._log, self._clock, self._sleep, self)

    def close(self) -> None:
        self._log.close()


def _stop_job(
    job_id: str,
    grace_s: float,
    runner: Runner,
    log: StageLog | None,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    job: SlurmJob | None = None,
) -> StopReport:
    number = _job_number(job_id)

    def ended() -> bool:
        if job is not None:
            job.refresh(force=True)
            return job.poll() is not None
        info = query_job(job_id, runner)
        return info is None or info.terminal

    if ended():
        return StopReport([], [], [])
    res = cancel_job(job_id, runner)
    if log is not None:
        log.note(f"slurm: scancel {job_id}: rc {res.returncode} {res.text.strip()}".rstrip())
    deadline = clock() + grace_s
    while clock() < deadline:
        if ended():
            return StopReport([number], [], [])
        sleep(0.5)
    runner(["scancel", "--full", "--signal=KILL", job_id])
    deadline = clock() + 10.0
    while clock() < deadline:
        if ended():
            return StopReport([number], [number], [])
        sleep(0.5)
    return StopReport([number], [number], [number])


def _slurm_dir_for(argv: Sequence[str], output: str) -> Path | None:
    if Path(argv[0]).name == "sbatch" and argv and argv[-1].endswith(".sh"):
        return Path(argv[-1]).parent
    run_dir = run_dir_from_dispatch_output(output)
    return run_dir / "slurm" if run_dir is not None else None


class SlurmExecutor:
    """Runs a stage's submission command and follows the job it submits (``[supervisor] executor = "slurm"``)."""

    name = "slurm"

    def __init__(
        self,
        *,
        runner: Runner = run_command,
        poll_interval_s: float = 5.0,
        submit_timeout_s: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.runner = runner
        self.poll_interval_s = poll_interval_s
        self.submit_timeout_s = submit_timeout_s
        self._clock = clock
        self._sleep = sleep

    def start(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], log: StageLog) -> SlurmJob:
        """Submit; raises ``SubmitError`` (one line) when no job came out of it."""
        try:
            proc = subprocess.run(
                list(argv),
                cwd=str(cwd),
                env=dict(env),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=self.submit_timeout_s,
                check=False,
            )
        except FileNotFoundError:
            raise SubmitError(f"{argv[0]}: not found on this node (is this a Slurm login node?)") from None
        except subprocess.TimeoutExpired:
            raise SubmitError(f"{argv[0]} did not finish in {self.submit_timeout_s:.0f} s") from None
        out = proc.stdout.decode(errors="replace")
        err = proc.stderr.decode(errors="replace")
        log.feed(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            last = (err.strip() or out.strip() or "no output").splitlines()[-1]
            raise SubmitError(f"{Path(argv[0]).name} failed with exit code {proc.returncode}: {last}")
        try:
            submitted = parse_sbatch(out)
        except SlurmParseError:
            found = job_id_from_dispatch_output(out + err)
            if found is None:
                raise SubmitError(f"{Path(argv[0]).name} printed no job id") from None
            submitted = found
        slurm_dir = _slurm_dir_for(argv, out + err)
        log.note(
            f"slurm: submitted job {submitted.job_id}"
            + (f" on cluster {submitted.cluster}" if submitted.cluster else "")
            + (f"; job files in {slurm_dir}" if slurm_dir else "")
        )
        job = SlurmJob(
            submitted.job_id,
            log,
            runner=self.runner,
            slurm_dir=slurm_dir,
            poll_interval_s=self.poll_interval_s,
            clock=self._clock,
            sleep=self._sleep,
        )
        job.refresh(force=True)
        return job

    def alive(self, handle: ProcessHandle) -> list[int]:
        if handle.job_id is None:
            return []
        info = query_job(handle.job_id, self.runner)
        return [] if info is None or info.terminal else [_job_number(handle.job_id)]

    def stop_handle(self, handle: ProcessHandle, grace_s: float) -> StopReport:
        if handle.job_id is None:
            return StopReport([], [], [])
        return _stop_job(handle.job_id, grace_s, self.runner, None, self._clock, self._sleep)
