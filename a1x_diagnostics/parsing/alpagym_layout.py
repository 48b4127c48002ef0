"""Which folder is an AlpaGym run, and which of its files a reader follows (docs/reference/alpagym.md §3).

An AlpaGym run folder (``tmp/alpagym-runs/<YYYYmmddTHHMMSSZ>-<hex>/``) holds the host's frozen
``resolved_config.yaml`` and the Cosmos-RL TOML it generated, ``cosmos_config.toml``; then
``logs/logs_<ts>/`` (one per Cosmos-RL node: ``controller.log``, ``policy_<i>.log``, ``rollout_<i>.log``),
``topology/`` (the endpoints the host published), ``alpasim/wizard_<i>/`` (AlpaSim's
``txt-logs/runtime_worker_<N>.log`` and ``rollouts/<scene>/<session>/``) and ``artifacts/*.json`` (one
per episode, disk transport). Slurm runs add ``logs/slurm-<job>.out|.err`` (the host's own lines),
``logs/wizard_<i>.log`` and ``logs/cosmos_<t>.log`` (the launcher per node). A local host writes its
own lines to its terminal only: a capture of it saved in the run folder (``host.log``, any
``*.log|*.out|*.err`` there) is read as the launcher's output.

``find_run(path, run)`` recognises the run folder itself, its ``logs/`` folder, or a run root holding
several runs (the newest by name, or ``run``). I/O at the edge: the rest of the package is pure.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from a1x_diagnostics.events import Role, Source

RESOLVED = "resolved_config.yaml"
COSMOS_TOML = "cosmos_config.toml"
_LOGS_TS = re.compile(r"logs_\d{8}-\d{6}")
_ROLE_LOG = re.compile(r"(?:controller|(?:policy|rollout|reference)_\d+)\.log")
_WIZARD = re.compile(r"wizard_(\d+)")
_WORKER = re.compile(r"runtime_worker_(\d+)\.log")
_RUN_NAME = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]+")
_CAPTURE = (".log", ".out", ".err")


class NotAlpaGym(Exception):
    """``path`` holds several AlpaGym runs and ``run`` names none of them (``str(e)``: one line)."""


@dataclass
class AlpaGymRun:
    """The parts of one AlpaGym run folder (paths that exist when it was read)."""

    root: Path
    resolved_config: Path | None
    cosmos_config: Path | None
    logs_dirs: list[Path] = field(default_factory=list)  # logs/logs_<ts>/, one per Cosmos-RL node
    wizard_dirs: list[Path] = field(default_factory=list)  # alpasim/wizard_<i>/
    artifacts_dir: Path | None = None
    topology_dir: Path | None = None
    runs: list[str] = field(default_factory=list)  # the runs of the run root it was picked from, if any

    @property
    def name(self) -> str:
        return self.root.name

    def display(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.name


def is_run_folder(path: Path) -> bool:
    """The host's two generated files are there: the mark of an AlpaGym run folder."""
    return (path / RESOLVED).is_file() and (path / COSMOS_TOML).is_file()


def _names(d: Path) -> list[str]:
    try:
        return sorted(os.listdir(d))
    except OSError:
        return []


def find_run(path: Path, run: str | None = None) -> AlpaGymRun | None:
    """The AlpaGym run at ``path`` (its folder, its ``logs/``, or a run root of them); None when not one.

    Raises ``NotAlpaGym`` for a run root and a ``run`` it does not hold."""
    path = Path(path)
    if not path.is_dir():
        return None
    if is_run_folder(path):
        return read_run_folder(path)
    if path.name == "logs" and is_run_folder(path.parent):
        return read_run_folder(path.parent)
    runs = [n for n in _names(path) if _RUN_NAME.fullmatch(n) and is_run_folder(path / n)]
    if not runs:
        return None
    if run is not None:
        if run not in runs:
            raise NotAlpaGym(f"{path}: no AlpaGym run {run!r} (available: {', '.join(runs)})")
        chosen = run
    else:
        chosen = runs[-1]  # names start with the UTC time of their creation
    found = read_run_folder(path / chosen)
    found.runs = runs
    return found


def read_run_folder(root: Path) -> AlpaGymRun:
    resolved = root / RESOLVED
    cosmos = root / COSMOS_TOML
    logs = root / "logs"
    alpasim = root / "alpasim"
    return AlpaGymRun(
        root=root,
        resolved_config=resolved if resolved.is_file() else None,
        cosmos_config=cosmos if cosmos.is_file() else None,
        logs_dirs=[logs / n for n in _names(logs) if _LOGS_TS.fullmatch(n) and (logs / n).is_dir()],
        wizard_dirs=sorted((alpasim / n for n in _names(alpasim) if _WIZARD.fullmatch(n) and (alpasim / n).is_dir()),
                           key=lambda p: int(p.name.split("_")[1])),
        artifacts_dir=root / "artifacts" if (root / "artifacts").is_dir() else None,
        topology_dir=root / "topology" if (root / "topology").is_dir() else None,
    )


def _files(d: Path) -> list[Path]:
    return [d / n for n in _names(d) if (d / n).is_file()]


def line_files(found: AlpaGymRun) -> list[tuple[Path, Source]]:
    """Every log file of the run with its ``Source`` (paths relative to the run folder): the Cosmos-RL
    role logs of every node, the launcher and host captures, AlpaSim's runtime worker logs."""
    from a1x_diagnostics.parsing import classify_file

    out: list[tuple[Path, Source]] = []
    for d in found.logs_dirs:
        for p in _files(d):
            src = classify_file(p, found.root)
            if src is not None and src.role not in (Role.LAUNCHER, Role.STAGE):
                out.append((p, src))
    logs = found.root / "logs"
    for p in _files(logs):  # slurm-<job>.out|.err, wizard_<i>.log, cosmos_<t>.log; not the role-log links
        if p.suffix in _CAPTURE and not _ROLE_LOG.fullmatch(p.name) and not p.is_symlink():
            out.append((p, Source(found.display(p), Role.LAUNCHER)))
    for p in _files(found.root):  # a capture of the host's terminal saved in the run folder
        if p.suffix in _CAPTURE:
            out.append((p, Source(found.display(p), Role.LAUNCHER)))
    for wizard in found.wizard_dirs:
        for p in _files(wizard / "txt-logs"):
            m = _WORKER.fullmatch(p.name)
            if m:
                out.append((p, Source(found.display(p), Role.SIMULATOR, int(m[1]))))
    return out


def artifact_files(found: AlpaGymRun) -> list[Path]:
    """The episode artifacts (disk transport) in name order; ``*.tmp`` (a write in progress) left out."""
    if found.artifacts_dir is None:
        return []
    try:
        with os.scandir(found.artifacts_dir) as it:
            return sorted(Path(e.path) for e in it if e.name.endswith(".json") and e.is_file())
    except OSError:
        return []


def published_runtimes(found: AlpaGymRun) -> list[Path]:
    """``topology/alpasim_runtimes/*.yaml``: an AlpaSim runtime the host found ready and published."""
    if found.topology_dir is None:
        return []
    return [p for p in _files(found.topology_dir / "alpasim_runtimes") if p.suffix in (".yaml", ".yml")]


__all__ = ["AlpaGymRun", "NotAlpaGym", "artifact_files", "find_run", "is_run_folder", "line_files",
           "published_runtimes", "read_run_folder"]
