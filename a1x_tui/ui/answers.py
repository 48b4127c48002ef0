"""The wizard's answers, and the run spec they make (validated by ``supervisor.spec``, not here).

The answers are plain strings as typed; ``spec_from_answers`` writes them as run-spec TOML and
parses it with ``supervisor.spec.parse_spec``, so the wizard refuses exactly what ``a1x-tui run
--spec`` refuses, with the same one-line message. The W&B key is never part of the answers.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

CLUSTER_FIELDS: tuple[tuple[str, str], ...] = (
    ("partition", "Slurm partition"),
    ("account", "Slurm account"),
    ("nodes", "nodes"),
    ("time", "wall time"),
)
PATH_FIELDS: tuple[tuple[str, str], ...] = (
    ("workspace", "alpamayo-recipes checkout"),
    ("model_dir", "converted model"),
    ("pai_dir", "PAI data (motion)"),
    ("reasoning_dir", "PAI reasoning (joint)"),
    ("grader_dir", "Lingo-Judge (joint)"),
    ("output_dir", "checkpoints"),
    ("export_dir", "exports"),
)


class AnswerError(ValueError):
    """An answer that does not make a run spec; ``str()`` is one line."""


@dataclass(slots=True)
class Answers:
    alpamayo_version: str = "1.5"
    reward_mode: str = "motion"
    chunk_ids: str = "3116"
    clips: str = "16"
    wandb: bool = False
    wandb_project: str = "Alpamayo_RL"
    wandb_experiment: str = "ReasoningVLA_Post_Training"
    compute: str = "local"
    policy_replicas: str = "1"
    rollout_replicas: str = "1"
    paths: dict[str, str] = field(default_factory=dict)
    cluster: dict[str, str] = field(default_factory=dict)  # compute = "cluster": Slurm partition, account...


def default_answers(home: str = "~") -> Answers:
    from supervisor.spec import default_paths

    defaults = default_paths(home)
    return Answers(paths={name: defaults[name] for name, _ in PATH_FIELDS})


def _int(text: str, what: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise AnswerError(f"{what}: {text.strip() or '(empty)'} is not a whole number") from None
    if value < 1:
        raise AnswerError(f"{what}: must be at least 1")
    return value


def spec_from_answers(answers: Answers) -> object:
    """A ``supervisor.spec.RunSpec``. Raises ``AnswerError`` with one line."""
    import tomlkit

    from supervisor.spec import SpecError, parse_spec

    chunks_text = answers.chunk_ids.replace(",", " ").split()
    chunk_ids = [_int(c, "PAI chunk ids") for c in chunks_text]
    clips = _int(answers.clips, "clips")
    data: dict[str, object] = {
        "alpamayo_version": answers.alpamayo_version,
        "reward_mode": answers.reward_mode,
        "compute": answers.compute,
        "data": {"chunk_ids": chunk_ids, "num_clips": clips, "num_reasoning_clips": clips},
        "wandb": {
            "enabled": answers.wandb,
            "project": answers.wandb_project.strip(),
            "experiment": answers.wandb_experiment.strip(),
        },
        "replicas": {
            "policy": _int(answers.policy_replicas, "policy replicas"),
            "rollout": _int(answers.rollout_replicas, "rollout replicas"),
        },
        "paths": {name: answers.paths.get(name, "").strip() for name, _ in PATH_FIELDS},
    }
    if answers.compute == "cluster":  # docs/slurm.md: the train stage becomes a Slurm job
        cluster: dict[str, object] = {k: v.strip() for k, v in answers.cluster.items() if v.strip()}
        if "nodes" in cluster:
            cluster["nodes"] = _int(str(cluster["nodes"]), "nodes")
        data["cluster"] = cluster
    try:
        return parse_spec(tomlkit.dumps(data), base=Path.cwd(), source="the wizard")
    except SpecError as exc:
        raise AnswerError(str(exc).removeprefix("the wizard: ")) from None


def free_space(text: str) -> str:
    """``412 GB free`` on the filesystem that would hold ``text`` (its nearest existing folder)."""
    if not text.strip():
        return ""
    path = Path(os.path.expanduser(text.strip()))
    if not path.is_absolute():
        path = Path.cwd() / path
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        free = shutil.disk_usage(probe).free
    except OSError:
        return "?"
    suffix = "" if path.exists() else " (new)"
    return f"{free / 1e9:,.0f} GB free{suffix}"
