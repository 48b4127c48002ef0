"""Cluster-scale benchmark of log reading: ``read_run`` (and ``a1x-tui --check``) against ``grep -c``.

Generates a run shaped like the Alpamayo 1.5 cluster job (docs/reference/alpamayo-recipe.md §8.5: 64 policy and
128 rollout replicas; one ``controller.log``; 193 files) in the real line formats
(docs/reference/cosmos-rl.md §3-§6; ~90% DEBUG / vLLM noise, some tracebacks, tqdm redraws), then times, each in
a fresh process, with its peak resident memory:

  (a) ``grep -c -F <one fixed pattern>`` over all files (the baseline of the issue),
  (b) ``read_run(discover(DIR))`` consuming every event (the one reader, Hyperscan where installed),
  (c) the same with the pure-Python line search (``A1X_PURE_READER=1``), only with ``--pure``,
  (d) ``a1x-tui --check DIR --format json``.

Usage: ``python benchmarks/check_scale.py DIR [--mix sparse|dense|noisy] [--size-mb 1024] [--files 193] [--repeat 3]
[--pure] [--keep] [--generate-only]``. The mixes (issue 14): ``sparse`` the original one; ``dense`` a weight
receive per step per rollout replica in both line shapes and a ``Stat:`` per dispatch in both shapes;
``noisy`` a quarter of policy and rollout lines INFO lines that share the rules' words and give no event.
Prints a markdown table per repeat (wall, CPU of the process tree, peak RSS) with the load average
before it. DIR is created (and removed afterwards unless ``--keep``).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UUID = "3f2a8c1e-5b7d-4e9a-9c1f-0a1b2c3d4e5f"


def _ts(i: int) -> str:
    s = i % 86400
    return f"2025-06-09 {s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d},{i % 1000:03d}"


def _cosmos(i: int, level: str, msg: str, rank: int | None = None) -> str:
    prefix = f"[rank{rank}]:" if rank is not None else ""
    return f"{prefix}[cosmos] {_ts(i)} - cosmos - {level} - {msg}"


def _traceback(rank: int) -> list[str]:
    body = [
        "Traceback (most recent call last):",
        '  File "/opt/cosmos_rl/rollout/worker/rollout_control.py", line 2419, in main_loop',
        "    self.generate()",
        '  File "/opt/vllm/v1/engine/core.py", line 88, in generate',
        "    raise torch.OutOfMemoryError(msg)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "139.80 GiB of which 1.02 GiB is free.",
    ]
    return [f"[rank{rank}]:{b}" for b in body]


def controller_lines(rng: random.Random, i: int) -> list[str]:
    r = rng.random()
    if r < 0.45:
        return [_cosmos(i, "DEBUG", f"[Controller samples_on_the_fly] source=train_ack before={i % 900} delta=-48 "
                                    f"after={i % 900 - 48}")]
    if r < 0.80:
        return [_cosmos(i, "DEBUG", f"[Controller] Filtered out outdated rollout with version {i % 50}, current step "
                                    f"{i % 60}, estimated step {i % 61}, pending rollouts {i % 128}, preceeding "
                                    f"rollouts in this batch 3, allowed_outdated_steps 4")]
    if r < 0.93:
        return [_cosmos(i, "INFO", f"[Controller] Stat: {i} samples, {i * 37} completion tokens, {i % 128} pending "
                                   f"rollouts, {i % 300} in-flight, {i % 7} filtered (outdated), "
                                   f"{i / 10:.2f}s elapsed")]
    if r < 0.97:
        return [_cosmos(i, "INFO", f"[Controller] weight staleness: accepted p50=1 p99=3 max=4, discarded={i % 5}/48 "
                                   "(allowed_outdated_steps=4, sync_weight_interval=5)")]
    step = i % 1000
    return [
        _cosmos(i, "INFO", f"[Controller] Train report data from total 2560 rollouts: train_step: {step}.0, "
                           "train/reward_mean: -0.25, train/reward_std: 0.11, train/traj_L2: 1.4, "
                           "train/loss_avg: 0.01"),
        _cosmos(i, "INFO", f"Step: {step}/1000, Reward Mean: -0.2500, Reward Std: 0.1100, Reward Max: 0.0000, Reward "
                           "Min: -1.0000, Completion Length Mean: 1.00, Completion Length Max: 1.00, Average loss: "
                           "0.01000, Max loss: 0.02000, Learning rate: 2.00000e-06, Entropy: 0.50000, Effective "
                           "Entropy: 0.40000, Grad Norm: 0.10000, KL Loss Avg: 0.00000, KL Loss Max: 0.00000, "
                           "Iteration time: 5.12s."),
        _cosmos(i, "INFO", "Dynamic sampling rewards distribution so far: {'outdated': 3}."),
    ]


def policy_lines(rng: random.Random, i: int) -> list[str]:
    rank = i % 8
    r = rng.random()
    if r < 0.795:
        return [_cosmos(i, "DEBUG", "[Policy] Prepare training data.", rank)]
    if r < 0.80:
        return [f"[rank{rank}]:[AlpamayoPrefetch][info] 2025-06-09 12:00:{i % 60:02d} pid={4000 + rank} "
                f"server_get_ok n={i} hit=True dt_ms=0.41 cache_size=128 "
                "socket='/tmp/alpamayo_prefetch_1_h_train.sock'"]
    if r < 0.92:
        return [f"[rank{rank}]:W0609 12:00:{i % 60:02d}.123456 {4000 + rank} torch/distributed/fsdp/_init.py:88] "
                "FSDP is slow on this layer"]
    if r < 0.99:
        return [_cosmos(i, "DEBUG", f"[Policy] Train ack sent for global step {i % 1000}.", rank)]
    return [_cosmos(i, "DEBUG", f"[Policy] All 812 at step {i % 1000} send operations of finished in 2.113 seconds "
                                "with 16384.0 MB sent. While 0 non-trainable splitted params skipped and 812 splitted "
                                "params transferred.", rank)]


def rollout_lines(rng: random.Random, i: int) -> list[str]:
    r = rng.random()
    if r < 0.30:
        return [_cosmos(i, "DEBUG", f"[Rollout main_loop 1.0s] rank=0 empty_q=0 consume_end=0 version_fail=0 "
                                    f"gen_attempted={i % 9} gen_succeeded={i % 9} fetched_nonempty=1 "
                                    "weight_unsynced=0", 0)]
    if r < 0.55:
        rewards = ", ".join(f"{-rng.random():.4f}" for _ in range(12))
        return [_cosmos(i, "DEBUG", f"[RolloutGroup] Rewards: ([{rewards}], [{rewards}], [{{'traj_L2': 1.2}}])", 0)]
    if r < 0.75:
        return [_cosmos(i, "DEBUG", f"[compute_reward] Final reward: {-rng.random():.4f}", 0)]
    if r < 0.90:
        return [f"[rank0]:INFO 06-09 12:00:{i % 60:02d} [gpu_model_runner.py:1234] Graph capturing finished in 3 secs"]
    if r < 0.95:
        return [f"[rank0]:{{'rollout_profile_s': {{'data_prepare_s': 0.1, 'generate_s': 4.2, 'generated_tokens': "
                f"{i % 5000}, 'gen_toks_per_s': 1190.4}}}}"]
    if r < 0.985:
        return ["\r".join(f"Processed prompts: {p}%|{'#' * (p // 10)}| {p}/100 [00:0{p % 10}<00:00]"
                          for p in range(0, 101, 20))]
    if r < 0.99:
        return [_cosmos(i, "INFO", f"[Rollout rank=0] prompt rejected: prompt.weight_version={i % 50 + 6} "
                                   f"current_weight_version={i % 50} allowed_outdated=4 ceiling={i % 50 + 4}; "
                                   "head-of-queue will be re-checked until current_weight_version advances", 0)]
    return [_cosmos(i, "INFO", f"[Rollout] All 812 at step {i % 1000} recv operations finished in 2.345 seconds with "
                               "16384.0 MB received. While 0 non-trainable splitted params skipped and 812 trainable "
                               "splitted params transferred.", 0)]


# The dense mix (issue 14): a weight receive per step per rollout replica in both line shapes (the older
# one without the ``While ... params transferred.`` tail), a ``Stat:`` line per dispatch in both shapes
# (747d1bd's ``seconds elapsed`` with exponent notation as it prints them at start-up), sends per step.
def dense_controller_lines(rng: random.Random, i: int) -> list[str]:
    r = rng.random()
    if r < 0.25:
        return [_cosmos(i, "INFO", f"[Controller] Stat: {i} samples, {i * 37} completion tokens, {i % 128} pending "
                                   f"rollouts, {rng.random() * 1e-5:.16g} seconds elapsed")]
    if r < 0.45:
        return [_cosmos(i, "INFO", f"[Controller] Stat: {i} samples, {i * 37} completion tokens, {i % 128} pending "
                                   f"rollouts, {rng.random() * 30:.17g} seconds elapsed")]
    return controller_lines(rng, i)


def dense_policy_lines(rng: random.Random, i: int) -> list[str]:
    if rng.random() < 0.05:
        return [_cosmos(i, "DEBUG", f"[Policy] All 812 at step {i % 1000} send operations of finished in "
                                    f"{rng.random() * 3:.3f} seconds with 16384.0 MB sent. While 0 non-trainable "
                                    "splitted params skipped and 812 splitted params transferred.", i % 8)]
    return policy_lines(rng, i)


def dense_rollout_lines(rng: random.Random, i: int) -> list[str]:
    r = rng.random()
    if r < 0.03:
        return [_cosmos(i, "INFO", f"[Rollout] All 812 at step {i % 1000} recv operations finished in "
                                   f"{rng.random() * 3:.3f} seconds with 16384.0 MB received.", 0)]
    if r < 0.06:
        return [_cosmos(i, "INFO", f"[Rollout] All 812 at step {i % 1000} recv operations finished in "
                                   f"{rng.random() * 3:.3f} seconds with 16384.0 MB received. While 0 non-trainable "
                                   "splitted params skipped and 812 trainable splitted params transferred.", 0)]
    return rollout_lines(rng, i)


# The noisy mix (issue 14): a quarter of policy and rollout lines are INFO lines under the tags the rules'
# messages are logged with, sharing their words (step, checkpoint, weight sync, recv, broadcast, pending),
# that give no event.
_NOISY_POLICY = (
    "[Policy] Optimizer step {s} done: grad norm 0.1021, learning rate 2.0e-06, loss 0.0123, tokens 81920",
    "[Policy] Received weight sync request for step {s} from controller, preparing send operations",
    "[Policy] Checkpoint of step {s} will be saved after the next sync (save interval 20)",
    "[Policy] Training data prepared for step {s}: 2560 rollouts, 48 pending in the buffer",
)
_NOISY_ROLLOUT = (
    "[Rollout] Generation of 16 prompts finished in 4.20 seconds at step {s}, 812 tokens received",
    "[Rollout] Weight version {s} is current, 48 pending prompts in the queue, broadcast not needed",
    "[Rollout] Starting recv of weights for step {s} from policy replica 0",
    "[Rollout rank=0] prompt accepted: prompt.weight_version={s} current_weight_version={s}",
)


def noisy_policy_lines(rng: random.Random, i: int) -> list[str]:
    if rng.random() < 0.25:
        return [_cosmos(i, "INFO", rng.choice(_NOISY_POLICY).format(s=i % 1000), i % 8)]
    return policy_lines(rng, i)


def noisy_rollout_lines(rng: random.Random, i: int) -> list[str]:
    if rng.random() < 0.25:
        return [_cosmos(i, "INFO", rng.choice(_NOISY_ROLLOUT).format(s=i % 1000), 0)]
    return rollout_lines(rng, i)


MIXES = {
    "sparse": {"controller": controller_lines, "policy": policy_lines, "rollout": rollout_lines},
    "dense": {"controller": dense_controller_lines, "policy": dense_policy_lines, "rollout": dense_rollout_lines},
    "noisy": {"controller": controller_lines, "policy": noisy_policy_lines, "rollout": noisy_rollout_lines},
}


def _block(kind: str, seed: int, target: int, mix: str = "sparse") -> bytes:
    rng = random.Random(seed)
    make = MIXES[mix][kind]
    out: list[str] = []
    size, i = 0, seed * 100000
    while size < target:
        for line in make(rng, i):
            out.append(line)
            size += len(line) + 1
        i += 1
    return ("\n".join(out) + "\n").encode()


def generate(run_dir: Path, size_mb: int, n_files: int, mix: str = "sparse") -> tuple[Path, list[Path]]:
    """Write a log dir ``run_dir/logs_<ts>/`` with ``logs_latest``; return (log dir, files)."""
    n_rollout = max(1, (n_files - 1) * 2 // 3)
    n_policy = max(1, n_files - 1 - n_rollout)
    logs = run_dir / "logs_20250609-120000"
    logs.mkdir(parents=True)
    (run_dir / "logs_latest").symlink_to(logs.name)
    total = size_mb << 20
    plan = [("controller", logs / "controller.log", total // 20)]
    plan += [("policy", logs / f"policy_{i}.log", total * 4 // 20 // n_policy) for i in range(n_policy)]
    plan += [("rollout", logs / f"rollout_{i}.log", total * 15 // 20 // n_rollout) for i in range(n_rollout)]
    blocks = {k: _block(k, s, 4 << 20, mix) for s, k in enumerate(("controller", "policy", "rollout"))}
    files = []
    for idx, (kind, path, size) in enumerate(plan):
        block = blocks[kind]
        with open(path, "wb") as f:
            f.write(_cosmos(0, "INFO", f"{kind.upper()} Replica started at global rank 0, with replica name: {UUID}")
                    .encode() + b"\n")
            written = 0
            offset = (idx * 7919) % len(block)
            while written < size:
                piece = block[offset : offset + min(size - written, len(block) - offset)]
                cut = piece.rfind(b"\n") + 1 or len(piece)
                f.write(piece[:cut])
                written += cut
                offset = (offset + cut) % len(block)
                if not piece[:cut].endswith(b"\n"):  # the last piece cut a line: end it
                    f.write(b"\n")
            if kind == "rollout" and idx % 16 == 0:
                f.write(("\n".join(_traceback(0)) + "\n").encode())
        files.append(path)
    return run_dir, files


def _measure(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak RSS MiB, stdout tail) of ``cmd`` run under ``/usr/bin/time -v``.

    CPU is user + system time of the process and the children it waited for. The RSS is the largest
    single process of the tree (GNU time reports the child's maximum).
    """
    timer = shutil.which("time", path="/usr/bin:/bin")
    full = [timer, "-v", *cmd] if timer else cmd
    t0 = time.perf_counter()
    proc = subprocess.run(full, capture_output=True, env=env, cwd=ROOT, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1, 2, 3):
        raise SystemExit(f"{cmd[:3]} failed with rc {proc.returncode}: {proc.stderr.decode(errors='replace')[-500:]}")
    rss = cpu = float("nan")
    for line in proc.stderr.decode(errors="replace").splitlines():
        if "Maximum resident set size" in line:
            rss = int(line.rsplit(":", 1)[1]) / 1024
        elif "User time (seconds)" in line or "System time (seconds)" in line:
            cpu = (0.0 if cpu != cpu else cpu) + float(line.rsplit(":", 1)[1])
    return wall, cpu, rss, proc.stdout[-200:].decode(errors="replace").strip()


