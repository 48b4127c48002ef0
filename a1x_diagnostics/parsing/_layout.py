"""Which files make up a run: ``discover`` a path, ``classify_file`` a name.

Layouts (docs/reference/cosmos-rl.md §3.1, §11.1, §11.2; docs/reference/alpamayo-recipe.md §8.3):

- ``log_dir``: a Cosmos-RL ``--log-dir`` with ``logs_<YYYYmmdd-HHMMSS>/`` folders and the
  ``logs_latest`` link; the latest run is read unless ``run`` names another. A launcher capture
  (``run.out``, ``*.out``, ``*.log``) lying next to the ``logs_<ts>`` folders is read too: the
  launcher's own lines never reach ``logs_<ts>/``.
- ``logs_ts``: one ``logs_<ts>`` folder. ``replica_dir``: any folder holding ``controller.log`` /
  ``policy_<i>.log`` / ``rollout_<i>.log``.
- ``slurm_run``: a SLURM job folder (``slurm/part_N/run_M/<role>_<t>.out|.err``, ``latest_run`` link,
  ``slurm_<jobid>.log``), or the 747d1bd layout (``<job>/<jobid>/<role>/<t>.out|.err``).
- ``run_dir``: our supervisor's run folder (``run.toml``, ``logs/``, ``stages/<stage>.log``). A cluster
  run (``compute = "cluster"`` in ``run.toml``, or a ``slurm/`` folder while ``logs/`` holds no
  ``logs_<ts>``) is read from ``<run>/slurm`` in the SLURM layout (its ``latest_run``).
- ``single_file``: one log file (a launcher stdout or a SLURM ``.out`` counts).

The supervisor's side of the same layouts, by path (the runs of a log source it made, a Slurm job's
folder now), is in ``_runs`` and ``_slurm_job``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from a1x_diagnostics.events import Role, Source
from a1x_diagnostics.parsing._runs import PINNED_LOG_RE as _SLURM_747

_ROLE_LOG = re.compile(r"(policy|rollout|reference)_(\d+)\.log")
_SLURM_ROLE = re.compile(r"(controller|policy|rollout|reference)(?:_(\d+))?\.(out|err)")
_LOGS_TS = re.compile(r"logs_\d{8}-\d{6}")
_PART_RUN = re.compile(r"part_(\d+)")
_RUN_M = re.compile(r"run_(\d+)")
_LOG_SUFFIXES = (".log", ".out", ".err")
_ROLE_ORDER = {Role.CONTROLLER: 0, Role.POLICY: 1, Role.ROLLOUT: 2, Role.REFERENCE: 3, Role.LAUNCHER: 4,
               Role.STAGE: 5, Role.SIMULATOR: 6, Role.UNKNOWN: 7}


class LayoutError(Exception):
    """A path that is not a readable run. ``str(e)`` is one line naming the path and the problem."""


@dataclass
class RunLayout:
    target: Path
    kind: str  # log_dir | logs_ts | replica_dir | single_file | slurm_run | run_dir
    run_dir: Path | None  # the folder whose log files are read (None for a single file)
    run_name: str | None  # logs_<ts>, part_N/run_M, the 747d1bd job id, or None
    available_runs: list[str]
    files: list[tuple[Path, Source]]
    unreadable: list[str] = field(default_factory=list)  # filled by read_run: "path: reason"
    # Closed-loop runs: the ``a1x_diagnostics.parsing.alpagym_layout.AlpaGymRun`` of kind ``alpagym`` (else None).
    closed_loop: Any = None


def classify_file(path: Path, root: Path | None = None) -> Source | None:
    """The ``Source`` of a log file by its name (and folder), or ``None`` when it is not a log.

    ``root``: the display path is relative to it (else the bare file name).
    """
    name = path.name
    display = _display(path, root)
    if name == "controller.log":
        return Source(display, Role.CONTROLLER)
    m = _ROLE_LOG.fullmatch(name)
    if m:
        return Source(display, Role(m.group(1)), int(m.group(2)))
    m = _SLURM_ROLE.fullmatch(name)
    if m:
        return Source(display, Role(m.group(1)), int(m.group(2)) if m.group(2) else None)
    m = _SLURM_747.fullmatch(name)
    if m and path.parent.name in ("controller", "policy", "rollout", "reference"):
        role = Role(path.parent.name)
        return Source(display, role, None if role is Role.CONTROLLER else int(m.group(1)))
    if path.parent.name == "stages" and name.endswith(".log"):
        return Source(display, Role.STAGE)
    if name.endswith(_LOG_SUFFIXES):
        return Source(display, Role.LAUNCHER)
    return None


def _display(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    return path.name


def _sort_key(item: tuple[Path, Source]) -> tuple[int, int, str]:
    _, src = item
    return (_ROLE_ORDER[src.role], src.index if src.index is not None else -1, src.path)


def _listdir(d: Path) -> list[Path]:
    try:
        return sorted(d.iterdir())
    except OSError as e:
        raise LayoutError(f"{d}: cannot list folder ({e.strerror or e})") from None


def _log_files(d: Path, root: Path, *, roles_only: bool = False) -> list[tuple[Path, Source]]:
    out = []
    for p in _listdir(d):
        if not p.is_file():
            continue
        src = classify_file(p, root)
        if src is None or (roles_only and src.role in (Role.LAUNCHER, Role.STAGE)):
            continue
        out.append((p, src))
    return out


# What the cosmos-rl launcher (or a process it started) writes to its own stdout/stderr.
_CAPTURE_MARKERS = (b"[cosmos]", b"cosmos-rl", b"Launching process", b"Appending command", b"Detected ",
                    b"Controller is ready", b"Number of policy replicas", b"Traceback (most recent call last)")


def _is_launcher_capture(p: Path) -> bool:
    """``*.out``/``*.err`` next to ``logs_<ts>`` are captures; a ``*.log`` there only when its head shows
    launcher output, so a note of the user's own (``notes.log``) never becomes evidence."""
    if p.suffix in (".out", ".err"):
        return True
    from a1x_diagnostics.inputs import InputError, open_regular  # a FIFO named x.log must not block the listing

    try:
        f, _ = open_regular(p)
        with f:
            head = f.read(256 * 1024)
    except (OSError, InputError):
        return False
    return any(m in head for m in _CAPTURE_MARKERS)


