"""What the containers of a ``cosmos-dispatch`` job can see, checked before submission.

Cosmos-RL's job template runs every step in a pyxis container with ``--no-container-mount-home``
and only a few mounts (docs/reference/cosmos-rl.md §11.1 for HEAD, §11.2 for 747d1bd): ``/lustre`` at its own
path (HEAD: the ``--mount-dirs`` list instead, default ``/lustre:/lustre/``), the submitting user's
``~/.cache/huggingface`` at ``/root/.cache/huggingface``, the folder of the processed TOML at
``/opt/tmp_config`` (HEAD: ``/opt/config``) and ``--repo-root-path`` at ``/opt/cosmos-rl``. The
entry script, the model, the data, the grader, the outputs and the Hugging Face cache are named by
host paths (in the TOML, on the launcher's command line, in the environment that ``--export=ALL``
carries), so each must be visible inside the container *at the same path*: under a mount whose
source and target are equal. A relative path is wrong too: the template changes into the installed
``cosmos_rl`` package's folder before it starts anything.

``unmounted`` lists what fails that rule; ``mount_problems`` what fails the mounts themselves: a source the
template mounts unconditionally that does not exist (pyxis fails the step), and 747d1bd's processed TOML,
written under the submitting user's ``~/.cache/cosmos_rl/tmp_config`` and mounted from there on every
compute node, on a filesystem local to this node. ``describe`` turns both into the finding's lines and fix.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from a1x_supervisor.slurm.plan import CosmosRev
from a1x_supervisor.slurm.spec import ClusterSpec

HEAD_DEFAULT_MOUNTS = ("/lustre:/lustre/",)  # dispatch_job.py --mount-dirs default at HEAD (§11.1)


# Filesystem types that live on this node's own disks or memory: a compute node mounting the same path
# sees its own disk there, never this node's files (anything else, e.g. nfs, lustre, gpfs, is not judged).
LOCAL_FILESYSTEMS = frozenset(
    ("ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs", "f2fs", "vfat", "ramfs", "reiserfs", "jfs")
)


def filesystem_type(path: Path) -> str | None:
    """The type of the filesystem holding ``path`` (its nearest existing folder), from /proc/self/mounts."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        real = os.path.realpath(probe)
        lines = Path("/proc/self/mounts").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    best, kind = "", None
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[1])  # \040 is a space
        if _under(real, point) and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind


@dataclass(frozen=True, slots=True)
class MountProbe:
    """How this node is asked (tests give their own)."""

    exists: Callable[[Path], bool] = Path.exists
    fs_type: Callable[[Path], str | None] = filesystem_type


DEFAULT_PROBE = MountProbe()


@dataclass(frozen=True, slots=True)
class Mount:
    source: str
    target: str
    origin: str  # what puts it there, for the finding's data
    required: bool = False  # mounted whether its source exists or not: pyxis fails the step without it

    @property
    def same_path(self) -> bool:
        return _norm(self.source) == _norm(self.target)


@dataclass(frozen=True, slots=True)
class NeededPath:
    """A host path some process of the job opens inside its container."""

    what: str  # "the entry script", "policy.model_name_or_path (the converted model)", ...
    path: Path
    key: str | None = None  # the TOML key it comes from, for the evidence line
    is_file: bool = False  # a file: the folder to mount is its parent


@dataclass(frozen=True, slots=True)
class Unmounted:
    needed: NeededPath
    seen: str  # the path that is not visible (the link target when the path is a link)
    why: str  # "not under a mount" | "relative"

    def line(self) -> str:
        path = str(self.needed.path)
        if self.why == "relative":
            return f"{self.needed.what}: {path} is relative (the template starts every step in the cosmos_rl folder)"
        link = f" (a link to {self.seen})" if self.seen != path else ""
        return f"{self.needed.what}: {path}{link} is not mounted in the container"

    def mount_dir(self) -> str:
        seen = Path(self.seen)
        return str(seen.parent if self.needed.is_file and self.seen == str(self.needed.path) else seen)


