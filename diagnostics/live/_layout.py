"""Which files make up the run under a path now, and which folders to watch for new ones.

``diagnostics.parsing.discover`` decides what a run is (a Cosmos-RL ``--log-dir`` and its
``logs_latest`` link, one ``logs_<ts>``, a replica folder, a SLURM job, our run folder, one file).
Following adds the folders where something new can appear: the parent folder of every file (a new
replica), every folder from PATH down to the run folder (a new ``logs_<ts>``, a re-pointed
``logs_latest``, a new SLURM ``part_N/run_M``) and ``stages/``. A path that holds no run *yet*
(a log dir before the launcher has created ``logs_<ts>``) is a layout without files: following
waits for them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from diagnostics.events import Source
from diagnostics.parsing import LayoutError, discover

LATEST = "logs_latest"


@dataclass(frozen=True, slots=True)
class Layout:
    """Files to follow (real path -> Source), folders to watch, the run they belong to."""

    root: str
    run: str | None
    files: dict[str, Source] = field(default_factory=dict)
    watch_dirs: tuple[str, ...] = ()
    waiting: str | None = None  # why there are no files yet (discover's one-line message)


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
    return Layout(target, layout.run_name, files, _watch_dirs(target, run_dir, list(files)))


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
