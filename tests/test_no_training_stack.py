"""The install carries no second training environment (issue 38 point 4): the stack is the recipe's a1x_rl
venv, made by the env stage from the recipe's lock (README, docs/supervisor.md "Stages")."""

from __future__ import annotations

import re
from pathlib import Path

import tomlkit

REPO = Path(__file__).resolve().parents[1]
TRAINING_STACK = {"cosmos-rl", "vllm", "torch", "flash-attn", "transformers", "wandb"}


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s<>=!~;\[@]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}


def test_no_dependency_or_extra_installs_the_training_stack() -> None:
    project = tomlkit.parse((REPO / "pyproject.toml").read_text()).unwrap()["project"]
    assert not _names(project["dependencies"]) & TRAINING_STACK
    # wandb alone has an extra of its own: the W&B alerts of a monitor run (docs/live.md), not the training's logger
    own = {"wandb": {"wandb"}, "dev": {"wandb"}}
    for extra, requirements in project.get("optional-dependencies", {}).items():
        assert not (_names(requirements) & TRAINING_STACK) - own.get(extra, set()), extra


def test_toml_is_the_release_cosmos_rl_reads_with() -> None:
    project = tomlkit.parse((REPO / "pyproject.toml").read_text()).unwrap()["project"]
    assert "toml==0.10.2" in project["dependencies"]  # the recipe's uv.lock (docs/reference/cosmos-rl.md §8.1)


def test_the_readme_says_where_the_stack_comes_from() -> None:
    readme = (REPO / "README.md").read_text()
    assert "[pipeline]" not in readme
    assert "`a1x_rl` venv, which the pipeline's `env`\nstage makes" in readme
