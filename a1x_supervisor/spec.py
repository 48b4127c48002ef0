"""The run spec: the user's up-front choices, stored as ``run.toml`` in the run directory.

Secrets (``WANDB_API_KEY``, ``HF_TOKEN``) are never part of the spec: they are read from the
environment or the Hugging Face token file when a stage starts (``a1x_supervisor.secrets``).
Paths are stored absolute, so a ``run.toml`` means the same thing from any working directory.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Literal

import tomlkit
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from tomlkit.items import Table

from a1x_diagnostics.inputs import InputError, read_input
from a1x_diagnostics.recipe_entries import REWARD_MODES, Entry, entry_for
from a1x_supervisor.path_checks import must_be_folder as must_be_folder  # named here too: the wizard checks answers
from a1x_supervisor.slurm.spec import ClusterSpec
from a1x_supervisor.spec_values import no_controls, plain_name

AlpamayoVersion = Literal["1", "1.5"]
Compute = Literal["local", "cluster"]

# docs/reference/alpamayo-recipe.md §4: release checkpoints per version; §8.1/§14 #16: Hydra config per version.
ALPAMAYO_MODEL_IDS: dict[str, str] = {"1": "nvidia/Alpamayo-R1-10B", "1.5": "nvidia/Alpamayo-1.5-10B"}
DEFAULT_VLM = "nvidia/Cosmos-Reason2-8B"
# README §5 (download commands): the four cameras and three calibrations of the local recipe.
DEFAULT_CAMERAS = [
    "camera_front_wide_120fov",
    "camera_cross_left_120fov",
    "camera_cross_right_120fov",
    "camera_front_tele_30fov",
]
DEFAULT_CALIBRATION = ["camera_intrinsics", "sensor_extrinsics", "vehicle_dimensions"]
# The labels of each reward mode's download: a1x_diagnostics.recipe_entries (Entry.labels).

CLOSED_LOOP_PIPELINES = ("alpagym", "demo-alpagym")
OPEN_LOOP_ONLY_PATHS = ("pai_dir", "reasoning_dir", "grader_dir", "output_dir")  # closed loop: unused
_SECRET_KEY_WORDS = ("token", "api_key", "apikey", "password", "secret")
MAX_SPEC_BYTES = 1 << 20  # a spec is about 2 KB


class SpecError(Exception):
    """A run spec that cannot be used; ``str(exc)`` names the file and the problem in one line."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


# Upper bounds far above any real run, so that no value of the spec is absurd enough to hang or crash
# a later computation (a 10**18 replica count, an infinite grace period); docs/supervisor.md.
MAX_REPLICAS = 4096
MAX_CLIPS = 10_000_000
DAY_S = 86_400.0


class DataSpec(_Section):
    chunk_ids: list[Annotated[int, Field(ge=0, le=1_000_000)]] = Field(
        default_factory=lambda: [3116],
        description="PAI chunk ids to download (motion). Never empty: an empty list would fetch the whole dataset",
    )
    num_clips: int = Field(16, ge=1, le=MAX_CLIPS, description="motion: clips curated into clip_index_mini.parquet")
    num_reasoning_clips: int = Field(
        16, ge=1, le=MAX_CLIPS, description="joint, collision: --num-reasoning-clips for download_pai.py"
    )
    cameras: list[str] = Field(default_factory=lambda: list(DEFAULT_CAMERAS), description="--camera")
    calibration: list[str] = Field(default_factory=lambda: list(DEFAULT_CALIBRATION), description="--calibration")
    labels: list[str] = Field(
        default_factory=list,
        description="--labels; empty = the recipe's default for the reward mode",
    )

    @field_validator("cameras", "calibration", "labels")
    @classmethod
    def _feature_names(cls, values: list[str], info: ValidationInfo) -> list[str]:
        # PAI feature names: download_pai.py turns each into a folder of the dataset (a1x_supervisor/spec_values.py).
        return [plain_name(v, f"data.{info.field_name}") for v in values]


