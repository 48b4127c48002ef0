"""Which files make up the run under a path now, and which folders to watch for new ones.

``a1x_diagnostics.parsing.discover`` decides what a run is (a Cosmos-RL ``--log-dir`` and its
``logs_latest`` link, one ``logs_<ts>``, a replica folder, a SLURM job, our run folder, one file).
Following adds the folders where something new can appear: the parent folder of every file (a new
replica), every folder from PATH down to the run folder (a new ``logs_<ts>``, a re-pointed
``logs_latest``, a new SLURM ``part_N/run_M``) and ``stages/``. A path that holds no run *yet*
(a log dir before the launcher has created ``logs_<ts>``) is a layout without files: following
waits for them.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from a1x_diagnostics.events import Source
from a1x_diagnostics.live._osfs import folder_stamp
from a1x_diagnostics.parsing import LayoutError, discover

LATEST = "logs_latest"


@dataclass(frozen=True, slots=True)
class Layout:
    """Files to follow (real path -> Source), folders to watch, the run they belong to."""

    root: str
    run: str | None
    files: dict[str, Source] = field(default_factory=dict)
    watch_dirs: tuple[str, ...] = ()
    waiting: str | None = None  # why there are no files yet (discover's one-line message)
    run_dir: str | None = None  # the folder of the run's log files (``RunLayout.run_dir``)


def resolve(path: str, run: str | None = None) -> Layout:
    """The layout under ``path`` now. Raises ``LayoutError`` only when ``path`` does not exist.

    A path ending in ``logs_latest`` is followed as the link moves, not as the folder it names
    today.
    """
    target = os.path.abspath(path)
    if os.path.basename(target) == LATEST and run is None:
        target = os.path.dirname(target)
    if not os.path.lexists(target):
        raise LayoutError(f"{target}: no such file or folder")
    try:
        layout = discover(Path(target), run)
    except LayoutError as exc:
        if os.path.isdir(target) and run is None:
            return Layout(target, None, {}, _watch_dirs(target, None, []), waiting=str(exc))
        raise
    real_dirs: dict[str, str] = {}  # realpath is costly: once per folder, not once per file
    files: dict[str, Source] = {}
    for file_path, source in layout.files:
        folder, name = os.path.split(os.path.abspath(file_path))
        real = real_dirs.get(folder)
        if real is None:
            real = real_dirs[folder] = os.path.realpath(folder)
        files[os.path.join(real, name)] = source
    run_dir = os.fspath(layout.run_dir) if layout.run_dir is not None else None
    return Layout(target, layout.run_name, files, _watch_dirs(target, run_dir, list(files)), run_dir=run_dir)


def cannot_read(folder: str | None) -> str | None:
    """Why ``folder`` cannot be read now (permission denied on it or above, an I/O error), or None: it
    can, or it is gone (a run folder that was removed is not a run that can no longer be seen)."""
    if folder is None:
        return None
    try:
        with os.scandir(folder) as entries:
            next(entries, None)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return f"{folder}: {exc.strerror or exc}"
    return None


# What ``resolve`` reads beyond the folders' entries: the run folder's spec, and the link a
# Cosmos-RL log dir re-points at each launch.
_STAMPED_FILES = ("run.toml", LATEST)


def layout_stamp(layout: Layout, *, settle_s: float = 3.0) -> tuple[tuple[int, ...], ...] | None:
    """What moves when ``resolve`` may answer differently: every watched folder's (device, inode,
    mtime, ctime) and the lstat of ``run.toml`` and ``logs_latest`` under the root.

    None when one of them cannot be read or changed less than ``settle_s`` ago (a coarse or skewed
    clock can leave a change inside the stamp's tick): the caller must resolve again. A file's
    permissions are not covered (a chmod moves the file's ctime, not its folder's): the follower
    still resolves in full now and then.
    """
    stamps: list[tuple[int, ...]] = []
    for folder in layout.watch_dirs:
        stamp = folder_stamp(folder)
        if stamp is None:
            return None
        stamps.append(stamp)
    try:
        root = layout.root if os.path.isdir(layout.root) else os.path.dirname(layout.root)
        for name in _STAMPED_FILES:
            try:
                st = os.lstat(os.path.join(root, name))
            except FileNotFoundError:
                stamps.append(())
                continue
            stamps.append((st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size))
    except OSError:
        return None
    newest = max((max(s[2], s[3]) for s in stamps if s), default=0)
    if time.time_ns() - newest < settle_s * 1e9:
        return None
    return tuple(stamps)


def _watch_dirs(target: str, run_dir: str | None, files: list[str]) -> tuple[str, ...]:
    if not os.path.isdir(target):
        return (os.path.dirname(target),)
    folders = [target]
    for name in ("stages", "logs"):
        if os.path.isdir(os.path.join(target, name)):
            folders.append(os.path.join(target, name))
    if run_dir is not None:
        real_target = os.path.realpath(target)
        current = os.path.realpath(run_dir)
        chain: list[str] = []
        while current.startswith(real_target) and current != real_target:
            chain.append(current)
            current = os.path.dirname(current)
        folders.extend(reversed(chain))
    folders = [os.path.realpath(f) for f in dict.fromkeys(folders)]
    folders.extend(os.path.dirname(f) for f in files)  # already real
    return tuple(dict.fromkeys(folders))
