"""One live run per output: a supervisor's claim on the folders its run writes.

Two runs of one spec (``run --spec`` twice, or ``--detach`` twice a few seconds apart) would both train
into the same checkpoint folder and export into the same export folder, each recording the other's
checkpoints as its own. So a supervisor claims, for its whole life, the folders its run writes
(``paths.output_dir``, ``paths.export_dir`` and an explicit ``paths.log_dir``): an exclusive
``flock`` on a claim file per folder, in this user's state folder (``$XDG_STATE_HOME/a1x-tui/claims``,
``~/.local/state`` by default), holding the run directory that owns it. The kernel drops the lock
when the supervisor's process ends, however it ends, so a claim never outlives its run. ``run``
asks first, to refuse with the owner's name before anything starts; the supervisor's own claim at
start decides when two start at the same moment.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from pathlib import Path

from a1x_supervisor.spec import RunSpec


class RunClaimed(Exception):
    """A folder of this run belongs to another live run; ``str()`` is the one line to show."""


def claims_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path("~/.local/state").expanduser())
    return Path(state) / "a1x-tui" / "claims"


def claimed_folders(spec: RunSpec) -> list[tuple[str, Path]]:
    """(spec key, folder) for each folder a run of ``spec`` writes that no other run may share."""
    folders = [("paths.output_dir", spec.paths.output_dir), ("paths.export_dir", spec.paths.export_dir)]
    if spec.paths.log_dir is not None:
        folders.append(("paths.log_dir", spec.paths.log_dir))
    return [(key, Path(os.path.abspath(folder))) for key, folder in folders]


def _claim_file(folder: Path) -> Path:
    return claims_dir() / (hashlib.sha256(str(folder).encode()).hexdigest()[:32] + ".lock")


def _owner(fd: int) -> str:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.lseek(fd, 0, os.SEEK_SET)
        return str(json.loads(os.read(fd, 4096).decode("utf-8", "replace"))["run_dir"])
    return "another run"


def _refusal(key: str, folder: Path, owner: str) -> RunClaimed:
    return RunClaimed(
        f"{key} {folder} belongs to the live run {owner}: follow it with `a1x-tui attach {owner}`, or stop it "
        f"with `a1x-tui stop {owner}` before starting another run into the same folder"
    )


class Claims:
    """The claims of one supervisor; ``acquire`` raises ``RunClaimed``, ``release`` drops them all."""

    def __init__(self, spec: RunSpec, run_dir: Path) -> None:
        self._folders = claimed_folders(spec)
        self._run_dir = run_dir
        self._fds: list[int] = []

    def acquire(self) -> None:
        claims_dir().mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            for key, folder in self._folders:
                fd = os.open(_claim_file(folder), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    owner = _owner(fd)
                    os.close(fd)
                    raise _refusal(key, folder, owner) from None
                self._fds.append(fd)
                os.ftruncate(fd, 0)
                os.pwrite(fd, json.dumps({"run_dir": str(self._run_dir), "folder": str(folder)}).encode(), 0)
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)  # closing the only descriptor drops the lock
        self._fds.clear()


def claimed_by_other(spec: RunSpec, run_dir: Path | None = None) -> RunClaimed | None:
    """The refusal to show when a folder of ``spec`` belongs to a live run other than ``run_dir``."""
    for key, folder in claimed_folders(spec):
        try:
            fd = os.open(_claim_file(folder), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # never claimed (or the state folder is not there): free
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                owner = _owner(fd)
                if run_dir is None or owner != str(run_dir):
                    return _refusal(key, folder, owner)
        finally:
            os.close(fd)
    return None
