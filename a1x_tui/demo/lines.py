"""Cosmos-RL line shapes, as the demo writes them.

Every shape is copied from the real recordings in ``tests/fixtures/cosmos/747d1bd/`` (cosmos-rl at
rev 747d1bd, the revision the Alpamayo recipe pins) or, where a recording has none, from the exact
format strings in ``docs/reference/cosmos-rl.md``. Section numbers below are that document's.
"""

from __future__ import annotations

from datetime import datetime

# §3.3: logging.Formatter("[cosmos] %(asctime)s - %(name)s - %(levelname)s - %(message)s"), asctime with ms.
COSMOS_FORMAT = "[cosmos] {ts} - cosmos - {level} - {msg}"
# §3.3: torchrun --tee 3 glues "[rank<LOCAL_RANK>]:" to every line a replica writes.
RANK_PREFIX = "[rank0]:"


def asctime(now: datetime) -> str:
    """Python logging's default asctime: ``2026-11-29 15:03:25,632``."""
    return now.strftime("%Y-%m-%d %H:%M:%S") + f",{now.microsecond // 1000:03d}"


def cosmos(now: datetime, level: str, msg: str, *, rank: bool) -> str:
    line = COSMOS_FORMAT.format(ts=asctime(now), level=level, msg=msg)
    return RANK_PREFIX + line if rank else line


def vllm(now: datetime, where: str, msg: str) -> str:
    """§3.4: ``INFO MM-DD HH:MM:SS [file.py:line] msg`` (vLLM's own logger, under torchrun)."""
    return f"{RANK_PREFIX}INFO {now.strftime('%m-%d %H:%M:%S')} [{where}] {msg}"


def prefetch(now: datetime, pid: int, event: str, **fields: object) -> str:
    """docs/reference/alpamayo-recipe.md §9.3: ``[AlpamayoPrefetch][{level}] {YYYY-mm-dd HH:MM:SS} pid={pid} {event}
    {k}={v!r}``."""
    values = "".join(f" {k}={v!r}" for k, v in fields.items())
    return f"{RANK_PREFIX}[AlpamayoPrefetch][info] {now.strftime('%Y-%m-%d %H:%M:%S')} pid={pid} {event}{values}"


def elastic(now: datetime, pid: int, where: str, msg: str) -> str:
    """§3 "torch elastic agent": glog style ``W<MMDD> <hh:mm:ss.us> <pid> <path>:<line>] msg``, not prefixed."""
    return f"W{now.strftime('%m%d %H:%M:%S')}.{now.microsecond:06d} {pid} {where}] {msg}"


def stopped_from_outside(now: datetime, pid: int, role: str) -> list[str]:
    """What a replica's log ends with when the job is stopped with SIGTERM (docs/reference/cosmos-rl.md, "A job stopped
    from outside", as in the 747d1bd ``policy_stopped`` recording): torchrun's two lines for a worker,
    uvicorn's shutdown for the controller."""
    if role == "controller":
        return ["INFO:     Shutting down", "INFO:     Waiting for application shutdown.",
                "INFO:     Application shutdown complete.", f"INFO:     Finished server process [{pid}]"]
    agent = "torch/distributed/elastic/agent/server/api.py:739"
    workers = "torch/distributed/elastic/multiprocessing/api.py:1012"
    return [
        elastic(now, pid, agent, "Received 15 death signal, shutting down workers"),
        elastic(now, pid, workers, f"Sending process {pid + 1} closing signal SIGTERM"),
    ]


def stat(samples: int, tokens: int, pending: int, elapsed: float) -> str:
    """§4.3, 747d1bd shape (controller.py:495 there): the elapsed float is printed unrounded."""
    return (
        f"[Controller] Stat: {samples} samples, {tokens} completion tokens, {pending} pending rollouts, "
        f"{elapsed!r} seconds elapsed"
    )


def step(
    *,
    step: int,
    total: int,
    reward_mean: float,
    reward_std: float,
    reward_max: float,
    reward_min: float,
    length_mean: float,
    length_max: float,
    loss: float,
    learning_rate: float,
    entropy: float,
    grad_norm: float,
    iteration_time: float,
) -> str:
    """§4.5, the verbatim f-string (identical at 747d1bd, 0.4.7 and HEAD)."""
    return (
        f"Step: {step}/{total}, Reward Mean: {reward_mean:.4f}, Reward Std: {reward_std:.4f}, "
        f"Reward Max: {reward_max:.4f}, Reward Min: {reward_min:.4f}, Completion Length Mean: {length_mean:.2f}, "
        f"Completion Length Max: {length_max:.2f}, Average loss: {loss:.5f}, Max loss: {loss:.5f}, "
        f"Learning rate: {learning_rate:.5e}, Entropy: {entropy:.5f}, Effective Entropy: {entropy - 5e-5:.5f}, "
        f"Grad Norm: {grad_norm:.5f}, KL Loss Avg: {0.0:.5f}, KL Loss Max: {0.0:.5f}, "
        f"Iteration time: {iteration_time:.2f}s."
    )


def train_report(rollouts: int, metrics: dict[str, float | int]) -> str:
    """§4.5 / §7.2: ``[Controller] Train report data from total N rollouts: k: v, ...`` (values as ``str()``)."""
    body = ", ".join(f"{k}: {v}" for k, v in metrics.items())
    return f"[Controller] Train report data from total {rollouts} rollouts: {body}"


def recv_done(params: int, step: int | None, seconds: float, megabytes: float) -> str:
    """§6.2 (rollout_control.py:1397-1399): the only INFO line carrying the weight step in sync mode."""
    return (
        f"[Rollout] All {params} at step {step} recv operations finished in {seconds:.3f} seconds with "
        f"{megabytes} MB received. While 0 non-trainable splitted params skipped and {params} trainable splitted "
        "params transferred."
    )


def cuda_oom(tried_gib: float, free_gib: float) -> str:
    """torch's CUDA OOM text, as the rollout's §6.3 failure line quotes it."""
    return (
        f"CUDA out of memory. Tried to allocate {tried_gib:.2f} GiB. GPU 0 has a total capacity of 139.80 GiB of "
        f"which {free_gib:.2f} GiB is free. Including non-PyTorch memory, this process has "
        f"{139.80 - free_gib:.2f} GiB memory in use. Of the allocated memory 126.31 GiB is allocated by PyTorch, "
        "and 11.62 GiB is reserved by PyTorch but unallocated."
    )
