"""The supervisor: one ``Supervisor`` per run directory owns the run's lifetime, from taking its lock to
its end, and the controls clients use (stop, restart); its parts do the rest.

``recovery`` (the run lock, what a crashed supervisor left running), ``run_loop`` (the stages, their
attempts and verdicts), ``stage_runner`` (one attempt's processes), ``gpu_agents`` (the GPU agent
beside training) and ``socket_server`` (the clients), sharing a ``run_context.RunContext``. A second
supervisor on the same run is refused; one started after a crash marks every stage that was running
as orphaned and starts nothing while an orphan still runs. ``launch.start_daemon`` runs it detached
(double fork, ``setsid``); ``run --foreground`` runs it in the terminal (docs/supervisor.md).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from a1x_supervisor.claims import Claims, RunClaimed
from a1x_supervisor.executor import Executor, LocalExecutor, become_subreaper
from a1x_supervisor.gpu_agents import GpuAgents
from a1x_supervisor.pipeline import build_stages, select_stages
from a1x_supervisor.recovery import RunLock, block, read_pid, recover
from a1x_supervisor.run_context import Controls, Executors, RunContext
from a1x_supervisor.run_loop import Plan, RunLoop
from a1x_supervisor.rundir import RunDir, check_owner, make_private
from a1x_supervisor.runfiles import write_atomic
from a1x_supervisor.secrets import Scrubber
from a1x_supervisor.socket_server import SocketServer
from a1x_supervisor.spec import RunSpec, load_spec
from a1x_supervisor.stage import StageError, StageSpec
from a1x_supervisor.stage_runner import StageRunner
from a1x_supervisor.state import (
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

if TYPE_CHECKING:
    from a1x_diagnostics.live import DiagnosisFactory

__all__ = ["AlreadySupervised", "Plan", "RunClaimed", "Supervisor"]  # Plan is run_loop's, named here for the callers


class AlreadySupervised(Exception):
    """Another supervisor holds the run's lock."""


class _SpecClaims:
    """The run's claims (``claims.Claims``) once its spec is known; nothing to release before."""

    def __init__(self, run_dir: Path) -> None:
        self._run_dir = run_dir
        self._claims: Claims | None = None

    def acquire(self, spec: RunSpec) -> None:
        self._claims = Claims(spec, self._run_dir)
        self._claims.acquire()

    def release(self) -> None:
        if self._claims is not None:
            self._claims.release()


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
        the live diagnostics (True), not (False/None), or with this ``a1x_diagnostics.live`` ``DiagnosisFactory``
        instead of the engine's."""
        self.rundir = RunDir(run_dir.resolve())
        self.plan = plan or Plan()
        self._subreaper = subreaper
        self._executor = executor
        self._slurm_executor = slurm_executor
        self._gpu_agent = gpu_agent
        self._diagnose = diagnose
        self._install_signals = install_signals
        self._on_event = on_event
        self.controls = Controls()
        self.finished = threading.Event()
        self._stage_names: list[str] = []
        self.store: StateStore
        self.events: EventLog
        self.spec: RunSpec

    # -- public controls (thread-safe) -----------------------------------------------------------------
    def request_stop(self, reason: str) -> None:
        self.controls.request_stop(reason)

    def request_restart(self, stage: str) -> str | None:
        """Rerun ``stage`` (stopping what runs now) and continue from it; returns an error line or None."""
        if stage not in self._stage_names:
            return f"unknown stage {stage!r} for this run (stages: {', '.join(self._stage_names)})"
        if self.finished.is_set() or self.controls.stop.is_set():
            return "the run is ending; start it again with `a1x-tui restart RUN --stage STAGE`"
        self.controls.request_restart(stage)
        self.events.emit("restart_requested", f"restart of {stage} requested", stage=stage)
        return None

    # -- main ------------------------------------------------------------------------------------------
    def serve(self) -> int:
        """Run the plan to its end; 0 when the run succeeded, 1 otherwise."""
        make_private(self.rundir.run_dir)  # RunDirError: refused before anything is written
        check_owner(self.rundir.run_dir)
        lock = RunLock(self.rundir.lock_path)
        if not lock.acquire():
            owner = read_pid(self.rundir.pid_path)
            raise AlreadySupervised(f"{self.rundir.run_dir}: another supervisor owns this run (pid {owner})")
        server: SocketServer | None = None
        claims = _SpecClaims(self.rundir.run_dir)
        try:
            write_atomic(self.rundir.pid_path, f"{os.getpid()}\n")
            if self._install_signals:
                self._signals()
            self.spec = load_spec(self.rundir.spec_path)
            claims.acquire(self.spec)  # RunClaimed: another live run writes into the same folders
            if self._executor is None:
                self._executor = LocalExecutor(subreaper=self._subreaper and become_subreaper())
            scrubber = Scrubber.from_environment()
            self.events = EventLog(self.rundir.events_path, scrubber)
            findings = FindingsLog(self.rundir.findings_path, scrubber)
            previous = load_state(self.rundir.state_path)
            outputs: dict[str, str] = dict(previous.outputs) if previous else {}
            stages = build_stages(self.spec, self.rundir, outputs)
            self._stage_names = [s.name for s in stages]
            selected = select_stages(
                self._stage_names, from_stage=self.plan.from_stage, only=self.plan.only, skip=self.plan.skip
            )
            self.store = StateStore(self.rundir.state_path, self._initial_state(previous, stages, outputs), scrubber)
            self.store.update()
            if self._on_event is not None:
                self._follow_events(self._on_event)
            ctx = RunContext(
                rundir=self.rundir,
                spec=self.spec,
                store=self.store,
                events=self.events,
                findings=findings,
                outputs=outputs,
                executors=Executors(self._executor, self._slurm_executor),
                controls=self.controls,
            )
            live_orphans = recover(ctx, previous)
            server = SocketServer(self.rundir.socket_path, self.rundir.run_dir, self)
            server.start()
            self.events.emit(
                "supervisor_started",
                f"supervisor pid {os.getpid()} on {hostname()} owns {self.rundir.run_dir}",
                plan=self.plan.to_json(),
            )
            if self.plan.preflight is not None:
                self.events.emit("preflight", str(self.plan.preflight.get("summary", "")), **self.plan.preflight)
            if live_orphans:
                block(ctx, live_orphans)
            else:
                runner = StageRunner(ctx, GpuAgents(self.rundir, self.events, self._gpu_agent), self._diagnose)
                RunLoop(ctx, stages, self.plan, runner).run(selected)
        except StageError as exc:
            self._fail_run(str(exc))
        except (AlreadySupervised, RunClaimed):
            raise
        except Exception as exc:
            traceback.print_exc()
            self._fail_run(f"supervisor error: {type(exc).__name__}: {exc}")
        finally:
            self.finished.set()
            if hasattr(self, "events"):
                self.events.close()
            if server is not None:
                server.close()
            with contextlib.suppress(OSError):
                self.rundir.socket_path.unlink()
            with contextlib.suppress(OSError):
                self.rundir.pid_path.unlink()
            claims.release()
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

    def _initial_state(self, previous: RunState | None, stages: list[StageSpec], outputs: dict[str, str]) -> RunState:
        """This supervisor's state: the previous one's stages kept (attempts, reasons), its own header."""
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
            outputs=dict(outputs),
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
