"""The ranges a recipe TOML's numbers are checked against before any rule computes with them.

The model accepts any integer where the schema says ``int`` (TOML itself has no bounds that tomlkit
enforces), so ``pp_size = 0`` or ``n_init_replicas = 10**18`` load. The lint rules divide by the
parallel sizes, place replicas one by one and search divisors of the batch: such values would end
in a ``ZeroDivisionError``, a ``MemoryError`` or a loop that never returns. ``out_of_range`` lists
every value outside its range; ``invalid_value`` reports each (key, line, range) and the rules that
compute with one of them stand aside (``Skipped``) instead of computing.

Ranges: Cosmos-RL's own validators where it has them (docs/reference/cosmos-rl.md §8.5: parallel sizes > 0,
``dp_shard_size`` > 0 or -1); beyond that, limits far above any real run (the recipe's cluster
values are 64 policy and 128 rollout replicas, batches of 40-48: docs/reference/alpamayo-recipe.md §8.5), so only
absurd values are refused. Every other integer of the file must fit the signed 64 bits TOML 1.0
allows (tomlkit and the ``toml`` package Cosmos-RL reads with accept more, docs/reference/cosmos-rl.md §8.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_REPLICAS = 4096
MAX_SIZE = 4096  # one parallel dimension of one replica
MAX_BATCH = 1 << 20


@dataclass(frozen=True, slots=True)
class Bound:
    low: int
    high: int
    fix: int  # the value a fix proposes
    also: tuple[int, ...] = ()  # accepted outside [low, high]: dp_shard_size = -1 (infer)
    why: str = "the recipe's value"

    def accepts(self, value: int) -> bool:
        return self.low <= value <= self.high or value in self.also

    def describe(self) -> str:
        extra = "".join(f" (or {v})" for v in self.also)
        return f"{self.low}..{self.high}{extra}"


def _size(fix: int = 1) -> Bound:
    return Bound(1, MAX_SIZE, fix)


BOUNDS: dict[str, Bound] = {}
for _role in ("policy", "rollout"):
    for _key in ("tp_size", "cp_size", "pp_size", "ep_size", "dp_replicate_size"):
        BOUNDS[f"{_role}.parallelism.{_key}"] = _size()
    BOUNDS[f"{_role}.parallelism.dp_shard_size"] = Bound(1, MAX_SIZE, 1, also=(-1,), why="a valid size")
BOUNDS["policy.parallelism.n_init_replicas"] = Bound(1, MAX_REPLICAS, 1)
BOUNDS["rollout.parallelism.n_init_replicas"] = Bound(0, MAX_REPLICAS, 1)
BOUNDS["train.train_batch_per_replica"] = Bound(1, MAX_BATCH, 48)
BOUNDS["train.train_policy.mini_batch"] = Bound(1, MAX_BATCH, 1)
BOUNDS["rollout.batch_size"] = Bound(1, MAX_BATCH, 2)
BOUNDS["rollout.n_generation"] = Bound(-MAX_BATCH, MAX_BATCH, 12)  # < 2 is no_group_signal's
BOUNDS["custom.alpamayo.prefetch.capacity"] = Bound(-MAX_BATCH, 1 << 30, 48)  # <= 0 is prefetch_misconfig's


@dataclass(frozen=True, slots=True)
class OutOfRange:
    path: str
    value: int
    bound: Bound | None  # None: outside the 64-bit range of TOML integers

    @property
    def message(self) -> str:
        if self.bound is None:
            return (
                f"{self.path} = {self.value} does not fit the signed 64-bit integers TOML allows (a "
                "conforming TOML parser rejects the file); no setting needs such a number."
            )
        if self.value < self.bound.low and self.bound.low == 1:
            infer = " (or -1 to infer)" if -1 in self.bound.also else ""
            return f"{self.path} = {self.value}: must be greater than 0{infer}."
        if self.value < self.bound.low:
            return f"{self.path} = {self.value}: must be at least {self.bound.low}."
        return f"{self.path} = {self.value} is out of range ({self.bound.describe()}): no run is that large."


def _integers(node: Any, prefix: str, out: list[tuple[str, int]]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            _integers(value, f"{prefix}{key}.", out)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _integers(value, f"{prefix[:-1]}[{i}].", out)
    elif isinstance(node, int) and not isinstance(node, bool):
        out.append((prefix[:-1], node))


def out_of_range(data: dict[str, Any], model_value: Any) -> list[OutOfRange]:
    """Every integer of ``data`` outside the 64-bit range, and every bounded key outside its range.

    ``model_value(path)`` is the effective value of a bounded key (the file's or the default)."""
    found: list[OutOfRange] = []
    seen: set[str] = set()
    written: list[tuple[str, int]] = []
    _integers(data, "", written)
    for path, value in written:
        if not INT64_MIN <= value <= INT64_MAX:
            found.append(OutOfRange(path, value, None))
            seen.add(path)
    for path, bound in BOUNDS.items():
        if path in seen:
            continue
        value = model_value(path)
        if isinstance(value, int) and not isinstance(value, bool) and not bound.accepts(value):
            found.append(OutOfRange(path, value, bound))
    return found