class EvaluateSpec(_Section):
    """The ``evaluate`` stage (docs/supervisor.md "Evaluate"): the recipe notebook's inference on curated clips
    for the exported and the base model (docs/reference/alpamayo-recipe.md §13)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    clips: int = Field(
        8, ge=1, le=10_000, description="curated clips both models are run on (the first N of the index)"
    )
    samples: int = Field(
        6, ge=1, le=64, description="trajectories sampled per clip (the notebook's num_traj_samples); minADE: the best"
    )
    tolerance: float = Field(
        0.10,
        ge=0.0,
        le=10.0,
        description="export_regressed when the trained model's mean minADE exceeds the base's by more than this "
        "fraction",
    )


class WandbSpec(_Section):
    enabled: bool = Field(False, description="log to Weights & Biases (needs WANDB_API_KEY in the environment)")
    project: str = Field("Alpamayo_RL", description="[logging].project_name")
    experiment: str = Field("ReasoningVLA_Post_Training", description="[logging].experiment_name")

    @field_validator("project", "experiment")
    @classmethod
    def _names(cls, value: str, info: ValidationInfo) -> str:
        return no_controls(value, f"wandb.{info.field_name}")


class AlertsSpec(_Section):
    wandb: bool = Field(
        False,
        description="raise findings as W&B alerts of a monitor run in the run's W&B project and group "
        "(needs a1x-tui[wandb] and WANDB_API_KEY; docs/live.md)",
    )
    wait_s: float = Field(600.0, ge=0, le=DAY_S, description="the same finding is not alerted again sooner")


class ReplicaSpec(_Section):
    policy: int = Field(1, ge=1, le=MAX_REPLICAS, description="cosmos-rl --policy")
    rollout: int = Field(1, ge=1, le=MAX_REPLICAS, description="cosmos-rl --rollout")


class PathsSpec(_Section):
    workspace: Path = Field(description="the alpamayo-recipes checkout (commands run from its root)")
    model_dir: Path = Field(description="converted training checkpoint (convert writes it)")
    pai_dir: Path = Field(description="motion PAI data (ALPAMAYO_PAI_LOCAL_DIR)")
    reasoning_dir: Path = Field(
        description="PAI reasoning data (joint: ALPAMAYO_PAI_REASONING_LOCAL_DIR, collision: "
        "ALPAMAYO_PAI_REASONING_OBSTACLE_LOCAL_DIR)"
    )
    grader_dir: Path = Field(description="Lingo-Judge grader (joint, collision)")
    output_dir: Path = Field(description="[train].output_dir: Cosmos-RL checkpoints")
    export_dir: Path = Field(description="exported Hugging Face checkpoints, one fresh folder per export")
    log_dir: Path | None = Field(None, description="cosmos-rl --log-dir; empty = <run dir>/logs")
    venv: Path | None = Field(None, description="the a1x_rl venv; empty = <workspace>/recipes/alpamayo1_x_rl/a1x_rl")
    uv_cache_dir: Path | None = Field(None, description="UV_CACHE_DIR for the env stage; empty = uv's default")

    @field_validator(
        "workspace", "model_dir", "pai_dir", "reasoning_dir", "grader_dir", "output_dir", "export_dir", "log_dir",
        "venv", "uv_cache_dir",
    )
    @classmethod
    def _a_folder(cls, value: Path | None) -> Path | None:
        return must_be_folder(value)

    @property
    def recipe_dir(self) -> Path:
        return self.workspace / "recipes" / "alpamayo1_x_rl"

    @property
    def venv_dir(self) -> Path:
        return self.venv if self.venv is not None else self.recipe_dir / "a1x_rl"


class SupervisorSpec(_Section):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    executor: Literal["local", "slurm"] = Field(
        "local",
        description='"slurm" = the train stage is a Slurm job, which compute = "cluster" means already',
    )
    stop_grace_s: float = Field(
        30.0, gt=0, le=DAY_S, description="SIGTERM to a stage's process group, then SIGKILL after this"
    )
    live_diagnostics: bool = Field(True, description="run the live diagnostics on the training logs")
    diagnostics_interval_s: float = Field(
        12.0,
        gt=0,
        le=3600.0,
        description="at most this many seconds between evaluations of the live diagnostics "
        "(the follower evaluates every 1 s while lines arrive, 5 s when quiet)",
    )
    shutdown_grace_s: float = Field(
        120.0, gt=0, le=DAY_S, description="training finished but the job does not exit: end it after this"
    )
    hf_retries: int = Field(4, ge=0, le=20, description="retries of a stage that hit a Hugging Face rate limit (429)")
    hf_backoff_s: float = Field(30.0, ge=0, le=3600.0, description="first retry delay; doubles each retry")
    cosmos_log_level: str = Field(
        "INFO", description="COSMOS_LOG_LEVEL for training (the recipe entry defaults to DEBUG)"
    )

    @field_validator("cosmos_log_level")
    @classmethod
    def _level(cls, value: str) -> str:
        if not value.isascii() or not value.isalpha():
            raise ValueError(f"cosmos_log_level: {value!r} is not a log level name (DEBUG, INFO, WARNING, ERROR)")
        return value


# docs/reference/alpagym.md §2.2-§2.4: the Hydra keys the alpagym pipeline sets itself, so an override
# of them would make the supervisor's record of the run wrong (where it runs, which model it trains).
_OWNED_OVERRIDES = (
    "run_root", "policy.model.path", "experiment", "deploy", "command", "execution.resolved_config_path",
)
# docs/reference/alpagym.md §2.5: the topology each experiment AlpaGym ships selects. The topology decides
# execution.backend (local_* -> local_process, slurm_* -> slurm), and deploy=slurm (command=submit) is refused
# by AlpaGym's own validation unless the backend is Slurm's.
ALPAGYM_EXPERIMENT_TOPOLOGY = {
    "alpamayo_1_5_local_2gpu_smoke": "local_disaggregated_2gpu",
    "alpamayo_1_5_clrl_test_run": "slurm_full_node_1_3_4",
}
ALPAGYM_SUBMIT_REFUSAL = "command=submit requires execution.backend to be a Slurm backend"


def alpagym_topology(experiment: str, overrides: list[str]) -> str | None:
    """The topology the host CLI composes: a ``topology=`` override (the command line wins over the
    experiment's defaults list), else the one a shipped experiment selects; None when unknown here."""
    chosen = [o.split("=", 1)[1] for o in overrides if o.split("=", 1)[0] == "topology"]
    return chosen[-1] if chosen else ALPAGYM_EXPERIMENT_TOPOLOGY.get(experiment)


def topology_backend(topology: str) -> str | None:
    """``execution.backend`` of AlpaGym's shipped topologies, by their naming (docs/reference/alpagym.md §2.5);
    None if unknown."""
    if topology.startswith("slurm_"):
        return "slurm"
    if topology.startswith("local_"):
        return "local_process"
    return None


class AlpaGymSpec(_Section):
    """The closed-loop pipeline (``pipeline = "alpagym"``): NVIDIA AlpaGym's host CLI trains in AlpaSim.
    ``paths.workspace`` is the AlpaGym checkout, ``paths.model_dir`` the converted AlpaGym checkpoint,
    ``paths.export_dir`` where inference-format exports go (docs/supervisor.md "The alpagym pipeline")."""

    release_dir: Path = Field(
        description="the released Alpamayo 1.5 checkpoint (convert's --input); downloaded there from "
        "nvidia/Alpamayo-1.5-10B when it holds no config.json"
    )
    experiment: str = Field("alpamayo_1_5_local_2gpu_smoke", description="experiment=<name> of the host CLI")
    overrides: list[str] = Field(
        default_factory=lambda: ["reward=progress_safety"],
        description="further Hydra overrides of the host CLI, each key=value (e.g. reward=progress_safety)",
    )
    deploy: Literal["local", "slurm"] = Field(
        "local", description='"local" (this node, docker compose) or "slurm" (deploy=slurm: the host submits a job)'
    )

    @field_validator("release_dir")
    @classmethod
    def _a_folder(cls, value: Path) -> Path:
        checked = must_be_folder(value)
        assert checked is not None
        return checked

    @field_validator("experiment")
    @classmethod
    def _experiment_name(cls, value: str) -> str:
        # A Hydra config name of AlpaGym's experiment group (its files are flat: docs/reference/alpagym.md §2.1);
        # '/' or '..' would reach other config groups or files.
        return plain_name(value, "alpagym.experiment")

    @field_validator("overrides")
    @classmethod
    def _hydra_overrides(cls, values: list[str]) -> list[str]:
        for value in values:
            no_controls(value, "alpagym.overrides")
            key = value.split("=", 1)[0].lstrip("+~")
            if "=" not in value or not key or any(c.isspace() for c in key):
                raise ValueError(f"{value!r} is not a Hydra override (key=value)")
            if key in _OWNED_OVERRIDES:
                raise ValueError(f"{value!r}: {key} is set by the pipeline from the spec, not by an override")
        return values


class RunSpec(_Section):
    alpamayo_version: AlpamayoVersion = Field("1.5", description='"1" or "1.5"')
    reward_mode: str = Field(
        "motion",
        description=" or ".join(f'"{m}"' for m in REWARD_MODES)
        + " (the recipe's entry scripts: docs/reference/alpamayo-recipe.md §8.1)",
    )
    compute: Compute = Field("local", description='"local" (one node) or "cluster" (the recipe\'s cluster values)')
    data: DataSpec = Field(default_factory=DataSpec)
    wandb: WandbSpec = Field(default_factory=WandbSpec)
    alerts: AlertsSpec = Field(default_factory=AlertsSpec)
    replicas: ReplicaSpec = Field(default_factory=ReplicaSpec)
    evaluate: EvaluateSpec = Field(default_factory=EvaluateSpec)
    paths: PathsSpec
    supervisor: SupervisorSpec = Field(default_factory=SupervisorSpec)
    cluster: ClusterSpec | None = Field(
        None, description='Slurm submission of the train stage (compute = "cluster"); docs/slurm.md'
    )
    pipeline: Literal["alpamayo", "alpagym", "demo", "demo-alpagym"] = Field(
        "alpamayo",
        description='the stage list: "alpagym" = closed-loop training with AlpaGym ([alpagym]); "demo" and '
        '"demo-alpagym" = `a1x-tui demo`\'s simulated stages (no GPU, no network)',
    )
    alpagym: AlpaGymSpec | None = Field(
        None, description='pipeline = "alpagym": AlpaGym\'s host CLI (docs/supervisor.md)'
    )

    @model_validator(mode="before")
    @classmethod
    def _closed_loop_paths(cls, data: Any) -> Any:
        # The open-loop data paths mean nothing to AlpaGym (its scenes come from AlpaSim): not asked for.
        closed = isinstance(data, dict) and data.get("pipeline") in CLOSED_LOOP_PIPELINES
        if closed and isinstance(data.get("paths"), dict):
            paths = dict(data["paths"])
            for key in OPEN_LOOP_ONLY_PATHS:
                if paths.get(key) in (None, ""):
                    paths[key] = paths.get("workspace")
            data = {**data, "paths": paths}
        return data

    @field_validator("reward_mode")
    @classmethod
    def _known_reward_mode(cls, value: str) -> str:
        entry_for(value)  # ValueError naming the modes
        return value

    @field_validator("alpamayo_version", mode="before")
    @classmethod
    def _version_as_text(cls, value: Any) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return {1: "1", 1.5: "1.5"}.get(value, str(value))
        return value

    @model_validator(mode="after")
    def _motion_needs_chunks(self) -> RunSpec:
        # docs/reference/alpamayo-recipe.md §5: without --chunk-ids download_pai.py fetches every chunk.
        if not self.entry.reasoning_data and not self.data.chunk_ids:
            raise ValueError("data.chunk_ids is empty: a motion download needs explicit PAI chunk ids")
        return self

    @model_validator(mode="after")
    def _cluster_section(self) -> RunSpec:
        # docs/slurm.md: with compute = "cluster" the train stage is a Slurm job; the rest runs here.
        if self.compute == "cluster":
            if self.cluster is None:
                raise ValueError(
                    'compute = "cluster" needs a [cluster] section (method, partition, account, gpus_per_node...; '
                    "`a1x-tui init` writes a commented example)"
                )
        elif self.supervisor.executor == "slurm":
            raise ValueError('a1x_supervisor.executor = "slurm" needs compute = "cluster" and a [cluster] section')
        return self

    @model_validator(mode="after")
    def _alpagym_section(self) -> RunSpec:
        if self.pipeline == "alpagym":
            if self.alpagym is None:
                raise ValueError(
                    'pipeline = "alpagym" needs an [alpagym] section (release_dir, experiment, overrides)'
                )
            if self.compute != "local":
                raise ValueError(
                    'pipeline = "alpagym" submits to Slurm its own way: [alpagym] deploy = "slurm", '
                    'not compute = "cluster"'
                )
            if self.alpamayo_version != "1.5":
                raise ValueError('pipeline = "alpagym" trains Alpamayo 1.5 only (docs/reference/alpagym.md §2.3)')
            ag = self.alpagym
            topology = alpagym_topology(ag.experiment, ag.overrides)
            if ag.deploy == "slurm" and topology is not None and topology_backend(topology) == "local_process":
                raise ValueError(
                    f'alpagym.deploy = "slurm" with topology {topology} (execution.backend=local_process'
                    + (f", from experiment {ag.experiment}" if topology == ALPAGYM_EXPERIMENT_TOPOLOGY.get(
                        ag.experiment) else "")
                    + f"): AlpaGym refuses it ({ALPAGYM_SUBMIT_REFUSAL!r}); add a Slurm topology to "
                    '[alpagym] overrides (e.g. "topology=slurm_partial_node_1_2_1") or use experiment '
                    "alpamayo_1_5_clrl_test_run (docs/reference/alpagym.md §2.5)"
                )
        elif self.alpagym is not None and self.pipeline != "demo-alpagym":
            raise ValueError('an [alpagym] section needs pipeline = "alpagym"')
        return self

    @property
    def closed_loop(self) -> bool:
        """An AlpaGym run (or the demo of one): its training writes an AlpaGym run folder."""
        return self.pipeline in CLOSED_LOOP_PIPELINES

    @property
    def on_slurm(self) -> bool:
        """Whether the train stage is submitted to Slurm (``compute = "cluster"``)."""
        return self.compute == "cluster" and self.cluster is not None

    @property
    def alpamayo_model(self) -> str:
        return ALPAMAYO_MODEL_IDS[self.alpamayo_version]

    @property
    def entry(self) -> Entry:
        """The recipe's entry script for this reward mode and what it reads (a1x_diagnostics.recipe_entries)."""
        return entry_for(self.reward_mode)

    @property
    def labels(self) -> list[str]:
        return list(self.data.labels) or list(self.entry.labels)

    @property
    def data_dir(self) -> Path:
        """The PAI directory the training entry reads for this reward mode (its ``entry.data_env``)."""
        return self.paths.reasoning_dir if self.entry.reasoning_data else self.paths.pai_dir

    def digest(self) -> str:
        """A short fingerprint of every choice (the configure stage reruns when it changes)."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def default_paths(home: str = "~") -> dict[str, str]:
    """The recipe README's layout under ``$YOUR_HOME`` (alpamayo-recipes README §2)."""
    return {
        "workspace": f"{home}/alpamayo-recipes",
        "model_dir": f"{home}/alpamayo_model_converted_from_hf",
        "pai_dir": f"{home}/PAI_mini",
        "reasoning_dir": f"{home}/PAI_Reasoning_mini",
        "grader_dir": f"{home}/lingo_judge_model",
        "output_dir": f"{home}/alpamayo_cosmos_rl_job/outputs",
        "export_dir": f"{home}/alpamayo_cosmos_rl_job/exported_model",
        "log_dir": "",
        "venv": "",
        "uv_cache_dir": "",
    }


def _reject_secrets(data: Any, where: str = "") -> None:
    if isinstance(data, dict):
        for key, value in data.items():
            lowered = str(key).lower()
            if any(word in lowered for word in _SECRET_KEY_WORDS):
                raise ValueError(
                    f"{where}{key}: secrets do not belong in the spec; HF_TOKEN and WANDB_API_KEY are read "
                    "from the environment (or the Hugging Face token file) when a stage starts"
                )
            _reject_secrets(value, f"{where}{key}.")


def _resolve_paths(data: dict[str, Any], base: Path) -> None:
    sections: list[tuple[Any, frozenset[str] | None]] = [(data.get("paths"), None)]
    sections.append((data.get("cluster"), _CLUSTER_PATH_KEYS))
    sections.append((data.get("alpagym"), _ALPAGYM_PATH_KEYS))
    for paths, only in sections:
        if not isinstance(paths, dict):
            continue
        for key, value in list(paths.items()):
            if not isinstance(value, str) or (only is not None and key not in only):
                continue
            if value.strip() == "":
                paths[key] = None
                continue
            path = Path(value).expanduser()
            paths[key] = str(path if path.is_absolute() else (base / path).resolve())


# [cluster] keys that are paths (relative to the spec file, like [paths]).
_CLUSTER_PATH_KEYS = frozenset({"output_root", "repo_root", "dispatch_script"})
_ALPAGYM_PATH_KEYS = frozenset({"release_dir"})


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ()) if p != "__root__")
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    return f"{loc}: {msg}" if loc else msg


