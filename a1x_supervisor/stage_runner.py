"""One attempt of one stage: its commands started through their executor and watched until they end
or are stopped, with their progress, the train monitor and the Slurm job's record; nothing of them
is left running afterwards (docs/supervisor.md, "Processes and signals").
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from a1x_supervisor.alerts import WandbAlerts, monitor_group
from a1x_supervisor.cosmos_logs import expected_ranks
from a1x_supervisor.executor import StageProcess, StopReport
from a1x_supervisor.gpu_agents import GpuAgentHelper, GpuAgents
from a1x_supervisor.pids import ReplicaLabeler
from a1x_supervisor.run_context import RunContext
from a1x_supervisor.secrets import Scrubber, child_environment
from a1x_supervisor.slurm.executor import SubmitError, resume_text
from a1x_supervisor.stage import Command, Progress, StageSpec
from a1x_supervisor.stagelog import StageLog, run_cleanup
from a1x_supervisor.train_monitor import TrainMonitor, TrainVerdict, load_diagnosis

if TYPE_CHECKING:
    from a1x_diagnostics.live import DiagnosisFactory

_PROGRESS_EVENT_INTERVAL_S = 5.0


@dataclass(slots=True)
class Outcome:
    """How an attempt ended: its exit code, a stop, the train monitor's verdict, or an error line."""

    rc: int | None = None
    interrupted: bool = False
    verdict: TrainVerdict | None = None
    error: str | None = None
    label: str = ""
    monitor: TrainMonitor | None = None
    slurm: dict[str, Any] | None = None  # the Slurm job of a cluster train stage, as last seen


