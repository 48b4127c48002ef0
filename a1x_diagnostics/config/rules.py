"""Lint rules: what a recipe TOML gets wrong before launch, with the lines and the cure.

Each rule reads one ``LoadedConfig`` (plus what only the user knows: GPUs per node, nodes,
local or cluster, the environment) and returns at most one ``Finding`` for its catalog id, with
the TOML lines as evidence and the ``Fix`` entries that cure it. Facts come from
``docs/reference/cosmos-rl.md`` (C) and ``docs/reference/alpamayo-recipe.md`` (R); each rule names its sections.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from a1x_diagnostics.catalog import entry
from a1x_diagnostics.config import gpus
from a1x_diagnostics.config.cosmos_toml import MISSING, shown
from a1x_diagnostics.config.loader import LoadedConfig, declared_policy_type
from a1x_diagnostics.config.schema import GRPO_MARKER_KEYS, effective_policy_type
from a1x_diagnostics.findings import CheckResult, CheckState, Evidence, Finding, Fix, Severity
from a1x_diagnostics.layout import divisible_split
from a1x_diagnostics.recipe_entries import ENTRIES, SHIPPED_UNREAD, Entry, entry_named, readers

COMPUTE_CHOICES = ("local", "cluster")
MAX_MACHINE = 1 << 16  # --gpus / --nodes: far above any machine, so the arithmetic stays small
PREFETCH = "custom.alpamayo.prefetch"
PREFETCH_LOG_LEVELS = ("off", "error", "warn", "warning", "info", "debug", "trace")  # R:X/prefetch/server.py
RECIPE_BACKEND = "reasoning_vla_vllm_rollout"  # registered by the entry scripts (R §8.1)
RECIPE_TRAINER = "reasoning_vla_grpo"

# R §8.5: local vs cluster values. Replica counts are the user's sizing decision and the prefetch
# capacity / dispatch flag have rules of their own, so they are not compared here.
RECOMMENDED: dict[str, dict[str, Any]] = {
    "local": {
        "policy.parallelism.dp_shard_size": 4,
        "train.train_batch_per_replica": 48,
        "train.optm_lr": 2e-6,
        "train.sync_weight_interval": 2,
        "rollout.batch_size": 2,
        "rollout.n_generation": 12,
    },
    "cluster": {
        "policy.parallelism.dp_shard_size": 8,
        "train.train_batch_per_replica": 40,
        "train.optm_lr": 2e-6,
        "train.sync_weight_interval": 5,
        "rollout.batch_size": 6,
        "rollout.n_generation": 12,
    },
}


@dataclass(frozen=True, slots=True)
class LintContext:
    """What the TOML cannot say: the machine and the shape of the run."""

    gpus_per_node: int | None = None
    nodes: int | None = None
    compute: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    entry: str | None = None  # the entry script cosmos-rl will run (a path or its name), when known

    @property
    def entry_script(self) -> Entry | None:
        """The recipe's entry that ``entry`` names; None when unknown or a script of the user's own."""
        return entry_named(self.entry) if self.entry else None

    @property
    def multi_node(self) -> bool:
        if self.nodes is not None:
            return self.nodes > 1
        return self.compute == "cluster"

    @property
    def compute_shape(self) -> str | None:
        if self.compute is not None:
            return self.compute
        if self.nodes is not None and self.nodes > 1:
            return "cluster"
        return None


@dataclass(frozen=True, slots=True)
class Skipped:
    """A rule that cannot judge this input (say why)."""

    note: str


RuleResult = Finding | Skipped | None


class _Builder:
    """Collects evidence, fixes and numbers for one finding id."""

    def __init__(self, cfg: LoadedConfig, finding_id: str) -> None:
        self.cfg = cfg
        self.id = finding_id
        self.severity = entry(finding_id).severity
        self.problems: list[str] = []
        self.evidence: list[Evidence] = []
        self.fixes: list[Fix] = []
        self.data: dict[str, Any] = {}
        self.needs_value: list[str] = []

    def problem(self, text: str, *paths: str) -> None:
        self.problems.append(text)
        for path in paths:
            self.cite(path)

    def cite(self, path: str) -> None:
        ev = self.cfg.locate(path)
        if ev is None:
            ev = Evidence(file=str(self.cfg.path), line=None, text=f"{path} is not set in the file")
        if ev not in self.evidence:
            self.evidence.append(ev)

    def fix(self, path: str, proposed: Any, why: str, *, needs_value: bool = False) -> None:
        """Propose ``path = proposed``; a later fix of the same path replaces the earlier one in place."""
        current = self.cfg.raw(path) if self.cfg.is_set(path) else None
        candidate = Fix(path=path, current=current, proposed=proposed, why=why)
        same = [i for i, f in enumerate(self.fixes) if f.path == path]
        if same:
            self.fixes[same[0]] = candidate
        else:
            self.fixes.append(candidate)
        if needs_value and path not in self.needs_value:
            self.needs_value.append(path)

    def build(self, *, action: str | None = None) -> Finding | None:
        if not self.problems:
            return None
        data = dict(self.data)
        if self.needs_value:
            data["needs_value"] = self.needs_value
        return Finding(
            id=self.id,
            severity=self.severity,
            title=entry(self.id).title,
            explanation=" ".join(self.problems),
            evidence=self.evidence,
            fixes=self.fixes,
            action=action,
            data=data,
        )


def _is_placeholder(value: Any) -> bool:
    """The shipped ``/path/to/...`` (R §8.4 "must edit"), a ``<...>`` stand-in, or a ``$VAR`` that
    TOML never expands (R §3)."""
    return isinstance(value, str) and ("/path/to/" in value or value.startswith(("<", "$")))


def _logger(cfg: LoadedConfig) -> list[str]:
    return [str(x).lower() for x in cfg.get("logging.logger")]


# What the arithmetic of the GPU, batch and prefetch rules reads: with one of these out of range
# (bounds.py) the computation is skipped and invalid_value names the key.
_SIZING = (
    "policy.parallelism.",
    "rollout.parallelism.",
    "train.train_batch_per_replica",
    "train.train_policy.mini_batch",
)


def _out_of_range(cfg: LoadedConfig, *prefixes: str) -> Skipped | None:
    """Skipped when a value the rule computes with is outside its range (``invalid_value`` reports it)."""
    for bad in cfg.out_of_range:
        if bad.path.startswith(prefixes):
            return Skipped(f"{bad.path} = {bad.value} is out of range (see invalid_value)")
    return None


def _policy_replicas_per_node(cfg: LoadedConfig, ctx: LintContext) -> int | None:
    """Policy replicas sharing one node: the base of the prefetch sizing rule (R §9.1)."""
    n_policy = cfg.get("policy.parallelism.n_init_replicas")
    if ctx.gpus_per_node is not None:
        per_replica = max(1, gpus.replica_gpus(cfg.raw("policy.parallelism", {})))
        return max(1, min(n_policy, ctx.gpus_per_node // per_replica)) if per_replica <= ctx.gpus_per_node else 1
    if ctx.nodes is not None:
        return max(1, -(-n_policy // ctx.nodes))
    return None if ctx.multi_node else n_policy


def _recipe_skip(cfg: LoadedConfig) -> Skipped | None:
    """Skipped for a TOML that is not the Alpamayo recipe's (no [custom.alpamayo], neither its backend nor its
    trainer): the recipe's values and asserts would propose another engine or another reward (R §8.1)."""
    if cfg.is_set("custom.alpamayo") or cfg.raw("rollout.backend") == RECIPE_BACKEND or cfg.raw(
        "train.train_policy.trainer_type"
    ) == RECIPE_TRAINER:
        return None
    return Skipped("not an Alpamayo recipe TOML (no [custom.alpamayo], not its backend or trainer)")