EXPECTED = "--spec expects the run spec `a1x-tui init --out FILE` writes"
# Top-level tables of a Cosmos-RL training TOML (docs/reference/cosmos-rl.md): the file a run spec is
# most easily mixed up with.
_TRAINING_TABLES = ("train", "policy", "rollout")


def _not_a_spec(data: dict[str, Any]) -> str | None:
    """What the TOML is, when it is not a run spec (None when it may be one)."""
    keys = [str(k) for k in data]
    if not keys:
        return f"empty (no TOML key), not a run spec; {EXPECTED}"
    if any(k in RunSpec.model_fields for k in keys):
        return None
    tables = [k for k in _TRAINING_TABLES if isinstance(data.get(k), dict)]
    if len(tables) >= 2:
        found = ", ".join(f"[{k}]" for k in tables)
        return f"a Cosmos-RL training TOML ({found}), not a run spec; {EXPECTED}"
    shown = ", ".join(keys[:4]) + (", ..." if len(keys) > 4 else "")
    return f"not a run spec (no run-spec key; it holds {shown}); {EXPECTED}"


def parse_spec(text: str, *, base: Path, source: str = "run.toml") -> RunSpec:
    """Parse spec text; relative paths are taken relative to ``base``. Raises ``SpecError``."""
    if "\x00" in text:
        raise SpecError(f"{source}: a binary file, not a run spec; {EXPECTED}")
    try:
        data = tomlkit.parse(text).unwrap()
    except Exception as exc:  # tomlkit raises several parse error types
        raise SpecError(f"{source}: not valid TOML ({str(exc).splitlines()[0]}); {EXPECTED}") from None
    what = _not_a_spec(data)
    if what is not None:
        raise SpecError(f"{source}: {what}")
    try:
        _reject_secrets(data)
    except ValueError as exc:
        raise SpecError(f"{source}: {exc}") from None
    try:
        _resolve_paths(data, base)
    except (ValueError, RuntimeError, OSError) as exc:  # a NUL byte, ~unknown_user, a loop of links
        raise SpecError(f"{source}: a path cannot be used: {exc}") from None
    try:
        return RunSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(f"{source}: {_first_error(exc)}") from None


