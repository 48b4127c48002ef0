"""Render a recipe TOML from the run choices: a template plus the required overrides.

The templates (``a1x_configs/templates/*.toml``) carry the recipe's keys and values with comments;
rendering changes only the keys the choices decide (docs/reference/alpamayo-recipe.md §8.4 "must change",
§8.5 local vs cluster), through the same comment-preserving editor as ``a1x-tui fix``.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

from a1x_diagnostics.config.edit import Edit, edit_text
from a1x_diagnostics.recipe_entries import RECIPE_DIR as RECIPE_DIR
from a1x_diagnostics.recipe_entries import entry_for

ALPAMAYO_VERSIONS = ("1", "1.5")
COMPUTE_SHAPES = ("local", "cluster")
_CHOICES_MARKER = "# a1x-tui: run choices"

# docs/reference/alpamayo-recipe.md §8.1: the only difference between versions is the Hydra config.
_HYDRA_CONFIG = {"1": "alpamayo1_rvla_rl_pai", "1.5": "alpamayo1_5_rvla_rl_pai"}


@dataclass(frozen=True, slots=True, kw_only=True)
class TemplateChoices:
    """What the user decides; everything else comes from the template."""

    alpamayo_version: str
    reward_mode: str
    wandb: bool
    compute: str
    output_dir: str
    model_dir: str
    wandb_project: str | None = None
    wandb_experiment: str | None = None
    grader_dir: str | None = None
    policy_replicas: int | None = None
    rollout_replicas: int | None = None
    nodes: int | None = None

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("alpamayo_version", self.alpamayo_version, ALPAMAYO_VERSIONS),
            ("compute", self.compute, COMPUTE_SHAPES),
        ):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
        if entry_for(self.reward_mode).grader and not self.grader_dir:
            raise ValueError(f"the {self.reward_mode} reward needs grader_dir: the Lingo-Judge directory")
        for name, count in (
            ("policy_replicas", self.policy_replicas),
            ("rollout_replicas", self.rollout_replicas),
            ("nodes", self.nodes),
        ):
            if count is not None and count < 1:
                raise ValueError(f"{name} must be at least 1, got {count}")


def hydra_config_name(alpamayo_version: str) -> str:
    """The entry script's ``hydra_config_name`` for a converted Alpamayo version (§8.1, §14 #16)."""
    try:
        return _HYDRA_CONFIG[alpamayo_version]
    except KeyError:
        raise ValueError(f"alpamayo_version must be one of {', '.join(ALPAMAYO_VERSIONS)}") from None


def entry_script(reward_mode: str) -> str:
    """The entry script for a reward mode, relative to the alpamayo-recipes checkout (§8.1, §8.2)."""
    return entry_for(reward_mode).path


def template_name(choices: TemplateChoices) -> str:
    if choices.compute == "cluster":
        return "cluster.toml"
    return entry_for(choices.reward_mode).local_template


def template_text(name: str) -> str:
    return resources.files("a1x_configs.templates").joinpath(name).read_text(encoding="utf-8")


def _overrides(choices: TemplateChoices) -> list[Edit]:
    edits = [
        Edit("train.output_dir", choices.output_dir),
        Edit("policy.model_name_or_path", choices.model_dir),
        Edit("logging.logger", ["console", "wandb"] if choices.wandb else ["console"]),
    ]
    if choices.wandb_project:
        edits.append(Edit("logging.project_name", choices.wandb_project))
    if choices.wandb_experiment:
        edits.append(Edit("logging.experiment_name", choices.wandb_experiment))
    entry = entry_for(choices.reward_mode)
    for key, weight in entry.rewards.items():
        edits.append(Edit(f"custom.alpamayo.reward.{key}", weight))
    if entry.grader:
        edits += [
            Edit("custom.alpamayo.reasoning_grader_type", "lingo_judge"),
            Edit("custom.alpamayo.reasoning_grading_model_path", choices.grader_dir),
            Edit("custom.alpamayo.reasoning_grading_device", "auto"),
        ]
    return edits + _sizing(choices)


def _sizing(choices: TemplateChoices) -> list[Edit]:
    """Replica counts, and the prefetch capacity that follows from them (docs/reference/alpamayo-recipe.md §9.1)."""
    edits: list[Edit] = []
    if choices.policy_replicas is not None:
        edits.append(Edit("policy.parallelism.n_init_replicas", choices.policy_replicas))
    if choices.rollout_replicas is not None:
        edits.append(Edit("rollout.parallelism.n_init_replicas", choices.rollout_replicas))
    if choices.compute == "local" and choices.policy_replicas:
        edits.append(Edit("custom.alpamayo.prefetch.capacity", 48 * choices.policy_replicas))
    if choices.compute == "local" and (choices.nodes or 1) > 1:
        edits.append(Edit("train.train_policy.data_dispatch_as_rank_in_mesh", True))
    return edits


def _describe(choices: TemplateChoices) -> str:
    reward = entry_for(choices.reward_mode).title
    return "\n".join(
        (
            f"# Rendered for Alpamayo {choices.alpamayo_version}, {reward} reward, {choices.compute} compute.",
            f"# Entry script: {entry_script(choices.reward_mode)}",
            f'# Its hydra_config_name must be "{hydra_config_name(choices.alpamayo_version)}".',
        )
    )


def render_toml(choices: TemplateChoices) -> str:
    """The TOML for ``choices``: the template with the choices' keys set, comments kept."""
    text = edit_text(template_text(template_name(choices)), _overrides(choices))
    return text.replace(_CHOICES_MARKER, _describe(choices), 1)


def choices_summary(choices: TemplateChoices) -> dict[str, Any]:
    """What a launcher needs next to the TOML: the entry script and its Hydra config name."""
    return {
        "template": template_name(choices),
        "entry_script": entry_script(choices.reward_mode),
        "hydra_config_name": hydra_config_name(choices.alpamayo_version),
    }
