"""The runs of a log source and the log files of one run, by path: what the supervisor follows and judges.

A *log source* is either a ``cosmos-rl --log-dir`` whose runs are ``logs_<ts>/`` folders with
``controller.log`` and ``policy_<i>.log`` (docs/reference/cosmos-rl.md §3.1), or the ``slurm/`` folder of a Slurm
job whose runs are ``part_<N>/run_<M>/`` folders with ``controller.{out,err}`` and
``<role>_<t>.{out,err}`` (§11.1: cosmos logger lines in ``.err``, the rest in ``.out``). A
cosmos-dispatch job at 747d1bd has one run, ``<jobid>/<role>/<t>.{out,err}`` (§11.2).

``discover`` (``_layout``) answers the reader's question for a path someone hands to ``--check``
(which files, in which roles); these answer the supervisor's for a log source it made itself (which
run is the newest, where its controller and policy logs are). The two keep the edge rules they had:
here every ``logs_*`` folder but ``logs_latest`` is a run, and ``part_<N>`` / ``run_<M>`` links are not.
"""

from __future__ import annotations

import re
from pathlib import Path

# 747d1bd's per-role files, ``<role>/<t>.out|err`` (docs/reference/cosmos-rl.md §11.2).
PINNED_LOG_RE = re.compile(r"(\d+)\.(out|err)")


def numbered(parent: Path, prefix: str) -> list[tuple[int, Path]]:
    """``<prefix>_<n>`` folders of ``parent`` (real folders, not links), by ``n``."""
    try:
        entries = list(parent.iterdir())
    except OSError:
        return []
    found = []
    for p in entries:
        m = re.fullmatch(rf"{prefix}_(\d+)", p.name)
        if m and p.is_dir() and not p.is_symlink():
            found.append((int(m.group(1)), p))
    return sorted(found)


def logs_dirs(log_dir: Path) -> list[Path]:
    """``logs_<YYYYmmdd-HHMMSS>`` folders under a ``--log-dir``, oldest first (docs/reference/cosmos-rl.md §3.1)."""
    try:
        found = [p for p in log_dir.iterdir() if p.name.startswith("logs_") and p.name != "logs_latest" and p.is_dir()]
    except OSError:
        return []
    return sorted(found, key=lambda p: p.name)


def is_slurm_dir(log_dir: Path) -> bool:
    """A Slurm job's ``slurm/`` folder (docs/reference/cosmos-rl.md §11.1), even before the job wrote its first run."""
    return log_dir.name == "slurm" or (log_dir / "latest_run").is_symlink() or bool(numbered(log_dir, "part"))


def slurm_runs(slurm_dir: Path) -> list[Path]:
    """``part_<N>/run_<M>`` folders, oldest first: M + 1 per retry, N + 1 per autoresume (§11.1)."""
    return [run for _, part in numbered(slurm_dir, "part") for _, run in numbered(part, "run")]


def _pinned_job(d: Path) -> bool:
    """747d1bd's job folder: ``controller/``, ``policy/``, ``rollout/`` holding ``<t>.out|err`` (§11.2)."""
    return any(any((d / role).glob("[0-9]*.err")) for role in ("controller", "policy", "rollout"))


def log_runs(log_dir: Path) -> list[Path]:
    """The runs of a log source, oldest first: ``logs_<ts>`` folders or ``part_<N>/run_<M>`` folders."""
    if not is_slurm_dir(log_dir):
        return logs_dirs(log_dir)
    runs = slurm_runs(log_dir)
    return runs if runs or not _pinned_job(log_dir) else [log_dir]


def run_name(log_dir: Path, run: Path) -> str:
    """``logs_<ts>`` or ``part_<N>/run_<M>``: what ``a1x_diagnostics.engine.check(log_dir, run=...)`` takes
    ("" for a source holding a single run)."""
    try:
        name = run.relative_to(log_dir).as_posix()
    except ValueError:
        return run.name
    return "" if name == "." else name


def latest_logs_dir(log_dir: Path) -> Path | None:
    """The newest run of a log source (``logs_latest`` / ``latest_run`` when it points at one)."""
    link = log_dir / ("latest_run" if is_slurm_dir(log_dir) else "logs_latest")
    if link.is_dir():
        return link.resolve()
    dirs = log_runs(log_dir)
    return dirs[-1] if dirs else None


def controller_logs(run: Path) -> list[Path]:
    """``controller.log`` (launcher layout) or ``controller.err`` / ``.out`` (Slurm layout)."""
    found = [p for p in (run / "controller.log", run / "controller.err", run / "controller.out") if p.is_file()]
    return found + _pinned_logs(run, "controller")


def _pinned_logs(run: Path, role: str) -> list[Path]:
    folder = run / role
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if PINNED_LOG_RE.fullmatch(p.name))


def replica_logs(run: Path, role: str) -> list[Path]:
    """``<role>_<i>.log`` (launcher layout) or ``<role>_<t>.err`` / ``.out`` (Slurm layout: one file per node)."""
    found: list[Path] = []
    for suffix in ("log", "err", "out"):
        found += run.glob(f"{role}_*.{suffix}")
    return sorted(p for p in found if re.fullmatch(rf"{role}_\d+\.(log|err|out)", p.name)) + _pinned_logs(run, role)
