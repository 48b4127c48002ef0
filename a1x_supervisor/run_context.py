"""What the daemon's parts share about the run they serve: its directory, spec, state, event and
findings logs, the executors, and the stop and restart requests (docs/supervisor.md)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from a1x_supervisor.executor import Executor
from a1x_supervisor.rundir import RunDir
from a1x_supervisor.spec import RunSpec
from a1x_supervisor.state import EventLog, FindingsLog, RunState, StateStore
from a1x_supervisor.train_monitor import describe_finding


class Controls:
    """Stop and restart requests: set from any thread (a signal, a socket client), read by the run loop."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.stop_reason = ""
        self.restart_to: str | None = None
        self.wake = threading.Event()  # ends a retry's wait early
        self.lock = threading.Lock()

    def request_stop(self, reason: str) -> None:
        with self.lock:
            if not self.stop.is_set():
                self.stop_reason = reason
                self.stop.set()
        self.wake.set()

    def request_restart(self, stage: str) -> None:
        with self.lock:
            self.restart_to = stage
        self.wake.set()

    def interrupted(self) -> bool:
        """A stop or a restart is asked for: what runs now must end."""
        with self.lock:
            return self.stop.is_set() or self.restart_to is not None

    def take_restart(self) -> str | None:
        """The stage a restart asked for, once."""
        with self.lock:
            target, self.restart_to = self.restart_to, None
        return target

    def sleep(self, seconds: float) -> bool:
        """Wait, waking for stop or restart; True when interrupted."""
        self.wake.clear()
        if self.interrupted():
            return True
        self.wake.wait(timeout=seconds)
        return self.interrupted()

    def stopped_reason(self) -> str:
        """Why a stage ends ``stopped``: a restart, or the stop's reason."""
        if self.restart_to is not None and not self.stop.is_set():
            return "restarting"
        return self.stop_reason or "stopped"


class Executors:
    """The executor of a command (``Command.executor``) or a recorded handle (``ProcessHandle.executor``):
    local processes, or a Slurm job (a ``SlurmExecutor`` made when first needed)."""

    def __init__(self, local: Executor, slurm: Executor | None = None) -> None:
        self.local = local
        self._slurm = slurm

    def for_kind(self, kind: str) -> Executor:
        if kind == "slurm":
            if self._slurm is None:
                from a1x_supervisor.slurm.executor import SlurmExecutor

                self._slurm = SlurmExecutor()
            return self._slurm
        return self.local


@dataclass(eq=False)
class RunContext:
    """One run as the daemon serves it. ``outputs`` (the export folder, the checkpoint) is shared
    with the stages and kept in ``state.json`` at every stage change."""

    rundir: RunDir
    spec: RunSpec
    store: StateStore
    events: EventLog
    findings: FindingsLog
    outputs: dict[str, str]
    executors: Executors
    controls: Controls

    def set_stage(self, name: str, **changes: Any) -> None:
        def change(s: RunState) -> None:
            st = s.stage(name)
            for key, value in changes.items():
                setattr(st, key, value)
            s.outputs = dict(self.outputs)

        self.store.update(change)

    def record_findings(self, stage: str, findings: list[dict[str, Any]]) -> None:
        """Findings found for ``stage`` outside the live diagnostics (a refused Slurm submission)."""
        self.findings.record(findings, stage=stage)
        for finding in findings:
            self.events.emit(
                "finding_raised",
                describe_finding(finding),
                stage=stage,
                finding_id=finding.get("id"),
                severity=finding.get("severity"),
            )
