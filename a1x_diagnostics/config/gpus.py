"""GPU arithmetic as the Cosmos-RL launcher does it (docs/reference/cosmos-rl.md §2.2, §2.3).

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


def _whole(value: Any) -> int:
    """A count as the model reads it (``2``, ``2.0``, ``"2"``); 1 for anything else."""
    if isinstance(value, int):
        return int(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 1
    return int(number) if number.is_integer() else 1


def _place(workers: int, used: int, count: int, gpus: int, per_node: int) -> tuple[int, int]:
    """``count`` replicas of ``gpus`` GPUs placed one after the other, in O(1) whatever ``count`` is.

    One by one: a replica larger than a node spans whole nodes of its own (utility.py:640-696);
    one that does not fit in what is left of the node opens a new one. Returns (workers, GPUs used
    on the last node)."""
    if count <= 0:
        return workers, used
    if gpus > per_node:
        span = -(-gpus // per_node)
        return workers + span * count - (0 if used else 1), per_node
    if gpus <= 0:
        return workers, used
    room = (per_node - used) // gpus  # replicas that still fit on the current node
    if count <= room:
        return workers, used + count * gpus
    full, rest = divmod(count - room, per_node // gpus)
    return (workers + full + 1, rest * gpus) if rest else (workers + full, (per_node // gpus) * gpus)


def plan(data: dict[str, Any], gpus_per_node: int) -> Placement:
    """Where the launcher would put every replica on nodes of ``gpus_per_node`` GPUs (>= 1)."""
    if gpus_per_node < 1:
        raise ValueError(f"{gpus_per_node} GPUs per node: must be at least 1")
    policy = data.get("policy", {}).get("parallelism", {})
    rollout = data.get("rollout", {}).get("parallelism", {})
    n_policy = _whole(policy.get("n_init_replicas", 1))
    n_rollout = _whole(rollout.get("n_init_replicas", 1))
    policy_gpus, rollout_gpus = replica_gpus(policy), replica_gpus(rollout)
    mode = data.get("mode", "disaggregated")
    train_policy = data.get("train", {}).get("train_policy", {})
    if mode == "colocated" or (isinstance(train_policy, dict) and train_policy.get("type") == "sft"):
        n_rollout = 0  # no rollout processes are placed (launch_all.py:546-549, 569-577)
    if mode == "colocated_separated":
        needed = max(n_policy * policy_gpus, n_rollout * rollout_gpus)  # rollouts share policy GPUs
        groups = [(n_policy, policy_gpus)]
    else:
        needed = n_policy * policy_gpus + n_rollout * rollout_gpus
        groups = [(n_policy, policy_gpus), (n_rollout, rollout_gpus)]
    workers, used = 1, 0
    for count, gpus in groups:
        workers, used = _place(workers, used, count, gpus, gpus_per_node)
    return Placement(
        policy_replicas=n_policy,
        policy_gpus=policy_gpus,
        rollout_replicas=n_rollout,
        rollout_gpus=rollout_gpus,
        gpus_needed=needed,
        workers_required=workers,
        oversized_replica=max([policy_gpus, rollout_gpus if n_rollout else 0]) > gpus_per_node,
    )
