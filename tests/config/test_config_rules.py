"""Every lint rule: a file that trips it (with evidence and a fix) and one that does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from config_helpers import JOINT, MOTION, findings, load_text, text_of, variant

from a1x_diagnostics.catalog import CATALOG
from a1x_diagnostics.config import RULES, lint_config
from a1x_diagnostics.findings import Severity

GRADER = {"custom.alpamayo.reasoning_grading_model_path": "/data/lingo"}


def test_ready_motion_and_joint_files_are_clean() -> None:
    assert findings(variant(MOTION)) == {}
    assert findings(variant(JOINT, GRADER)) == {}


def test_every_rule_id_is_a_config_finding_of_the_catalog() -> None:
    for rule_id in RULES:
        assert "config" in CATALOG[rule_id].origins, rule_id


# (finding id, changes to the ready motion file, lint context, a fix path the finding must carry)
FAILING: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    (
        "placeholder_path",
        {"policy.model_name_or_path": "/path/to/converted_alpamayo_model"},
        {},
        "policy.model_name_or_path",
    ),
    ("placeholder_path", {"train.output_dir": "$TRAIN_OUTPUT_DIR"}, {}, "train.output_dir"),
    ("insufficient_gpus", {}, {"gpus_per_node": 4}, "policy.parallelism.dp_shard_size"),
    ("insufficient_gpus", {"policy.parallelism.dp_shard_size": 8}, {"gpus_per_node": 4}, ""),
    ("batch_not_divisible", {"train.train_batch_per_replica": 50}, {}, "policy.parallelism.dp_shard_size"),
    ("batch_not_divisible", {"train.train_policy.mini_batch": 5}, {}, "train.train_policy.mini_batch"),
    ("prefetch_misconfig", {"custom.alpamayo.prefetch.capacity": 0}, {}, "custom.alpamayo.prefetch.capacity"),
    ("prefetch_misconfig", {"custom.alpamayo.prefetch.capacity": None}, {}, "custom.alpamayo.prefetch.capacity"),
    ("prefetch_misconfig", {"custom.alpamayo.prefetch.capacity": 16}, {}, "custom.alpamayo.prefetch.capacity"),
    ("prefetch_misconfig", {"custom.alpamayo.prefetch.log_level": "loud"}, {}, "custom.alpamayo.prefetch.log_level"),
    ("prefetch_misconfig", {}, {"nodes": 2}, "train.train_policy.data_dispatch_as_rank_in_mesh"),
    ("duplicate_samples", {}, {"compute": "cluster"}, "train.train_policy.data_dispatch_as_rank_in_mesh"),
    ("wandb_key_missing", {"logging.logger": ["console", "wandb"]}, {}, "logging.logger"),
    ("logging_blind", {"logging.logger": []}, {}, "logging.logger"),
    ("logging_blind", {"logging.logger": ["wandb"]}, {"env": {"WANDB_API_KEY": "k"}}, "logging.logger"),
    (
        "grpo_became_sft",
        {
            k: None
            for k in (
                "train.train_policy.temperature",
                "train.train_policy.epsilon_low",
                "train.train_policy.epsilon_high",
                "train.train_policy.kl_beta",
            )
        },
        {},
        "train.train_policy.kl_beta",
    ),
    ("no_group_signal", {"rollout.n_generation": 1}, {}, "rollout.n_generation"),
    ("gpu_memory_utilization_range", {"rollout.gpu_memory_utilization": 1.2}, {}, "rollout.gpu_memory_utilization"),
    ("gpu_memory_utilization_range", {"rollout.gpu_memory_utilization": 0.98}, {}, "rollout.gpu_memory_utilization"),
    ("gpu_memory_utilization_range", {"mode": "colocated_separated"}, {}, "rollout.gpu_memory_utilization"),
    ("recipe_parallelism_unsupported", {"train.compile": True}, {}, "train.compile"),
    ("recipe_parallelism_unsupported", {"policy.parallelism.cp_size": 2}, {}, "policy.parallelism.cp_size"),
    ("recipe_parallelism_unsupported", {"train.compile": None}, {}, "train.compile"),
    (
        "grader_missing",
        {"custom.alpamayo.reward.reasoning_weight": 0.3},
        {},
        "custom.alpamayo.reasoning_grading_model_path",
    ),
    (
        "outdated_steps_below_sync",
        {"train.train_policy.allowed_outdated_steps": 1, "train.sync_weight_interval": 5},
        {},
        "train.train_policy.allowed_outdated_steps",
    ),
    ("tp_size_implicit", {"rollout.parallelism.tp_size": None}, {}, "rollout.parallelism.tp_size"),
    ("policy_oom_config", {"policy.model_gradient_checkpointing": False}, {}, "policy.model_gradient_checkpointing"),
    ("checkpointing_disabled", {"train.ckpt.enable_checkpoint": False}, {}, "train.ckpt.enable_checkpoint"),
    ("checkpointing_disabled", {"train.ckpt": None}, {}, "train.ckpt.enable_checkpoint"),
    ("recommended_value", {"rollout.batch_size": 4}, {"compute": "local"}, "rollout.batch_size"),
    ("recommended_value", {}, {"compute": "cluster", "nodes": 2}, "train.sync_weight_interval"),
    ("recommended_value", {"rollout.backend": "vllm"}, {}, "rollout.backend"),
    ("recommended_value", {"validation.enable": True}, {}, "validation.enable"),
    ("unknown_toml_key", {"rollout.gpu_memory_utilizaton": 0.7}, {}, "rollout.gpu_memory_utilization"),
    ("unknown_toml_key", {"rollout.prefetch_rollout": True}, {}, "rollout.prefetch_rollout"),
    ("invalid_value", {"train.train_policy.variant": "ppo"}, {}, "train.train_policy.variant"),
    ("invalid_value", {"train.ckpt.save_mode": "later"}, {}, "train.ckpt.save_mode"),
    ("invalid_value", {"custom.alpamayo.reward.comfort_weight": None}, {}, "custom.alpamayo.reward.comfort_weight"),
    (
        "invalid_value",
        {"custom.alpamayo.idx_rng_enable": True, "custom.alpamayo.idx_rng_seed": None},
        {},
        "custom.alpamayo.idx_rng_seed",
    ),
    ("invalid_value", {"policy.parallelism.dp_shard_size": 0}, {}, "policy.parallelism.dp_shard_size"),
    ("invalid_value", {"train.max_num_steps": 0}, {}, "train.max_num_steps"),
]


@pytest.mark.parametrize(("finding_id", "changes", "context", "fix_path"), FAILING)
def test_rule_fires_with_evidence_and_fix(
    finding_id: str, changes: dict[str, Any], context: dict[str, Any], fix_path: str
) -> None:
    text = variant(MOTION, changes)
    found = findings(text, **context)
    assert finding_id in found, f"{finding_id} not raised; got {sorted(found)}"
    finding = found[finding_id]
    assert finding.evidence and all(ev.file == "recipe.toml" for ev in finding.evidence)
    for ev in finding.evidence:
        if ev.line is not None:
            assert text.split("\n")[ev.line - 1] == ev.text
    if fix_path:
        assert fix_path in {f.path for f in finding.fixes}
    else:
        assert finding.action


def test_explanations_carry_the_numbers() -> None:
    gpu = findings(variant(MOTION), gpus_per_node=4)["insufficient_gpus"]
    assert "1 policy x 4 GPU + 1 rollout x 1 GPU = 5 GPUs" in gpu.explanation
    assert "Number of workers required" in gpu.explanation
    assert gpu.data["gpus_needed"] == 5 and gpu.data["workers_required"] == 2
    too_big = findings(variant(MOTION, {"policy.parallelism.dp_shard_size": 8}), gpus_per_node=4)["insufficient_gpus"]
    assert "GPUs larger than 8" in too_big.explanation
    batch = findings(variant(MOTION, {"train.train_batch_per_replica": 50}))["batch_not_divisible"]
    assert "4 x 1 = 4" in batch.explanation
    # the batch is the algorithm's: 50 is split over 2 GPUs instead of 4, never changed to 48
    assert [(f.path, f.proposed) for f in batch.fixes] == [("policy.parallelism.dp_shard_size", 2)]


def test_unsupported_gpus_per_node_is_flagged() -> None:
    finding = findings(variant(MOTION), gpus_per_node=6)["insufficient_gpus"]
    assert "must be 1, 2, 4, or 8" in finding.explanation


def test_gpu_check_is_skipped_without_gpus() -> None:
    assert "insufficient_gpus" not in findings(
        variant(MOTION, {"policy.parallelism.dp_shard_size": 64}), gpus_per_node=None
    )


def test_placeholder_needs_a_user_value_unless_the_shell_has_it() -> None:
    text = variant(MOTION, {"policy.model_name_or_path": "/path/to/converted_alpamayo_model"})
    finding = findings(text)["placeholder_path"]
    assert finding.data["needs_value"] == ["policy.model_name_or_path"]
    from_env = findings(text, env={"ALPAMAYO_MODEL_DIR": "/models/a15"})["placeholder_path"]
    assert "needs_value" not in from_env.data
    assert from_env.fixes[0].proposed == "/models/a15"


def test_shipped_files_as_they_are() -> None:
    motion = findings(text_of(MOTION))
    assert motion["placeholder_path"].severity is Severity.CRITICAL
    assert {f.path for f in motion["placeholder_path"].fixes} == {"train.output_dir", "policy.model_name_or_path"}
    assert "wandb_key_missing" in motion and "prefetch_misconfig" in motion
    joint = findings(text_of(JOINT))
    assert "/path/to/lingo_judge_model" in joint["grader_missing"].explanation
    assert "unknown_toml_key" not in joint  # the shipped-but-ignored keys are notes, not warnings


def test_wandb_with_key_or_disabled_mode_is_fine() -> None:
    text = variant(MOTION, {"logging.logger": ["console", "wandb"]})
    assert "wandb_key_missing" not in findings(text, env={"WANDB_API_KEY": "set"})
    assert "wandb_key_missing" not in findings(text, env={"WANDB_MODE": "disabled"})


def test_explicit_sft_is_not_flagged_but_implicit_sft_is() -> None:
    assert "grpo_became_sft" in findings("[train.train_policy]\ntrainer_type = 'x'\n")
    assert "grpo_became_sft" not in findings("[train.train_policy]\ntype = 'sft'\n")


def test_grader_from_environment_counts() -> None:
    text = variant(MOTION, {"custom.alpamayo.reward.reasoning_weight": 0.3})
    assert "grader_missing" not in findings(text, env={"ALPAMAYO_REASONING_GRADING_MODEL_PATH": "/g"})
    proposal = findings(text, env={"LINGO_JUDGE_DIR": "/lingo"})["grader_missing"].fixes[0]
    assert proposal.proposed == "/lingo"


def test_implicit_tp_size_is_critical_and_triggers_the_recipe_assert() -> None:
    found = findings(variant(MOTION, {"policy.parallelism.tp_size": None}))
    assert found["tp_size_implicit"].severity is Severity.CRITICAL
    assert "tp_size = 2 (the 747d1bd default" in found["recipe_parallelism_unsupported"].explanation


def test_misspelled_prefetch_key_is_a_prefetch_finding_not_a_generic_one() -> None:
    text = variant(MOTION).replace("capacity = 48", "capacty = 48")
    found = findings(text)
    assert "unknown_toml_key" not in found
    fixes = [(f.path, f.proposed) for f in found["prefetch_misconfig"].fixes]
    assert fixes == [("custom.alpamayo.prefetch.capacty", None), ("custom.alpamayo.prefetch.capacity", 48)]


def test_capacity_rule_follows_replicas_per_node() -> None:
    text = variant(MOTION, {"policy.parallelism.n_init_replicas": 2, "custom.alpamayo.prefetch.capacity": 96})
    assert "prefetch_misconfig" not in findings(text, gpus_per_node=8)
    finding = findings(text.replace("capacity = 96", "capacity = 50"), gpus_per_node=8)["prefetch_misconfig"]
    assert finding.data["policy_replicas_per_node"] == 2
    assert finding.fixes[0].proposed == 96


def test_lint_config_defaults_to_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = load_text(variant(MOTION, {"logging.logger": ["console", "wandb"]}))
    monkeypatch.setenv("WANDB_API_KEY", "secret")
    assert "wandb_key_missing" not in {f.id for f in lint_config(cfg)}
    monkeypatch.delenv("WANDB_API_KEY")
    monkeypatch.delenv("WANDB_MODE", raising=False)
    assert "wandb_key_missing" in {f.id for f in lint_config(cfg)}


def test_bad_compute_choice_is_rejected() -> None:
    with pytest.raises(ValueError, match="compute"):
        lint_config(load_text(variant(MOTION)), compute="cloud")


def test_recommended_values_never_propose_the_algorithm_or_more_gpus() -> None:
    """The recipe's table names its batch, group size and learning rate; a fix leaves them to the user (issue 34),
    and proposes its dp_shard_size only where --gpus says the replicas fit."""
    text = variant(MOTION, {"train.train_batch_per_replica": 32, "rollout.n_generation": 8, "rollout.batch_size": 4,
                            "policy.parallelism.dp_shard_size": 2})
    found = findings(text, compute="local", gpus_per_node=None)["recommended_value"]
    paths = {f.path for f in found.fixes}
    assert paths == {"rollout.batch_size"}
    assert "train.train_batch_per_replica = 48" in (found.action or "") and "yours to choose" in (found.action or "")
    assert "pass --gpus N" in (found.action or "")
    found = findings(text, compute="local", gpus_per_node=8)["recommended_value"]
    assert {f.path for f in found.fixes} == {"rollout.batch_size", "policy.parallelism.dp_shard_size"}  # 4 + 1 <= 8
    found = findings(text, compute="local", gpus_per_node=4)["recommended_value"]
    assert "policy.parallelism.dp_shard_size" not in {f.path for f in found.fixes}  # 4 + 1 > 4


def test_gpu_memory_utilization_is_judged_only_for_engines_that_read_it() -> None:
    text = variant(MOTION, {"rollout.gpu_memory_utilization": 1.2, "rollout.backend": "example_hf"})
    assert "gpu_memory_utilization_range" not in findings(text)
    text = variant(MOTION, {"rollout.gpu_memory_utilization": 1.2, "rollout.backend": "trtllm"})
    assert "gpu_memory_utilization_range" in findings(text)  # trtllm_rollout.py:101 reads it


def test_on_policy_keeps_on_policy() -> None:
    """on_policy with sync_weight_interval 2 is rejected; the fix syncs every step, it does not turn off-policy."""
    text = variant(MOTION, {"train.train_policy.on_policy": True})
    found = findings(text)["invalid_value"]
    assert [(f.path, f.proposed) for f in found.fixes] == [("train.sync_weight_interval", 1)]


def test_a_plain_cosmos_rl_toml_is_not_held_to_the_recipe() -> None:
    """The genuine runs' TOML (backend example_hf, no [custom.alpamayo]): the recipe's backend, reward weights,
    prefetch and parallelism asserts are not its own, so no fix proposes them (another engine, another reward)."""
    from a1x_diagnostics.config import lint_config, load_config

    toml = Path(__file__).resolve().parents[1] / "fixtures" / "real-runs" / "cosmos-rl-0.4.4" / "healthy"
    found = {f.id: f for f in lint_config(load_config(next(toml.glob("*.toml"))), gpus_per_node=1)}
    paths = {fx.path for f in found.values() for fx in f.fixes}
    assert not {"recommended_value", "prefetch_misconfig", "recipe_parallelism_unsupported"} & set(found)
    assert "rollout.backend" not in paths and not any(p.startswith("custom.alpamayo") for p in paths)
