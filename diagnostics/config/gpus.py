"""GPU arithmetic as the Cosmos-RL launcher does it (cosmos-rl.md §2.2, §2.3).

The launcher reads the raw TOML with a default of 1 for every size (not the schema's
``tp_size = 2``), gives each replica ``tp × dp_replicate × pp × cp × dp_shard`` GPUs, places
policy replicas first, then rollouts, each on the next contiguous slice of a node, and opens a
new worker node when a slice does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

LAUNCHER_GPUS_PER_NODE = (1, 2, 4, 8)  # utility.py:481-486


def replica_gpus(parallelism: dict[str, Any]) -> int:
    """GPUs the launcher gives one replica of a role (``launch_all.py:450-485``)."""

    def size(key: str) -> int:
        value = parallelism.get(key, 1)
        return value if isinstance(value, int) else 1

    dp_shard = size("dp_shard_size")
    return size("tp_size") * size("dp_replicate_size") * size("pp_size") * size("cp_size") * max(dp_shard, 1)


@dataclass(frozen=True, slots=True)
class Placement:
    policy_replicas: int
    policy_gpus: int  # per replica
    rollout_replicas: int
    rollout_gpus: int
    gpus_needed: int
    workers_required: int  # the launcher's "Number of workers required: N"
    oversized_replica: bool  # one replica needs more GPUs than a node has


def plan(data: dict[str, Any], gpus_per_node: int) -> Placement:
    """Where the launcher would put every replica on nodes of ``gpus_per_node`` GPUs."""
    policy = data.get("policy", {}).get("parallelism", {})
    rollout = data.get("rollout", {}).get("parallelism", {})
    n_policy = int(policy.get("n_init_replicas", 1))
    n_rollout = int(rollout.get("n_init_replicas", 1))
    policy_gpus, rollout_gpus = replica_gpus(policy), replica_gpus(rollout)
    mode = data.get("mode", "disaggregated")
    train_policy = data.get("train", {}).get("train_policy", {})
    if mode == "colocated" or (isinstance(train_policy, dict) and train_policy.get("type") == "sft"):
        n_rollout = 0  # no rollout processes are placed (launch_all.py:546-549, 569-577)
    replicas = [policy_gpus] * n_policy
    if mode == "colocated_separated":
        needed = max(n_policy * policy_gpus, n_rollout * rollout_gpus)  # rollouts share policy GPUs
    else:
        replicas += [rollout_gpus] * n_rollout
        needed = n_policy * policy_gpus + n_rollout * rollout_gpus
    workers, used = 1, 0
    for gpus in replicas:
        if gpus > gpus_per_node:  # spans whole nodes of its own (utility.py:640-696)
            workers += (gpus + gpus_per_node - 1) // gpus_per_node - (0 if used else 1)
            used = gpus_per_node
            continue
        if used + gpus > gpus_per_node:
            workers += 1
            used = 0
        used += gpus
    return Placement(
        policy_replicas=n_policy,
        policy_gpus=policy_gpus,
        rollout_replicas=n_rollout,
        rollout_gpus=rollout_gpus,
        gpus_needed=needed,
        workers_required=workers,
        oversized_replica=max([policy_gpus, rollout_gpus if n_rollout else 0]) > gpus_per_node,
    )