def _norm(path: str) -> str:
    return os.path.normpath(path) if path else path


def _under(path: str, folder: str) -> bool:
    path, folder = _norm(path), _norm(folder)
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def hf_hub_cache(environ: Mapping[str, str]) -> Path:
    """The Hugging Face hub cache the processes use (``HF_HUB_CACHE``, ``HF_HOME``/hub, ``~/.cache``)."""
    if environ.get("HF_HUB_CACHE"):
        return Path(environ["HF_HUB_CACHE"]).expanduser()
    if environ.get("HF_HOME"):
        return Path(environ["HF_HOME"]).expanduser() / "hub"
    home = environ.get("HOME") or str(Path.home())
    return Path(home) / ".cache" / "huggingface" / "hub"


def _parse_mount(text: str, origin: str) -> Mount:
    parts = text.split(":")
    source = parts[0]
    target = parts[1] if len(parts) > 1 and parts[1] else source
    return Mount(source, target, origin, required=True)


def tmp_config_dir(environ: Mapping[str, str]) -> Path:
    """Where 747d1bd's dispatch_job.py writes the processed TOML: ``~/.cache/cosmos_rl/tmp_config`` of the
    submitting user (its ``os.path.expanduser("~")``, so ``HOME``)."""
    return Path(environ.get("HOME") or str(Path.home())) / ".cache" / "cosmos_rl" / "tmp_config"


def mount_problems(
    spec: ClusterSpec, mounts: Sequence[Mount], *, environ: Mapping[str, str], probe: MountProbe | None = None
) -> list[str]:
    """One line per mount the job's containers cannot have (docs/slurm.md "What is checked before submission")."""
    ask = probe or DEFAULT_PROBE
    lines = []
    for m in mounts:
        if m.required and not ask.exists(Path(m.source)):
            lines.append(
                f"{m.origin} mounts {m.source} whether it exists or not, and it does not exist on this node: "
                "pyxis fails every step of the job on a missing mount source"
            )
    if spec.cosmos_rev is CosmosRev.PINNED:
        folder = tmp_config_dir(environ)
        kind = ask.fs_type(folder)
        if kind in LOCAL_FILESYSTEMS:
            lines.append(
                f"the processed TOML goes to {folder} (747d1bd's dispatch_job.py writes it under the submitting "
                f"user's HOME), on a local {kind} filesystem of this node: every compute node mounts that folder "
                "from its own disk, where the file is not"
            )
    return lines


def job_mounts(spec: ClusterSpec, *, environ: Mapping[str, str]) -> list[Mount]:
    """The container mounts of the job template of ``spec.cosmos_rev`` (§11.1, §11.2)."""
    home = environ.get("HOME") or str(Path.home())
    hf_source, hf_target = f"{home}/.cache/huggingface", "/root/.cache/huggingface"
    if spec.cosmos_rev is CosmosRev.PINNED:
        mounts = [
            Mount("/lustre", "/lustre/", "747d1bd's template", required=True),
            Mount(hf_source, hf_target, "747d1bd's template (the Hugging Face cache)", required=True),
            Mount(f"{home}/.cache/cosmos_rl/tmp_config", "/opt/tmp_config", "the processed TOML's folder"),
        ]
    else:
        origin = "[cluster] mounts" if spec.mounts else "dispatch_job.py's default --mount-dirs"
        mounts = [_parse_mount(m, origin) for m in (spec.mounts or HEAD_DEFAULT_MOUNTS)]
        if Path(hf_source).is_dir():  # HEAD mounts it only when it exists
            mounts.append(Mount(hf_source, hf_target, "the template's Hugging Face cache mount"))
    if spec.repo_root is not None:
        mounts.append(Mount(str(spec.repo_root), "/opt/cosmos-rl", "repo_root"))
    return mounts


