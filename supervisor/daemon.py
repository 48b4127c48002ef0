"""The supervisor: owns a run's processes, writes its state, answers clients on a Unix socket.

One ``Supervisor`` serves one run directory. It takes the run's lock (``fcntl.flock``), so a
second supervisor on the same run is refused; a supervisor started after a crash finds the
previous state, marks every stage that was running as orphaned ("pid N still running" / "pid N
gone") and does not start anything while an orphan still runs. ``launch.start_daemon`` runs it
detached (double fork, ``setsid``); ``run --foreground`` runs it in the terminal.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import queue
import shlex
import signal
import socket
import socketserver
import struct
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from supervisor.cosmos_logs import expected_ranks
from supervisor.executor import Executor, LocalExecutor, ProcessHandle, StageProcess, StopReport, become_subreaper
from supervisor.gpu_helper import GpuAgentHelper
from supervisor.pids import PidsFile, ReplicaLabeler
from supervisor.pipeline import build_stages, select_stages
from supervisor.protocol import encode, unix_address
from supervisor.rundir import RunDir, make_private
from supervisor.secrets import Scrubber, child_environment
from supervisor.slurm.executor import SubmitError, resume_text
from supervisor.spec import RunSpec, load_spec
from supervisor.stage import Command, Progress, StageError, StageSpec, VerifyResult
from supervisor.stagelog import NOTE_PREFIX, StageLog, read_since, strip_timestamp
from supervisor.stages.train import verify_trained
from supervisor.state import (
    FINAL_RUN_STATUSES,
    EventLog,
    FindingsLog,
    RunState,
    StageState,
    StateStore,
    SupervisorInfo,
    hostname,
    load_state,
    now_iso,
)
from supervisor.train_monitor import TrainMonitor, TrainVerdict, describe_finding, load_diagnosis

if TYPE_CHECKING:
    from diagnostics.live import DiagnosisFactory

_ACTIVE = ("running", "checking", "retrying")
_PROGRESS_EVENT_INTERVAL_S = 5.0


class AlreadySupervised(Exception):
    """Another supervisor holds the run's lock."""


@dataclass(frozen=True, slots=True)
class Plan:
    """Which stages a supervisor runs. ``force`` stages run even when their outputs verify."""

    from_stage: str | None = None
    only: str | None = None
    force: tuple[str, ...] = ()
    preflight: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"from": self.from_stage, "only": self.only, "force": list(self.force)}


