"""Is a path on a network file system? Read from the mount table (``/proc/self/mountinfo``).

inotify only reports changes made through the local kernel: on Lustre, NFS, GPFS, BeeGFS or CIFS
a replica on another node appends to a log and this node hears nothing. The follower polls there.
"""

from __future__ import annotations

import os

NETWORK_FS_TYPES = frozenset(
    {
        "nfs",
        "nfs4",
        "lustre",
        "gpfs",
        "beegfs",
        "cifs",
        "smb3",
        "smbfs",
        "ceph",
        "fuse.ceph-fuse",
        "glusterfs",
        "fuse.glusterfs",
        "fuse.sshfs",
        "afs",
        "panfs",
        "wekafs",
        "9p",
        "fuse.juicefs",
    }
)

MOUNTINFO = "/proc/self/mountinfo"


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash in paths as octal escapes (``\\040``)."""
    if "\\" not in field:
        return field
    out: list[str] = []
    i = 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> list[tuple[str, str]]:
    """(mount point, file system type) for each line of a mountinfo text; bad lines are skipped."""
    mounts: list[tuple[str, str]] = []
    for line in text.splitlines():
        fields = line.split()
        try:
            sep = fields.index("-", 6)
            mounts.append((_unescape(fields[4]), fields[sep + 1]))
        except (ValueError, IndexError):
            continue
    return mounts


def _covers(mount_point: str, path: str) -> bool:
    if mount_point == "/":
        return True
    return path == mount_point or path.startswith(mount_point.rstrip("/") + "/")


def filesystem_type(path: str, mountinfo: str | None = None) -> str | None:
    """The type of the file system holding ``path`` (the longest covering mount point; the last
    mounted wins on a tie), or None when the mount table cannot be read."""
    if mountinfo is None:
        try:
            with open(MOUNTINFO, encoding="utf-8", errors="replace") as f:
                mountinfo = f.read()
        except OSError:
            return None
    real = os.path.realpath(path)
    best: tuple[int, str] | None = None
    for mount_point, fs_type in parse_mountinfo(mountinfo):
        if _covers(mount_point, real) and (best is None or len(mount_point) >= best[0]):
            best = (len(mount_point), fs_type)
    return None if best is None else best[1]


def is_network_fs(path: str, mountinfo: str | None = None) -> bool:
    fs_type = filesystem_type(path, mountinfo)
    return fs_type is not None and fs_type.lower() in NETWORK_FS_TYPES
