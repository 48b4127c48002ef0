"""Build log lines in the exact reference formats and run the real parser + Collector on them.

Lines come from docs/reference/cosmos-rl.md §3.3 (the ``[cosmos]`` prefix, ``[rank<N>]:`` under torchrun),
§4.3-§4.7 (controller), §5-§6 (policy, rollout), §2 (launcher) and docs/reference/alpamayo-recipe.md §9.3.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from a1x_diagnostics.detectors import ConfigLike, DumpConfig
from a1x_diagnostics.engine import Collector
from a1x_diagnostics.events import ConfigDump, Role, Source
from a1x_diagnostics.findings import CheckResult, CheckState, Finding, RunOutcome
from a1x_diagnostics.parsing import parse_lines

T0 = datetime(2025, 6, 11, 9, 0, 0)
POLICY_UUID = "11111111-2222-3333-4444-555555555555"
ROLLOUT_UUID = "99999999-8888-7777-6666-555555555555"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def cosmos(t: float, msg: str, level: str = "INFO", rank: int | None = None) -> str:
    stamp = at(t)
    text = f"[cosmos] {stamp:%Y-%m-%d %H:%M:%S},{stamp.microsecond // 1000:03d} - cosmos - {level} - {msg}"
    return text if rank is None else f"[rank{rank}]:{text}"


def stat(t: float, samples: int, pending: int, *, in_flight: int | None = None, outdated: int = 0) -> str:
    """The controller Stat line: new shape (0.4.4+) with ``in_flight``, else the 747d1bd shape."""
    if in_flight is None:
        return cosmos(
            t,
            f"[Controller] Stat: {samples} samples, {samples * 50} completion tokens, {pending} pending rollouts, "
            f"{t} seconds elapsed",
        )
    return cosmos(
        t,
        f"[Controller] Stat: {samples} samples, {samples * 50} completion tokens, {pending} pending rollouts, "
        f"{in_flight} in-flight, {outdated} filtered (outdated), {t:.2f}s elapsed",
    )


def step(
    t: float,
    n: int,
    total: int,
    *,
    reward: float = -0.25,
    std: float = 0.21,
    loss: float = 0.0123,
    grad: float = 0.19,
    it: float = 4.7,
    rmax: float = 0.0,
    rmin: float = -1.0,
) -> str:
    return cosmos(
        t,
        f"Step: {n}/{total}, Reward Mean: {reward:.4f}, Reward Std: {std:.4f}, Reward Max: {rmax:.4f}, "
        f"Reward Min: {rmin:.4f}, Completion Length Mean: 1.00, Completion Length Max: 1.00, "
        f"Average loss: {loss:.5f}, Max loss: {loss * 2:.5f}, "
        f"Learning rate: 2.00000e-06, Entropy: 0.41250, Effective Entropy: 0.41250, Grad Norm: {grad:.5f}, "
        f"KL Loss Avg: 0.00000, KL Loss Max: 0.00000, Iteration time: {it:.2f}s.",
    )


def train_report(t: float, n: int, total: int, *, adv_std: float = 0.87, rollouts: int = 48, **extra: float) -> str:
    metrics = {
        "train_step": float(n),
        "train/iteration_time": 4.7,
        "train/loss_avg": 0.0123,
        "train/grad_norm": 0.19,
        "train/total_steps": total,
        "train/reward_mean": -0.25,
        "train/reward_std": 0.21,
        "rollout/advantage_std": adv_std,
        "rollout/advantage_max": 2.1 if adv_std else 0.0,
        "rollout/advantage_min": -2.3 if adv_std else 0.0,
        "train/traj_L2": 1.5,
        "train/comfort_reward": -0.15,
        **extra,
    }
    body = ", ".join(f"{k}: {v}" for k, v in metrics.items())
    return cosmos(t, f"[Controller] Train report data from total {rollouts} rollouts: {body}")


def config_dump(t: float, config: Mapping[str, Any], rank: int = 0) -> str:
    return cosmos(t, f"[Policy] Loaded configuration: {dict(config)!r}", rank=rank)


def recipe_config(**overrides: Any) -> dict[str, Any]:
    """A model_dump()-like effective config of the local motion recipe (docs/reference/alpamayo-recipe.md §8.4)."""
    cfg: dict[str, Any] = {
        "custom": {"alpamayo": {"prefetch": {"capacity": 16, "num_workers": 5, "log_level": "info"}}},
        "train": {
            "train_batch_per_replica": 48,
            "sync_weight_interval": 2,
            "compile": False,
            "train_policy": {
                "type": "grpo",
                "variant": "grpo",
                "allowed_outdated_steps": 50,
                "mini_batch": 1,
                "bypass_reward": False,
                "outdated_rollout_fetch_batch_size": 0,
                "max_inflight_steps": None,
            },
            "ckpt": {"enable_checkpoint": True},
        },
        "rollout": {
            "n_generation": 12,
            "batch_size": 2,
            "gpu_memory_utilization": 0.8,
            "max_response_length": 2048,
            "sampling_config": {"temperature": 0.6, "top_p": 0.98, "repetition_penalty": 1.0},
            "parallelism": {"n_init_replicas": 1, "tp_size": 1, "pp_size": 1, "dp_shard_size": 1},
        },
        "policy": {
            "model_max_length": 4096,
            "model_gradient_checkpointing": True,
            "parallelism": {
                "n_init_replicas": 1,
                "tp_size": 1,
                "cp_size": 1,
                "dp_shard_size": 4,
                "pp_size": 1,
                "dp_replicate_size": 1,
            },
        },
        "logging": {"logger": ["console"]},
        "mode": "disaggregated",
    }
    for dotted, value in overrides.items():
        node = cfg
        parts = dotted.split("__")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return cfg


_ROLE = re.compile(r"(controller|policy|rollout|reference)(?:_(\d+))?\.log$")


def source_of(name: str) -> Source:
    m = _ROLE.search(name)
    if m is None:
        return Source(name, Role.LAUNCHER)
    role = Role(m.group(1))
    return Source(name, role, int(m.group(2)) if m.group(2) else None)


@dataclass
class Result:
    findings: list[Finding]
    checks: list[CheckResult]
    collector: Collector
    outcome: RunOutcome

    @property
    def ids(self) -> set[str]:
        return {f.id for f in self.findings}

    def of(self, finding_id: str) -> list[Finding]:
        return [f for f in self.findings if f.id == finding_id]

    def one(self, finding_id: str) -> Finding:
        found = self.of(finding_id)
        assert len(found) == 1, (finding_id, [f.id for f in self.findings])
        return found[0]

    def state(self, check_id: str) -> CheckState:
        return next(c.state for c in self.checks if c.id == check_id)

    def note(self, check_id: str) -> str | None:
        return next(c.note for c in self.checks if c.id == check_id)


def run_logs(
    files: Mapping[str, Iterable[str]],
    *,
    config: ConfigLike | None = None,
    now: float | None = None,
    mtimes: Mapping[str, float] | None = None,
) -> Result:
    collector = Collector()
    for name, lines in files.items():
        source = source_of(name)
        collector.note_file(source, mtime=(mtimes or {}).get(name))
        collector.extend(parse_lines(list(lines), source))
    assessment = collector.assess(now, config)
    return Result(assessment.findings, assessment.checks, collector, assessment.outcome)


def dump_config(config: Mapping[str, Any]) -> DumpConfig:
    """A ConfigLike over a dict, as if the policy had logged it."""
    return DumpConfig(
        ConfigDump(source=Source("policy_0.log", Role.POLICY, 0), line=1, text="", config=config, scope="full")
    )


def steady_run(
    steps: int,
    total: int,
    *,
    step_every: float = 10.0,
    new_stat: bool = False,
    pending: Iterable[int] | None = None,
    start: float = 100.0,
    **step_kwargs: Any,
) -> list[str]:
    """Controller lines of a balanced run: two Stat lines and one Step per step."""
    lines: list[str] = []
    samples = 0
    pend = list(pending) if pending is not None else None
    for i in range(1, steps + 1):
        t = start + i * step_every
        for j in range(2):
            samples += 24
            p = pend[(2 * (i - 1) + j) % len(pend)] if pend else 24 * (j + 1)
            lines.append(stat(t - step_every / 2 + j, samples, p, in_flight=p + 48 if new_stat else None))
        lines.append(step(t, i, total, **step_kwargs))
    return lines