# --- rules -----------------------------------------------------------------------------------


def placeholder_path(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """R §8.4 must-change list: the shipped ``/path/to/...`` values (grader path: ``grader_missing``)."""
    b = _Builder(cfg, "placeholder_path")
    env_hint = {"policy.model_name_or_path": "ALPAMAYO_MODEL_DIR", "train.output_dir": "TRAIN_OUTPUT_DIR"}
    consequence = {
        "train.output_dir": "checkpoints would go to a directory that is not yours (or fail to be created)",
        "policy.model_name_or_path": "the policy and rollouts load the model from a path that does not exist",
    }
    for path, what in (
        ("train.output_dir", "output directory"),
        ("policy.model_name_or_path", "converted model directory"),
    ):
        value = cfg.get(path)
        if not _is_placeholder(value):
            continue
        b.problem(f"{path} = {value!r} is a placeholder: {consequence[path]}.", path)
        shell_value = ctx.env.get(env_hint[path], "")
        if shell_value and not _is_placeholder(shell_value):
            b.fix(path, shell_value, f"the value of ${env_hint[path]} in this shell; TOML does not expand variables")
        else:
            b.fix(path, f"<{what}>", "only you know this path; TOML does not expand $VARS", needs_value=True)
    for dotted in _string_leaves(cfg.data):
        if dotted in ("train.output_dir", "policy.model_name_or_path") or dotted.startswith(
            "custom.alpamayo.reasoning"
        ):
            continue
        value = cfg.raw(dotted)
        if isinstance(value, str) and "/path/to/" in value:
            b.problem(f"{dotted} = {value!r} is a placeholder path.", dotted)
            b.fix(dotted, "<path>", "only you know this path", needs_value=True)
    b.data = {"paths": [f.path for f in b.fixes]}
    return b.build()


def _string_leaves(node: Any, prefix: str = "") -> list[str]:
    if isinstance(node, dict):
        return [leaf for k, v in node.items() for leaf in _string_leaves(v, f"{prefix}{k}.")]
    return [prefix[:-1]] if isinstance(node, str) else []


def insufficient_gpus(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """C §2.2-2.4, §15; R §8.3, §14 #2: replicas × GPUs against the node."""
    if ctx.gpus_per_node is None:
        return Skipped("GPUs per node unknown: pass --gpus N to check the GPU arithmetic")
    skipped = _out_of_range(cfg, *_SIZING)
    if skipped is not None:
        return skipped
    b = _Builder(cfg, "insufficient_gpus")
    nodes = ctx.nodes or 1
    p = gpus.plan(cfg.data, ctx.gpus_per_node)
    have = ctx.gpus_per_node * nodes
    b.data = {
        "gpus_per_node": ctx.gpus_per_node,
        "nodes": nodes,
        "gpus_needed": p.gpus_needed,
        "gpus_available": have,
        "workers_required": p.workers_required,
        "policy": f"{p.policy_replicas} x {p.policy_gpus}",
        "rollout": f"{p.rollout_replicas} x {p.rollout_gpus}",
    }
    arithmetic = (
        f"The replicas need {p.policy_replicas} policy x {p.policy_gpus} GPU + {p.rollout_replicas} rollout x "
        f"{p.rollout_gpus} GPU = {p.gpus_needed} GPUs; {nodes} node(s) x {ctx.gpus_per_node} = {have}."
    )
    cite = (
        "policy.parallelism.n_init_replicas",
        "policy.parallelism.dp_shard_size",
        "rollout.parallelism.n_init_replicas",
    )
    if ctx.gpus_per_node not in gpus.LAUNCHER_GPUS_PER_NODE:
        b.problem(
            f"The launcher accepts only 1, 2, 4 or 8 visible GPUs per node and stops with 'Number of GPUs per "
            f"node must be 1, 2, 4, or 8' on {ctx.gpus_per_node}; restrict CUDA_VISIBLE_DEVICES.",
            *cite,
        )
    if p.oversized_replica and nodes == 1:
        b.problem(
            f"{arithmetic} One replica needs more GPUs than the node has, so the launcher stops with the "
            "misleading 'Replica with GPUs larger than 8 occurs but not on Lepton job, please specify "
            "--node-ip-list ...' (it is about this node's GPU count, not about 8 or Lepton).",
            *cite,
        )
    elif p.gpus_needed > have:
        b.problem(
            f"{arithmetic} The launcher raises no error: it plans {p.workers_required} worker nodes ('Number of "
            "workers required: ...', 'Multiple worker nodes will be used ...'), starts only this node's share, "
            "and the started replicas wait forever for the missing ones (no Step: or Stat: lines, ever).",
            *cite,
        )
    if b.problems:
        _propose_smaller_policy(b, cfg, p, have, ctx.gpus_per_node)
    return b.build(action="Run on a node with enough GPUs (check CUDA_VISIBLE_DEVICES), or shrink the replicas.")


def _propose_smaller_policy(b: _Builder, cfg: LoadedConfig, p: gpus.Placement, have: int, per_node: int) -> None:
    """The largest policy dp_shard_size that fits and still divides the batch (R §14 #2)."""
    dp_shard = cfg.get("policy.parallelism.dp_shard_size")
    if dp_shard < 1 or p.policy_replicas < 1:
        return
    others = p.policy_gpus // dp_shard
    budget = min((have - p.rollout_replicas * p.rollout_gpus) // p.policy_replicas, per_node)
    batch, mini = cfg.get("train.train_batch_per_replica"), _mini_batch(cfg)
    for d in range(dp_shard - 1, 0, -1):
        if d * others <= budget and batch % (d * mini) == 0:
            b.fix(
                "policy.parallelism.dp_shard_size",
                d,
                f"fits {p.policy_replicas} x {d * others} + {p.rollout_replicas} x {p.rollout_gpus} GPUs in {have}; "
                "for wiring tests only: less FSDP sharding means more memory per GPU (R §14 #2)",
            )
            return


def _mini_batch(cfg: LoadedConfig) -> int:
    value = cfg.get("train.train_policy.mini_batch")
    return value if isinstance(value, int) and value > 0 else 1


def batch_not_divisible(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """C §8.7 #2 (runtime assert ``policy/worker/base.py:101-109``), R §8.7."""
    skipped = _out_of_range(cfg, "train.train_batch_per_replica", "policy.parallelism.dp_shard_size",
                            "train.train_policy.mini_batch")
    if skipped is not None:
        return skipped
    b = _Builder(cfg, "batch_not_divisible")
    batch = cfg.get("train.train_batch_per_replica")
    dp = cfg.get("policy.parallelism.dp_shard_size")
    mini = cfg.get("train.train_policy.mini_batch")
    if dp < 1 or mini < 1 or batch < 1:
        return Skipped("dp_shard_size, mini_batch or train_batch_per_replica is not positive (see invalid_value)")
    if batch % (dp * mini) == 0:
        return None
    b.data = {"train_batch_per_replica": batch, "dp_shard_size": dp, "mini_batch": mini}
    b.problem(
        f"train_batch_per_replica = {batch} is not divisible by dp_shard_size x mini_batch = {dp} x {mini} = "
        f"{dp * mini}: every policy rank fails at its first step with 'train_batch_per_replica(...) of grpo must "
        "be divisible by dp_shard_size(...) * mini_batch(...)'.",
        "train.train_batch_per_replica",
        "policy.parallelism.dp_shard_size",
        "train.train_policy.mini_batch",
    )
    # train_batch_per_replica is the algorithm's batch: only its split changes, never onto more GPUs
    d, m = divisible_split(batch, dp, mini)
    if d != dp:
        b.fix("policy.parallelism.dp_shard_size", d,
              f"{batch} completions split over {d} GPUs; trade-off: fewer GPUs shard the policy, more memory on each")
    if m != mini:
        b.fix("train.train_policy.mini_batch", m,
              f"{batch} / ({d} x {m}) = {batch // (d * m)} mini-batches per rank; trade-off: more, smaller passes")
    return b.build()


def _respell(b: _Builder, wrong: str, right: str, value: Any, reader: str) -> None:
    """Fixes that move a misspelled key's value to the spelling ``reader`` reads."""
    b.fix(wrong, None, f"misspelled; {reader} reads {right}")
    if b.cfg.is_set(right):
        why = f"the value written under the misspelling replaces {b.cfg.raw(right)!r}; check it is the one you want"
    else:
        why = f"the spelling {reader} reads (was {wrong.rpartition('.')[2]})"
    b.fix(right, value, why)


def prefetch_misconfig(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """R §9.1, §9.4, §8.5; C §13.3: the recipe's node prefetch, which Cosmos never validates."""
    skipped = _recipe_skip(cfg)
    if skipped is not None:
        return skipped
    b = _Builder(cfg, "prefetch_misconfig")
    for unknown in cfg.unknown_keys:
        if not (unknown.path.startswith(PREFETCH + ".") or unknown.suggestion == PREFETCH):
            continue
        value = cfg.raw(unknown.path)
        b.problem(f"{unknown.message}: the recipe reads only its own spelling and uses the default.", unknown.path)
        if unknown.suggestion:
            _respell(b, unknown.path, unknown.suggestion, value, "the recipe")
    respelled = {f.path: f.proposed for f in b.fixes if f.proposed is not None}
    capacity = respelled.get(f"{PREFETCH}.capacity", cfg.get(f"{PREFETCH}.capacity"))  # after the respelling
    batch = cfg.get("train.train_batch_per_replica")
    sizing = _out_of_range(cfg, "policy.parallelism.", "train.train_batch_per_replica", f"{PREFETCH}.capacity")
    per_node = _policy_replicas_per_node(cfg, ctx) if sizing is None else None
    wanted = batch * per_node if per_node else None
    b.data = {"capacity": capacity, "train_batch_per_replica": batch, "policy_replicas_per_node": per_node}
    if not isinstance(capacity, int):
        capacity = 0
    if capacity <= 0:
        where = "is not set" if not cfg.is_set(f"{PREFETCH}.capacity") else f"= {capacity}"
        b.problem(
            f"[custom.alpamayo.prefetch] capacity {where}: node prefetch is off and every rank loads its samples "
            "synchronously (the recipe's README: ~44 s per iteration instead of 5-12 s with prefetch); no "
            "[AlpamayoPrefetch] line will appear in the logs.",
            f"{PREFETCH}.capacity",
        )
        if wanted:
            b.fix(
                f"{PREFETCH}.capacity",
                wanted,
                f"train_batch_per_replica {batch} x {per_node} policy replica(s) per node",
            )
    elif wanted and 0 < capacity < wanted:
        b.problem(
            f"capacity = {capacity} is below train_batch_per_replica x policy replicas per node = {batch} x "
            f"{per_node} = {wanted} (NVIDIA's sizing rule): look-ahead samples are evicted before use, so many "
            "requests miss and load synchronously. Harmless only if the dataset has at most "
            f"{capacity} samples (the cache never holds more than the dataset).",
            f"{PREFETCH}.capacity",
            "train.train_batch_per_replica",
        )
        b.fix(f"{PREFETCH}.capacity", wanted, f"{batch} x {per_node}; capped at the dataset size anyway")
    level = cfg.get(f"{PREFETCH}.log_level")
    if str(level).lower() not in PREFETCH_LOG_LEVELS:
        b.problem(
            f"log_level = {level!r} is not one of {', '.join(PREFETCH_LOG_LEVELS)}; it acts as 'info'.",
            f"{PREFETCH}.log_level",
        )
        b.fix(f"{PREFETCH}.log_level", "info", "the shipped value")
    if ctx.multi_node and capacity > 0 and not cfg.get("train.train_policy.data_dispatch_as_rank_in_mesh"):
        b.problem(
            "Multi-node with data_dispatch_as_rank_in_mesh = false: the prefetch look-ahead predicts the wrong "
            "sample indices, so the cache misses (R §9.4).",
            "train.train_policy.data_dispatch_as_rank_in_mesh",
        )
        b.fix("train.train_policy.data_dispatch_as_rank_in_mesh", True, "required for multi-node runs (R §8.5)")
    return b.build()


def duplicate_samples(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """R §8.5, §14 #15; C §13.3: prompt routing across replicas on several nodes."""
    if not ctx.multi_node:
        return Skipped("single node: prompt routing cannot duplicate samples across nodes")
    if cfg.get("train.train_policy.data_dispatch_as_rank_in_mesh"):
        return None
    b = _Builder(cfg, "duplicate_samples")
    b.problem(
        "A multi-node run with data_dispatch_as_rank_in_mesh = false trains on duplicate samples across "
        "replicas (R §14 #15); the recipe's prefetch also relies on rank-based dispatch (R §8.5).",
        "train.train_policy.data_dispatch_as_rank_in_mesh",
    )
    b.fix("train.train_policy.data_dispatch_as_rank_in_mesh", True, "mandatory for multi-node (R §8.5)")
    return b.build()


def wandb_key_missing(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """R §8.4: with ``wandb`` in the logger and no key, Cosmos silently skips W&B."""
    logger = _logger(cfg)
    if "wandb" not in logger:
        return None
    if ctx.env.get("WANDB_API_KEY") or ctx.env.get("WANDB_MODE", "").lower() in ("disabled", "offline", "dryrun"):
        return None
    b = _Builder(cfg, "wandb_key_missing")
    b.problem(
        "logger includes 'wandb' but WANDB_API_KEY is not set in this environment: Cosmos-RL checks for an API "
        "key and silently skips W&B, so no run appears in your project (unless `wandb login` stored a key).",
        "logging.logger",
    )
    b.fix("logging.logger", [x for x in logger if x != "wandb"] or ["console"], "console only, until a key is set")
    return b.build(action="export WANDB_API_KEY before launching, or set WANDB_MODE=disabled")


def logging_blind(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """C §4.5, §8.7 #6: no ``console`` logger means no ``Step:`` lines to watch."""
    logger = _logger(cfg)
    if "console" in logger:
        return None
    b = _Builder(cfg, "logging_blind")
    what = "is empty: no step metrics are logged anywhere" if not logger else f"= {logger} has no 'console'"
    b.problem(
        f"[logging] logger {what}. Without the console logger controller.log has no 'Step: n/N, Reward Mean ...' "
        "lines, so progress, reward and GRPO-collapse detection go blind.",
        "logging.logger",
    )
    b.fix("logging.logger", ["console", *logger], "adds the per-step console line; keeps the other loggers")
    return b.build()


def grpo_became_sft(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """C §8.1, §8.7 #8: at 747d1bd the key heuristic decides the type, even over ``type = "grpo"``."""
    policy = cfg.raw("train.train_policy")
    if not isinstance(policy, dict) or effective_policy_type(policy) == "grpo":
        return None
    if declared_policy_type(cfg.data) == "sft" and "type" in policy:
        return None  # the user asked for SFT
    b = _Builder(cfg, "grpo_became_sft")
    b.problem(
        f"[train.train_policy] sets none of {', '.join(GRPO_MARKER_KEYS)}: Cosmos-RL 747d1bd (the recipe's pin) "
        'ignores type = "grpo" and trains SFT, silently dropping the GRPO keys.',
        "train.train_policy.type" if "type" in policy else "train.train_policy",
    )
    b.fix(
        "train.train_policy.kl_beta",
        0.0,
        "any of the five marker keys keeps GRPO; 0.0 is the default (no reference model)",
    )
    if policy.get("type") != "grpo":
        b.fix("train.train_policy.type", "grpo", "explicit type, honoured by newer Cosmos-RL")
    return b.build()


def no_group_signal(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """C §13.5; R §10.6: GRPO advantages are relative to the group of n_generation completions."""
    n = cfg.get("rollout.n_generation")
    if n >= 2:
        return None
    b = _Builder(cfg, "no_group_signal")
    b.data = {"n_generation": n}
    b.problem(
        f"rollout.n_generation = {n}: a group of {n} completion(s) per prompt has no spread, so every "
        "advantage is 0 and GRPO learns nothing.",
        "rollout.n_generation",
    )
    b.fix("rollout.n_generation", 12, "the recipe's value (R §8.5): GRPO needs a group to compare; trade-off: "
          "12 completions per prompt, 12 times the rollout work of one")
    return b.build()


def gpu_memory_utilization_range(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """C §13.4, §9; R §14 #9: the vLLM memory fraction."""
    value = cfg.get("rollout.gpu_memory_utilization")
    mode = cfg.get("mode")
    backend = cfg.get("rollout.backend")
    if not (isinstance(backend, str) and (backend in ("vllm", "vllm_async", "trtllm") or "vllm" in backend.lower())):
        return Skipped(f"rollout.backend = {backend!r} does not read gpu_memory_utilization (C §9)")
    b = _Builder(cfg, "gpu_memory_utilization_range")
    b.data = {"gpu_memory_utilization": value, "mode": mode}
    if not 0 < value <= 1:
        b.severity = Severity.CRITICAL
        b.problem(
            f"gpu_memory_utilization = {value} is not a fraction in (0, 1]: vLLM refuses to start.",
            "rollout.gpu_memory_utilization",
        )
        b.fix("rollout.gpu_memory_utilization", 0.8, "the recipe's value")
    elif mode.startswith("colocated") and value > 0.5:
        b.problem(
            f"gpu_memory_utilization = {value} with mode = {mode!r}: the policy shares these GPUs, so vLLM's "
            "share must leave room for it (upstream colocated examples use 0.3-0.4).",
            "rollout.gpu_memory_utilization",
            "mode",
        )
        b.fix("rollout.gpu_memory_utilization", 0.4, "leaves the policy room on the shared GPU")
    elif value > 0.95:
        b.problem(
            f"gpu_memory_utilization = {value} leaves under 5% of the GPU for everything outside vLLM's pool; "
            "engine start-up OOMs ('No available memory for the cache blocks') are likely.",
            "rollout.gpu_memory_utilization",
        )
        b.fix("rollout.gpu_memory_utilization", 0.7, "R §14 #9")
    return b.build()


def recipe_parallelism_unsupported(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """R §8.7, §14 #19: the recipe asserts TP, CP, PP = 1 and compile = false."""
    skipped = _recipe_skip(cfg)
    if skipped is not None:
        return skipped
    b = _Builder(cfg, "recipe_parallelism_unsupported")
    asserts = {
        "tp_size": "TP not supported for ReasoningVLACosmos",
        "cp_size": "CP not supported ...",
        "pp_size": "Pipeline Parallel is not supported for Reasoning VLA",
    }
    for key, message in asserts.items():
        value = cfg.get(f"policy.parallelism.{key}")
        if value > 1:
            default = "" if cfg.is_set(f"policy.parallelism.{key}") else " (the 747d1bd default, not set in the file)"
            b.problem(
                f"policy.parallelism.{key} = {value}{default}: the policy fails with '{message}'.",
                f"policy.parallelism.{key}",
            )
            b.fix(f"policy.parallelism.{key}", 1, "the recipe supports only 1")
    if cfg.get("train.compile"):
        default = "" if cfg.is_set("train.compile") else " (the 747d1bd default, not set in the file)"
        b.problem(
            f"train.compile = true{default}: the policy fails with 'Compile not supported for ReasoningVLACosmos'.",
            "train.compile",
        )
        b.fix("train.compile", False, "the recipe requires compile = false")
    return b.build()


def grader_missing(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """R §7, §14 #5: the joint rewards load the Lingo-Judge grader at the first reward."""
    if not cfg.is_set("custom.alpamayo.reward.reasoning_weight") and not reward_entry(cfg, ctx).grader:
        return Skipped("motion reward: no reasoning grader needed")
    key = "custom.alpamayo.reasoning_grading_model_path"
    value = cfg.raw(key)
    fallback = ctx.env.get("ALPAMAYO_REASONING_GRADING_MODEL_PATH", "")
    b = _Builder(cfg, "grader_missing")
    if value is None and fallback and not _is_placeholder(fallback):
        return None
    if value is None:
        b.problem(
            "The joint reward (reasoning_weight is set) needs the Lingo-Judge grader, but "
            "reasoning_grading_model_path is not set (nor ALPAMAYO_REASONING_GRADING_MODEL_PATH): the first "
            "reward computation fails.",
            "custom.alpamayo.reward.reasoning_weight",
            "custom.alpamayo",
        )
    elif _is_placeholder(value):
        b.problem(
            f"reasoning_grading_model_path = {value!r} is a placeholder: the first reward fails with "
            "'Reasoning grading model directory does not exist: ...'.",
            key,
        )
    else:
        return None
    lingo = ctx.env.get("LINGO_JUDGE_DIR", "")
    if lingo and not _is_placeholder(lingo):
        b.fix(key, lingo, "the value of $LINGO_JUDGE_DIR in this shell; TOML does not expand variables")
    else:
        b.fix(
            key,
            "<Lingo-Judge directory>",
            "the directory of `hf download wayveai/Lingo-Judge --local-dir DIR`",
            needs_value=True,
        )
    return b.build(action="hf download wayveai/Lingo-Judge --local-dir DIR, then put DIR in the TOML")


def outdated_steps_below_sync(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """C §8.6, §13.2, §15: Cosmos raises allowed_outdated_steps to sync_weight_interval - 1."""
    if cfg.get("train.train_policy.type") != "grpo":
        return None
    allowed = cfg.get("train.train_policy.allowed_outdated_steps")
    interval = cfg.get("train.sync_weight_interval")
    if allowed + 1 >= interval:
        return None
    b = _Builder(cfg, "outdated_steps_below_sync")
    b.data = {"allowed_outdated_steps": allowed, "sync_weight_interval": interval}
    b.problem(
        f"allowed_outdated_steps = {allowed} is below sync_weight_interval - 1 = {interval - 1}: Cosmos-RL raises "
        f"it to {interval - 1} at load with only a WARNING, so the run is more off-policy than the file says.",
        "train.train_policy.allowed_outdated_steps",
        "train.sync_weight_interval",
    )
    b.fix("train.train_policy.allowed_outdated_steps", interval - 1, "what Cosmos-RL would use anyway, now visible")
    return b.build()


def tp_size_implicit(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """C §2.2, §8.7 #1: the launcher defaults tp_size to 1, the schema to 2."""
    b = _Builder(cfg, "tp_size_implicit")
    for role in ("policy", "rollout"):
        key = f"{role}.parallelism.tp_size"
        if cfg.is_set(key):
            continue
        b.problem(
            f"{key} is not set: the launcher sizes the {role} replica with tp_size = 1 but the replica builds the "
            "schema default tp_size = 2 and dies with 'Invalid parallel dims: ... != WORLD_SIZE(...)'.",
            key,
        )
        b.fix(key, 1, "explicit, so launcher and replica agree; the recipe supports only 1")
    if b.problems:
        b.severity = Severity.CRITICAL  # a certain crash at start, not a style issue
    return b.build()


def checkpointing_disabled(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """C §8.4 ``[train.ckpt]``, §8.7 #7; R §8.6, §12: export needs a policy checkpoint."""
    if cfg.get("train.ckpt.enable_checkpoint"):
        return None
    b = _Builder(cfg, "checkpointing_disabled")
    default = "" if cfg.is_set("train.ckpt.enable_checkpoint") else " (the default when not set)"
    b.problem(
        f"train.ckpt.enable_checkpoint is false{default}: the run writes no checkpoint, so there is "
        "nothing to export or resume from.",
        "train.ckpt.enable_checkpoint",
    )
    b.fix("train.ckpt.enable_checkpoint", True, "the recipe's value")
    return b.build()


def policy_oom_config(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """R §14 row 10, §8.4: the policy runs out of GPU memory without gradient checkpointing (the Alpamayo
    policy is 10B parameters). Too little sharding is not judged here: ``dp_shard_size = 1`` is the
    recipe's own advice for wiring tests (R §14 row 2), and the GPU's size is not in the TOML."""
    b = _Builder(cfg, "policy_oom_config")
    if cfg.is_set("policy.model_gradient_checkpointing") and not cfg.get("policy.model_gradient_checkpointing"):
        b.problem(
            "policy.model_gradient_checkpointing = false: every layer's activations are kept for the backward "
            "pass, the first cause of a policy out of memory in the recipe's failure table.",
            "policy.model_gradient_checkpointing",
        )
        b.fix("policy.model_gradient_checkpointing", True, "the recipe's value (R §8.4, §14 row 10)")
    return b.build()


def recommended_value(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """R §8.1, §8.4, §8.5: the recipe's own values, and the local vs cluster table."""
    skipped = _recipe_skip(cfg)
    if skipped is not None:
        return skipped
    b = _Builder(cfg, "recommended_value")
    recipe = {"rollout.backend": RECIPE_BACKEND, "train.train_policy.trainer_type": RECIPE_TRAINER}
    for path, wanted in recipe.items():
        value = cfg.get(path)
        if value != wanted:
            b.problem(
                f"{path} = {value!r}: the recipe's entry scripts register {wanted!r}; other values run code "
                "paths the recipe does not support.",
                path,
            )
            b.fix(path, wanted, "registered by the recipe's entry script (R §8.1)")
    if cfg.get("validation.enable"):
        b.problem(
            "validation.enable = true: the recipe's Hydra config defines no validation split; keep it "
            "disabled (R §8.1, §8.4).",
            "validation.enable",
        )
        b.fix("validation.enable", False, "the recipe's value")
    shape = ctx.compute_shape
    b.data = {"compute": shape}
    noted: list[str] = []
    for path, wanted in RECOMMENDED.get(shape or "", {}).items():
        value = cfg.get(path)
        if value == wanted:
            continue
        if path in ALGORITHM_KEYS:
            noted.append(f"{path} = {wanted!r} (yours {value!r}: an algorithm setting, yours to choose)")
            continue
        if path == "policy.parallelism.dp_shard_size" and not _fits(cfg, ctx, wanted):
            have = "pass --gpus N to check it fits" if ctx.gpus_per_node is None else "it does not fit the GPUs given"
            noted.append(f"{path} = {wanted!r} (yours {value!r}: {have})")
            continue  # a layout is proposed only where the GPUs are known to hold it
        b.problem(f"{path} = {value!r} differs from the recipe's {shape} value {wanted!r} (R §8.5).", path)
        b.fix(path, wanted, f"the recipe's {shape} value (R §8.5)")
    if noted and b.problems:
        return b.build(action=f"The recipe's {shape} table also has " + "; ".join(noted) + ".")
    return b.build()


# Settings of the algorithm itself (the batch a step trains, the group size, the learning rate): a finding may
# name them, a fix never changes them (issue 34: fixes act on the cause, never on the algorithm).
ALGORITHM_KEYS = frozenset({"train.train_batch_per_replica", "rollout.n_generation", "train.optm_lr"})


def _fits(cfg: LoadedConfig, ctx: LintContext, dp_shard: int) -> bool:
    """The replicas fit the GPUs ``--gpus`` (and ``--nodes``) say the run has with this policy dp_shard_size."""
    if ctx.gpus_per_node is None:
        return False
    data = {**cfg.data, "policy": {**cfg.data.get("policy", {}),
                                   "parallelism": {**cfg.raw("policy.parallelism", {}), "dp_shard_size": dp_shard}}}
    return gpus.plan(data, ctx.gpus_per_node).gpus_needed <= ctx.gpus_per_node * (ctx.nodes or 1)


def unknown_toml_key(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """C §8.3, §8.7 #10; R §14 #26: Cosmos-RL silently ignores keys it does not know."""
    b = _Builder(cfg, "unknown_toml_key")
    for unknown in cfg.unknown_keys:
        if unknown.path.startswith("custom."):
            continue  # read by the entry script, not Cosmos-RL: notes (custom_notes), prefetch_misconfig
        if unknown.path.startswith(PREFETCH + ".") or unknown.suggestion == PREFETCH:
            continue  # prefetch_misconfig explains those
        if unknown.note and "harmless" in unknown.note:
            continue
        b.problem(f"{unknown.message}: silently ignored.", unknown.path)
        value = cfg.raw(unknown.path)
        key = unknown.path.rpartition(".")[2]
        if unknown.suggestion:
            _respell(b, unknown.path, unknown.suggestion, value, "Cosmos-RL")
        elif unknown.note and unknown.note.startswith("a top-level key") and not cfg.is_set(key):
            b.fix(unknown.path, None, "inside a table it is ignored")
            b.fix(key, value, "top-level keys go above the first [table]")
        elif unknown.note and unknown.note.startswith("exists in newer"):
            b.fix(unknown.path, None, "has no effect at 747d1bd")
    b.data = {"keys": [u.path for u in cfg.unknown_keys if not u.path.startswith("custom.")]}
    return b.build()


def custom_notes(cfg: LoadedConfig, ctx: LintContext) -> list[str]:
    """Keys under ``[custom]`` that the entry script in use does not read, as notes naming it: Cosmos-RL
    hands ``[custom]`` to the entry script unread (C §8.3), so only the script can ignore a key, and a
    newer entry may read what an older one does not (R §8.1: the collision entry's ``collision_weight``)."""
    entry = ctx.entry_script
    notes: list[str] = []
    if ctx.entry and entry is None:
        notes.append(f"{ctx.entry} is not one of the recipe's entry scripts: [custom] keys are not checked against it")
        return notes
    names = ", ".join(e.name for e in ENTRIES.values())
    for u in cfg.unknown_keys:
        if not u.path.startswith("custom.") or u.path.startswith(PREFETCH + ".") or u.suggestion == PREFETCH:
            continue  # prefetch_misconfig explains the prefetch keys
        parent, _, key = u.path.rpartition(".")
        hint = f"; did you mean {u.suggestion.rpartition('.')[2]}?" if u.suggestion else ""
        where = f" (line {u.line})" if u.line else ""
        if entry is not None:
            notes.append(f"[{parent}] {key}: {entry.name}, the entry script in use, does not read it{hint}{where}")
        elif parent.startswith("custom.alpamayo"):
            notes.append(f"[{parent}] {key}: no entry script of the recipe reads it ({names}){hint}{where}")
        else:
            notes.append(f"[{parent}] {key}: the recipe's entry scripts read only [custom.alpamayo]; yours may{where}")
    if entry is None:
        return notes
    for dotted in _custom_alpamayo_leaves(cfg.data):
        if dotted in entry.reads or dotted in SHIPPED_UNREAD or not readers(dotted):
            continue
        others = ", ".join(e.name for e in readers(dotted))
        path = f"custom.alpamayo.{dotted}"
        parent, _, key = path.rpartition(".")
        loc = cfg.locate(path)
        where = f" (line {loc.line})" if loc is not None and loc.line else ""
        notes.append(
            f"[{parent}] {key}: {entry.name}, the entry script in use, does not read it ({others} does){where}"
        )
    return notes


def _custom_alpamayo_leaves(data: dict[str, Any]) -> list[str]:
    node = data.get("custom", {}).get("alpamayo") if isinstance(data.get("custom"), dict) else None
    if not isinstance(node, dict):
        return []
    return _leaf_paths(node)


def _leaf_paths(node: dict[str, Any], prefix: str = "") -> list[str]:
    out: list[str] = []
    for key, value in node.items():
        if isinstance(value, dict):
            out += _leaf_paths(value, f"{prefix}{key}.")
        else:
            out.append(f"{prefix}{key}")
    return out


TOML_REJECTED_EXIT = "the launcher exits at start with 'Error reading config file ...'"


def toml_rejected(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """C §8.1: Cosmos-RL parses the TOML with the toml package 0.10.2 (TOML 0.5), not TOML 1.0; a file it
    refuses never starts. (A file neither parser reads is refused at load: report.py.)"""
    rejected = cfg.cosmos.rejected if cfg.cosmos is not None else None
    if rejected is None:
        return None
    b = _Builder(cfg, "toml_rejected")
    where = f"line {rejected.line}: " if rejected.line else ""
    byte = f" ({rejected.byte})" if rejected.byte else ""
    if rejected.reader == "controller":
        b.problem(
            f"Cosmos-RL's launcher reads the file, but the copy it writes for the controller (toml.dump) does not "
            f"load again: {rejected.problem}. The controller exits at start with 'Failed to load or parse config "
            "file ...'."
        )
    else:
        b.problem(
            f"Cosmos-RL's TOML parser (toml 0.10.2, not a TOML 1.0 parser) refuses {where}{rejected.problem}"
            f"{byte}: {TOML_REJECTED_EXIT}."
        )
    if rejected.line:
        text = cfg.text_line(rejected.line)
        b.evidence.append(Evidence(file=str(cfg.path), line=rejected.line, text=text if text is not None else ""))
    elif rejected.key is not None and (at := cfg.locate(rejected.key)) is not None:
        b.evidence.append(at)  # the controller's case: the line of the value its copy writes wrongly
    else:
        b.evidence.append(Evidence(file=str(cfg.path), text=f"toml 0.10.2: {rejected.problem}"))
    b.data = {"line": rejected.line, "problem": rejected.problem, "reader": rejected.reader, "byte": rejected.byte}
    return b.build(action=rejected.hint or "write the line the way TOML 0.5 allows (docs/config.md)")


def toml_misread(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """C §8.1: what Cosmos-RL reads differs from what the file says in TOML 1.0 (the launcher's toml 0.10.2,
    then the controller's reading of the launcher's toml.dump copy)."""
    if not cfg.misreads:
        return None
    b = _Builder(cfg, "toml_misread")
    for m in cfg.misreads:
        who = "the launcher (toml 0.10.2)" if m.reader == "launcher" else "the controller (from the launcher's copy)"
        if m.seen is MISSING:
            seen = "drops it"
        elif m.written is MISSING:
            seen = f"reads a key the file does not have: {m.path} = {shown(m.seen)}"
        else:
            seen = f"reads {shown(m.seen)}"
        written = f"{m.path} = {shown(m.written)}" if m.written is not MISSING else m.path
        b.problem(f"{written}: {who} {seen}.", m.path.split("[")[0])
    if cfg.cosmos is not None and cfg.cosmos.bom:
        b.problem("The file starts with a UTF-8 byte-order mark (bytes EF BB BF), which toml reads as part of the "
                  "first key.")
    b.data = {
        "paths": [m.path for m in cfg.misreads],
        "seen": {m.path: shown(m.seen) for m in cfg.misreads},
    }
    return b.build(
        action="write each value so that TOML 0.5 reads it the same: arrays of one type, no table after a value "
        "in an array, UTF-8 without a byte-order mark (docs/config.md)"
    )


def invalid_value(cfg: LoadedConfig, ctx: LintContext) -> RuleResult:
    """C §8.5 (747d1bd validators) and the recipe's own checks (R §9.1, §10, §7)."""
    b = _Builder(cfg, "invalid_value")
    if cfg.get("train.train_policy.type") == "grpo":
        variant = cfg.get("train.train_policy.variant")
        if variant not in ("grpo", "dapo", "gspo"):
            b.problem(
                f"variant = {variant!r}: Cosmos-RL rejects it ('variant must be one of ['grpo', 'dapo', 'gspo']').",
                "train.train_policy.variant",
            )
            b.fix("train.train_policy.variant", "grpo", "the default")
        if cfg.get("train.train_policy.on_policy") and cfg.get("train.sync_weight_interval") != 1:
            b.problem(
                "on_policy = true needs sync_weight_interval = 1 ('sync_weight_interval must be 1 when "
                "on_policy is enabled').",
                "train.train_policy.on_policy",
                "train.sync_weight_interval",
            )
            b.fix("train.sync_weight_interval", 1,
                  "on-policy training syncs the weights after every step; trade-off: a weight transfer every step")
    save_mode = cfg.get("train.ckpt.save_mode")
    if save_mode not in ("async", "sync"):
        b.problem(
            f"train.ckpt.save_mode = {save_mode!r}: Cosmos-RL rejects it ('Invalid save_mode').", "train.ckpt.save_mode"
        )
        b.fix("train.ckpt.save_mode", "async", "the recipe's value")
    if cfg.get("train.ckpt.save_freq") <= 0 and cfg.get("train.ckpt.save_freq_in_epoch") <= 0:
        b.problem("train.ckpt.save_freq must be > 0: Cosmos-RL rejects the file.", "train.ckpt.save_freq")
        b.fix("train.ckpt.save_freq", 50, "the recipe's value")
    steps = cfg.get("train.max_num_steps")
    if steps is not None and steps <= 0:
        b.problem(f"train.max_num_steps = {steps}: must be positive if set.", "train.max_num_steps")
        b.fix("train.max_num_steps", None, "unset: the run length follows the dataset and epochs")
    if cfg.get("train.async_tp_enabled") and not cfg.get("train.compile"):
        b.problem(
            "async_tp_enabled = true requires compile = true, which the recipe forbids.", "train.async_tp_enabled"
        )
        b.fix("train.async_tp_enabled", False, "the recipe's value")
    for bad in cfg.out_of_range:  # parallel sizes <= 0 (C §8.5), absurd sizes, integers beyond 64 bits
        b.problem(bad.message, bad.path)
        if bad.bound is not None:
            b.fix(bad.path, bad.bound.fix, bad.bound.why)
    if _recipe_skip(cfg) is None:
        _reward_checks(cfg, ctx, b)
    if cfg.get("custom.alpamayo.idx_rng_enable") and cfg.get("custom.alpamayo.idx_rng_seed") is None:
        b.problem(
            "idx_rng_enable = true without idx_rng_seed: the prefetch server fails with 'idx_rng_enable=true "
            "but idx_rng_seed is not set'.",
            "custom.alpamayo.idx_rng_enable",
        )
        b.fix("custom.alpamayo.idx_rng_seed", 1234, "the shipped seed")
    grader = cfg.get("custom.alpamayo.reasoning_grader_type")
    if grader is not None and grader != "lingo_judge":
        b.problem(
            f"reasoning_grader_type = {grader!r}: the recipe knows only 'lingo_judge' ('Unknown grader_type').",
            "custom.alpamayo.reasoning_grader_type",
        )
        b.fix("custom.alpamayo.reasoning_grader_type", "lingo_judge", "the only grader the recipe ships")
    return b.build()


def reward_entry(cfg: LoadedConfig, ctx: LintContext) -> Entry:
    """The entry whose reward the TOML feeds: the one in use when known, else the one its keys point to
    (``collision_weight``: collision; ``reasoning_weight`` or a grader path: joint; else motion)."""
    if ctx.entry_script is not None:
        return ctx.entry_script
    if cfg.is_set("custom.alpamayo.reward.collision_weight"):
        return ENTRIES["collision"]
    if cfg.is_set("custom.alpamayo.reward.reasoning_weight") or cfg.is_set(
        "custom.alpamayo.reasoning_grading_model_path"
    ):
        return ENTRIES["joint"]
    return ENTRIES["motion"]


def _reward_checks(cfg: LoadedConfig, ctx: LintContext, b: _Builder) -> None:
    """R §10: the reward functions require their weights under [custom.alpamayo.reward]."""
    entry = reward_entry(cfg, ctx)
    shipped = {k: entry.rewards[k] for k in entry.required_rewards}
    if not isinstance(cfg.raw("custom.alpamayo.reward"), dict):
        b.problem(
            "[custom.alpamayo.reward] is missing: the reward fails at the first rollout with 'Reward config "
            "not found in TOML'.",
            "custom.alpamayo",
        )
    else:
        missing = [k for k in shipped if not cfg.is_set(f"custom.alpamayo.reward.{k}")]
        if not missing:
            return
        b.problem(
            f"[custom.alpamayo.reward] lacks {', '.join(missing)}: the reward fails with 'Missing key(s) in "
            "[custom.alpamayo.reward]'.",
            "custom.alpamayo.reward",
        )
        shipped = {k: shipped[k] for k in missing}
    for key, value in shipped.items():
        b.fix(f"custom.alpamayo.reward.{key}", value, f"the recipe's {entry.mode} value (R §8.4)")


Rule = Callable[[LoadedConfig, LintContext], RuleResult]

RULES: dict[str, Rule] = {
    "toml_rejected": toml_rejected,
    "toml_misread": toml_misread,
    "placeholder_path": placeholder_path,
    "insufficient_gpus": insufficient_gpus,
    "batch_not_divisible": batch_not_divisible,
    "prefetch_misconfig": prefetch_misconfig,
    "duplicate_samples": duplicate_samples,
    "wandb_key_missing": wandb_key_missing,
    "logging_blind": logging_blind,
    "grpo_became_sft": grpo_became_sft,
    "no_group_signal": no_group_signal,
    "gpu_memory_utilization_range": gpu_memory_utilization_range,
    "recipe_parallelism_unsupported": recipe_parallelism_unsupported,
    "grader_missing": grader_missing,
    "outdated_steps_below_sync": outdated_steps_below_sync,
    "tp_size_implicit": tp_size_implicit,
    "checkpointing_disabled": checkpointing_disabled,
    "policy_oom_config": policy_oom_config,
    "recommended_value": recommended_value,
    "unknown_toml_key": unknown_toml_key,
    "invalid_value": invalid_value,
}


def run_rule(rule_id: str, cfg: LoadedConfig, ctx: LintContext) -> tuple[Finding | None, CheckResult]:
    """One rule: its finding (or None) and its check line (ok / finding / skipped)."""
    result = RULES[rule_id](cfg, ctx)
    if isinstance(result, Finding):
        return result, CheckResult(id=rule_id, state=CheckState.FINDING)
    if isinstance(result, Skipped):
        return None, CheckResult(id=rule_id, state=CheckState.SKIPPED, note=result.note)
    return None, CheckResult(id=rule_id, state=CheckState.OK)


def run_rules(cfg: LoadedConfig, ctx: LintContext) -> tuple[list[Finding], list[CheckResult]]:
    """Every rule: the findings, and one check line per rule (ok / finding / skipped)."""
    findings: list[Finding] = []
    checks: list[CheckResult] = []
    for rule_id in RULES:
        finding, check = run_rule(rule_id, cfg, ctx)
        if finding is not None:
            findings.append(finding)
        checks.append(check)
    checks.append(
        CheckResult(
            id="wrong_alpamayo_version",
            state=CheckState.SKIPPED,
            note="the TOML does not say which Alpamayo version the model is",
        )
    )
    return findings, checks


def make_context(
    *,
    gpus_per_node: int | None = None,
    nodes: int | None = None,
    compute: str | None = None,
    env: Mapping[str, str] | None = None,
    entry: str | None = None,
) -> LintContext:
    if compute is not None and compute not in COMPUTE_CHOICES:
        raise ValueError(f"compute must be one of {', '.join(COMPUTE_CHOICES)}, got {compute!r}")
    for name, value in (("gpus_per_node", gpus_per_node), ("nodes", nodes)):
        if value is not None and not 1 <= value <= MAX_MACHINE:
            raise ValueError(f"{name} must be between 1 and {MAX_MACHINE}, got {value}")
    return LintContext(
        gpus_per_node=gpus_per_node,
        nodes=nodes,
        compute=compute,
        env=dict(os.environ if env is None else env),
        entry=entry or None,
    )


def lint_config(
    loaded: LoadedConfig,
    *,
    gpus_per_node: int | None = None,
    nodes: int | None = None,
    compute: str | None = None,
    env: Mapping[str, str] | None = None,
    entry: str | None = None,
) -> list[Finding]:
    """Config-only findings for a loaded TOML; ``env`` defaults to this process's environment."""
    ctx = make_context(gpus_per_node=gpus_per_node, nodes=nodes, compute=compute, env=env, entry=entry)
    return run_rules(loaded, ctx)[0]


__all__ = ["RULES", "LintContext", "Skipped", "lint_config", "make_context", "run_rule", "run_rules"]
