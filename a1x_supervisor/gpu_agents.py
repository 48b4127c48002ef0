"""The GPU agent beside the local ``train`` stage, and the pid labels it reads: one agent process per
run of the stage, started and stopped with it, its end recorded once; ``pids.json`` kept current.

While ``cosmos-rl`` runs on this node the supervisor also runs ``a1x-tui gpu-agent <run>
--pids-file <run>/supervisor/pids.json`` (docs/gpu.md): GPU samples go to ``<run>/gpu/``, and the
agent joins GPU processes to roles from the labels the supervisor keeps in ``pids.json``. The agent
runs in its own process group and is stopped with the stage (SIGTERM, then SIGKILL), so it never
outlives training. Its output goes to ``<run>/supervisor/gpu-agent.log``. Training never depends on
it: an agent that exits (exit 1 with one line when this machine has no usable NVML) is noted once,
and not started again by this supervisor.

For cluster runs the sbatch script runs the agent on every node as a job step instead
(``a1x_supervisor.slurm.sbatch``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from a1x_supervisor.executor import LocalExecutor, LocalProcess, StageProcess, StopReport
from a1x_supervisor.pids import PidsFile, ReplicaLabeler
from a1x_supervisor.rundir import RunDir
from a1x_supervisor.secrets import Scrubber, child_environment
from a1x_supervisor.stagelog import StageLog, last_output_line, read_since
from a1x_supervisor.state import EventLog

_REPO_ROOT = Path(__file__).resolve().parent.parent  # the agent runs from a checkout too (PYTHONPATH)
STOP_GRACE_S = 5.0  # the agent writes its last line and exits within a second of SIGTERM


def agent_argv(rundir: RunDir) -> list[str]:
    """``a1x-tui gpu-agent RUN --pids-file RUN/supervisor/pids.json`` with this Python."""
    return [sys.executable, "-m", "a1x_tui", "gpu-agent", str(rundir.run_dir), "--pids-file", str(rundir.pids_path)]


class GpuAgentHelper:
    """One agent process for one run of the train stage."""

    def __init__(self, rundir: RunDir, argv: Sequence[str] | None = None) -> None:
        self.rundir = rundir
        self.argv = list(argv) if argv is not None else agent_argv(rundir)
        self.proc: LocalProcess | None = None
        self.exit_line: str | None = None  # set once the agent ended on its own
        self._offset = 0
        self._closed = False

    def start(self) -> str | None:
        """Start it; returns a one-line problem instead when it cannot be started."""
        log_path = self.rundir.gpu_agent_log
        log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._offset = log_path.stat().st_size if log_path.exists() else 0
        pythonpath = os.pathsep.join(p for p in (str(_REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p)
        env = child_environment(os.environ, additions={"PYTHONPATH": pythonpath}, path_prepend=(), secrets=())
        log = StageLog(log_path, scrubber=Scrubber.from_environment())
        log.note(f"$ {' '.join(self.argv)}")
        try:
            self.proc = LocalExecutor().start(self.argv, cwd=self.rundir.run_dir, env=env, log=log)
        except OSError as exc:
            log.close()
            return f"GPU agent not started: {exc.strerror or exc}"
        return None

    @property
    def pid(self) -> int | None:
        return self.proc.handle.pid if self.proc is not None else None

    def poll(self) -> str | None:
        """The one line to record when the agent has just ended on its own (once), else None."""
        if self.proc is None or self.exit_line is not None:
            return None
        rc = self.proc.poll()
        if rc is None:
            return None
        self.proc.close()  # the output is read to its end before the line is taken
        self._closed = True
        last = last_output_line(read_since(self.rundir.gpu_agent_log, self._offset), 300)
        self.exit_line = f"GPU agent exited with code {rc}" + (f": {last}" if last else "")
        return self.exit_line

    def stop(self) -> StopReport | None:
        """Stop the agent and whatever it started; nothing of it is left afterwards."""
        if self.proc is None:
            return None
        proc, self.proc = self.proc, None
        report = proc.stop(STOP_GRACE_S)
        if not self._closed:
            proc.close()
        return report


class GpuAgents:
    """The daemon's side: whether to run an agent (``setting``: True for ``a1x-tui gpu-agent``, False
    for none, or an argv), each agent's start, end and stop, and the pid labels in ``pids.json``."""

    def __init__(self, rundir: RunDir, events: EventLog, setting: Sequence[str] | bool = True) -> None:
        self.rundir = rundir
        self.events = events
        self.pids = PidsFile(rundir.pids_path)
        self._setting = setting
        self._note: str | None = None  # why the GPU agent is not run again (recorded once)

    def start(self, log: StageLog) -> GpuAgentHelper | None:
        if self._setting is False or self._note is not None:
            return None
        argv = None if self._setting is True else list(self._setting)
        agent = GpuAgentHelper(self.rundir, argv)
        problem = agent.start()
        if problem is not None:
            self.ended(problem, log)
            return None
        log.note(f"GPU agent pid {agent.pid}: samples in {self.rundir.run_dir / 'gpu'}, roles from {self.pids.path}")
        return agent

    def ended(self, line: str, log: StageLog) -> None:
        """Recorded once per supervisor (no NVML here: every later start would say the same); training goes on."""
        self._note = line
        log.note(f"{line}; training goes on without GPU samples")
        self.events.emit("note", f"{line}; training goes on without GPU samples", stage="train")

    def stop(self, agent: GpuAgentHelper, log: StageLog) -> None:
        report = agent.stop()
        if report is not None and report.survivors:
            text = f"GPU agent: STILL ALIVE after SIGKILL: {report.survivors}"
            self.events.emit("processes_survived", text, pids=report.survivors)
            log.note(text)

    def label_replicas(self, proc: StageProcess, labeler: ReplicaLabeler) -> None:
        """The controller and replicas under the training's process tree, by role (``a1x_supervisor.pids``)."""
        try:
            labels = labeler.labels(pid for pid, _ in proc.handle.descendants)
        except Exception as exc:  # a role join that fails must not stop training
            self.events.emit("note", f"pids.json: role join failed: {type(exc).__name__}: {exc}", stage="train")
            return
        self.pids.set_replicas(labels)