def _is_replica_dir(d: Path) -> bool:
    try:
        names = os.listdir(d)
    except OSError:
        return False
    return any(n == "controller.log" or _ROLE_LOG.fullmatch(n) or _SLURM_ROLE.fullmatch(n) for n in names)


def discover(path: Path, run: str | None = None) -> RunLayout:
    """Find the log files of the run at ``path`` (see the module doc for the layouts).

    ``run`` picks another run of a folder holding several (``logs_<ts>``, ``part_N/run_M``, a
    747d1bd job id). Raises ``LayoutError`` (one-line message) for anything that is not a run.
    """
    path = Path(path)
    if not path.exists():
        if path.is_symlink():
            raise LayoutError(f"{path}: broken symbolic link")
        raise LayoutError(f"{path}: no such file or folder")
    if path.is_file():
        if not os.access(path, os.R_OK):
            raise LayoutError(f"{path}: not readable (permission denied)")
        if run is not None:
            raise LayoutError(f"{path}: --run needs a log folder, not a single file")
        src = classify_file(path) or Source(path.name, Role.LAUNCHER)
        return RunLayout(path, "single_file", None, None, [], [(path, src)])
    if not path.is_dir():
        raise LayoutError(f"{path}: not a regular file or folder")
    if not os.access(path, os.R_OK | os.X_OK):
        raise LayoutError(f"{path}: not readable (permission denied)")

    closed = _closed_loop(path, run)  # hook: an AlpaGym run folder (a1x_diagnostics/parsing/alpagym_layout.py)
    if closed is None and (path / "run.toml").is_file() and (path / "alpagym").is_dir():
        closed = _closed_loop(path / "alpagym", run)  # a closed-loop run of our supervisor: its AlpaGym runs
    if closed is not None:
        return closed
    if (path / "run.toml").is_file() and ((path / "logs").is_dir() or (path / "slurm").exists()):
        return _run_dir(path, run)
    slurm = _slurm_root(path)
    if slurm is not None:
        return _slurm_run(path, slurm, run)
    legacy = _slurm_747(path, run)
    if legacy is not None:
        return legacy
    if _log_runs(path) or (path / "logs_latest").exists():
        return _log_dir(path, path, run)
    files = sorted(_log_files(path, path), key=_sort_key)
    if _LOGS_TS.fullmatch(path.name) or files:
        # logs_<ts>, a copied replica folder, or a folder of launcher captures (*.log, *.out, *.err)
        if run is not None:
            raise LayoutError(f"{path}: holds a single run; --run {run} needs the folder above it")
        kind = "logs_ts" if _LOGS_TS.fullmatch(path.name) else "replica_dir"
        return RunLayout(path, kind, path, path.name if kind == "logs_ts" else None, [], files)
    raise LayoutError(
        f"{path}: no Cosmos-RL logs here (expected logs_<ts>/ folders, controller.log, policy_<i>.log, "
        "rollout_<i>.log, a SLURM job folder, or a log file)"
    )


