"""Keys under [custom] are judged against what the entry script in use reads (docs/reference/alpamayo-recipe.md
§8.1, §9.1, §10), never called 'silently ignored' by Cosmos-RL, which hands [custom] over unread
(docs/reference/cosmos-rl.md §8.3); the entries live in one map (a1x_diagnostics.recipe_entries)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from config_helpers import JOINT, MOTION, text_of, variant

from a1x_configs.render import TemplateChoices, entry_script, render_toml, template_name
from a1x_diagnostics.config import lint_report
from a1x_diagnostics.recipe_entries import ENTRIES, Entry, entry_for, entry_named

JOINT_ENTRY = "recipes/alpamayo1_x_rl/models/reasoning_vla/alpamayo_cosmos_rl_post_training_reasoning_entry.py"
COLLISION_ENTRY = "alpamayo_cosmos_rl_post_training_reasoning_collision_entry.py"


def _joint_with_collision() -> str:
    """The upstream collision pull request's TOML: the joint one plus collision_weight and its weights."""
    return variant(
        JOINT,
        {
            "custom.alpamayo.reasoning_grading_model_path": "/data/lingo",
            "custom.alpamayo.reward.traj_l2_weight": 1.0,
            "custom.alpamayo.reward.comfort_weight": 0.1,
            "custom.alpamayo.reward.reasoning_weight": 0.1,
            "custom.alpamayo.reward.collision_weight": 0.8,
        },
    )


def _lint(tmp_path: Path, text: str, entry: str | None = None) -> tuple[set[str], list[str]]:
    path = tmp_path / "recipe.toml"
    path.write_text(text)
    report = lint_report(path, gpus_per_node=8, env={}, entry=entry)
    return {f.id for f in report.findings}, report.notes


def test_collision_weight_is_no_unknown_key(tmp_path: Path) -> None:
    for entry in (None, COLLISION_ENTRY):
        ids, notes = _lint(tmp_path, _joint_with_collision(), entry)
        assert "unknown_toml_key" not in ids
        assert not [n for n in notes if "collision_weight" in n]


def test_a_key_the_entry_in_use_does_not_read_is_a_note_naming_it(tmp_path: Path) -> None:
    ids, notes = _lint(tmp_path, _joint_with_collision(), JOINT_ENTRY)
    assert "unknown_toml_key" not in ids
    (note,) = [n for n in notes if "collision_weight" in n]
    assert note.startswith(
        "[custom.alpamayo.reward] collision_weight: alpamayo_cosmos_rl_post_training_reasoning_entry.py"
    )
    assert "does not read it (alpamayo_cosmos_rl_post_training_reasoning_collision_entry.py does)" in note
    assert "silently ignored" not in " ".join(notes)


def test_the_motion_entry_does_not_read_the_reasoning_weight(tmp_path: Path) -> None:
    text = variant(MOTION, {"custom.alpamayo.reward.reasoning_weight": 0.3})
    _, notes = _lint(tmp_path, text, "alpamayo_cosmos_rl_post_training_entry.py")
    assert any(n.startswith("[custom.alpamayo.reward] reasoning_weight: alpamayo_cosmos_rl_post_training_entry.py")
               for n in notes)


def test_a_misspelled_custom_key_is_a_note_with_the_spelling_meant(tmp_path: Path) -> None:
    text = variant(MOTION).replace("idx_rng_seed = 1234", "idx_rng_sed = 1234")
    ids, notes = _lint(tmp_path, text)
    assert "unknown_toml_key" not in ids
    (note,) = [n for n in notes if "idx_rng_sed" in n]
    assert "no entry script of the recipe reads it" in note and "did you mean idx_rng_seed?" in note
    _, notes = _lint(tmp_path, text, "alpamayo_cosmos_rl_post_training_entry.py")
    assert any("alpamayo_cosmos_rl_post_training_entry.py, the entry script in use, does not read it" in n
               for n in notes if "idx_rng_sed" in n)


def test_a_table_of_ones_own_under_custom_is_a_note(tmp_path: Path) -> None:
    text = variant(MOTION) + "\n\n[custom.mine]\nthreshold = 3\n"
    ids, notes = _lint(tmp_path, text)
    assert "unknown_toml_key" not in ids
    assert any(n.startswith("[custom.mine] threshold: the recipe's entry scripts read only [custom.alpamayo]")
               for n in notes)