def load_spec(path: Path) -> RunSpec:
    """Read a run spec file. Raises ``SpecError`` with one line naming the file and the problem."""
    if path.is_dir():
        raise SpecError(f"{path}: a folder, not a run spec; {EXPECTED}")
    try:
        raw = read_input(path, limit=MAX_SPEC_BYTES, what="run spec")
    except InputError as exc:
        raise SpecError(f"{path}: cannot read the run spec: {exc}") from None
    if b"\x00" in raw:
        raise SpecError(f"{path}: a binary file, not a run spec; {EXPECTED}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError(f"{path}: not UTF-8 text (line {line}), so not a run spec; {EXPECTED}") from None
    return parse_spec(text, base=path.resolve().parent, source=str(path))


def dump_spec(spec: RunSpec) -> str:
    """The spec as TOML with absolute paths (what ``run.toml`` in a run directory holds)."""
    data = spec.model_dump(mode="json")
    for key, value in list(data["paths"].items()):
        if value is None:
            data["paths"][key] = ""
    if data.get("alpagym") is None:
        data.pop("alpagym", None)
    else:  # the open-loop data paths are the workspace's stand-ins (see _closed_loop_paths)
        for key in OPEN_LOOP_ONLY_PATHS:
            data["paths"].pop(key, None)
    if data.get("cluster") is None:
        data.pop("cluster", None)
    else:  # None = the submitting tool's default: left out (TOML has no null)
        data["cluster"] = {k: v for k, v in data["cluster"].items() if v is not None}
    return _commented_toml(data, header=["a1x-tui run spec (secrets are never stored here)."])


def default_spec_text() -> str:
    """The commented spec ``a1x-tui init`` writes."""
    data = RunSpec(paths=PathsSpec(**{k: v or None for k, v in default_paths().items()})).model_dump(mode="json")
    data["paths"] = default_paths()
    data.pop("cluster", None)  # written below as a commented example
    data.pop("alpagym", None)  # pipeline = "alpagym" only: docs/supervisor.md "The alpagym pipeline"
    header = [
        "a1x-tui run spec: the choices a run needs up front. `a1x-tui run --spec FILE` starts a run.",
        "Secrets are never written here: HF_TOKEN comes from the environment or the Hugging Face token",
        "file (`hf auth login`), WANDB_API_KEY from the environment. Relative paths are relative to",
        "this file; ~ is your home directory.",
    ]
    return _commented_toml(data, header=header) + ALPAGYM_EXAMPLE + CLUSTER_EXAMPLE


# The commented [cluster] example of `a1x-tui init` (docs/slurm.md; docs/reference/alpamayo-recipe.md §8.5 cluster
# values).
CLUSTER_EXAMPLE = """
# With compute = "cluster" the train stage is a Slurm job; every other stage runs here (docs/slurm.md).
# [cluster]
# method = "sbatch"              # "sbatch" (a1x_rl venv on a shared filesystem) or "cosmos-dispatch" (containers)
# partition = "batch"
# account = "my_account"
# gpus_per_node = 8
# max_nodes = 80                 # what the partition can give; the node plan must fit
# time = "04:00:00"
# memory = "0"                   # sbatch --mem per node: 0 = all of it (Cosmos-RL's template asks for that)
# step_time_s = 90               # seconds per training step, if known: save_freq is checked against time
# retries = 3                    # failure requeues per part
# pass_env = ["WANDB_API_KEY"]   # names only: checked in the submitting environment, never written
# a1x_tui = "a1x-tui"            # sbatch: a1x-tui as the compute nodes see it (GPU agent on every node)
# container = "/shared/cosmos-rl.sqsh"  # cosmos-dispatch only, with repo_root and output_root
"""


# The commented closed-loop example of `a1x-tui init` (docs/supervisor.md "The alpagym pipeline").
ALPAGYM_EXAMPLE = """
# Closed-loop training with NVIDIA AlpaGym instead: pipeline = "alpagym" (top of the file), paths.workspace
# the AlpaGym checkout, paths.model_dir the converted AlpaGym checkpoint, paths.export_dir the exports;
# the PAI, grader and output paths are then unused (docs/supervisor.md "The alpagym pipeline").
# [alpagym]
# release_dir = "~/alpagym/tmp/checkpoints/Alpamayo-1.5-10B"  # the released checkpoint; downloaded there
# experiment = "alpamayo_1_5_local_2gpu_smoke"                # experiment=<name> of python -m alpagym_host.cli
# overrides = ["reward=progress_safety"]                      # further Hydra overrides, key=value each
# deploy = "local"                                            # or "slurm" (deploy=slurm: the host submits a job)
"""


_SECTION_MODELS: dict[str, type[BaseModel]] = {
    "data": DataSpec,
    "wandb": WandbSpec,
    "alerts": AlertsSpec,
    "replicas": ReplicaSpec,
    "evaluate": EvaluateSpec,
    "paths": PathsSpec,
    "supervisor": SupervisorSpec,
    "cluster": ClusterSpec,
    "alpagym": AlpaGymSpec,
}


def _commented_toml(data: dict[str, Any], *, header: list[str]) -> str:
    doc = tomlkit.document()
    for line in header:
        doc.add(tomlkit.comment(line))
    doc.add(tomlkit.nl())
    for key, value in data.items():
        if isinstance(value, dict):
            continue
        item = tomlkit.item(value)
        desc = RunSpec.model_fields[key].description
        if desc:
            item.comment(desc)
        doc.add(key, item)
    for section, values in data.items():
        if not isinstance(values, dict):
            continue
        table: Table = tomlkit.table()
        model = _SECTION_MODELS[section]
        for key, value in values.items():
            item = tomlkit.item(value)
            if isinstance(value, dict):  # [cluster] env: inline, so the section stays one table
                item = tomlkit.inline_table()
                item.update(value)
            desc = model.model_fields[key].description
            if desc:
                item.comment(desc)
            table.add(key, item)
        doc.add(tomlkit.nl())
        doc.add(section, table)
    return tomlkit.dumps(doc)
