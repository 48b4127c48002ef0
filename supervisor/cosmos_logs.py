"""The few Cosmos-RL log facts the supervisor itself relies on.

The full diagnostics live in ``diagnostics``; the supervisor only needs to know, without them,
whether training reached its last step and which checkpoints are complete (the launcher's
'Process {i} failed' line is ``diagnostics.parsing.PROCESS_FAILED_RE``, used by the train
monitor). Formats are from cosmos-rl.md and alpamayo-recipe.md (sections quoted at each pattern).

A *log source* is either a ``cosmos-rl --log-dir`` whose runs are ``logs_<ts>/`` folders with
``controller.log`` and ``policy_<i>.log`` (cosmos-rl.md §3.1), or the ``slurm/`` folder of a Slurm
job whose runs are ``part_<N>/run_<M>/`` folders with ``controller.{out,err}`` and
``<role>_<t>.{out,err}`` (§11.1: cosmos logger lines in ``.err``, the rest in ``.out``). A
cosmos-dispatch job at 747d1bd has one run, ``<jobid>/<role>/<t>.{out,err}`` (§11.2).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import tomlkit

# cosmos-rl.md §4.5: controller 'Step: {s}/{N}, Reward Mean: ...' (also the SFT shape 'Step: s/N, Loss: ...').
STEP_RE = re.compile(r"\bStep: (\d+)/(\d+)")
# cosmos-rl.md §5.3 / alpamayo-recipe.md §8.8:
# '[Policy] Step: {N}, checkpoint saved successfully at {.../checkpoints/step_N/policy}.'
CKPT_SAVED_RE = re.compile(r"Step: (\d+), checkpoint saved successfully at (.+?)\.?\s*$")
# torchrun's summary in the replica's own log (cosmos-rl.md §3.4, §15): the real cause of a death.
_REPLICA_CAUSE_RE = re.compile(
    r"(exitcode\s*:\s*-?\d+|Signal \d+ \(SIG\w+\) received|ChildFailedError|"
    r"^\S*(Error|Exception): .+|CUDA out of memory|OutOfMemoryError)"
)
_RANK_FILE_RE = re.compile(r"^model_rank_(\d+)\.pth$")
_COMPLETE_RE = re.compile(r"^\.rank_(\d+)_complete$")


@dataclass(frozen=True, slots=True)
class SavedCheckpoint:
    step: int
    path: Path
    logs_dir: Path


def logs_dirs(log_dir: Path) -> list[Path]:
    """``logs_<YYYYmmdd-HHMMSS>`` folders under a ``--log-dir``, oldest first (cosmos-rl.md §3.1)."""
    try:
        found = [p for p in log_dir.iterdir() if p.name.startswith("logs_") and p.name != "logs_latest" and p.is_dir()]
    except OSError:
        return []
    return sorted(found, key=lambda p: p.name)


def _numbered(parent: Path, prefix: str) -> list[tuple[int, Path]]:
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


def is_slurm_dir(log_dir: Path) -> bool:
    """A Slurm job's ``slurm/`` folder (cosmos-rl.md §11.1), even before the job wrote its first run."""
    return log_dir.name == "slurm" or (log_dir / "latest_run").is_symlink() or bool(_numbered(log_dir, "part"))


