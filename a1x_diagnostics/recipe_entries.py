"""The recipe's training entry scripts, in one place: what each reward mode runs and reads.

For every reward mode: the entry script ``cosmos-rl`` launches, the dataset variable it requires at
import, the curated clip index its Hydra overrides name, the download it needs, the ``[custom]`` keys
its code reads (reward weights, grader, the prefetch keys every entry shares) and the reward weights
the recipe ships (docs/reference/alpamayo-recipe.md §3, §8.1, §8.4, §9.1, §10; the collision entry
is upstream's open pull request #13, §8.1). The supervisor's stages, the Slurm script, the templates,
preflight and lint read these; a new reward mode of the recipe is one more ``Entry`` here.

Keys under ``[custom]`` are read by the entry script's code, never by Cosmos-RL, which hands
``[custom]`` over unvalidated (docs/reference/cosmos-rl.md §8.3): lint judges them against the entry
in use, not against Cosmos-RL's schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

RECIPE_DIR = "recipes/alpamayo1_x_rl"  # inside an alpamayo-recipes checkout
_SCRIPTS = "models/reasoning_vla"

# R §9.1: read by the prefetch server and the dataset (``_alpamayo_cfg_get``), whatever the entry.
SHARED_KEYS: tuple[str, ...] = (
    "idx_rng_enable",
    "idx_rng_seed",
    "idx_mapper_identity",
    "prefetch.capacity",
    "prefetch.num_workers",
    "prefetch.socket_dir",
    "prefetch.log_level",
    "prefetch.log_request_details",
)
# R §7, §10.5: the reasoning grader, read by the joint rewards' ``get_reasoning_grader_from_config``.
GRADER_KEYS: tuple[str, ...] = ("reasoning_grader_type", "reasoning_grading_model_path", "reasoning_grading_device")
# R §8.4: shipped in the recipe's TOMLs, read by no code.
SHIPPED_UNREAD: tuple[str, ...] = ("idx_rng_debug",)

MOTION_LABELS: tuple[str, ...] = ("egomotion",)
REASONING_LABELS: tuple[str, ...] = ("egomotion", "egomotion.offline", "obstacle.offline")


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One reward mode of the recipe and the entry script that trains it."""

    mode: str  # the run spec's ``reward_mode``
    title: str
    script: str  # relative to ``RECIPE_DIR``
    data_env: str  # the dataset folder the entry requires at import ('Missing required env var ...', R §3)
    reasoning_data: bool  # the reasoning download (and the grader) rather than motion chunks + curate
    clip_index: str  # the curated index its Hydra overrides read from that folder
    rewards: Mapping[str, float]  # [custom.alpamayo.reward] as the recipe ships it for this mode (R §8.4)
    required_rewards: tuple[str, ...]  # 'Missing key(s) in [custom.alpamayo.reward]' without them (R §10)
    optional_rewards: tuple[str, ...] = ()
    grader: bool = False  # its reward grades the reasoning with Lingo-Judge (R §7)
    labels: tuple[str, ...] = MOTION_LABELS  # download_pai.py --labels
    local_template: str = "local_motion.toml"  # a1x_configs/templates/
    upstream: str = ""  # where the entry comes from when it is not in the pinned recipe revision
    reads: frozenset[str] = field(init=False)  # dotted paths under [custom.alpamayo] its code reads

    def __post_init__(self) -> None:
        keys = {*SHARED_KEYS, *(f"reward.{k}" for k in (*self.required_rewards, *self.optional_rewards))}
        if self.grader:
            keys.update(GRADER_KEYS)
        object.__setattr__(self, "reads", frozenset(keys))

    @property
    def path(self) -> str:
        """The script relative to the alpamayo-recipes checkout (the form the README launches)."""
        return f"{RECIPE_DIR}/{_SCRIPTS}/{self.script}"

    @property
    def name(self) -> str:
        return PurePosixPath(self.script).name


ENTRIES: dict[str, Entry] = {
    e.mode: e
    for e in (
        Entry(
            mode="motion",
            title="motion",
            script="alpamayo_cosmos_rl_post_training_entry.py",
            data_env="ALPAMAYO_PAI_LOCAL_DIR",
            reasoning_data=False,
            clip_index="clip_index_mini.parquet",
            rewards={"traj_l2_weight": 0.4, "comfort_weight": 0.1},
            required_rewards=("traj_l2_weight", "comfort_weight"),
        ),
        Entry(
            mode="joint",
            title="motion + reasoning (joint)",
            script="alpamayo_cosmos_rl_post_training_reasoning_entry.py",
            data_env="ALPAMAYO_PAI_REASONING_LOCAL_DIR",
            reasoning_data=True,
            clip_index="clip_index_reasoning_mini.parquet",
            rewards={"traj_l2_weight": 0.2, "comfort_weight": 0.0, "reasoning_weight": 0.3},
            required_rewards=("traj_l2_weight", "comfort_weight", "reasoning_weight"),
            grader=True,
            labels=REASONING_LABELS,
            local_template="local_joint.toml",
        ),
        Entry(
            mode="collision",
            title="motion + reasoning + collision",
            script="alpamayo_cosmos_rl_post_training_reasoning_collision_entry.py",
            data_env="ALPAMAYO_PAI_REASONING_OBSTACLE_LOCAL_DIR",
            reasoning_data=True,
            clip_index="clip_index_reasoning_mini.parquet",
            rewards={"traj_l2_weight": 1.0, "comfort_weight": 0.1, "reasoning_weight": 0.1, "collision_weight": 0.8},
            required_rewards=("traj_l2_weight", "comfort_weight", "reasoning_weight"),
            optional_rewards=("collision_weight",),
            grader=True,
            labels=REASONING_LABELS,  # obstacle.offline: the collision cost reads the obstacle boxes
            local_template="local_joint.toml",
            upstream="NVlabs/alpamayo-recipes pull request #13 (open): not in b790b8e",
        ),
    )
}
REWARD_MODES: tuple[str, ...] = tuple(ENTRIES)


def entry_for(mode: str) -> Entry:
    """The entry of a reward mode; ``ValueError`` names the modes there are."""
    try:
        return ENTRIES[mode]
    except KeyError:
        raise ValueError(f"reward_mode must be one of {', '.join(REWARD_MODES)}, got {mode!r}") from None


def entry_named(script: str) -> Entry | None:
    """The entry whose script ``script`` (a path or a file name) is; None for a script of the user's own."""
    name = PurePosixPath(script.replace("\\", "/")).name
    return next((e for e in ENTRIES.values() if e.name == name), None)


def readers(dotted: str) -> list[Entry]:
    """The entries whose code reads ``custom.alpamayo.<dotted>``."""
    return [e for e in ENTRIES.values() if dotted in e.reads]
