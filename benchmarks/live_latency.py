"""Latency of a critical line on a live run: from its write to the finding the follower raises.

    python benchmarks/live_latency.py [--trials 20] [--baseline-rev REV] [--out benchmarks/out]

A Cosmos-RL log dir (controller, policy, rollout) is followed by ``RunFollower`` with the real parsers
and detectors, as ``a1x-tui watch`` does. Each trial appends, from a writer process, one failure to
``rollout_0.log`` and then nothing more (the file goes quiet, as a dying process leaves it):

- ``traceback``: a torch ``OutOfMemoryError`` traceback (four lines, one write);
- ``line``: one ``[Rollout] Failed in rollout generation: CUDA out of memory`` ERROR line.

The latency is the wall time from just before the write to the ``FindingRaised`` of the OOM. Each
kind runs with this checkout and with the code of ``--baseline-rev`` (a git worktree, default
``3e900d5``: the follower before it closed quiet groups early and judged failures at once), each with
its default ``FollowOptions``, side by side in one run. Writes ``OUT/live_latency.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

RUN = "logs_20261201-000000"
WRITER = "import sys\nwith open(sys.argv[1], 'a') as f:\n    f.write(sys.stdin.read())\n"


def stamp() -> str:
    return datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]


def cosmos(msg: str, level: str = "INFO", rank: int | None = None) -> str:
    line = f"[cosmos] {stamp()} - cosmos - {level} - {msg}\n"
    return line if rank is None else f"[rank{rank}]:{line}"


def failure(kind: str, n: int) -> str:
    if kind == "traceback":
        return (cosmos(f"[Rollout] generating batch {n}", rank=0) + "[rank0]:Traceback (most recent call last):\n"
                '[rank0]:  File "/work/reward.py", line 9, in score\n'
                f"[rank0]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {n}.00 GiB.\n")
    return cosmos(f"[Rollout] Failed in rollout generation: CUDA out of memory. Tried to allocate {n}.00 GiB",
                  "ERROR", rank=0)


def make_run(root: Path) -> Path:
    folder = root / RUN
    folder.mkdir(parents=True)
    (folder / "controller.log").write_text(
        "".join(cosmos(f"Step: {i}/1000, Reward Mean: 0.1000, Reward Std: 0.2000, Iteration time: 1.00s.")
                for i in (1, 2)))
    (folder / "policy_0.log").write_text(cosmos("[Policy] Building lr schedulers for total steps 1000", rank=0))
    (folder / "rollout_0.log").write_text(cosmos("[Rollout] Engine initialized.", rank=0))
    (root / "logs_latest").symlink_to(RUN)
    return folder / "rollout_0.log"


def trial(kind: str, n: int) -> float:
    from a1x_diagnostics.live import FindingRaised, FollowOptions, HistoryComplete, RunFollower, engine_diagnosis

    options = FollowOptions()
    with tempfile.TemporaryDirectory() as d:
        rollout = make_run(Path(d) / "logs")
        factory, _ = engine_diagnosis()
        follower = RunFollower(str(Path(d) / "logs"), options=options, diagnosis=factory)
        sub = follower.subscribe({FindingRaised, HistoryComplete})
        with follower:
            deadline = time.monotonic() + 30
            while not any(isinstance(m, HistoryComplete) for m in sub.drain()):
                assert time.monotonic() < deadline, "history not read"
                time.sleep(0.01)
            time.sleep(0.3)  # the history's own evaluation is done
            text = failure(kind, n)
            t0 = time.monotonic()
            subprocess.run([sys.executable, "-c", WRITER, str(rollout)], input=text, text=True, check=True)
            while True:
                m = sub.get(timeout=0.01)
                now = time.monotonic()
                if isinstance(m, FindingRaised) and m.finding.id in ("vllm_oom", "policy_oom", "replica_died"):
                    return now - t0
                if now - t0 > 30:
                    return float("inf")


def _samples(tree: Path, kind: str, trials: int) -> list[float]:
    """The trials run in a child process importing the code of ``tree``."""
    proc = subprocess.run([sys.executable, __file__, "--role", "trials", "--kind", kind, "--trials", str(trials)],
                          capture_output=True, text=True, check=True, env={"PYTHONPATH": str(tree), "PATH": ""})
    return [float(x) for x in json.loads(proc.stdout.splitlines()[-1])]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--baseline-rev", default="3e900d5")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "out"))
    ap.add_argument("--role", default="main", choices=("main", "trials"))
    ap.add_argument("--kind", default="traceback")
    args = ap.parse_args()
    if args.role == "trials":
        print(json.dumps([trial(args.kind, i + 1) for i in range(args.trials)]))
        return 0
    base = Path(tempfile.mkdtemp(prefix="a1x-baseline-")) / "tree"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(base), args.baseline_rev],
                   check=True, capture_output=True)
    rows = []
    try:
        for kind in ("traceback", "line"):
            for name, tree in (("this checkout", REPO), (f"baseline {args.baseline_rev}", base)):
                samples = _samples(tree, kind, args.trials)
                finite = sorted(s for s in samples if s != float("inf"))
                rows.append({
                    "kind": kind, "code": name, "trials": len(samples), "missed": len(samples) - len(finite),
                    "p50_s": round(statistics.median(finite), 3) if finite else None,
                    "p90_s": round(finite[int(0.9 * (len(finite) - 1))], 3) if finite else None,
                    "max_s": round(finite[-1], 3) if finite else None,
                })
                print(json.dumps(rows[-1]), flush=True)
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)], capture_output=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"python": platform.python_version(), "machine": platform.machine(), "node": platform.node(),
            "cpus": __import__("os").cpu_count(), "when": datetime.now().isoformat(timespec="seconds")}
    (out / "live_latency.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    lines = ["| failure written | code | trials | p50 | p90 | max |", "|---|---|---:|---:|---:|---:|"]
    lines += [f"| {r['kind']} | {r['code']} | {r['trials']} | {r['p50_s']} s | {r['p90_s']} s | {r['max_s']} s |"
              for r in rows]
    (out / "live_latency.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