def _closed_loop(path: Path, run: str | None) -> RunLayout | None:
    """An AlpaGym run folder, its ``logs/`` or a run root of them: kind ``alpagym``, every log file of
    the run (docs/parsing.md "Closed-loop runs"); None for anything else."""
    if not ((path / "resolved_config.yaml").exists() or path.name == "logs" or any(
            n.endswith("Z") or "Z-" in n for n in _safe_names(path)[:4096])):
        return None  # the cheap test first: most folders are not AlpaGym's
    from a1x_diagnostics.parsing.alpagym_layout import NotAlpaGym, find_run, line_files

    try:
        found = find_run(path, run)
    except NotAlpaGym as exc:
        raise LayoutError(str(exc)) from None
    if found is None:
        return None
    if run is not None and not found.runs:
        raise LayoutError(f"{path}: one AlpaGym run; --run {run} needs the folder of several runs above it")
    files = sorted(line_files(found), key=_sort_key)
    return RunLayout(path, "alpagym", found.root, found.name, found.runs, files, closed_loop=found)


def _log_runs(d: Path) -> list[str]:
    try:
        return sorted(n for n in os.listdir(d) if _LOGS_TS.fullmatch(n) and (d / n).is_dir())
    except OSError:
        return []


def _log_dir(target: Path, d: Path, run: str | None, kind: str = "log_dir") -> RunLayout:
    runs = _log_runs(d)
    chosen: str | None = None
    if run is not None:
        want = run if run.startswith("logs_") else f"logs_{run}"
        if want not in runs:
            listing = ", ".join(runs) if runs else "none"
            raise LayoutError(f"{d}: no run {run!r} (available: {listing})")
        chosen = want
    else:
        latest = d / "logs_latest"
        if latest.is_dir():
            resolved = latest.resolve()
            if resolved.parent == d.resolve() and resolved.name in runs:
                chosen = resolved.name
            elif _is_replica_dir(latest):
                chosen = "logs_latest"
        if chosen is None and runs:
            chosen = runs[-1]  # names sort by time
    # The launcher's own stdout, captured next to the logs_<ts> folders (run.out, launcher.log...).
    captures = [(p, s) for p, s in _log_files(d, target) if s.role is Role.LAUNCHER and _is_launcher_capture(p)]
    if chosen is None:
        if captures and run is None:
            # no process log (a launcher that failed before starting any, a copy that lost the empty
            # logs_<ts>/): its own output is the run's record (docs/reference/cosmos-rl.md §3.1)
            return RunLayout(target, kind, d, None, runs, sorted(captures, key=_sort_key))
        raise LayoutError(f"{d}: logs_latest points nowhere and there is no logs_<ts> folder")
    run_path = d / chosen
    files = _log_files(run_path, target) + captures
    return RunLayout(target, kind, run_path, chosen, runs, sorted(files, key=_sort_key))


def _run_compute(path: Path) -> str | None:
    """``compute`` from our ``run.toml`` ("local" | "cluster"), None when it cannot be read."""
    try:
        import tomlkit

        value = tomlkit.parse(path.read_text(encoding="utf-8")).get("compute")
    except Exception:  # a broken run.toml: the folders decide
        return None
    return str(value) if value is not None else None


def _run_dir(path: Path, run: str | None) -> RunLayout:
    logs = path / "logs"
    slurm = path / "slurm"
    cluster = _run_compute(path / "run.toml") == "cluster"
    if slurm.exists() and (cluster or not _log_runs(logs)):
        return _cluster_run_dir(path, slurm, run)
    if _log_runs(logs) or (logs / "logs_latest").exists():
        inner = _log_dir(path, logs, run, kind="run_dir")
        files, run_path, run_name, runs = inner.files, inner.run_dir, inner.run_name, inner.available_runs
    else:
        if run is not None:
            raise LayoutError(f"{path}: --run {run}: this run folder holds a single run")
        files, run_path, run_name, runs = _log_files(logs, path), logs, None, []
    files += _stage_logs(path)
    return RunLayout(path, "run_dir", run_path, run_name, runs, sorted(files, key=_sort_key))


def _stage_logs(path: Path) -> list[tuple[Path, Source]]:
    stages = path / "stages"
    if not stages.is_dir():
        return []
    return [(p, Source(_display(p, path), Role.STAGE)) for p in _listdir(stages) if p.is_file() and p.suffix == ".log"]


def _cluster_run_dir(path: Path, slurm: Path, run: str | None) -> RunLayout:
    """A cluster run of ours: the job's SLURM layout under ``<run>/slurm`` (a link to dispatch_job.py's
    folder for cosmos-dispatch), plus the stage logs. Before the job wrote a run: the stage logs alone."""
    inner: RunLayout | None = None
    if _slurm_root(slurm) is not None:
        inner = _slurm_run(path, slurm, run)
    elif slurm.is_dir():
        inner = _slurm_747(slurm.resolve(), run)  # 747d1bd: <root>/<job-name>/<jobid>, sbatch's x.* beside
    if inner is None:
        if run is not None:
            raise LayoutError(f"{path}: --run {run}: the SLURM job has not written part_N/run_M yet")
        return RunLayout(path, "run_dir", None, None, [], sorted(_stage_logs(path), key=_sort_key))
    real = slurm.resolve()

    def display(p: Path, src: Source) -> str:
        if p.is_relative_to(path):
            return _display(p, path)
        return f"slurm/{_display(p, real)}" if p.is_relative_to(real) else src.path

    files = [(p, Source(display(p, s), s.role, s.index)) for p, s in inner.files] + _stage_logs(path)
    return RunLayout(path, "run_dir", inner.run_dir, inner.run_name, inner.available_runs,
                     sorted(files, key=_sort_key))


