"""What the supervisor reads from a run's Cosmos-RL logs and checkpoints to judge training.

Whether training reached its last step, which checkpoints were saved and whether they are complete,
and the line in a replica's log that says why it died. The layout of the logs (the runs of a log
source, their controller and replica logs) and the line formats are ``a1x_diagnostics.parsing``'s; the
full diagnostics are ``diagnostics``'s. The launcher's 'Process {i} failed' line is
``a1x_diagnostics.parsing.PROCESS_FAILED_RE``, used by the train monitor.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import tomlkit

from a1x_diagnostics.events import Checkpoint, CheckpointPhase, Role, Step
from a1x_diagnostics.parsing import REPLICA_CAUSE_RE, controller_logs, log_runs, read_line, replica_logs

_RANK_FILE_RE = re.compile(r"^model_rank_(\d+)\.pth$")
_COMPLETE_RE = re.compile(r"^\.rank_(\d+)_complete$")


@dataclass(frozen=True, slots=True)
class SavedCheckpoint:
    step: int
    path: Path
    logs_dir: Path


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
            for event in read_line(line, Role.CONTROLLER):
                if isinstance(event, Step):
                    found = (event.step, event.total)
    return found


def parse_saved(line: str) -> tuple[int, Path] | None:
    """A policy log's 'Step: N, checkpoint saved successfully at PATH.' (the catalog's ``ckpt_saved``)."""
    if "checkpoint saved successfully" not in line:
        return None
    for event in read_line(line, Role.POLICY):
        if isinstance(event, Checkpoint) and event.phase is CheckpointPhase.SAVED and event.step is not None:
            return event.step, Path((event.path or "").strip())
    return None


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
    """How many ranks write a policy checkpoint: world size / dp_replicate (docs/reference/alpamayo-recipe.md §12.1)."""
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
    marker (docs/reference/cosmos-rl.md §5.3: with async saves the log line comes before the files)."""
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
    (docs/reference/alpamayo-recipe.md §12.1: the path in that line includes the timestamp folder)."""
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
            if REPLICA_CAUSE_RE.search(line):
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
