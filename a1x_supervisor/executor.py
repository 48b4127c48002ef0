"""How a stage runs: the ``Executor`` seam and the ``LocalExecutor``.

``LocalExecutor`` starts each command in its own session and process group
(``start_new_session``), so a terminal hang-up never reaches it and the whole group can be
signalled at once. Output (stdout and stderr together) is read by a thread and written to the
stage log. Stop = SIGTERM to the group, wait, SIGKILL (style.md, process-compose). Processes
that leave the group (a ``redis-server`` that daemonizes, docs/reference/cosmos-rl.md §2.6) are tracked as
descendants and stopped with it: no process outlives its stage.

A handle may come from a ``state.json`` someone else wrote, so a process is signalled only when it is
provably the stage's (docs/supervisor.md, "A run directory is untrusted input"): it belongs to the
caller's user, and it is a member of the stage's own process group created after the stage started, or
a recorded descendant whose pid and create time still match and that is still in that group, still
descends from the stage or from the supervisor that started it, or carries the stage's mark (``A1X_STAGE_MARK``, set in
the environment of every command the executor starts). Never a group signal: each such process alone.

A ``SlurmExecutor`` (another issue) will implement the same protocol with a job id in
``ProcessHandle.job_id``; nothing else in the supervisor depends on local processes.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psutil

from a1x_supervisor.stagelog import StageLog

_KILL_WAIT_S = 5.0
MARK_VAR = "A1X_STAGE_MARK"


@dataclass(slots=True, kw_only=True)
class ProcessHandle:
    """Enough to find a stage's processes again, even from another supervisor (state.json)."""

    executor: str
    pid: int
    pgid: int
    create_time: float
    descendants: list[tuple[int, float]] = field(default_factory=list)  # (pid, create_time)
    job_id: str | None = None  # a scheduler's job (SlurmExecutor)
    mark: str | None = None  # MARK_VAR's value in the environment of the stage's processes

    def to_json(self) -> dict[str, Any]:
        return {
            "executor": self.executor,
            "pid": self.pid,
            "pgid": self.pgid,
            "create_time": self.create_time,
            "descendants": [list(d) for d in self.descendants],
            "job_id": self.job_id,
            "mark": self.mark,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProcessHandle:
        return cls(
            executor=str(data.get("executor", "local")),
            pid=int(data["pid"]),
            pgid=int(data.get("pgid", data["pid"])),
            create_time=float(data.get("create_time", 0.0)),
            descendants=[(int(p), float(t)) for p, t in data.get("descendants", [])],
            job_id=data.get("job_id"),
            mark=str(data["mark"]) if data.get("mark") else None,
        )


@dataclass(frozen=True, slots=True)
class StopReport:
    """What stopping a stage took."""

    terminated: list[int]  # pids that got SIGTERM
    killed: list[int]  # pids still alive after the grace period (SIGKILL)
    survivors: list[int]  # pids alive even after SIGKILL (should be empty)


class StageProcess(Protocol):
    handle: ProcessHandle

    def poll(self) -> int | None: ...

    def wait(self, timeout: float) -> int | None: ...

    def track(self) -> None:
        """Record descendants that could otherwise escape (called about once a second)."""

    def alive(self) -> list[int]:
        """Pids of the stage still running: the group and tracked descendants."""

    def stop(self, grace_s: float) -> StopReport: ...

    def close(self) -> None:
        """Finish reading output (after the processes are gone)."""


class Executor(Protocol):
    name: str

    def start(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], log: StageLog) -> StageProcess: ...

    def alive(self, handle: ProcessHandle) -> list[int]:
        """Processes of a recorded handle still running (used after a supervisor restart)."""

    def stop_handle(self, handle: ProcessHandle, grace_s: float) -> StopReport:
        """Stop a recorded handle's processes without owning them (orphans of a crashed supervisor)."""


# -- process-group helpers (psutil; Linux and macOS) -----------------------------------------------


def _create_time(pid: int) -> float | None:
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