_READ_RUN = """
import sys, collections
from pathlib import Path
from a1x_diagnostics.parsing import discover, read_run
layout = discover(Path(sys.argv[1]))
counts = collections.Counter(type(e).__name__ for e in read_run(layout))
print(len(layout.files), 'files', dict(counts))
"""


def _one_round(run_dir: Path, files: list[Path], pure: bool, number: int) -> None:
    load = os.getloadavg()
    grep = shutil.which("grep") or "grep"
    names = list(map(str, files))
    rows = [("grep -c -F 'pending rollouts' (all files)", *_measure([grep, "-c", "-F", "pending rollouts", *names]))]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))))
    rows.append(("read_run (the one reader)", *_measure([sys.executable, "-c", _READ_RUN, str(run_dir)], env)))
    if pure:
        pure_env = dict(env, A1X_PURE_READER="1")
        rows.append(("read_run (pure-Python line search)",
                     *_measure([sys.executable, "-c", _READ_RUN, str(run_dir)], pure_env)))
    if (ROOT / "a1x_tui" / "commands" / "check.py").exists():
        check = [sys.executable, "-m", "a1x_tui", "--check", str(run_dir), "--format", "json"]
        rows.append(("a1x-tui --check DIR --format json", *_measure(check, env)))
    base = rows[0][1]
    print(f"\nrun {number} (load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})\n")
    print("| what | wall s | x grep -c | CPU s (user+sys) | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|")
    for name, wall, cpu, rss, _ in rows:
        print(f"| {name} | {wall:.2f} | {wall / base:.2f} | {cpu:.2f} | {rss:.0f} |")
    for name, _, _, _, tail in rows[1:]:
        print(f"{name}: {tail[-160:]}", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path, help="where to generate the run (must not exist)")
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--files", type=int, default=193)
    ap.add_argument("--pure", action="store_true", help="also time the pure-Python path (slow)")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--mix", choices=sorted(MIXES), default="sparse",
                    help="sparse: the original mix; dense: many events per byte; noisy: rule-like INFO noise")
    ap.add_argument("--generate-only", action="store_true", help="write DIR and stop (kept)")
    ap.add_argument("--repeat", type=int, default=1, help="measure this many times on the same files")
    args = ap.parse_args()
    if args.dir.exists():
        raise SystemExit(f"{args.dir}: exists; give a new folder")
    t0 = time.perf_counter()
    run_dir, files = generate(args.dir, args.size_mb, args.files, args.mix)
    total = sum(f.stat().st_size for f in files)
    print(f"generated {len(files)} files, {total / 2**20:.0f} MiB ({args.mix}) in {time.perf_counter() - t0:.1f}s",
          file=sys.stderr)
    if args.generate_only:
        return 0
    try:
        # Warm the page cache so that every contender reads from memory.
        subprocess.run(["cat", *map(str, files)], stdout=subprocess.DEVNULL, check=True)
        print(f"\n{len(files)} files, {total / 2**20:.0f} MiB, {os.cpu_count()} CPUs", file=sys.stderr)
        for repeat in range(args.repeat):
            _one_round(run_dir, files, args.pure, repeat + 1)
    finally:
        if not args.keep:
            shutil.rmtree(args.dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