def _slurm_root(path: Path) -> Path | None:
    """The ``slurm/`` folder of a HEAD/0.4.7 SLURM job (§11.1), given the job, slurm, part or run folder."""
    for cand in (path / "slurm", path, path.parent, path.parent.parent):
        if cand.name == "slurm" and cand.is_dir() and (
            (cand / "latest_run").exists() or any(_PART_RUN.fullmatch(n) for n in _safe_names(cand))
        ):
            return cand
    return None


def _safe_names(d: Path) -> list[str]:
    try:
        return os.listdir(d)
    except OSError:
        return []


def _slurm_runs(slurm: Path) -> list[str]:
    out = []
    for part in sorted(_safe_names(slurm)):
        if _PART_RUN.fullmatch(part) and (slurm / part).is_dir():
            out += [f"{part}/{r}" for r in _safe_names(slurm / part)
                    if _RUN_M.fullmatch(r) and (slurm / part / r).is_dir()]

    def key(name: str) -> tuple[int, int]:
        p, r = name.split("/")
        return int(p[5:]), int(r[4:])

    return sorted(out, key=key)


def _slurm_run(target: Path, slurm: Path, run: str | None) -> RunLayout:
    runs = _slurm_runs(slurm)
    chosen: str | None = None
    if run is not None:
        if run not in runs:
            raise LayoutError(f"{slurm}: no run {run!r} (available: {', '.join(runs) or 'none'})")
        chosen = run
    elif target != slurm and _RUN_M.fullmatch(target.name) and _PART_RUN.fullmatch(target.parent.name):
        chosen = f"{target.parent.name}/{target.name}"
    else:
        latest = slurm / "latest_run"
        if latest.is_dir():
            rp = latest.resolve()
            cand = f"{rp.parent.name}/{rp.name}"
            chosen = cand if cand in runs else None
        if chosen is None and runs:
            chosen = runs[-1]
    if chosen is None:
        raise LayoutError(f"{slurm}: SLURM job folder without any part_N/run_M run")
    run_path = slurm / chosen
    root = slurm.parent
    files = _log_files(run_path, root, roles_only=True)
    files += [(p, Source(_display(p, root), Role.LAUNCHER)) for p in _listdir(slurm)
              if p.is_file() and re.fullmatch(r"slurm_.*\.log", p.name)]
    return RunLayout(target, "slurm_run", run_path, chosen, runs, sorted(files, key=_sort_key))


def _has_747_roles(d: Path) -> bool:
    return any((d / r).is_dir() and any(_SLURM_747.fullmatch(n) for n in _safe_names(d / r))
               for r in ("controller", "policy", "rollout"))


def _slurm_747(path: Path, run: str | None) -> RunLayout | None:
    """747d1bd: ``<root>/<job-name>/<jobid>/<role>/<t>.out|.err`` (§11.2); given the jobid or job-name folder."""
    if _has_747_roles(path):
        if run is not None:
            raise LayoutError(f"{path}: holds a single SLURM job; --run {run} needs the job-name folder")
        job_dir, runs = path, []
    else:
        runs = sorted((n for n in _safe_names(path) if n.isdigit() and _has_747_roles(path / n)), key=int)
        if not runs:
            return None
        if run is not None and run not in runs:
            raise LayoutError(f"{path}: no SLURM job {run!r} (available: {', '.join(runs)})")
        job_dir = path / (run or runs[-1])
    files: list[tuple[Path, Source]] = []
    for role in ("controller", "policy", "rollout", "reference"):
        if (job_dir / role).is_dir():
            files += [(p, s) for p, s in _log_files(job_dir / role, path) if s.role is not Role.LAUNCHER]
    # sbatch's own x.out / x.err live in <output-root>/<jobid>/ (two levels up from <job-name>/<jobid>).
    sbatch = job_dir.parent.parent / job_dir.name
    if sbatch.is_dir() and sbatch != job_dir:
        files += [(p, Source(_display(p, sbatch.parent), Role.LAUNCHER)) for p in _listdir(sbatch)
                  if p.is_file() and p.suffix in (".out", ".err")]
    return RunLayout(path, "slurm_run", job_dir, job_dir.name, runs, sorted(files, key=_sort_key))