def _is_running(pid: int, create_time: float | None = None) -> bool:
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return create_time is None or abs(proc.create_time() - create_time) < 1.0
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def group_members(pgid: int, *, not_before: float | None = None) -> list[int]:
    """Live (non-zombie) processes of this user whose process group is ``pgid``.

    ``not_before`` (a create time) guards against a recycled group id after a supervisor restart.
    """
    if pgid <= 1:  # the kernel's and init's groups are never a stage's
        return []
    me = os.geteuid()
    members = []
    for proc in psutil.process_iter(["pid", "status", "create_time", "uids"]):
        info = proc.info
        if info.get("status") == psutil.STATUS_ZOMBIE or info.get("uids") is None or info["uids"].real != me:
            continue
        try:
            if os.getpgid(info["pid"]) != pgid:
                continue
        except (ProcessLookupError, PermissionError):
            continue
        created = info.get("create_time")
        if not_before is not None and created is not None and created + 1.0 < not_before:
            continue
        members.append(int(info["pid"]))
    return members


def _descends_from(proc: psutil.Process, ancestors: set[int]) -> bool:
    with contextlib.suppress(psutil.Error):
        return any(parent.pid in ancestors for parent in proc.parents())
    return False


def _marked(proc: psutil.Process, mark: str | None) -> bool:
    if mark is None:
        return False
    with contextlib.suppress(psutil.Error):
        return proc.environ().get(MARK_VAR) == mark
    return False


def _stage_descendant(handle: ProcessHandle, pid: int, created: float, owner: int | None) -> bool:
    """A recorded descendant that is provably still the stage's (the module's docstring)."""
    if created <= 0:
        return False
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE or abs(proc.create_time() - created) >= 1.0:
            return False
        if proc.uids().real != os.geteuid():
            return False
        if _group_ok(handle) and os.getpgid(pid) == handle.pgid:
            return True
    except (psutil.Error, OSError):
        return False
    roots = {owner} if owner is not None else set()
    if _is_running(handle.pid, handle.create_time):
        roots.add(handle.pid)
    return _descends_from(proc, roots) or _marked(proc, handle.mark)


def _group_ok(handle: ProcessHandle) -> bool:
    """Whether the handle's group can be the stage's: a recorded start time, and a group that is
    neither init's nor the caller's own."""
    return handle.create_time > 0 and handle.pgid > 1 and handle.pgid not in (os.getpgrp(), os.getsid(0))


def _stage_group(handle: ProcessHandle) -> list[int]:
    return group_members(handle.pgid, not_before=handle.create_time) if _group_ok(handle) else []


def handle_alive(handle: ProcessHandle, owner: int | None = None) -> list[int]:
    """The stage's processes still running; ``owner``: the pid of the supervisor that started it, when
    that is the caller (its subreaper adopts what escapes the group)."""
    pids = set(_stage_group(handle))
    pids.update(p for p, made in handle.descendants if p not in pids and _stage_descendant(handle, p, made, owner))
    return sorted(pids)


def _signal_handle(handle: ProcessHandle, sig: int, owner: int | None) -> list[int]:
    alive = handle_alive(handle, owner)
    for pid in alive:  # one by one: a group signal would reach members never checked
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
    return alive


def stop_handle(
    handle: ProcessHandle, grace_s: float, *, reap: Any = None, poll_s: float = 0.05, owner: int | None = None
) -> StopReport:
    """SIGTERM to the group and tracked descendants, wait ``grace_s``, SIGKILL what is left."""
    terminated = _signal_handle(handle, signal.SIGTERM, owner)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if reap is not None:
            reap()
        if not handle_alive(handle, owner):
            return StopReport(terminated, [], [])
        time.sleep(poll_s)
    killed = _signal_handle(handle, signal.SIGKILL, owner)
    deadline = time.monotonic() + _KILL_WAIT_S
    while time.monotonic() < deadline:
        if reap is not None:
            reap()
        if not handle_alive(handle, owner):
            break
        time.sleep(poll_s)
    return StopReport(terminated, killed, handle_alive(handle, owner))