def test_a_script_of_ones_own_is_said_and_keys_are_not_judged(tmp_path: Path) -> None:
    _, notes = _lint(tmp_path, _joint_with_collision(), "my_entry.py")
    assert "my_entry.py is not one of the recipe's entry scripts: [custom] keys are not checked against it" in notes


def test_a_misspelled_prefetch_key_stays_a_prefetch_warning(tmp_path: Path) -> None:
    text = variant(MOTION).replace("capacity = 48", "capcity = 48")
    ids, notes = _lint(tmp_path, text)
    assert "prefetch_misconfig" in ids and "unknown_toml_key" not in ids
    assert not [n for n in notes if "capcity" in n]


def test_the_reward_keys_the_collision_entry_needs(tmp_path: Path) -> None:
    text = _joint_with_collision().replace("reasoning_weight = 0.1\n", "")
    ids, _ = _lint(tmp_path, text, COLLISION_ENTRY)
    assert "invalid_value" in ids  # 'Missing key(s) in [custom.alpamayo.reward]': reasoning_weight is required


def test_a_new_reward_mode_is_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Everything mode-specific comes from the map: add an entry and the spec, the stage list, the
    template and the entry path follow."""
    from a1x_supervisor.pipeline import stage_names
    from a1x_supervisor.spec import parse_spec

    new = replace(
        ENTRIES["joint"],
        mode="lanes",
        title="motion + lane keeping",
        script="alpamayo_cosmos_rl_post_training_lanes_entry.py",
        data_env="ALPAMAYO_PAI_LANES_LOCAL_DIR",
        rewards={"traj_l2_weight": 0.5, "comfort_weight": 0.1, "reasoning_weight": 0.2, "lane_weight": 0.4},
        optional_rewards=("lane_weight",),
    )
    monkeypatch.setitem(ENTRIES, "lanes", new)
    assert isinstance(new, Entry) and "reward.lane_weight" in new.reads
    spec = parse_spec(
        'reward_mode = "lanes"\n[paths]\nworkspace = "ws"\nmodel_dir = "m"\npai_dir = "p"\nreasoning_dir = "r"\n'
        'grader_dir = "g"\noutput_dir = "o"\nexport_dir = "e"\n',
        base=Path("/tmp"),
    )
    assert spec.entry is new and spec.data_dir == Path("/tmp/r")
    assert "grader" in stage_names(spec) and "curate" not in stage_names(spec)
    choices = TemplateChoices(alpamayo_version="1.5", reward_mode="lanes", wandb=False, compute="local",
                              output_dir="/o", model_dir="/m", grader_dir="/g")
    assert template_name(choices) == "local_joint.toml"
    assert "lane_weight = 0.4" in render_toml(choices)
    assert entry_script("lanes").endswith("reasoning_vla/alpamayo_cosmos_rl_post_training_lanes_entry.py")
    assert entry_named(entry_script("lanes")) is new


def test_unknown_reward_mode_names_the_modes() -> None:
    with pytest.raises(ValueError, match="motion, joint, collision"):
        entry_for("lanes")


def test_the_map_matches_the_recipe() -> None:
    motion, joint, collision = (ENTRIES[m] for m in ("motion", "joint", "collision"))
    # R §3 / §8.1: the dataset variable and curated index of each entry's Hydra overrides
    assert (motion.data_env, motion.clip_index) == ("ALPAMAYO_PAI_LOCAL_DIR", "clip_index_mini.parquet")
    assert joint.data_env == "ALPAMAYO_PAI_REASONING_LOCAL_DIR"
    assert joint.clip_index == collision.clip_index == "clip_index_reasoning_mini.parquet"
    assert collision.data_env == "ALPAMAYO_PAI_REASONING_OBSTACLE_LOCAL_DIR" and "obstacle.offline" in collision.labels
    # R §8.4: the shipped weights (the joint TOML's, the collision pull request's)
    joint_toml = text_of(JOINT)
    assert all(f"{k} = {v}" in joint_toml for k, v in joint.rewards.items())
    assert dict(collision.rewards) == {
        "traj_l2_weight": 1.0, "comfort_weight": 0.1, "reasoning_weight": 0.1, "collision_weight": 0.8
    }