class StageRunner:
    """Runs attempts for one supervisor. ``diagnose``: follow training with the live diagnostics
    (True), not (False/None), or with this ``DiagnosisFactory``."""

    def __init__(self, ctx: RunContext, agents: GpuAgents, diagnose: DiagnosisFactory | bool | None) -> None:
        self.ctx = ctx
        self.agents = agents
        self._diagnose = diagnose
        self._last_progress_event: dict[str, float] = {}
        self._last_progress_write = 0.0

    def run(self, stage: StageSpec, commands: list[Command]) -> Outcome:
        """Run ``commands`` one after the other until one fails, is stopped or is judged by the monitor."""
        outcome = Outcome()
        monitor: TrainMonitor | None = None
        if stage.kind == "train":
            monitor = TrainMonitor(
                log_dir=self.ctx.rundir.log_dir(self.ctx.spec),
                ranks=lambda: expected_ranks(self.ctx.rundir.train_toml),
                diagnosis=self._diagnosis(),
                interval_s=self.ctx.spec.supervisor.diagnostics_interval_s,
                grace_s=self.ctx.spec.supervisor.shutdown_grace_s,
                findings=self.ctx.findings,
                emit=lambda kind, message, **data: self.ctx.events.emit(kind, message, stage=stage.name, **data),
                slurm=any(cmd.executor == "slurm" for cmd in commands),
                run_folders=stage.run_folders,
                diagnosis_for=self._diagnosis_for() if stage.run_folders is not None else None,
                alerts=self._alerts(stage.name),
            )
            outcome.monitor = monitor
        try:
            for cmd in commands:
                outcome.label = cmd.label
                self._run_command(stage, cmd, outcome, monitor)
                if outcome.interrupted or outcome.error is not None or outcome.verdict is not None:
                    break
                if outcome.rc != 0:
                    break
        finally:
            if monitor is not None:
                monitor.close()  # stops the live follower: no thread outlives the stage
            if stage.cleanup is not None:  # what the processes leave outside their tree (AlpaSim's containers)
                run_cleanup(self.ctx.rundir.stage_log(stage.name), stage.cleanup, Scrubber.from_environment())
        return outcome

    def _alerts(self, stage: str) -> WandbAlerts | None:
        """``[alerts] wandb = true``: findings as W&B alerts of a monitor run (a1x_supervisor/alerts.py)."""
        spec = self.ctx.spec
        if not spec.alerts.wandb:
            return None
        run_id = self.ctx.rundir.run_dir.name
        project, group = monitor_group(self.ctx.rundir.train_toml, run_id)
        return WandbAlerts(
            project=project or spec.wandb.project, group=group, name=f"a1x-monitor {run_id}",
            wait_s=spec.alerts.wait_s,
            say=lambda text: self.ctx.events.emit("note", text, stage=stage),
        ).start()

    def _diagnosis_for(self) -> Callable[[Path], DiagnosisFactory] | None:
        """For a stage with its own run folder: the live diagnostics of that folder (closed-loop)."""
        if self._diagnose is not True or not self.ctx.spec.supervisor.live_diagnostics:
            return None  # off, or a factory handed in (tests): that one is used as it is
        return load_diagnosis

    def _diagnosis(self) -> DiagnosisFactory | None:
        if self._diagnose is False or self._diagnose is None or not self.ctx.spec.supervisor.live_diagnostics:
            return None
        if self._diagnose is not True:
            return self._diagnose
        return load_diagnosis()

    def _run_command(self, stage: StageSpec, cmd: Command, outcome: Outcome, monitor: TrainMonitor | None) -> None:
        parser = stage.progress() if stage.progress is not None and stage.kind != "train" else None
        name = stage.name

        def on_line(line: str) -> None:
            if monitor is not None:
                monitor.on_launcher_line(line)
            if parser is not None:
                progress = parser.feed(line)
                if progress is not None:
                    self._progress(name, progress)

        env = child_environment(os.environ, additions=cmd.env, path_prepend=cmd.path_prepend, secrets=cmd.secrets)
        scrubber = Scrubber.from_environment()
        log = StageLog(self.ctx.rundir.stage_log(name), scrubber=scrubber, on_line=on_line)
        log.note(f"$ {shlex.join(cmd.argv)}")
        log.note(f"cwd {cmd.cwd}; env {' '.join(f'{k}={v}' for k, v in cmd.env.items()) or '-'}")
        if cmd.secrets:
            log.note(f"secrets passed in the environment (values never logged): {', '.join(cmd.secrets)}")
        try:
            proc = self.ctx.executors.for_kind(cmd.executor).start(cmd.argv, cwd=cmd.cwd, env=env, log=log)
        except OSError as exc:
            message = f"cannot start {cmd.argv[0]}: {exc.strerror or exc}"
            log.note(message)
            log.close()
            outcome.error, outcome.rc = message, 127
            return
        except SubmitError as exc:  # sbatch or dispatch_job.py submitted nothing
            message = str(exc)
            log.note(message)
            log.close()
            outcome.error, outcome.rc = message, 1
            return
        self.ctx.set_stage(name, process=proc.handle.to_json(), command=cmd.label)
        agent: GpuAgentHelper | None = None
        try:
            if cmd.executor == "slurm":
                self._slurm_started(stage, proc, log, outcome)
            else:
                self.agents.pids.set_stage(proc.handle.pid, name)
                if stage.kind == "train" and stage.gpu_agent:
                    agent = self.agents.start(log)
                    foreign = getattr(proc, "foreign", None)
                    if agent is not None and agent.pid is not None and isinstance(foreign, set):
                        foreign.add(agent.pid)  # a subreaper's child, but not the stage's
            self._supervise(stage, proc, log, outcome, monitor, agent)
        finally:
            if proc.alive():  # only after an unexpected error: never leave a stage behind
                proc.stop(self.ctx.spec.supervisor.stop_grace_s)
            if agent is not None:
                self.agents.stop(agent, log)
            self.agents.pids.clear()
            proc.close()
        self.ctx.set_stage(name, process=None, command=None, exit_code=outcome.rc)

    # -- a Slurm job (compute = "cluster") ------------------------------------------------------------------
    def _slurm_started(self, stage: StageSpec, proc: StageProcess, log: StageLog, outcome: Outcome) -> None:
        """A submitted job: link cosmos-dispatch's log folder into the run, record the job."""
        job = proc.handle.job_id or ""
        cluster, rundir = self.ctx.spec.cluster, self.ctx.rundir
        if cluster is not None and cluster.method == "cosmos-dispatch":
            from a1x_supervisor.stages.train_cluster import dispatch_logs_target, link_slurm_dir

            target = dispatch_logs_target(self.ctx.spec, job, getattr(proc, "slurm_dir", None))
            problem = link_slurm_dir(rundir, target) if target is not None else "dispatch_job.py named no run dir"
            log.note(problem or f"slurm: {rundir.slurm_dir} -> {target}")
        self._note_slurm(stage, proc, outcome)

    def _note_slurm(self, stage: StageSpec, proc: StageProcess, outcome: Outcome) -> None:
        """Keep the job's state, pending reason and nodes in state.json; an event when they change."""
        to_json = getattr(proc, "to_json", None)
        if not callable(to_json):
            return
        job: dict[str, Any] = to_json()
        old = outcome.slurm
        if job == old:
            return
        outcome.slurm = job
        self.ctx.set_stage(stage.name, slurm=job)
        keys = ("state", "reason", "nodes", "restarts", "run", "resumed_from_step")
        if old is not None and all(old.get(k) == job.get(k) for k in keys):
            return
        text = f"Slurm job {job['job_id']} {job['state']}"
        if job.get("reason_text"):
            text += f" ({job['reason_text']})"
        elif job.get("nodes") and job["state"] != "PENDING":
            text += f" on {job['nodes']}"
        text += resume_text(job)
        if job.get("run"):
            text += f"; logs {job['run']}"
        self.ctx.events.emit("slurm_job", text, stage=stage.name, **job)

    # -- watching until it ends -------------------------------------------------------------------------------
    def _supervise(
        self,
        stage: StageSpec,
        proc: StageProcess,
        log: StageLog,
        outcome: Outcome,
        monitor: TrainMonitor | None,
        agent: GpuAgentHelper | None = None,
    ) -> None:
        grace = self.ctx.spec.supervisor.stop_grace_s
        slurm = proc.handle.executor == "slurm"
        stopping = (
            f"stopping: scancel {proc.handle.job_id}, SIGKILL after {grace:.0f}s"
            if slurm
            else f"stopping: SIGTERM to process group {proc.handle.pgid}, SIGKILL after {grace:.0f}s"
        )
        labeler = ReplicaLabeler() if stage.kind == "train" and not slurm else None
        last_track = 0.0
        descendants = 0
        while True:
            rc = proc.wait(0.5)
            now = time.monotonic()
            if now - last_track >= 1.0:
                last_track = now
                proc.track()
                if len(proc.handle.descendants) != descendants:
                    descendants = len(proc.handle.descendants)
                    self.ctx.set_stage(stage.name, process=proc.handle.to_json())
                    if labeler is not None:
                        self.agents.label_replicas(proc, labeler)
                if slurm:
                    self._note_slurm(stage, proc, outcome)
                if agent is not None:
                    ended = agent.poll()
                    if ended is not None:
                        self.agents.ended(ended, log)
                        agent = None
            if rc is not None:
                break
            if self.ctx.controls.interrupted():
                log.note(stopping)
                self._log_stop(log, proc.stop(grace), slurm=slurm)
                outcome.interrupted = True
                break
            if monitor is not None:
                verdict = monitor.tick(running=True)
                if monitor.progress is not None:
                    self._progress(stage.name, monitor.progress)
                if verdict is not None:
                    log.note(verdict.reason)
                    self.ctx.events.emit("train_verdict", verdict.reason, stage=stage.name, action=verdict.action)
                    log.note(stopping)
                    self._log_stop(log, proc.stop(grace), slurm=slurm)
                    outcome.verdict = verdict
                    break
        outcome.rc = proc.poll()
        left = proc.alive()
        if left:
            # no process outlives its stage (a replica the launcher left behind, a daemonized redis)
            log.note(f"{len(left)} process(es) outlived the stage's main process: stopping them ({left[:8]})")
            self._log_stop(log, proc.stop(grace), slurm=slurm)
        if slurm:
            self._note_slurm(stage, proc, outcome)
        if monitor is not None:
            monitor.tick(running=False)
            if monitor.progress is not None:
                self._progress(stage.name, monitor.progress, force=True)
        if outcome.rc is not None and not outcome.interrupted:
            log.note(f"exit code {outcome.rc}")

    def _log_stop(self, log: StageLog, report: StopReport, *, slurm: bool = False) -> None:
        if slurm:  # a StopReport of SlurmExecutor holds job numbers, not pids
            text = f"scancel: job {report.terminated[0]}" if report.terminated else "scancel: the job had ended"
            if report.killed:
                text += " still there after the grace period: scancel --signal=KILL"
            if report.survivors:
                text += f"; STILL NOT ENDED after scancel --signal=KILL: job {report.survivors[0]}"
                self.ctx.events.emit("processes_survived", text, pids=report.survivors)
            log.note(text)
            return
        text = f"SIGTERM to {len(report.terminated)} process(es)"
        if report.killed:
            text += f"; SIGKILL to {len(report.killed)} still alive after the grace period"
        if report.survivors:
            text += f"; STILL ALIVE after SIGKILL: {report.survivors}"
            self.ctx.events.emit("processes_survived", text, pids=report.survivors)
        log.note(text)

    def _progress(self, name: str, progress: Progress, *, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_progress_write >= 1.0:
            self._last_progress_write = now
            self.ctx.set_stage(name, progress=progress.to_json())
        last = self._last_progress_event.get(name, 0.0)
        if (force or now - last >= _PROGRESS_EVENT_INTERVAL_S) and progress.total:
            self._last_progress_event[name] = now
            self.ctx.events.emit("stage_progress", progress.text, stage=name, **progress.to_json())
