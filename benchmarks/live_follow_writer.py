"""The writer of ``benchmarks/live_follow.py``: appends to a cluster run's 193 log files at a set rate.

    python benchmarks/live_follow_writer.py FOLDER [--mb-per-s 5] [--seconds 60] [--tick 0.05]

FOLDER holds ``controller.log``, ``policy_<i>.log``, ``rollout_<i>.log`` (created if missing).
Every ``--tick`` seconds the writer appends the lines due to each file, one ``write`` per file per
tick, spread evenly over the files. Lines look like the real mix (docs/reference/cosmos-rl.md §3.3-§3.4, §15):
mostly ``[rankN]:[cosmos] … - DEBUG -`` and vLLM noise, some INFO lines the parsers act on
(controller ``Stat`` lines, rollout and policy tags), a few WARNINGs. Each line ends with
``wt=<epoch seconds>``, the time it was written, for the follower to measure its lag. At the end
it prints one JSON object: lines, bytes, seconds, achieved MB/s, its own CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time

POLICIES = 64
ROLLOUTS = 128  # with the controller: 193 files, the Alpamayo 1.5 cluster job (docs/reference/alpamayo-recipe.md §8.5)


def file_names(policies: int = POLICIES, rollouts: int = ROLLOUTS) -> list[str]:
    replicas = [f"policy_{i}.log" for i in range(policies)] + [f"rollout_{i}.log" for i in range(rollouts)]
    return ["controller.log", *replicas]


def _cosmos(now: float, level: str, msg: str, rank: int | None) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f",{int(now * 1000) % 1000:03d}"
    prefix = f"[rank{rank}]:" if rank is not None else ""
    return f"{prefix}[cosmos] {stamp} - cosmos - {level} - {msg}"


def make_line(name: str, n: int, now: float, rng: random.Random) -> str:
    """One line of ``name`` (about 200 bytes with its ``wt=`` stamp)."""
    controller = name == "controller.log"
    rank = None if controller else rng.randrange(8)
    roll = rng.random()
    if roll < 0.85:
        tag = "[Controller samples_on_the_fly]" if controller else "[Rollout main_loop 1.0s]"
        line = _cosmos(now, "DEBUG", f"{tag} source=train_ack before={n} delta=+0 after={n} queue={n % 97}", rank)
    elif roll < 0.92:
        line = f"INFO {time.strftime('%m-%d %H:%M:%S', time.localtime(now))} [metrics.py:{n % 500}] Avg prompt "
        line += f"throughput: {n % 1000}.0 tokens/s, Running: {n % 7} reqs, GPU KV cache usage: {n % 100}.0%"
    elif roll < 0.98:
        if controller:
            msg = f"[Controller] Stat: {n} samples, {n * 40} completion tokens, {n % 50} pending rollouts, "
            msg += f"{n % 64} in-flight, 0 filtered (outdated), {n * 0.5:.2f}s elapsed"
        elif name.startswith("rollout"):
            msg = f"[Rollout] Generation batch {n} of {n % 16} prompts finished, sending to controller"
        else:
            msg = f"[Policy] Received {n % 64} rollouts for step {n // 64}"
        line = _cosmos(now, "INFO", msg, rank)
    else:
        line = _cosmos(now, "WARNING", f"[Worker] slow heartbeat round {n}: {rng.random():.3f}s", rank)
    return f"{line} wt={now:.6f}\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder")
    p.add_argument("--mb-per-s", type=float, default=5.0, help="total over all files (default 5)")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--tick", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()

    rng = random.Random(args.seed)
    names = file_names()
    handles = [open(os.path.join(args.folder, n), "a", encoding="utf-8") for n in names]  # noqa: SIM115
    rate = args.mb_per_s * 1_000_000
    written = lines = 0
    counters = [0] * len(names)
    cursor = 0
    cpu0 = time.process_time()
    start = time.monotonic()
    next_tick = start
    while True:
        now_m = time.monotonic()
        elapsed = now_m - start
        if elapsed >= args.seconds:
            break
        due = rate * min(elapsed + args.tick, args.seconds) - written
        batch: dict[int, list[str]] = {}
        wall = time.time()
        while due > 0:
            i = cursor % len(names)
            cursor += 1
            counters[i] += 1
            line = make_line(names[i], counters[i], wall, rng)
            batch.setdefault(i, []).append(line)
            due -= len(line)
            written += len(line)
            lines += 1
        for i, chunk in batch.items():
            handles[i].write("".join(chunk))
            handles[i].flush()
        next_tick += args.tick
        pause = next_tick - time.monotonic()
        if pause > 0:
            time.sleep(pause)
    seconds = time.monotonic() - start
    for h in handles:
        h.close()
    print(
        json.dumps(
            {
                "lines": lines,
                "bytes": written,
                "seconds": round(seconds, 3),
                "mb_per_s": round(written / seconds / 1e6, 3),
                "cpu_s": round(time.process_time() - cpu0, 3),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
