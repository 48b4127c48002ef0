"""Issue 34 point 5 over every recorded run (tests/fixtures/cosmos, tests/fixtures/real-runs, the examples):
each fix proposed acts within the algorithm, the engine in use and the run's GPUs, alone unless its edits
depend on each other, and says its trade-off. The per-detector cases are in the tests of each detector."""

from __future__ import annotations

from pathlib import Path

import pytest

from a1x_diagnostics.engine import check

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
# The algorithm's own settings: the batch, the group, the loss, the optimizer (docs/reference/cosmos-rl.md §8.4).
ALGORITHM = {
    "rollout.n_generation", "train.train_batch_per_replica", "train.optm_lr", "train.train_policy.mu_iterations",
    "train.train_policy.kl_beta", "train.train_policy.epsilon_low", "train.train_policy.epsilon_high",
    "train.train_policy.type", "train.train_policy.variant", "train.train_policy.on_policy",
    "train.train_policy.loss_type", "train.train_policy.reward_function",
}
MORE_GPUS = {"policy.parallelism.dp_shard_size", "policy.parallelism.n_init_replicas",
             "rollout.parallelism.n_init_replicas", "policy.parallelism.tp_size", "rollout.parallelism.tp_size"}
# Detectors whose fixes this issue holds to a one-line trade-off (the others: lifecycle, failures).
TRADE_OFF = {"rollout_buffer_growth", "rollout_starved", "weight_sync_lag", "vllm_oom", "policy_oom", "grpo_collapse",
             "insufficient_gpus", "prefetch_misconfig", "outdated_steps_below_sync", "batch_not_divisible",
             "tp_size_implicit", "wandb_forbidden", "recipe_parallelism_unsupported"}


def _targets() -> list[Path]:
    runs = [p for p in sorted((FIXTURES / "cosmos").glob("*/*")) if p.is_dir() and p.parent.name != "recording"]
    runs += [p for p in sorted((FIXTURES / "real-runs").glob("cosmos-rl-*/*")) if p.is_dir()]
    runs += [p / "run.out" for p in list(runs) if (p / "run.out").is_file()]
    runs += [p for p in sorted((ROOT / "a1x_diagnostics" / "examples").iterdir()) if p.is_dir()]
    return runs


def _toml(target: Path) -> Path | None:
    folder = target if target.is_dir() else target.parent
    tomls = sorted(folder.glob("*.toml"))
    return tomls[0] if tomls else None


@pytest.mark.parametrize("target", _targets(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_fix_on_a_recorded_run_is_safe_to_apply(target: Path) -> None:
    for config in (None, _toml(target)):
        report = check(target, config_path=config)
        for finding in report.findings:
            paths = [f.path for f in finding.fixes]
            assert len(paths) == len(set(paths)), (finding.id, paths)  # one edit per key: one change
            for fx in finding.fixes:
                assert fx.path not in ALGORITHM, (finding.id, fx.path)
                assert fx.path != "rollout.backend", (finding.id, fx)  # another engine: never a fix
                # every recorded run uses backend example_hf (their READMEs), which never reads the vLLM key
                assert fx.path != "rollout.gpu_memory_utilization", (finding.id, fx)
                # one or two GPUs each: no layout that needs more
                if fx.path in MORE_GPUS and isinstance(fx.current, int) and isinstance(fx.proposed, int):
                    assert fx.proposed <= fx.current, (finding.id, fx)
                if config is None and finding.id in TRADE_OFF:
                    assert "trade-off" in fx.why, (finding.id, fx.why)