def slurm_runs(slurm_dir: Path) -> list[Path]:
    """``part_<N>/run_<M>`` folders, oldest first: M + 1 per retry, N + 1 per autoresume (§11.1)."""
    return [run for _, part in _numbered(slurm_dir, "part") for _, run in _numbered(part, "run")]


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
    """``logs_<ts>`` or ``part_<N>/run_<M>``: what ``diagnostics.engine.check(log_dir, run=...)`` takes
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
    return sorted(p for p in folder.iterdir() if re.fullmatch(r"\d+\.(err|out)", p.name))


def replica_logs(run: Path, role: str) -> list[Path]:
    """``<role>_<i>.log`` (launcher layout) or ``<role>_<t>.err`` / ``.out`` (Slurm layout: one file per node)."""
    found: list[Path] = []
    for suffix in ("log", "err", "out"):
        found += run.glob(f"{role}_*.{suffix}")
    return sorted(p for p in found if re.fullmatch(rf"{role}_\d+\.(log|err|out)", p.name)) + _pinned_logs(run, role)


def _lines(path: Path) -> Iterator[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                yield line.rstrip("\n")
    except OSError:
        return


def last_step(logs_dir: Path) -> tuple[int, int] | None:
    """The last ``Step: n/N`` the controller logged in one run (``logs_<ts>`` or ``part_<N>/run_<M>``)."""
    found: tuple[int, int] | None = None
    for log in controller_logs(logs_dir):
        for line in _lines(log):
            if "Step: " not in line:
                continue
            m = STEP_RE.search(line)
            if m:
                found = (int(m.group(1)), int(m.group(2)))
    return found


def parse_saved(line: str) -> tuple[int, Path] | None:
    m = CKPT_SAVED_RE.search(line)
    if not m:
        return None
    return int(m.group(1)), Path(m.group(2).strip())


def saved_checkpoints(logs_dir: Path) -> list[SavedCheckpoint]:
    """Every 'checkpoint saved successfully at' line in the policy logs of one run, by step."""
    found: dict[Path, SavedCheckpoint] = {}
    for log in replica_logs(logs_dir, "policy"):
        for line in _lines(log):
            if "checkpoint saved successfully" not in line:
                continue
            parsed = parse_saved(line)
            if parsed:
                found[parsed[1]] = SavedCheckpoint(parsed[0], parsed[1], logs_dir)
    return sorted(found.values(), key=lambda c: c.step)


def expected_ranks(toml_path: Path) -> int | None:
    """How many ranks write a policy checkpoint: world size / dp_replicate (alpamayo-recipe.md §12.1)."""
    try:
        data = tomlkit.parse(toml_path.read_text(encoding="utf-8")).unwrap()
    except Exception:
        return None
    par = data.get("policy", {}).get("parallelism", {})
    if not isinstance(par, dict):
        return None
    size = 1
    for key in ("tp_size", "cp_size", "pp_size", "dp_shard_size"):
        value = par.get(key, 1)
        if isinstance(value, int) and value >= 1:
            size *= value
    return size


def checkpoint_incomplete_reason(path: Path, ranks: int | None = None) -> str | None:
    """None when the checkpoint is complete: ``cosmos_config`` and every ``.rank_<r>_complete``
    marker (cosmos-rl.md §5.3: with async saves the log line comes before the files)."""
    if not path.is_dir():
        return f"{path} does not exist"
    if not (path / "cosmos_config").exists():
        return f"{path}: cosmos_config is missing"
    names = [p.name for p in path.iterdir()]
    model_ranks = {int(m.group(1)) for n in names if (m := _RANK_FILE_RE.match(n))}
    done = {int(m.group(1)) for n in names if (m := _COMPLETE_RE.match(n))}
    wanted = set(range(ranks)) if ranks else model_ranks
    if not wanted:
        return f"{path}: no model_rank_*.pth"
    missing = sorted(wanted - done)
    if missing:
        return f"{path}: no .rank_{missing[0]}_complete marker ({len(missing)} of {len(wanted)} ranks unfinished)"
    missing_models = sorted(wanted - model_ranks)
    if missing_models:
        return f"{path}: model_rank_{missing_models[0]}.pth is missing"
    return None


def latest_complete_checkpoint(log_dir: Path, ranks: int | None = None) -> SavedCheckpoint | None:
    """The newest run's highest-step complete checkpoint, from the log lines that report them
    (alpamayo-recipe.md §12.1: the path in that line includes the timestamp folder)."""
    for logs_dir in reversed(log_runs(log_dir)):
        for ckpt in reversed(saved_checkpoints(logs_dir)):
            if checkpoint_incomplete_reason(ckpt.path, ranks) is None:
                return ckpt
    return None


def replica_failure_cause(logs_dir: Path, *, tail_bytes: int = 65536) -> str | None:
    """'rollout_0.log: exitcode  : -9' — the last failure line in any replica log, if one shows."""
    for log in replica_logs(logs_dir, "policy") + replica_logs(logs_dir, "rollout"):
        try:
            with open(log, "rb") as fh:
                fh.seek(0, 2)
                size = fh.tell()
                fh.seek(max(0, size - tail_bytes))
                text = fh.read().decode("utf-8", errors="replace")
        except OSError:
            continue
        cause = None
        for line in text.splitlines():
            if _REPLICA_CAUSE_RE.search(line):
                cause = line.strip()
        if cause:
            return f"{log.name}: {cause[:300]}"
    return None


class LogFollower:
    """Reads only what a file gained since the last call (complete lines only)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = ""

    def new_lines(self, limit: int = 8 * 1024 * 1024) -> list[str]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(0, 2)
                size = fh.tell()
                if size < self._offset:  # truncated: start again
                    self._offset, self._partial = 0, ""
                fh.seek(self._offset)
                data = fh.read(limit)
        except OSError:
            return []
        self._offset += len(data)
        text = self._partial + data.decode("utf-8", errors="replace")
        lines = text.split("\n")
        self._partial = lines.pop()
        return lines
