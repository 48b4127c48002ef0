"""Starting a supervisor detached from the terminal, and what clients do when none answers.

``start_daemon`` double-forks: the first child calls ``setsid`` (a new session, no controlling
terminal), the grandchild becomes the supervisor and is re-parented to init. Its stdin is
``/dev/null`` and its stdout/stderr go to ``supervisor.log``, so nothing ties it to the client:
the client exiting, crashing or losing its SSH session (SIGHUP) never reaches it.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from a1x_supervisor.daemon import AlreadySupervised, Plan, RunClaimed, Supervisor
from a1x_supervisor.executor import Executor, LocalExecutor, ProcessHandle, StopReport
from a1x_supervisor.protocol import NoSupervisor, SupervisorClient
from a1x_supervisor.recovery import RunLock, lock_is_held
from a1x_supervisor.rundir import RunDir, RunDirError, make_private
from a1x_supervisor.runfiles import open_file
from a1x_supervisor.secrets import Scrubber
from a1x_supervisor.spec import RunSpec, dump_spec
from a1x_supervisor.state import EventLog, atomic_write_text, load_state, now_iso


def new_run_dir(spec: RunSpec, root: Path | None = None) -> Path:
    """A fresh run directory under ``<workspace>/runs`` (or ``root``), mode 0700."""
    base = root if root is not None else spec.paths.workspace / "runs"
    base.mkdir(parents=True, exist_ok=True)
    stem = time.strftime("%Y%m%d-%H%M%S") + ("-closed-loop" if spec.closed_loop else f"-{spec.reward_mode}")
    candidate, n = base / stem, 2
    while True:
        try:
            candidate.mkdir(mode=0o700)
            return candidate
        except FileExistsError:
            candidate = base / f"{stem}-{n}"
            n += 1


def prepare_run_dir(spec: RunSpec, run_dir: Path) -> RunDir:
    """Write ``run.toml`` (absolute paths, no secrets) into ``run_dir``, made 0700 if it existed
    with a wider mode (``RunDirError`` when that is not possible)."""
    run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    make_private(run_dir)
    rundir = RunDir(run_dir.resolve())
    rundir.stages_dir.mkdir(exist_ok=True)
    # run.toml beside logs/ is what marks a run folder of ours to the log reader (docs/parsing.md), so
    # its stage logs are read (and shown by the dashboard) even for a run that fails before training.
    (rundir.run_dir / "logs").mkdir(exist_ok=True)
    atomic_write_text(rundir.spec_path, dump_spec(spec))
    return rundir


def start_daemon(run_dir: Path, plan: Plan) -> int:
    """Double-fork a detached supervisor for ``run_dir``; returns its pid."""
    rundir = RunDir(run_dir.resolve())
    read_fd, write_fd = os.pipe()
    first = os.fork()
    if first == 0:  # first child: new session, then fork the daemon and leave
        try:
            os.close(read_fd)
            os.setsid()
            second = os.fork()
            if second == 0:
                os.close(write_fd)
                _become_daemon(rundir, plan)  # never returns
            os.write(write_fd, f"{second}\n".encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        text = pipe.read().strip()
    os.waitpid(first, 0)
    if not text:
        raise RuntimeError("the supervisor could not be started (fork failed)")
    return int(text)


def _become_daemon(rundir: RunDir, plan: Plan) -> None:
    code = 1
    try:
        sys.path[:] = [os.path.abspath(p) for p in sys.path]  # lazy imports must survive the chdir
        os.umask(0o077)
        os.chdir("/")
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        out = open_file(rundir.daemon_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
        sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
        _set_title(f"a1x-tui supervisor {rundir.run_dir}")
        print(f"{now_iso()} supervisor pid {os.getpid()} starting for {rundir.run_dir}", flush=True)
        code = Supervisor(rundir.run_dir, plan, subreaper=True).serve()
        print(f"{now_iso()} supervisor pid {os.getpid()} done (exit {code})", flush=True)
    except (AlreadySupervised, RunClaimed, RunDirError) as exc:
        print(f"{now_iso()} {exc}", flush=True)
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def _set_title(title: str) -> None:
    """What ``ps`` shows for the daemon: a fork of its client would read as that client's command
    (``a1x-tui demo``, ``a1x-tui run --spec ...``) long after the client has gone."""
    try:
        from setproctitle import setproctitle
    except ImportError:  # a core dependency; without it ps shows the client's command line
        return
    setproctitle(title)


def wait_until_ready(rundir: RunDir, pid: int, *, timeout_s: float = 20.0) -> str | None:
    """None once the daemon answers on its socket; else the reason it did not."""
    client = SupervisorClient(rundir.socket_path, timeout=1.0)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            client.ping()
            return None
        except NoSupervisor:
            pass
        if not pid_alive(pid):
            state = load_state(rundir.state_path)
            if state is not None and state.status in ("succeeded", "failed", "stopped", "blocked"):
                return None  # it already finished (a run with nothing left to do)
            return f"the supervisor exited at once; see {rundir.daemon_log}: {_tail(rundir.daemon_log)}"
        time.sleep(0.05)
    return f"the supervisor did not answer within {timeout_s:.0f}s; see {rundir.daemon_log}"


def pid_alive(pid: int) -> bool:
    """A process with this pid exists (ours or another user's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _tail(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "(no log)"
    return lines[-1][:300] if lines else "(empty log)"


def executor_for(handle: ProcessHandle) -> Executor:
    """The executor that can find a recorded handle again: local processes, or a Slurm job."""
    if handle.executor == "slurm":
        from a1x_supervisor.slurm.executor import SlurmExecutor

        return SlurmExecutor()
    return LocalExecutor()


def offline_status(rundir: RunDir) -> dict[str, Any] | None:
    """``state.json`` as last written, with what is true now about its processes."""
    state = load_state(rundir.state_path)
    if state is None:
        return None
    data = state.model_dump(mode="json")
    supervisor_alive = lock_is_held(rundir.lock_path)
    running: list[dict[str, Any]] = []
    for st in state.stages:
        if st.process:
            handle = ProcessHandle.from_json(st.process)
            alive = executor_for(handle).alive(handle)
            if alive:
                item: dict[str, Any] = {"stage": st.name, "pids": alive}
                if handle.job_id is not None:
                    item["job_id"] = handle.job_id
                running.append(item)
    data["live"] = False
    data["supervisor_alive"] = supervisor_alive
    data["processes_alive"] = running
    return data


# A stage in one of these states was running under a supervisor; with none left, `stop` ends it.
_ACTIVE_STAGE = frozenset({"checking", "running", "retrying", "orphaned"})
LOCK_WAIT_S = 10.0  # a supervisor that is exiting (killed, or done) releases its lock within this


def acquire_run_lock(rundir: RunDir, wait_s: float = LOCK_WAIT_S) -> RunLock | None:
    """The run's lock, retried for ``wait_s``: a supervisor dying in the middle of a ``stop`` closes
    its socket before the kernel has released its lock. None when it is still held."""
    lock = RunLock(rundir.lock_path)
    deadline = time.monotonic() + wait_s
    while not lock.acquire():
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)
    return lock


