"""A run directory is untrusted input: who may act on it, and how its files are opened.

Anyone who can write into a run directory could plant a ``state.json`` naming processes to kill, or
a symbolic link where ``events.jsonl`` or ``supervisor.lock`` is expected, so that a command writes
through it outside the run (docs/supervisor.md, "A run directory is untrusted input"). Two rules:

- ``check_owner``: every command that acts on a run (``stop``, ``restart``, ``status``, ``attach`` of a
  run of ours, the daemon) first refuses a directory that the caller does not own, or that others may
  write to, in one line (``RunDirError``);
- every file of the run is opened relative to its folder's descriptor with ``O_NOFOLLOW``, neither
  the file nor its folder may be a symbolic link, and a file read must be a regular file (a FIFO
  planted as ``state.json`` never blocks a reader).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import stat
from pathlib import Path


class RunDirError(Exception):
    """A run directory this command must not act on; ``str()`` is the one line to show."""


def _user(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def check_owner(run_dir: Path) -> None:
    """Raise ``RunDirError`` unless ``run_dir`` is a folder owned by this process's user that no one
    else may write to."""
    try:
        st = os.stat(run_dir)
    except OSError as exc:
        raise RunDirError(f"{run_dir}: cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISDIR(st.st_mode):
        raise RunDirError(f"{run_dir}: not a folder")
    me = os.geteuid()
    if st.st_uid != me:
        raise RunDirError(
            f"{run_dir}: owned by {_user(st.st_uid)}, not by you ({_user(me)}); a run directory is acted on "
            "only by its owner: run this command as that user"
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022:
        raise RunDirError(
            f"{run_dir}: mode {mode:04o}, writable by others, who could have changed what it records; "
            f"if it is yours, `chmod 700 {run_dir}` first"
        )


def _open_dir(folder: Path) -> int:
    return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)


def open_file(path: Path, flags: int, mode: int = 0o600) -> int:
    """``os.open`` of ``path`` following no link: the file is opened relative to its folder's
    descriptor with ``O_NOFOLLOW``, and the folder itself must not be a link (``OSError`` otherwise:
    ``ELOOP``, ``ENOTDIR``)."""
    dfd = _open_dir(path.parent)
    try:
        return os.open(path.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dfd)
    finally:
        os.close(dfd)


def read_bytes(path: Path, limit: int = 64 << 20) -> bytes:
    """A run file's content (a regular file, no link; at most ``limit`` bytes)."""
    fd = open_file(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path}: not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(limit)
    finally:
        os.close(fd)


def read_text(path: Path, limit: int = 64 << 20) -> str:
    return read_bytes(path, limit).decode("utf-8", errors="replace")


def append_text(path: Path, text: str) -> None:
    """Append ``text`` to a run file (created 0600), never through a link."""
    fd = open_file(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        fh.write(text)


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` as one step: a temp file created beside it (``O_EXCL``, relative
    to the folder's descriptor), fsynced, then renamed over it. A reader never sees half a file, and a
    link at ``path`` is replaced, never followed."""
    dfd = _open_dir(path.parent)
    try:
        tmp = f".{path.name}.{secrets.token_hex(4)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
    finally:
        os.close(dfd)
