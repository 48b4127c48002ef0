"""The cluster part of a run spec: where and how the ``train`` stage is submitted to Slurm.

``method`` picks the way: ``cosmos-dispatch`` hands the job to Cosmos-RL's own
``dispatch_job.py`` (container clusters, pyxis/enroot; docs/reference/cosmos-rl.md §11.1), ``sbatch`` submits a
script rendered by a1x-tui for clusters without containers, where the ``a1x_rl`` venv sits on a
shared filesystem. Fields left ``None`` take the submitting tool's default. Secrets are never
fields: ``pass_env`` only names variables the job must find in the submitting environment.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from a1x_supervisor.path_checks import must_be_file, must_be_folder
from a1x_supervisor.slurm.plan import CosmosRev, Packing
from a1x_supervisor.spec_values import CONTAINER, control_chars, no_controls, plain_name, slurm_word, template_path

# sbatch --time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S (sbatch(1)).
_SLURM_TIME = re.compile(r"([0-9]+-)?[0-9]+(:[0-9]{1,2}){0,2}|UNLIMITED|INFINITE", re.IGNORECASE)
# sbatch --mem: a number with an optional unit; 0 = all of each node's memory (docs/reference/cosmos-rl.md §11.2).
_SLURM_MEM = re.compile(r"[0-9]+[KMGT]?", re.IGNORECASE)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# One sbatch option per item: --opt, --opt=value or "--opt value"; the value is one word (it becomes an
# #SBATCH line here and in Cosmos-RL's templates, and an argparse value of dispatch_job.py).
_SBATCH_OPTION = re.compile(r"--?[A-Za-z][A-Za-z0-9-]*(?:[= ][^\s'\"`$\\;&|<>()]+)?")
_MOUNT_FLAGS = re.compile(r"[A-Za-z]+")
_SECRET_WORDS = ("TOKEN", "API_KEY", "APIKEY", "PASSWORD", "SECRET")


class SlurmSpecError(ValueError):
    """A cluster spec that cannot be submitted; ``str(exc)`` is the one line to show."""


class ClusterSpec(BaseModel):
    """Everything Slurm needs beyond the recipe TOML."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    method: Literal["cosmos-dispatch", "sbatch"] = Field("sbatch", description="how the job is submitted")
    partition: str | None = Field(None, description="Slurm partition (dispatch_job.py has its own default)")
    account: str | None = Field(None, description="Slurm account (dispatch_job.py has its own default)")
    nodes: int | None = Field(None, ge=1, le=100_000, description="expected node count; checked against the plan")
    max_nodes: int | None = Field(None, ge=1, le=100_000, description="nodes the partition can give; the plan must fit")
    gpus_per_node: int = Field(8, ge=1, le=1024, description="GPUs on every node")
    request_gpus: bool = Field(True, description="ask Slurm for the GPUs (--gres=gpu:N); off on GPU-less test clusters")
    time: str | None = Field(None, description="wall time, sbatch --time format (e.g. 04:00:00, 2-00:00:00)")
    memory: str = Field(
        "0", description="memory per node, sbatch --mem (0 = all of it, as Cosmos-RL's 747d1bd template asks)"
    )
    cpus_per_task: int | None = Field(None, ge=1, description="CPUs per node (one task per node): --cpus-per-task")
    step_time_s: float | None = Field(
        None, gt=0, description="seconds per training step (e.g. a previous run's); checks save_freq against time"
    )
    job_name: str = Field("a1x_rl", description="Slurm job name (dispatch_job.py: run dir <job-name>_<timestamp>)")
    output_root: Path | None = Field(None, description="cosmos-dispatch: --output-root-path (run dirs go under it)")
    cosmos_rev: CosmosRev = Field(CosmosRev.PINNED, description="the Cosmos-RL on the cluster: 747d1bd or head")
    # cosmos-dispatch only
    container: str | None = Field(None, description="cosmos-dispatch: container image (.sqsh or URI)")
    mounts: list[str] = Field(default_factory=list, description="cosmos-dispatch: container mounts SRC:DST (head only)")
    repo_root: Path | None = Field(None, description="cosmos-dispatch: cosmos-rl checkout mounted at /opt/cosmos-rl")
    dispatch_script: Path | None = Field(
        None, description="cosmos-dispatch: dispatch_job.py; default <repo_root>/cosmos_rl/tools/slurm/dispatch_job.py"
    )
    python: str = Field("python", description="cosmos-dispatch: interpreter that runs dispatch_job.py (needs toml)")
    copycode: bool = Field(False, description="cosmos-dispatch --copycode (head only)")
    dry_run: bool = Field(False, description="cosmos-dispatch --dry-run: print the script, submit nothing (head only)")
    # both (None: the tool's default; cosmos-dispatch at 747d1bd has none of these)
    retries: int | None = Field(None, ge=0, le=1000, description="failure requeues per part (Cosmos default 3)")
    autoresume: bool | None = Field(None, description="requeue into a new part on the pre-timeout signal (default on)")
    pre_timeout_signal_s: int | None = Field(
        None, ge=0, le=86_400, description="seconds before the time limit to send SIGUSR1"
    )
    extra_sbatch_args: list[str] = Field(default_factory=list, description="more #SBATCH options, e.g. --qos=high")
    # sbatch only
    controller_port: int = Field(8082, ge=1, le=65535, description="sbatch: controller port on the first node")
    exclusive: bool = Field(True, description="sbatch: --exclusive nodes")
    env: dict[str, str] = Field(default_factory=dict, description="sbatch: exported into every step (no secrets)")
    pass_env: list[str] = Field(
        default_factory=list, description="sbatch: variables that must be set when submitting (e.g. WANDB_API_KEY)"
    )
    gpu_agent: bool = Field(True, description="sbatch: run `a1x-tui gpu-agent` on every node as a job step")
    a1x_tui: str = Field("a1x-tui", description="sbatch: the a1x-tui command as the compute nodes see it")

    # Every string field is checked against where it goes (a1x_supervisor/spec_values.py): an #SBATCH
    # line, a word of Cosmos-RL's templates (docs/reference/cosmos-rl.md §11.1-§11.2), or a quoted word of ours.
    @field_validator("output_root", "repo_root")
    @classmethod
    def _a_folder(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        if value is not None:
            template_path(str(value), str(info.field_name))
        return must_be_folder(value)

    @field_validator("dispatch_script")
    @classmethod
    def _a_file(cls, value: Path | None) -> Path | None:
        if value is not None:
            no_controls(str(value), "dispatch_script")
        return must_be_file(value)

    @field_validator("partition", "account")
    @classmethod
    def _slurm_names(cls, value: str | None, info: ValidationInfo) -> str | None:
        return value if value is None else slurm_word(value, str(info.field_name))

    @field_validator("container")
    @classmethod
    def _container(cls, value: str | None) -> str | None:
        if value is not None and (control_chars(value) or not CONTAINER.fullmatch(value)):
            raise ValueError(
                f"container: {value!r} is not an image reference or .sqsh path (letters, digits and _./:@#+=%,- "
                "only: 747d1bd's template pastes it unquoted into every srun line)"
            )
        return value

    @field_validator("mounts")
    @classmethod
    def _mounts(cls, value: list[str]) -> list[str]:
        for mount in value:
            parts = mount.split(":")
            flags_ok = len(parts) < 3 or bool(_MOUNT_FLAGS.fullmatch(parts[2]))
            if len(parts) > 3 or not flags_ok:
                raise ValueError(f"mounts: {mount!r} is not SRC[:DST[:FLAGS]]")
            for part in parts[:2]:
                template_path(part, f"mounts: {mount!r}")
        return value

    @field_validator("python", "a1x_tui")
    @classmethod
    def _command(cls, value: str, info: ValidationInfo) -> str:
        if not value.strip():
            raise ValueError(f"{info.field_name}: empty command")
        return no_controls(value, str(info.field_name))

    @field_validator("extra_sbatch_args")
    @classmethod
    def _sbatch_options(cls, value: list[str]) -> list[str]:
        for arg in value:
            if control_chars(arg) or not _SBATCH_OPTION.fullmatch(arg):
                raise ValueError(
                    f"extra_sbatch_args: {arg!r} is not one sbatch option (--opt, --opt=value or '--opt value', "
                    "the value one word without quotes or shell characters: it becomes an #SBATCH line)"
                )
        return value

    @field_validator("time")
    @classmethod
    def _time_format(cls, value: str | None) -> str | None:
        if value is not None and not _SLURM_TIME.fullmatch(value):
            raise ValueError(f"{value!r} is not a Slurm time (e.g. 04:00:00, 90, 2-00:00:00)")
        return value

    @field_validator("memory")
    @classmethod
    def _memory_format(cls, value: str) -> str:
        if not _SLURM_MEM.fullmatch(value):
            raise ValueError(f"{value!r} is not an sbatch --mem value (e.g. 0, 512G, 480000M)")
        return value

    @field_validator("job_name")
    @classmethod
    def _job_name(cls, value: str) -> str:
        # It names folders (dispatch_job.py: <output-root>/<job-name>...) and goes on #SBATCH lines.
        return plain_name(value, "job_name")

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not _ENV_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not an environment variable name")
            if any(word in name.upper() for word in _SECRET_WORDS):
                raise ValueError(f"{name}: secrets are never written into the job script; list it in pass_env")
            if "\x00" in text:  # the script quotes every value; only NUL cannot be held by a shell variable
                raise ValueError(f"env.{name}: a value cannot hold a NUL character")
        return value

    @field_validator("pass_env")
    @classmethod
    def _pass_env(cls, value: list[str]) -> list[str]:
        for name in value:
            if not _ENV_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return value

    @property
    def packing(self) -> Packing:
        return Packing.DISPATCH if self.method == "cosmos-dispatch" else Packing.LAUNCHER
