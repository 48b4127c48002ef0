"""The run's lock and what a crashed supervisor left behind: the lock one supervisor holds for its
whole life, the stages found running at start (orphaned, with what is true now), and a run blocked
while an orphan still runs (docs/supervisor.md, "A supervisor that crashed")."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Any

from a1x_supervisor.executor import ProcessHandle
from a1x_supervisor.run_context import RunContext
from a1x_supervisor.runfiles import open_file, read_text
from a1x_supervisor.state import FINAL_RUN_STATUSES, RunState

_ACTIVE = ("running", "checking", "retrying")


class RunLock:
    """``fcntl.flock`` on ``supervisor.lock``: held for as long as the supervisor lives."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> bool:
        try:
            fd = open_file(self.path, os.O_RDWR | os.O_CREAT)
        except OSError:  # a link where the lock should be, or no folder: not a lock anyone holds
            return False
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


def read_pid(path: Path) -> int | None:
    try:
        return int(read_text(path, limit=64).strip())
    except (OSError, ValueError):
        return None


def recover(ctx: RunContext, previous: RunState | None) -> list[dict[str, Any]]:
    """Mark what a crashed supervisor left running; return the orphans still alive."""
    if previous is None:
        return []
    sup = previous.supervisor
    if previous.status not in FINAL_RUN_STATUSES and sup is not None:
        ctx.events.emit(
            "supervisor_recovered",
            f"the previous supervisor (pid {sup.pid} on {sup.host}) is gone; the run was {previous.status}",
            previous_pid=sup.pid,
        )
    orphans: list[dict[str, Any]] = []
    for st in previous.stages:
        if st.status not in _ACTIVE and not (st.status == "orphaned" and st.process):
            continue
        handle = ProcessHandle.from_json(st.process) if st.process else None
        alive = ctx.executors.for_kind(handle.executor).alive(handle) if handle else []
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
        ctx.set_stage(st.name, status="orphaned", reason=reason, process=handle.to_json() if alive and handle else None)
        ctx.events.emit("stage_orphaned", reason, stage=st.name, pids=alive)
        record = {"stage": st.name, "pid": handle.pid if handle else None, "alive": alive, "reason": reason}
        orphans.append(record)

    def keep(s: RunState) -> None:
        s.orphans = orphans

    ctx.store.update(keep)
    return [o for o in orphans if o["alive"]]


def block(ctx: RunContext, orphans: list[dict[str, Any]]) -> None:
    """Start nothing while an orphan runs: the run is ``blocked`` with what to do."""
    first = orphans[0]
    run_dir = ctx.rundir.run_dir
    message = (
        f"stage {first['stage']} is {first['reason']}. `a1x-tui stop {run_dir}` ends it; "
        f"then `a1x-tui run --run-dir {run_dir}` resumes"
    )

    def change(s: RunState) -> None:
        s.status = "blocked"
        s.message = message

    ctx.store.update(change)
    ctx.events.emit("run_blocked", message)
