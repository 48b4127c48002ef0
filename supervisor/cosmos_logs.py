"""The few Cosmos-RL log facts the supervisor itself relies on.

The full diagnostics live in ``diagnostics``; the supervisor only needs to know, without them,
whether training reached its last step, which checkpoints are complete, and whether the launcher
reported a failed process. Formats are from cosmos-rl.md and alpamayo-recipe.md (sections quoted
at each pattern).
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
# cosmos-rl.md §2.7: 'Process {i} failed with return code {rc}' (launcher; {i} is a list position).
LAUNCHER_FAILED_RE = re.compile(r"Process (\S+) failed with return code (-?\d+)")
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


def latest_logs_dir(log_dir: Path) -> Path | None:
    latest = log_dir / "logs_latest"
    if latest.is_dir():
        return latest.resolve()
    dirs = logs_dirs(log_dir)
    return dirs[-1] if dirs else None


def _lines(path: Path) -> Iterator[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                yield line.rstrip("\n")
    except OSError:
        return


def last_step(logs_dir: Path) -> tuple[int, int] | None:
    """The last ``Step: n/N`` the controller logged in one ``logs_<ts>`` folder."""
    found: tuple[int, int] | None = None
    for line in _lines(logs_dir / "controller.log"):
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
    for log in sorted(logs_dir.glob("policy_*.log")):
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
    for logs_dir in reversed(logs_dirs(log_dir)):
        for ckpt in reversed(saved_checkpoints(logs_dir)):
            if checkpoint_incomplete_reason(ckpt.path, ranks) is None:
                return ckpt
    return None


def replica_failure_cause(logs_dir: Path, *, tail_bytes: int = 65536) -> str | None:
    """'rollout_0.log: exitcode  : -9' — the last failure line in any replica log, if one shows."""
    for log in sorted(logs_dir.glob("*_*.log")):
        if not (log.name.startswith("policy_") or log.name.startswith("rollout_")):
            continue
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
