"""The wizard's answers, and the run spec they make (validated by ``a1x_supervisor.spec``, not here).

The answers are plain strings as typed; ``spec_from_answers`` writes them as run-spec TOML and
parses it with ``a1x_supervisor.spec.parse_spec``, so the wizard refuses exactly what ``a1x-tui run
--spec`` refuses, with the same one-line message. The W&B key is never part of the answers.
"""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

CLUSTER_FIELDS: tuple[tuple[str, str], ...] = (
    ("partition", "Slurm partition"),
    ("account", "Slurm account"),
    ("nodes", "nodes"),
    ("time", "wall time"),
)
# pipeline = "alpagym" (closed loop): its [alpagym] answers (docs/supervisor.md "The alpagym pipeline").
ALPAGYM_FIELDS: tuple[tuple[str, str], ...] = (
    ("release_dir", "AlpaGym: release ckpt"),
    ("experiment", "AlpaGym: experiment"),
    ("overrides", "AlpaGym: Hydra overrides"),
)
PATH_FIELDS: tuple[tuple[str, str], ...] = (
    ("workspace", "recipes / AlpaGym checkout"),
    ("model_dir", "converted model"),
    ("pai_dir", "PAI data (motion)"),
    ("reasoning_dir", "PAI reasoning (joint)"),
    ("grader_dir", "Lingo-Judge (joint)"),
    ("output_dir", "checkpoints"),
    ("export_dir", "exports"),
)


@dataclass(frozen=True, slots=True)
class Problem:
    """What is wrong with one answer: ``field`` is the wizard's widget id (None: no single field)."""

    field: str | None
    message: str  # one line, naming the answer


class AnswerError(ValueError):
    """Answers that do not make a run spec; ``str()`` is the first problem, in one line, and
    ``problems`` holds every one found, in the order of the form."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(problems[0].message)
        self.problems = problems

    @property
    def field(self) -> str | None:
        return self.problems[0].field


# The spec's keys (``loc`` of its errors) -> the wizard's widgets.
_SPEC_FIELDS = {
    "alpamayo_version": "version",
    "pipeline": "pipeline",
    "alpagym.deploy": "deploy",
    **{f"alpagym.{name}": f"alpagym-{name}" for name, _ in ALPAGYM_FIELDS},
    "reward_mode": "reward",
    "compute": "compute",
    "data.chunk_ids": "chunks",
    "data.num_clips": "clips",
    "data.num_reasoning_clips": "clips",
    "wandb.enabled": "wandb",
    "wandb.project": "wandb-project",
    "wandb.experiment": "wandb-experiment",
    "replicas.policy": "policy",
    "replicas.rollout": "rollout",
    **{f"paths.{name}": f"path-{name}" for name, _ in PATH_FIELDS},
    **{f"cluster.{name}": f"cluster-{name}" for name, _ in CLUSTER_FIELDS},
}
_FORM_ORDER = [
    "pipeline", *(f"alpagym-{name}" for name, _ in ALPAGYM_FIELDS), "deploy", "version", "reward", "chunks", "clips",
    "wandb", "wandb-project", "wandb-experiment", "compute", "policy", "rollout",
    *(f"cluster-{name}" for name, _ in CLUSTER_FIELDS), *(f"path-{name}" for name, _ in PATH_FIELDS),
]


def spec_field(message: str) -> str | None:
    """The widget a spec error names: ``paths.model_dir: ...`` or ``data.chunk_ids is empty: ...``."""
    head = message.split(":", 1)[0].split(" ", 1)[0]
    return _SPEC_FIELDS.get(head)


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
    pipeline: str = "alpamayo"  # "alpagym": closed loop with AlpaGym, the answers below
    alpagym: dict[str, str] = field(default_factory=dict)  # release_dir, experiment, overrides (as typed)
    deploy: str = "local"  # alpagym: "local" or "slurm"


def default_answers(home: str = "~") -> Answers:
    from a1x_supervisor.spec import default_paths

    defaults = default_paths(home)
    alpagym = {"release_dir": f"{home}/alpagym/tmp/checkpoints/Alpamayo-1.5-10B",
               "experiment": "alpamayo_1_5_local_2gpu_smoke", "overrides": "reward=progress_safety"}
    return Answers(paths={name: defaults[name] for name, _ in PATH_FIELDS}, alpagym=alpagym)


def _int(text: str, what: str, field: str, problems: list[Problem]) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        problems.append(Problem(field, f"{what}: {text.strip() or '(empty)'} is not a whole number"))
        return 1
    if value < 1:
        problems.append(Problem(field, f"{what}: must be at least 1"))
        return 1
    return value


def spec_from_answers(answers: Answers) -> object:
    """A ``a1x_supervisor.spec.RunSpec``. Raises ``AnswerError`` naming every wrong answer (one line each)."""
    import tomlkit

    from a1x_supervisor.spec import SpecError, must_be_folder, parse_spec

    problems: list[Problem] = []
    chunks_text = answers.chunk_ids.replace(",", " ").split()
    chunk_ids = [_int(c, "PAI chunk ids", "chunks", problems) for c in chunks_text]
    clips = _int(answers.clips, "clips", "clips", problems)
    replicas = {
        "policy": _int(answers.policy_replicas, "policy replicas", "policy", problems),
        "rollout": _int(answers.rollout_replicas, "rollout replicas", "rollout", problems),
    }
    paths = {name: answers.paths.get(name, "").strip() for name, _ in PATH_FIELDS}
    for name, label in PATH_FIELDS:  # every one at once; the spec (below) refuses the same, one at a time
        if paths[name]:
            try:
                must_be_folder(Path(os.path.expanduser(paths[name])))
            except ValueError as exc:
                problems.append(Problem(f"path-{name}", f"{label}: {exc}"))
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
        "replicas": replicas,
        "paths": paths,
    }
    if answers.pipeline == "alpagym":  # closed loop: AlpaGym's host CLI (docs/supervisor.md)
        data["pipeline"] = "alpagym"
        try:
            overrides = shlex.split(answers.alpagym.get("overrides", ""))
        except ValueError as exc:
            problems.append(Problem("alpagym-overrides", f"Hydra overrides: {exc}"))
            overrides = []
        data["alpagym"] = {
            "release_dir": answers.alpagym.get("release_dir", "").strip(),
            "experiment": answers.alpagym.get("experiment", "").strip(),
            "overrides": overrides,
            "deploy": answers.deploy,
        }
    elif answers.compute == "cluster":  # docs/slurm.md: the train stage becomes a Slurm job
        cluster: dict[str, object] = {k: v.strip() for k, v in answers.cluster.items() if v.strip()}
        if "nodes" in cluster:
            cluster["nodes"] = _int(str(cluster["nodes"]), "nodes", "cluster-nodes", problems)
        data["cluster"] = cluster
    if not problems:
        try:
            return parse_spec(tomlkit.dumps(data), base=Path.cwd(), source="the wizard")
        except SpecError as exc:
            message = str(exc).removeprefix("the wizard: ")
            problems.append(Problem(spec_field(message), message))
    order = {name: i for i, name in enumerate(_FORM_ORDER)}
    problems.sort(key=lambda p: order.get(p.field or "", len(order)))
    raise AnswerError(problems)


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