def stop_orphans(
    rundir: RunDir, grace_s: float, *, lock_wait_s: float = LOCK_WAIT_S
) -> list[tuple[str, StopReport, str]] | None:
    """Stop the processes ``state.json`` records while no supervisor owns the run, and say so in
    the state: every stage that was running ends ``stopped`` (``orphaned`` while a process survives
    SIGKILL), the run ``stopped``. Returns (stage, report, what was stopped, in words). None when a
    supervisor still holds the run's lock after ``lock_wait_s`` (it must be asked instead)."""
    lock = acquire_run_lock(rundir, lock_wait_s)
    if lock is None:
        return None
    try:
        state = load_state(rundir.state_path)
        if state is None:
            return []
        reports = []
        changed: list[tuple[str, str]] = []
        now = now_iso()
        for st in state.stages:
            survivors: list[int] = []
            if st.process:
                handle = ProcessHandle.from_json(st.process)
                executor = executor_for(handle)
                if executor.alive(handle):
                    report = executor.stop_handle(handle, grace_s)  # a Slurm job: scancel
                    if handle.job_id:
                        what = f"Slurm job {handle.job_id} cancelled"
                    else:
                        what = f"{len(report.terminated)} process(es) of pid group {handle.pid} stopped"
                    reports.append((st.name, report, what))
                    survivors = report.survivors
                    st.reason = f"stopped by `a1x-tui stop` (its supervisor was gone): {what}"
                elif st.status in _ACTIVE_STAGE:
                    st.reason = "stopped by `a1x-tui stop`: its supervisor was gone, and so was its process"
                if not survivors:
                    st.process = None
            elif st.status in _ACTIVE_STAGE:
                st.reason = "stopped by `a1x-tui stop`: its supervisor was gone"
            if survivors:
                st.status = "orphaned"
                st.reason = f"orphaned: {survivors} still alive after SIGKILL"
            elif st.status in _ACTIVE_STAGE:
                st.status = "stopped"
                st.ended_at = st.ended_at or now
                changed.append((st.name, st.reason))
        run_stopped = state.status not in ("succeeded", "failed", "stopped")
        if run_stopped:
            state.status = "stopped"
            state.message = "stopped by `a1x-tui stop` (no supervisor was running)"
        state.updated_at = now
        atomic_write_text(rundir.state_path, state.model_dump_json(indent=2) + "\n")
        _clean_up(rundir, [name for name, _report, _what in reports], dict(state.outputs))
        events = EventLog(rundir.events_path, Scrubber.from_environment())
        for name, reason in changed:
            events.emit("stage_stopped", reason, stage=name)
        if run_stopped:
            events.emit("run_stopped", state.message)
        return reports
    finally:
        lock.release()


def _clean_up(rundir: RunDir, stopped: list[str], outputs: dict[str, str]) -> None:
    """The ``cleanup`` of each stage stopped here (the alpagym train stage: AlpaSim's containers), as its
    supervisor would have run it; the lines go to the stage log."""
    if not stopped:
        return
    from a1x_supervisor.pipeline import build_stages
    from a1x_supervisor.spec import SpecError, load_spec
    from a1x_supervisor.stage import StageError
    from a1x_supervisor.stagelog import run_cleanup

    try:
        stages = build_stages(load_spec(rundir.spec_path), rundir, outputs)
    except (SpecError, StageError):
        return  # a spec that no longer loads, or a pipeline this program does not have: nothing to call
    for stage in stages:
        if stage.name in stopped and stage.cleanup is not None:
            run_cleanup(rundir.stage_log(stage.name), stage.cleanup, Scrubber.from_environment())
