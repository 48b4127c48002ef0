"""Shared pieces of the Slurm tests: the recipe TOMLs, specs, recorded outputs, a replaying runner."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tomlkit

from a1x_supervisor.slurm import ClusterSpec
from a1x_supervisor.slurm.tracking import CommandResult

HERE = Path(__file__).parent
DATA = HERE / "data"
RECORDED = HERE / "recorded"
STANDIN = HERE / "standin.py"
SLURM_VERSION = "22.05.8"  # the Debian 12 Slurm the recordings come from
MOTION_ENTRY = "recipes/alpamayo1_x_rl/models/reasoning_vla/alpamayo_cosmos_rl_post_training_entry.py"


def recipe(name: str = "recipe_local.toml") -> dict[str, Any]:
    return tomlkit.parse((DATA / name).read_text(encoding="utf-8")).unwrap()


def cluster_spec(**kw: object) -> ClusterSpec:
    """A cosmos-dispatch cluster spec on /lustre with ``kw`` over its defaults."""
    base: dict[str, object] = {
        "method": "cosmos-dispatch",
        "partition": "gpu",
        "account": "alpamayo",
        "container": "/lustre/images/cosmos.sqsh",
        "output_root": Path("/lustre/runs"),
        "repo_root": Path("/lustre/cosmos-rl"),
    }
    base.update(kw)
    return ClusterSpec.model_validate(base)


def with_values(data: dict[str, Any], **dotted: Any) -> dict[str, Any]:
    """A copy of ``data`` with ``a__b__c=value`` set (``__`` separates TOML keys)."""
    out = tomlkit.parse(tomlkit.dumps(data)).unwrap()
    for key, value in dotted.items():
        node = out
        parts = key.split("__")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        if value is None:
            node.pop(parts[-1], None)
        else:
            node[parts[-1]] = value
    return out


def recorded(name: str) -> str:
    return (RECORDED / f"{SLURM_VERSION}_{name}.txt").read_text(encoding="utf-8")


def recorded_jobs() -> dict[str, str]:
    """Which job id had which fate in the recording (written by record_outputs.sh)."""
    pairs = (line.split("=", 1) for line in recorded("jobs").split())
    return {k: v for k, v in pairs}


class ReplayRunner:
    """A ``Runner`` answering from a table ``{command word(s): CommandResult}``; records every call."""

    def __init__(self, answers: dict[tuple[str, ...], CommandResult]) -> None:
        self.answers = answers
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        self.calls.append(list(argv))
        for key in sorted(self.answers, key=len, reverse=True):
            if tuple(argv[: len(key)]) == key:
                return self.answers[key]
        return CommandResult(1, "", f"{argv[0]}: no answer recorded")


def slurm_answers() -> str | None:
    """``None`` when a Slurm controller answers ``sinfo`` with a usable node, else why not."""
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return "no Slurm here (sinfo/sbatch not on PATH): run .ci/slurm-up.sh as root"
    try:
        res = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"sinfo does not answer: {exc}"
    states = res.stdout.split()
    if res.returncode != 0 or not any(s.rstrip("*~#") in ("idle", "mix", "alloc") for s in states):
        return f"sinfo answers but no node is usable: rc {res.returncode} {res.stdout.strip() or res.stderr.strip()}"
    return None
