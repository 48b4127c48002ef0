"""Reading a file the user named: a regular file, at most ``limit`` bytes, without blocking.

A FIFO given where a TOML is expected blocks ``open()`` until some writer appears, a device such as
``/dev/zero`` never ends, and a multi-gigabyte file costs its size in memory several times over
once parsed. So the path is ``stat``-ed first and refused unless it names a regular file of at most
``limit`` bytes; the file is then opened with ``O_NONBLOCK`` (a FIFO swapped in after the ``stat``
still cannot block) and checked again on the open descriptor.

``open_regular`` opens a log the same way, to be streamed: a regular file of the disk's only. A file of
``/proc`` or ``/sys`` is a regular file that the kernel writes as it is read (``/proc/self/pagemap``
says 0 bytes and reads on for terabytes): refused too.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class InputError(Exception):
    """The file cannot be used; ``str()`` is the problem in a few words (without the path)."""


def size_text(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def _refuse_kind(mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _KINDS if test(mode)), None)
    raise InputError(f"not a regular file ({kind})" if kind else "not a regular file")


def read_input(path: str | os.PathLike[str], *, limit: int, what: str = "file") -> bytes:
    """The bytes of ``path``; ``InputError`` when it is missing, not a regular file or over ``limit``."""
    path = Path(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}") from None
    _refuse_kind(st.st_mode)
    too_large = f"larger than {size_text(limit)}, the most a1x-tui reads as a {what}"
    if st.st_size > limit:
        raise InputError(f"{size_text(st.st_size)}: {too_large}")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}") from None
    try:
        _refuse_kind(os.fstat(fd).st_mode)  # the path may name another file since the stat
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:  # it grew since the stat
        raise InputError(f"more than {size_text(limit)}: {too_large}")
    return data


_KERNEL_FS: set[int] | None = None


def _kernel_devices() -> set[int]:
    """The devices of ``/proc`` and ``/sys`` (looked up once)."""
    global _KERNEL_FS
    if _KERNEL_FS is None:
        found = set()
        for root in ("/proc", "/sys"):
            try:
                found.add(os.stat(root).st_dev)
            except OSError:
                continue
        _KERNEL_FS = found
    return _KERNEL_FS


def open_regular(path: str | os.PathLike[str]) -> tuple[BinaryIO, os.stat_result]:
    """``path`` open for reading (binary) and its ``fstat``, without blocking: ``InputError`` unless it is a
    regular file on a disk (not a FIFO, a device, a folder, nor a file of ``/proc`` or ``/sys``)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        _refuse_kind(st.st_mode)
        if st.st_dev in _kernel_devices():
            raise InputError("a file the kernel writes as it is read (/proc, /sys), not a log")
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb"), st