def reap_orphans(keep: set[int]) -> None:
    """Wait for exited children we did not start directly (orphans reparented to a subreaper)."""
    try:
        children = psutil.Process().children()
    except psutil.Error:
        return
    for child in children:
        if child.pid in keep:
            continue
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                os.waitpid(child.pid, os.WNOHANG)
        except (psutil.Error, ChildProcessError, OSError):
            continue


def become_subreaper() -> bool:
    """Linux: make orphaned descendants (a daemonizing redis-server) children of this process,
    so they stay visible and stoppable. Returns whether it worked."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_child_subreaper = 36
        return int(libc.prctl(pr_set_child_subreaper, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


# -- the local executor ------------------------------------------------------------------------------


class LocalProcess:
    """One command running locally in its own session, its output pumped into the stage log."""

    def __init__(
        self, popen: subprocess.Popen[bytes], log: StageLog, *, subreaper: bool, mark: str | None = None
    ) -> None:
        self._popen = popen
        self._log = log
        self._subreaper = subreaper
        # The supervisor's own helpers (the GPU agent): children of a subreaper too, never this stage's.
        self.foreign: set[int] = set()
        created = _create_time(popen.pid) or time.time()
        self.handle = ProcessHandle(executor="local", pid=popen.pid, pgid=popen.pid, create_time=created, mark=mark)
        self._reader = threading.Thread(target=self._pump, name=f"stage-output-{popen.pid}", daemon=True)
        self._reader.start()

    def _pump(self) -> None:
        stream = self._popen.stdout
        assert stream is not None
        fd = stream.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            self._log.feed(chunk)

    def poll(self) -> int | None:
        self._reap()
        return self._popen.poll()

    def wait(self, timeout: float) -> int | None:
        try:
            return self._popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        finally:
            self._reap()

    def _reap(self) -> None:
        if self._subreaper:
            reap_orphans({self._popen.pid, *self.foreign})

    def track(self) -> None:
        known = {pid for pid, _ in self.handle.descendants}
        found: list[psutil.Process] = []
        with contextlib.suppress(psutil.Error):
            found.extend(psutil.Process(self._popen.pid).children(recursive=True))
        if self._subreaper:
            with contextlib.suppress(psutil.Error):
                for child in psutil.Process().children():
                    if child.pid != self._popen.pid and child.pid not in self.foreign:
                        found.append(child)
                        with contextlib.suppress(psutil.Error):
                            found.extend(child.children(recursive=True))
        for proc in found:
            if proc.pid in known:
                continue
            created = _create_time(proc.pid)
            if created is not None:
                self.handle.descendants.append((proc.pid, created))
                known.add(proc.pid)

    def alive(self) -> list[int]:
        self._popen.poll()
        return handle_alive(self.handle, os.getpid())

    def stop(self, grace_s: float) -> StopReport:
        self.track()
        report = stop_handle(self.handle, grace_s, reap=self._reap_all, owner=os.getpid())
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout=1.0)
        return report

    def _reap_all(self) -> None:
        self._popen.poll()
        self._reap()

    def close(self) -> None:
        self._reader.join(timeout=5.0)
        if self._popen.stdout is not None:
            self._popen.stdout.close()
        self._log.close()


class LocalExecutor:
    """Runs stage commands as local processes (the default; ``[supervisor] executor = "local"``)."""

    name = "local"

    def __init__(self, *, subreaper: bool = False) -> None:
        self.subreaper = subreaper

    def start(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], log: StageLog) -> LocalProcess:
        mark = secrets.token_hex(8)
        popen = subprocess.Popen(
            list(argv),
            cwd=str(cwd),
            env={**env, MARK_VAR: mark},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
        return LocalProcess(popen, log, subreaper=self.subreaper, mark=mark)

    def alive(self, handle: ProcessHandle) -> list[int]:
        return handle_alive(handle)

    def stop_handle(self, handle: ProcessHandle, grace_s: float) -> StopReport:
        return stop_handle(handle, grace_s)
