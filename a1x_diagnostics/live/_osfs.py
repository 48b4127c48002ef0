"""The real file system under ``FileTail``: stat, open, fstat, pread. Nothing else."""

from __future__ import annotations

import errno
import os
import stat

from a1x_diagnostics.live._tail import UNREADABLE, FileId

# What says a path names nothing now; any other error (EACCES, EPERM, EIO, ESTALE) says it cannot be told.
_GONE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.ENAMETOOLONG})


def folder_stamp(folder: str) -> tuple[int, int, int, int] | None:
    """What changes when an entry of ``folder`` is created, renamed or deleted: its device, inode,
    mtime and ctime (ns). None when it cannot be read."""
    try:
        st = os.stat(folder)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns


class OsHandle:
    """A file opened read-only; reads never move a shared position (pread)."""

    __slots__ = ("_fd", "_ident")

    def __init__(self, fd: int, ident: FileId) -> None:
        self._fd = fd
        self._ident = ident

    @property
    def ident(self) -> FileId:
        return self._ident

    def size(self) -> int:
        return os.fstat(self._fd).st_size

    def read(self, offset: int, size: int) -> bytes:
        return os.pread(self._fd, size, offset)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class OsFileSystem:
    def identity(self, path: str) -> FileId | None:
        try:
            st = os.stat(path)
        except OSError as exc:
            return None if exc.errno in _GONE else UNREADABLE
        if not stat.S_ISREG(st.st_mode):
            return None
        return FileId(st.st_dev, st.st_ino)

    def folder_stamp(self, folder: str) -> tuple[int, int, int, int] | None:
        return folder_stamp(folder)

    def open(self, path: str) -> OsHandle | None:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return None
        return OsHandle(fd, FileId(st.st_dev, st.st_ino))