class RunLock:
    """``fcntl.flock`` on ``supervisor.lock``: held for as long as the supervisor lives."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> bool:
        fd = os.open(str(self.path), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def lock_is_held(path: Path) -> bool:
    """Whether some process holds the run lock (a live supervisor), without taking it for long."""
    lock = RunLock(path)
    if not path.exists():
        return False
    if lock.acquire():
        lock.release()
        return False
    return True


@dataclass(slots=True)
class _Outcome:
    rc: int | None = None
    interrupted: bool = False
    verdict: TrainVerdict | None = None
    error: str | None = None
    label: str = ""
    monitor: TrainMonitor | None = None
    notes: list[str] = field(default_factory=list)
    slurm: dict[str, Any] | None = None  # the Slurm job of a cluster train stage, as last seen


class Supervisor:
    def __init__(
        self,
        run_dir: Path,
        plan: Plan | None = None,
        *,
        executor: Executor | None = None,
        slurm_executor: Executor | None = None,
        diagnose: DiagnosisFactory | bool | None = True,
        install_signals: bool = True,
        subreaper: bool = False,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        gpu_agent: Sequence[str] | bool = True,
    ) -> None:
        """``executor`` runs local commands, ``slurm_executor`` the train stage of a cluster run
        (a ``SlurmExecutor`` by default). ``gpu_agent``: run ``a1x-tui gpu-agent`` beside local
        training (True), not (False), or this argv instead. ``diagnose``: follow the training logs with
        the live diagnostics (True), not (False/None), or with this ``diagnostics.live`` ``DiagnosisFactory``
        instead of the engine's."""
        self.rundir = RunDir(run_dir.resolve())
        self.plan = plan or Plan()
        self._subreaper = subreaper
        self._executor = executor
        self._slurm_executor = slurm_executor
        self._gpu_agent = gpu_agent
        self._agent_note: str | None = None  # why the GPU agent is not run again (recorded once)
        self.pids = PidsFile(self.rundir.pids_path)
        self._diagnose_arg = diagnose
        self._install_signals = install_signals
        self._on_event = on_event
        self._stop = threading.Event()
        self._stop_reason = ""
        self._wake = threading.Event()
        self._restart_to: str | None = None
        self._lock = threading.Lock()
        self.finished = threading.Event()
        self._stage_names: list[str] = []
        self._handlers = 0
        self._handlers_cv = threading.Condition()
        self._last_progress_event: dict[str, float] = {}
        self._last_progress_write = 0.0
        self.store: StateStore
        self.events: EventLog
        self.spec: RunSpec

    # -- public controls (thread-safe) -----------------------------------------------------------------
    def request_stop(self, reason: str) -> None:
        with self._lock:
            if not self._stop.is_set():
                self._stop_reason = reason
                self._stop.set()
        self._wake.set()

    def request_restart(self, stage: str) -> str | None:
        """Rerun ``stage`` (stopping what runs now) and continue from it; returns an error line or None."""
        if stage not in self._stage_names:
            return f"unknown stage {stage!r} for this run (stages: {', '.join(self._stage_names)})"
        if self.finished.is_set() or self._stop.is_set():
            return "the run is ending; start it again with `a1x-tui restart RUN --stage STAGE`"
        with self._lock:
            self._restart_to = stage
        self._wake.set()
        self.events.emit("restart_requested", f"restart of {stage} requested", stage=stage)
        return None

    # -- main ------------------------------------------------------------------------------------------
    def serve(self) -> int:
        """Run the plan to its end; 0 when the run succeeded, 1 otherwise."""
        make_private(self.rundir.run_dir)  # RunDirError: refused before anything is written
        lock = RunLock(self.rundir.lock_path)
        if not lock.acquire():
            owner = read_pid(self.rundir.pid_path)
            raise AlreadySupervised(f"{self.rundir.run_dir}: another supervisor owns this run (pid {owner})")
        server: socketserver.BaseServer | None = None
        try:
            self.rundir.pid_path.write_text(f"{os.getpid()}\n", encoding="utf-8")
            if self._install_signals:
                self._signals()
            self.spec = load_spec(self.rundir.spec_path)
            if self._executor is None:
                self._executor = LocalExecutor(subreaper=self._subreaper and become_subreaper())
            scrubber = Scrubber.from_environment()
            self.events = EventLog(self.rundir.events_path, scrubber)
            self.findings = FindingsLog(self.rundir.findings_path, scrubber)
            previous = load_state(self.rundir.state_path)
            outputs: dict[str, str] = dict(previous.outputs) if previous else {}
            self._outputs = outputs
            stages = build_stages(self.spec, self.rundir, outputs)
            self._stages = {s.name: s for s in stages}
            self._stage_names = [s.name for s in stages]
            selected = select_stages(self._stage_names, from_stage=self.plan.from_stage, only=self.plan.only)
            self.store = StateStore(self.rundir.state_path, self._initial_state(previous, stages), scrubber)
            self.store.update()
            if self._on_event is not None:
                self._follow_events(self._on_event)
            live_orphans = self._recover(previous)
            server = self._start_server()
            self.events.emit(
                "supervisor_started",
                f"supervisor pid {os.getpid()} on {hostname()} owns {self.rundir.run_dir}",
                plan=self.plan.to_json(),
            )
            if self.plan.preflight is not None:
                self.events.emit("preflight", str(self.plan.preflight.get("summary", "")), **self.plan.preflight)
            if live_orphans:
                self._block(live_orphans)
            else:
                self._pipeline(selected)
        except StageError as exc:
            self._fail_run(str(exc))
        except AlreadySupervised:
            raise
        except Exception as exc:
            traceback.print_exc()
            self._fail_run(f"supervisor error: {type(exc).__name__}: {exc}")
        finally:
            self.finished.set()
            if hasattr(self, "events"):
                self.events.close()
            self._drain_handlers()
            if server is not None:
                server.shutdown()
                server.server_close()
            with contextlib.suppress(OSError):
                self.rundir.socket_path.unlink()
            with contextlib.suppress(OSError):
                self.rundir.pid_path.unlink()
            lock.release()
        status = self.store.state.status if hasattr(self, "store") else "failed"
        return 0 if status == "succeeded" else 1

    def _fail_run(self, message: str) -> None:
        if not hasattr(self, "store"):
            print(message, file=sys.stderr)
            return

        def change(s: RunState) -> None:
            s.status = "failed"
            s.message = message

        self.store.update(change)
        if hasattr(self, "events"):
            self.events.emit("run_failed", message)

    def _signals(self) -> None:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a lost terminal never stops the run
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)

        def stop(signum: int, _frame: Any) -> None:
            self.request_stop(f"supervisor received {signal.Signals(signum).name}")

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)

    def _follow_events(self, callback: Callable[[dict[str, Any]], None]) -> None:
        q, _ = self.events.subscribe(since=10**12)

        def pump() -> None:
            while True:
                event = q.get()
                if event is None:
                    return
                with contextlib.suppress(Exception):
                    callback(event)

        threading.Thread(target=pump, name="event-printer", daemon=True).start()

    # -- state -----------------------------------------------------------------------------------------
    def _initial_state(self, previous: RunState | None, stages: list[StageSpec]) -> RunState:
        old = {st.name: st for st in previous.stages} if previous else {}
        state = RunState(
            run_id=self.rundir.run_dir.name,
            run_dir=str(self.rundir.run_dir),
            status="starting",
            created_at=previous.created_at if previous else now_iso(),
            supervisor=SupervisorInfo(
                pid=os.getpid(),
                host=hostname(),
                started_at=now_iso(),
                executor="slurm" if self.spec.on_slurm else "local",
            ),
            plan=self.plan.to_json(),
            outputs=dict(self._outputs),
            preflight=self.plan.preflight,
        )
        for spec in stages:
            log = str(self.rundir.stage_log(spec.name).relative_to(self.rundir.run_dir))
            prior = old.get(spec.name)
            if prior is not None:
                st = prior.model_copy(deep=True)
                st.title, st.log = spec.title, log
            else:
                st = StageState(name=spec.name, title=spec.title, log=log)
            state.stages.append(st)
        return state

    def _set_stage(self, name: str, **changes: Any) -> None:
        def change(s: RunState) -> None:
            st = s.stage(name)
            for key, value in changes.items():
                setattr(st, key, value)
            s.outputs = dict(self._outputs)

        self.store.update(change)

    def _recover(self, previous: RunState | None) -> list[dict[str, Any]]:
        """Mark what a crashed supervisor left running; return the orphans still alive."""
        if previous is None:
            return []
        sup = previous.supervisor
        if previous.status not in FINAL_RUN_STATUSES and sup is not None:
            self.events.emit(
                "supervisor_recovered",
                f"the previous supervisor (pid {sup.pid} on {sup.host}) is gone; the run was {previous.status}",
                previous_pid=sup.pid,
            )
        orphans: list[dict[str, Any]] = []
        assert self._executor is not None
        for st in previous.stages:
            if st.status not in _ACTIVE and not (st.status == "orphaned" and st.process):
                continue
            handle = ProcessHandle.from_json(st.process) if st.process else None
            alive = self._executor_for(handle.executor).alive(handle) if handle else []
            if handle is None:
                reason = "orphaned: its supervisor died before the stage started a process"
            elif handle.executor == "slurm" and alive:
                reason = (
                    f"orphaned: Slurm job {handle.job_id} is still queued or running; this supervisor does not "
                    "follow it"
                )
            elif handle.pid in alive:
                reason = (
                    f"orphaned: pid {handle.pid} still running (process group {handle.pgid}, "
                    f"{len(alive)} process(es)); this supervisor does not control it"
                )
            elif alive:
                reason = (
                    f"orphaned: pid {handle.pid} gone, but {len(alive)} process(es) of its group still run "
                    f"({alive[:8]}); this supervisor does not control them"
                )
            else:
                reason = f"orphaned: pid {handle.pid} gone"
            self._set_stage(
                st.name, status="orphaned", reason=reason, process=handle.to_json() if alive and handle else None
            )
            self.events.emit("stage_orphaned", reason, stage=st.name, pids=alive)
            record = {"stage": st.name, "pid": handle.pid if handle else None, "alive": alive, "reason": reason}
            orphans.append(record)

        def keep(s: RunState) -> None:
            s.orphans = orphans

        self.store.update(keep)
        return [o for o in orphans if o["alive"]]

    def _block(self, orphans: list[dict[str, Any]]) -> None:
        first = orphans[0]
        message = (
            f"stage {first['stage']} is {first['reason']}. `a1x-tui stop {self.rundir.run_dir}` ends it; "
            f"then `a1x-tui run --run-dir {self.rundir.run_dir}` resumes"
        )

        def change(s: RunState) -> None:
            s.status = "blocked"
            s.message = message

        self.store.update(change)
        self.events.emit("run_blocked", message)

    # -- the pipeline -------------------------------------------------------------------------------------
    def _pipeline(self, selected: list[str]) -> None:
        order = self._stage_names
        forced = set(self.plan.force)
        forced.update(s for s in (self.plan.only, self.plan.from_stage) if s)
        for name in order:
            if name not in selected:
                st = self.store.state.stage(name)
                if st.status not in ("succeeded", "skipped"):
                    self._set_stage(name, status="skipped", reason="not selected (--from/--only)")

        def running(s: RunState) -> None:
            s.status = "running"
            s.message = f"stages: {', '.join(selected)}"

        self.store.update(running)
        self.events.emit("run_started", f"running {', '.join(selected)}", stages=selected)
        plan_queue = list(selected)
        i = 0
        result = "succeeded"
        while i < len(plan_queue):
            if self._stop.is_set():
                break
            name = plan_queue[i]
            result = self._run_stage(self._stages[name], force=name in forced)
            with self._lock:
                target, self._restart_to = self._restart_to, None
            if target is not None and not self._stop.is_set():
                plan_queue = [target] if self.plan.only == target else order[order.index(target) :]
                forced.add(target)
                i = 0
                continue
            if result in ("failed", "stopped"):
                break
            i += 1
        self._finish_run(result)

    def _finish_run(self, last_result: str) -> None:
        state = self.store.state
        if self._stop.is_set():
            status, message = "stopped", self._stop_reason or "stopped"
        elif last_result == "failed":
            failed = next((st for st in state.stages if st.status == "failed"), None)
            status = "failed"
            message = f"{failed.name} failed: {failed.reason}" if failed else "failed"
        else:
            status, message = "succeeded", "every stage succeeded or was already done"

        def change(s: RunState) -> None:
            s.status = status  # type: ignore[assignment]
            s.message = message
            s.current_stage = None

        self.store.update(change)
        self.events.emit(f"run_{status}", message)

    def _safe_verify(self, stage: StageSpec) -> VerifyResult:
        try:
            return stage.verify()
        except Exception as exc:  # a verification bug must not kill the supervisor
            return VerifyResult.failed(f"verification error: {type(exc).__name__}: {exc}")

    def _run_stage(self, stage: StageSpec, *, force: bool) -> str:
        name = stage.name

        def current(s: RunState) -> None:
            s.current_stage = name

        self.store.update(current)
        if stage.skip_if_verified and not force:
            self._set_stage(name, status="checking", reason="verifying existing outputs", failure=None)
            result = self._safe_verify(stage)
            if result.ok:
                reason = f"already done: {result.reason}"
                self._set_stage(name, status="skipped", reason=reason, ended_at=now_iso())
                self.events.emit("stage_skipped", reason, stage=name)
                return "skipped"
        attempt = 0
        while True:
            attempt += 1
            if self._stop.is_set():
                return self._stopped(name)
            try:
                commands = list(stage.prepare())
            except StageError as exc:
                if exc.findings:  # e.g. a Slurm submission refused by the node plan
                    self._record_findings(name, exc.findings)
                return self._failed(name, str(exc), failure={"findings": exc.findings} if exc.findings else None)
            except Exception as exc:
                return self._failed(name, f"cannot prepare the stage: {type(exc).__name__}: {exc}")
            st = self.store.state.stage(name)
            self._set_stage(
                name,
                status="running",
                reason="",
                attempts=st.attempts + 1,
                started_at=now_iso(),
                ended_at=None,
                exit_code=None,
                commands=[c.record() for c in commands],
                progress=None,
                failure=None,
                slurm=None,
            )
            self.events.emit("stage_started", stage.title, stage=name, attempt=attempt)
            for cmd in commands:
                if cmd.findings:  # warnings from the checks before a Slurm submission
                    self._record_findings(name, [dict(f) for f in cmd.findings])
            log_path = self.rundir.stage_log(name)
            offset = log_path.stat().st_size if log_path.exists() else 0
            outcome = self._execute(stage, commands)
            if outcome.interrupted:
                return self._stopped(name)
            result = self._judge(stage, outcome)
            if result.ok:
                if stage.after_success is not None:
                    try:
                        stage.after_success()
                    except OSError as exc:
                        return self._failed(name, f"succeeded, but recording it failed: {exc}")
                reason = result.reason
                if outcome.verdict is not None and outcome.verdict.action == "end_finished":
                    reason += f" ({outcome.verdict.reason})"
                self._set_stage(name, status="succeeded", reason=reason, ended_at=now_iso(), exit_code=outcome.rc)
                self.events.emit("stage_succeeded", reason, stage=name)
                return "succeeded"
            text = read_since(log_path, offset)
            decision = (
                stage.retry.after_failure(text, attempt, monitor_stopped=outcome.verdict is not None)
                if stage.retry is not None
                else None
            )
            if decision is not None and decision.retry_in_s is not None:
                delay = decision.retry_in_s
                self._set_stage(name, status="retrying", reason=decision.reason, exit_code=outcome.rc)
                self.events.emit("stage_retry", decision.reason, stage=name, delay_s=delay, line=decision.line)
                if self._sleep(delay):
                    return self._stopped(name)
                continue
            if decision is not None:
                reason = decision.reason
            else:
                reason = self._failure_reason(stage, outcome, result, text)
            failure = outcome.verdict.failure if outcome.verdict is not None else None
            return self._failed(name, reason, exit_code=outcome.rc, failure=failure)

    def _sleep(self, seconds: float) -> bool:
        """Wait, waking for stop or restart; True when interrupted."""
        self._wake.clear()
        with self._lock:
            if self._stop.is_set() or self._restart_to is not None:
                return True
        self._wake.wait(timeout=seconds)
        with self._lock:
            return self._stop.is_set() or self._restart_to is not None

    def _judge(self, stage: StageSpec, outcome: _Outcome) -> VerifyResult:
        if outcome.error is not None:
            return VerifyResult.failed(outcome.error)
        if stage.kind == "train":
            # cosmos-rl.md §2.7: the launcher's exit code says nothing; steps and checkpoints do.
            logs_dir = outcome.monitor.logs_dir if outcome.monitor is not None else None
            if logs_dir is None:
                if outcome.slurm is not None:
                    where = self.rundir.slurm_dir
                    return VerifyResult.failed(f"the Slurm job wrote no part_<N>/run_<M> folder under {where}")
                return VerifyResult.failed("cosmos-rl wrote no logs_<timestamp> folder")
            return verify_trained(
                self.rundir.log_dir(self.spec), ranks=expected_ranks(self.rundir.train_toml), logs_dir=logs_dir
            )
        result = self._safe_verify(stage)
        if stage.kind == "check":
            log = StageLog(self.rundir.stage_log(stage.name), scrubber=Scrubber.from_environment())
            log.note(f"{'ok' if result.ok else 'FAILED'}: {result.reason}")
            log.close()
        if outcome.rc not in (0, None) and result.ok:
            return VerifyResult.failed(f"exited with code {outcome.rc}")
        return result

    def _failure_reason(self, stage: StageSpec, outcome: _Outcome, result: VerifyResult, text: str) -> str:
        if outcome.error is not None:
            return outcome.error
        if stage.kind == "train":
            if outcome.verdict is not None and outcome.verdict.action == "stop_failed":
                return f"{outcome.verdict.reason}; {result.reason}"
            if outcome.slurm is not None:
                job = outcome.slurm
                return f"Slurm job {job['job_id']} ended {job['state']} (exit code {outcome.rc}); {result.reason}"
            return f"cosmos-rl exited with code {outcome.rc}; {result.reason}"
        if outcome.rc not in (0, None):
            last = _last_output_line(text)
            return f"{outcome.label or stage.name} exited with code {outcome.rc}" + (f": {last}" if last else "")
        if stage.kind == "check":
            return result.reason
        return f"exited 0 but its outputs do not verify: {result.reason}"

    def _stopped(self, name: str) -> str:
        why = (
            "restarting"
            if self._restart_to is not None and not self._stop.is_set()
            else (self._stop_reason or "stopped")
        )
        self._set_stage(name, status="stopped", reason=why, ended_at=now_iso(), process=None)
        self.events.emit("stage_stopped", why, stage=name)
        return "stopped"

    def _failed(
        self, name: str, reason: str, *, exit_code: int | None = None, failure: dict[str, Any] | None = None
    ) -> str:
        self._set_stage(
            name, status="failed", reason=reason, ended_at=now_iso(), exit_code=exit_code, process=None, failure=failure
        )
        self.events.emit("stage_failed", reason, stage=name, exit_code=exit_code)
        # The reason ends the stage's log too, so the log says why even for a stage that failed before
        # running anything (docs/ui.md: the dashboard's `l` opens this log).
        with contextlib.suppress(OSError):
            scrubber = Scrubber.from_environment()
            log = StageLog(self.rundir.stage_log(name), scrubber=scrubber)
            log.note(f"stage failed: {scrubber.scrub(reason)}")
            log.close()
        return "failed"

    def _record_findings(self, stage: str, findings: list[dict[str, Any]]) -> None:
        self.findings.record(findings, stage=stage)
        for finding in findings:
            self.events.emit(
                "finding_raised",
                describe_finding(finding),
                stage=stage,
                finding_id=finding.get("id"),
                severity=finding.get("severity"),
            )

    # -- processes ----------------------------------------------------------------------------------------
    def _executor_for(self, kind: str) -> Executor:
        """The executor of a command (``Command.executor``) or a recorded handle (``ProcessHandle.executor``)."""
        if kind == "slurm":
            if self._slurm_executor is None:
                from supervisor.slurm.executor import SlurmExecutor

                self._slurm_executor = SlurmExecutor()
            return self._slurm_executor
        assert self._executor is not None
        return self._executor

    def _execute(self, stage: StageSpec, commands: list[Command]) -> _Outcome:
        outcome = _Outcome()
        monitor: TrainMonitor | None = None
        if stage.kind == "train":
            monitor = TrainMonitor(
                log_dir=self.rundir.log_dir(self.spec),
                ranks=lambda: expected_ranks(self.rundir.train_toml),
                diagnosis=self._diagnosis(),
                interval_s=self.spec.supervisor.diagnostics_interval_s,
                grace_s=self.spec.supervisor.shutdown_grace_s,
                findings=self.findings,
                emit=lambda kind, message, **data: self.events.emit(kind, message, stage=stage.name, **data),
                slurm=any(cmd.executor == "slurm" for cmd in commands),
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
        return outcome

    def _diagnosis(self) -> DiagnosisFactory | None:
        if self._diagnose_arg is False or self._diagnose_arg is None or not self.spec.supervisor.live_diagnostics:
            return None
        if self._diagnose_arg is not True:
            return self._diagnose_arg
        return load_diagnosis()

    def _run_command(self, stage: StageSpec, cmd: Command, outcome: _Outcome, monitor: TrainMonitor | None) -> None:
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
        log = StageLog(self.rundir.stage_log(name), scrubber=scrubber, on_line=on_line)
        log.note(f"$ {shlex.join(cmd.argv)}")
        log.note(f"cwd {cmd.cwd}; env {' '.join(f'{k}={v}' for k, v in cmd.env.items()) or '-'}")
        if cmd.secrets:
            log.note(f"secrets passed in the environment (values never logged): {', '.join(cmd.secrets)}")
        try:
            proc = self._executor_for(cmd.executor).start(cmd.argv, cwd=cmd.cwd, env=env, log=log)
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
        self._set_stage(name, process=proc.handle.to_json(), command=cmd.label)
        agent: GpuAgentHelper | None = None
        try:
            if cmd.executor == "slurm":
                self._slurm_started(stage, proc, log, outcome)
            else:
                self.pids.set_stage(proc.handle.pid, name)
                if stage.kind == "train":
                    agent = self._start_gpu_agent(log)
                    foreign = getattr(proc, "foreign", None)
                    if agent is not None and agent.pid is not None and isinstance(foreign, set):
                        foreign.add(agent.pid)  # a subreaper's child, but not the stage's
            self._supervise(stage, proc, log, outcome, monitor, agent)
        finally:
            if proc.alive():  # only after an unexpected error: never leave a stage behind
                proc.stop(self.spec.supervisor.stop_grace_s)
            if agent is not None:
                self._stop_gpu_agent(agent, log)
            self.pids.clear()
            proc.close()
        self._set_stage(name, process=None, command=None, exit_code=outcome.rc)

    # -- Slurm (compute = "cluster") -------------------------------------------------------------------------
    def _slurm_started(self, stage: StageSpec, proc: StageProcess, log: StageLog, outcome: _Outcome) -> None:
        """A submitted job: link cosmos-dispatch's log folder into the run, record the job."""
        job = proc.handle.job_id or ""
        cluster = self.spec.cluster
        if cluster is not None and cluster.method == "cosmos-dispatch":
            from supervisor.stages.train_cluster import dispatch_logs_target, link_slurm_dir

            target = dispatch_logs_target(self.spec, job, getattr(proc, "slurm_dir", None))
            problem = link_slurm_dir(self.rundir, target) if target is not None else "dispatch_job.py named no run dir"
            log.note(problem or f"slurm: {self.rundir.slurm_dir} -> {target}")
        self._note_slurm(stage, proc, outcome)

    def _note_slurm(self, stage: StageSpec, proc: StageProcess, outcome: _Outcome) -> None:
        """Keep the job's state, pending reason and nodes in state.json; an event when they change."""
        to_json = getattr(proc, "to_json", None)
        if not callable(to_json):
            return
        job: dict[str, Any] = to_json()
        old = outcome.slurm
        if job == old:
            return
        outcome.slurm = job
        self._set_stage(stage.name, slurm=job)
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
        self.events.emit("slurm_job", text, stage=stage.name, **job)

    # -- the GPU agent beside local training -------------------------------------------------------------
    def _start_gpu_agent(self, log: StageLog) -> GpuAgentHelper | None:
        if self._gpu_agent is False or self._agent_note is not None:
            return None
        argv = None if self._gpu_agent is True else list(self._gpu_agent)
        agent = GpuAgentHelper(self.rundir, argv)
        problem = agent.start()
        if problem is not None:
            self._gpu_agent_ended(problem, log)
            return None
        log.note(f"GPU agent pid {agent.pid}: samples in {self.rundir.run_dir / 'gpu'}, roles from {self.pids.path}")
        return agent

    def _gpu_agent_ended(self, line: str, log: StageLog) -> None:
        """Recorded once per supervisor (no NVML here: every later start would say the same); training goes on."""
        self._agent_note = line
        log.note(f"{line}; training goes on without GPU samples")
        self.events.emit("note", f"{line}; training goes on without GPU samples", stage="train")

    def _stop_gpu_agent(self, agent: GpuAgentHelper, log: StageLog) -> None:
        report = agent.stop()
        if report is not None and report.survivors:
            text = f"GPU agent: STILL ALIVE after SIGKILL: {report.survivors}"
            self.events.emit("processes_survived", text, pids=report.survivors)
            log.note(text)

    def _update_pids(self, proc: StageProcess, labeler: ReplicaLabeler) -> None:
        try:
            labels = labeler.labels(pid for pid, _ in proc.handle.descendants)
        except Exception as exc:  # a role join that fails must not stop training
            self.events.emit("note", f"pids.json: role join failed: {type(exc).__name__}: {exc}", stage="train")
            return
        self.pids.set_replicas(labels)

    def _supervise(
        self,
        stage: StageSpec,
        proc: StageProcess,
        log: StageLog,
        outcome: _Outcome,
        monitor: TrainMonitor | None,
        agent: GpuAgentHelper | None = None,
    ) -> None:
        grace = self.spec.supervisor.stop_grace_s
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
                    self._set_stage(stage.name, process=proc.handle.to_json())
                    if labeler is not None:
                        self._update_pids(proc, labeler)
                if slurm:
                    self._note_slurm(stage, proc, outcome)
                if agent is not None:
                    ended = agent.poll()
                    if ended is not None:
                        self._gpu_agent_ended(ended, log)
                        agent = None
            if rc is not None:
                break
            with self._lock:
                interrupt = self._stop.is_set() or self._restart_to is not None
            if interrupt:
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
                    self.events.emit("train_verdict", verdict.reason, stage=stage.name, action=verdict.action)
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
                self.events.emit("processes_survived", text, pids=report.survivors)
            log.note(text)
            return
        text = f"SIGTERM to {len(report.terminated)} process(es)"
        if report.killed:
            text += f"; SIGKILL to {len(report.killed)} still alive after the grace period"
        if report.survivors:
            text += f"; STILL ALIVE after SIGKILL: {report.survivors}"
            self.events.emit("processes_survived", text, pids=report.survivors)
        log.note(text)

    def _progress(self, name: str, progress: Progress, *, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_progress_write >= 1.0:
            self._last_progress_write = now
            self._set_stage(name, progress=progress.to_json())
        last = self._last_progress_event.get(name, 0.0)
        if (force or now - last >= _PROGRESS_EVENT_INTERVAL_S) and progress.total:
            self._last_progress_event[name] = now
            self.events.emit("stage_progress", progress.text, stage=name, **progress.to_json())

    # -- the socket ------------------------------------------------------------------------------------------
    def _start_server(self) -> socketserver.BaseServer:
        supervisor = self
        path = self.rundir.socket_path
        with contextlib.suppress(OSError):
            path.unlink()  # we hold the lock: any socket file left is stale

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                supervisor._handle(self.connection, self.rfile, self.wfile)

        server = socketserver.ThreadingUnixStreamServer(str(path), Handler, bind_and_activate=False)
        server.daemon_threads = True
        old_umask = os.umask(0o177)
        try:
            with unix_address(path) as address:
                server.server_address = address
                server.server_bind()
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)
        server.server_activate()
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, name="socket", daemon=True).start()
        return server

    def _drain_handlers(self, timeout: float = 3.0) -> None:
        deadline = time.monotonic() + timeout
        with self._handlers_cv:
            while self._handlers > 0 and time.monotonic() < deadline:
                self._handlers_cv.wait(timeout=max(0.0, deadline - time.monotonic()))

    def _handle(self, conn: socket.socket, rfile: Any, wfile: Any) -> None:
        with self._handlers_cv:
            self._handlers += 1
        try:
            self._serve_client(conn, rfile, wfile)
        except (OSError, ValueError):
            pass  # a client that went away: never the run's problem
        finally:
            with self._handlers_cv:
                self._handlers -= 1
                self._handlers_cv.notify_all()

    def _serve_client(self, conn: socket.socket, rfile: Any, wfile: Any) -> None:
        def send(message: dict[str, Any]) -> None:
            wfile.write(encode(message))
            wfile.flush()

        if not _same_user(conn):
            send({"ok": False, "error": "only the owner of the run may talk to its supervisor"})
            return
        line = rfile.readline()
        if not line:
            return
        try:
            request = json.loads(line)
        except ValueError:
            send({"ok": False, "error": "not JSON"})
            return
        op = request.get("op") if isinstance(request, dict) else None
        if op == "ping":
            send({"ok": True, "pid": os.getpid(), "run_dir": str(self.rundir.run_dir)})
        elif op == "status":
            send({"ok": True, "live": True, "state": self.store.snapshot()})
        elif op == "stop":
            self.request_stop("stop requested by a client")
            self.finished.wait(timeout=self.spec.supervisor.stop_grace_s + 30.0)
            send({"ok": self.finished.is_set(), "live": True, "state": self.store.snapshot()})
        elif op == "restart":
            error = self.request_restart(str(request.get("stage", "")))
            send(
                {
                    "ok": error is None,
                    "error": error,
                    "message": None if error else f"restarting {request.get('stage')}",
                }
            )
        elif op == "subscribe":
            self._stream(send, int(request.get("since", 0) or 0))
        else:
            send({"ok": False, "error": f"unknown op {op!r} (ping, status, stop, restart, subscribe)"})

    def _stream(self, send: Callable[[dict[str, Any]], None], since: int) -> None:
        q, backlog = self.events.subscribe(since)
        try:
            send({"type": "state", "state": self.store.snapshot()})
            for past in backlog:
                send({"type": "event", "event": past})
            while True:
                try:
                    event = q.get(timeout=1.0)
                except queue.Empty:
                    if self.finished.is_set():
                        break
                    continue
                if event is None:
                    break
                send({"type": "event", "event": event})
            send({"type": "end", "status": self.store.state.status, "message": self.store.state.message})
        finally:
            self.events.unsubscribe(q)


def _same_user(conn: socket.socket) -> bool:
    peercred = getattr(socket, "SO_PEERCRED", None)
    if peercred is None:
        return True  # not Linux: the socket's 0600 mode is the guard
    try:
        raw = conn.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i"))
    except OSError:
        return True
    _pid, uid, _gid = struct.unpack("3i", raw)
    return bool(uid == os.getuid())


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


def _last_output_line(text: str) -> str:
    for raw in reversed(text.splitlines()):
        line = strip_timestamp(raw).strip()
        if line and not line.startswith(NOTE_PREFIX.strip()):
            return line[:240]
    return ""
