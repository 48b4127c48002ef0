"""Batch arithmetic a fix may change without touching the algorithm (docs/reference/cosmos-rl.md §8.4, §8.7).

Each policy step trains ``train_batch_per_replica`` completions (the algorithm's batch: never changed by a
fix). It is split over ``dp_shard_size`` GPUs and, on each, into forward/backward passes of ``mini_batch``
(the optimizer still steps once per ``batch_size_per_optimize``): both are layout, and the replica asserts
``train_batch_per_replica % (dp_shard_size × mini_batch) == 0`` (§8.7 rule 2).
"""

from __future__ import annotations


def largest_divisor_up_to(n: int, limit: int) -> int:
    """The largest divisor of ``n`` (>= 1) that is at most ``limit``: O(sqrt n) whatever ``limit`` is."""
    best = 1
    i = 1
    while i * i <= n:
        if n % i == 0:
            for d in (i, n // i):
                if best < d <= limit:
                    best = d
        i += 1
    return best


def divisible_split(batch: int, dp_shard: int, mini_batch: int) -> tuple[int, int]:
    """(dp_shard_size, mini_batch), each at most its current value, that divide ``batch``: the GPUs kept if they
    can be (a smaller mini_batch), else the fewest GPUs given up (never more GPUs than now)."""
    for d in range(max(1, dp_shard), 0, -1):
        if batch % d == 0:
            return d, largest_divisor_up_to(batch // d, max(1, mini_batch))
    return 1, 1
