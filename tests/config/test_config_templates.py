"""Templates: every combination of run choices renders to a TOML with no critical lint finding."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import tomlkit
from config_helpers import findings, load_text

from a1x_configs.render import (
    TemplateChoices,
    choices_summary,
    entry_script,
    hydra_config_name,
    render_toml,
    template_text,
)
from a1x_diagnostics.config.edit import edit_text
from a1x_diagnostics.findings import Severity
from a1x_diagnostics.recipe_entries import REWARD_MODES, entry_for

# Every reward mode of the one map (a1x_diagnostics.recipe_entries): a new entry is rendered and linted here too.
COMBINATIONS = list(itertools.product(("1", "1.5"), REWARD_MODES, (True, False), ("local", "cluster")))


def _choices(version: str, reward: str, wandb: bool, compute: str, **extra: Any) -> TemplateChoices:
    return TemplateChoices(
        alpamayo_version=version,
        reward_mode=reward,
        wandb=wandb,
        compute=compute,
        output_dir="/data/run/outputs",
        model_dir="/data/models/alpamayo_converted",
        grader_dir="/data/models/lingo_judge" if entry_for(reward).grader else None,
        **extra,
    )


def _lint_context(choices: TemplateChoices) -> dict[str, Any]:
    nodes = choices.nodes or (5 if choices.compute == "cluster" else 1)
    return {"gpus_per_node": 8, "nodes": nodes, "compute": choices.compute}


@pytest.mark.parametrize(("version", "reward", "wandb", "compute"), COMBINATIONS)
def test_every_combination_lints_without_critical(version: str, reward: str, wandb: bool, compute: str) -> None:
    choices = _choices(version, reward, wandb, compute)
    text = render_toml(choices)
    found = findings(text, **_lint_context(choices), entry=entry_script(reward))
    assert not [f.id for f in found.values() if f.severity is Severity.CRITICAL]
    expected = {"wandb_key_missing"} if wandb else set()  # the test environment has no W&B key
    assert set(found) == expected


@pytest.mark.parametrize(
    "extra",
    [{"policy_replicas": 1, "rollout_replicas": 4}, {"policy_replicas": 1, "rollout_replicas": 3}],
)
def test_local_sizing_choices_stay_clean(extra: dict[str, int]) -> None:
    choices = _choices("1.5", "motion", False, "local", **extra)
    text = render_toml(choices)
    assert findings(text, **_lint_context(choices)) == {}
    data = tomlkit.parse(text).unwrap()
    assert data["custom"]["alpamayo"]["prefetch"]["capacity"] == 48 * extra["policy_replicas"]


def test_cluster_sizing_choices_stay_clean() -> None:
    choices = _choices("1.5", "joint", True, "cluster", policy_replicas=8, rollout_replicas=16, nodes=10)
    text = render_toml(choices)
    found = findings(text, env={"WANDB_API_KEY": "k"}, **_lint_context(choices))
    assert found == {}


@pytest.mark.parametrize(("version", "reward", "wandb", "compute"), COMBINATIONS)
def test_rendered_values_are_the_choices(version: str, reward: str, wandb: bool, compute: str) -> None:
    choices = _choices(version, reward, wandb, compute, wandb_project="proj", wandb_experiment="exp")
    text = render_toml(choices)
    cfg = load_text(text)
    assert cfg.get("train.output_dir") == choices.output_dir
    assert cfg.get("policy.model_name_or_path") == choices.model_dir
    assert cfg.get("logging.logger") == (["console", "wandb"] if wandb else ["console"])
    assert (cfg.get("logging.project_name"), cfg.get("logging.experiment_name")) == ("proj", "exp")
    entry = entry_for(reward)
    assert {k: cfg.get(f"custom.alpamayo.reward.{k}") for k in entry.rewards} == dict(entry.rewards)
    assert cfg.is_set("custom.alpamayo.reward.reasoning_weight") == entry.grader
    if entry.grader:
        assert cfg.get("custom.alpamayo.reasoning_grading_model_path") == choices.grader_dir
    assert cfg.get("train.train_policy.data_dispatch_as_rank_in_mesh") == (compute == "cluster")
    assert cfg.get("policy.parallelism.dp_shard_size") == (8 if compute == "cluster" else 4)
    assert f'hydra_config_name must be "{hydra_config_name(version)}"' in text
    assert entry_script(reward) in text
    assert edit_text(text, []) == text  # round trip


@pytest.mark.parametrize("name", ["local_motion.toml", "local_joint.toml", "cluster.toml"])
def test_templates_keep_their_comments_and_only_placeholders_are_critical(name: str) -> None:
    template = template_text(name)
    nodes = 5 if name == "cluster.toml" else 1
    critical = {f.id for f in findings(template, nodes=nodes).values() if f.severity is Severity.CRITICAL}
    assert critical <= {"placeholder_path", "grader_missing"}
    reward = "joint" if name == "local_joint.toml" else "motion"
    rendered = render_toml(_choices("1.5", reward, False, "cluster" if name == "cluster.toml" else "local"))
    comments = [line for line in template.splitlines() if line.startswith("#") and "run choices" not in line]
    assert comments and all(line in rendered.splitlines() for line in comments)


def test_hydra_config_and_entry_script() -> None:
    assert hydra_config_name("1.5") == "alpamayo1_5_rvla_rl_pai"
    assert hydra_config_name("1") == "alpamayo1_rvla_rl_pai"
    assert entry_script("motion").endswith("reasoning_vla/alpamayo_cosmos_rl_post_training_entry.py")
    assert entry_script("joint").endswith("reasoning_vla/alpamayo_cosmos_rl_post_training_reasoning_entry.py")
    assert choices_summary(_choices("1", "joint", False, "local"))["template"] == "local_joint.toml"
    with pytest.raises(ValueError):
        hydra_config_name("2")
    with pytest.raises(ValueError):
        entry_script("reasoning")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"alpamayo_version": "2"}, "alpamayo_version"),
        ({"compute": "cloud"}, "compute"),
        ({"reward_mode": "joint", "grader_dir": None}, "grader_dir"),
        ({"policy_replicas": 0}, "policy_replicas"),
    ],
)
def test_bad_choices_are_rejected(changes: dict[str, Any], message: str) -> None:
    base: dict[str, Any] = {
        "alpamayo_version": "1.5",
        "reward_mode": "motion",
        "wandb": False,
        "compute": "local",
        "output_dir": "/o",
        "model_dir": "/m",
    }
    with pytest.raises(ValueError, match=message):
        TemplateChoices(**{**base, **changes})