def _real(path: Path) -> str:
    try:
        return os.path.realpath(path) if path.exists() else str(path)
    except OSError:
        return str(path)


def unmounted(needed: Iterable[NeededPath], mounts: Sequence[Mount]) -> list[Unmounted]:
    """The needed paths a process in the container would not find at the same path."""
    same = [m.source for m in mounts if m.same_path]
    out: list[Unmounted] = []
    for item in needed:
        if not item.path.is_absolute():
            out.append(Unmounted(item, str(item.path), "relative"))
            continue
        for seen in dict.fromkeys((str(item.path), _real(item.path))):
            if not any(_under(seen, src) for src in same):
                out.append(Unmounted(item, seen, "not under a mount"))
                break
    return out


def model_link_targets(model_dir: Path) -> list[Path]:
    """The folders the converted model's weight links point into (the HF cache's blobs,
    docs/reference/alpamayo-recipe.md §4)."""
    found: dict[str, Path] = {}
    try:
        entries = list(model_dir.iterdir())
    except OSError:
        return []
    for p in entries:
        if p.is_symlink():
            target = Path(os.path.realpath(p)).parent
            found.setdefault(str(target), target)
    return list(found.values())


def describe(
    spec: ClusterSpec, missing: Sequence[Unmounted], problems: Sequence[str] = ()
) -> tuple[str, list[str], str, dict[str, Any]]:
    """The explanation, one evidence line per path (with the mount it needs) and per mount problem, the fix
    and the data of the finding."""
    rev = spec.cosmos_rev
    folders = list(dict.fromkeys(m.mount_dir() for m in missing if m.why != "relative"))
    if rev is CosmosRev.PINNED:
        explanation = (
            "dispatch_job.py at 747d1bd runs every step in a container that sees /lustre at its own path, "
            "~/.cache/huggingface at /root/.cache/huggingface, the TOML folder and repo_root, with "
            "--no-container-mount-home (docs/reference/cosmos-rl.md §11.2): these paths of the run are not there, or "
            "a mount cannot be made, so the job fails inside the container."
        )
        action = (
            "move them under /lustre (the only folder 747d1bd's template mounts at its own path) and point the "
            'run spec\'s paths (and HF_HOME) there, or set cosmos_rev = "head" and list the folders in [cluster] mounts'
        )
    else:
        current = list(spec.mounts or HEAD_DEFAULT_MOUNTS)
        proposed = current + [f"{f}:{f}" for f in folders if f"{f}:{f}" not in current]
        explanation = (
            "dispatch_job.py runs every step in a container that sees only the --mount-dirs list at the same "
            "path (default /lustre:/lustre/; ~/.cache/huggingface goes to /root/.cache/huggingface), with "
            "--no-container-mount-home (docs/reference/cosmos-rl.md §11.1): these paths of the run are not there, or "
            "a mount cannot be made, so the job fails inside the container."
        )
        action = "set [cluster] mounts = [" + ", ".join(f'"{m}"' for m in proposed) + "] (it replaces the default)"
    if any(m.why == "relative" for m in missing):
        action += "; give absolute paths"
    if problems:
        action += (
            "; every mount source must exist on the compute nodes (747d1bd: /lustre and ~/.cache/huggingface), and "
            "747d1bd's processed TOML needs a HOME on storage the compute nodes share (or cosmos_rev = \"head\", "
            "which writes it under output_root)"
        )
    lines = []
    for m in missing:
        if m.why == "relative":
            lines.append(m.line())
        elif rev is CosmosRev.PINNED:
            lines.append(f"{m.line()} (747d1bd's template mounts only /lustre at its own path)")
        else:
            lines.append(f"{m.line()} (needs the mount {m.mount_dir()}:{m.mount_dir()})")
    data: dict[str, Any] = {
        "paths": [m.seen for m in missing],
        "mount": folders,
        "cosmos_rev": rev.value,
    }
    return explanation, lines + list(problems), action, data
