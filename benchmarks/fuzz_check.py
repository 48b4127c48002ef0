"""``a1x-tui --check`` on hostile run folders (issue 37, point 8): 0 tracebacks, 0 hangs, deterministic.

Each seed makes one run folder (``tests/check/hostile_runs.py``: recorded lines of every generation spoilt the
ways disks, copies and crashes spoil them, links that loop or dangle, unreadable files, folders where files
belong, a line past the 4 MiB cut now and then). For each:

- the command, ``python -m a1x_tui --check PATH --format json`` in a fresh process (default ``--timeout``,
  120 s): a traceback on stderr, an exit code outside 0-3 or unlike the report's, stdout that is not one
  JSON report, or no answer within 150 s (a hang) is a failure;
- ``check()`` twice in this process and once in another process with another hash seed, all judged at one
  fixed moment (2026-12-01): the three reports (JSON without ``generated_at``, and text) must be the same,
  and none may hold a crash caught on the way (a detector's error, an outcome that could not be read, a
  linter's failure: ``hostile_runs.hidden_crashes``).

Usage: ``python benchmarks/fuzz_check.py [--seeds 1800] [--first 0] [--jobs 2]``. Prints the machine, one row
per failing seed and a summary table; exit 1 on any failure. Figures: docs/parsing.md "Hostile input".
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "check"))

from hostile_runs import MTIME, checked, hidden_crashes, hostile_run, unlock  # noqa: E402

HANG_S = 150.0


def _digest(target: Path) -> str:
    return hashlib.sha256(checked(target).encode()).hexdigest()


def _judged(target: Path) -> list[str]:
    from a1x_diagnostics.engine import check

    return hidden_crashes(check(target, now=MTIME + 2 * 86400))


def _command(target: Path) -> tuple[list[str], str, float]:
    """Failures of the command on ``target``, its status, its wall."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    began = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "a1x_tui", "--check", str(target), "--format", "json"],
                              capture_output=True, text=True, env=env, cwd=ROOT, timeout=HANG_S, check=False)
    except subprocess.TimeoutExpired:
        return [f"no answer within {HANG_S:g} s"], "hang", time.monotonic() - began
    wall = time.monotonic() - began
    bad = []
    if "Traceback" in done.stderr:
        bad.append("traceback: " + done.stderr.strip().splitlines()[-1])
    try:
        report = json.loads(done.stdout)
        status = str(report["status"])
        if report["exit_code"] != done.returncode:
            bad.append(f"exit {done.returncode}, report says {report['exit_code']}")
    except (ValueError, KeyError, TypeError):
        status = "no report"
        bad.append(f"stdout is not a report: {done.stdout[:120]!r}")
    if done.returncode not in (0, 1, 2, 3):
        bad.append(f"exit {done.returncode}")
    return bad, status, wall


def _worker(listing: Path) -> int:
    """``--digests FILE``: the digest of each target listed, one a line (run with another hash seed)."""
    for line in listing.read_text().splitlines():
        print(_digest(Path(line)), flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=1800)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2, help="commands at once")
    ap.add_argument("--digests", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.digests:
        return _worker(args.digests)
    seeds = range(args.first, args.first + args.seeds)
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node()}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}, Python {platform.python_version()}, seeds {seeds.start}-{seeds.stop - 1}\n")
    scratch = Path(tempfile.mkdtemp(prefix="fuzz-check-"))
    try:
        targets = {seed: hostile_run(seed, scratch / str(seed)) for seed in seeds}
        failures: dict[int, list[str]] = {seed: [] for seed in seeds}
        here: dict[int, str] = {}
        for seed, target in targets.items():
            try:
                first = _digest(target)
                if _digest(target) != first:
                    failures[seed].append("two reports in one process differ")
                here[seed] = first
                failures[seed] += [f"caught: {c}" for c in _judged(target)]
            except Exception as exc:  # what the CLI would print as a traceback
                failures[seed].append(f"check() raised {type(exc).__name__}: {exc}")
        listing = scratch / "targets.txt"
        listing.write_text("".join(f"{targets[s]}\n" for s in here))
        env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}
        other = subprocess.run([sys.executable, __file__, "--digests", str(listing)], capture_output=True,
                               text=True, env=env, check=False).stdout.split()
        other += [""] * (len(here) - len(other))  # a worker that died: the rest count as different
        for seed, theirs in zip(list(here), other[: len(here)], strict=True):
            if theirs != here[seed]:
                failures[seed].append("another process (another hash seed) made another report")
        statuses: Counter[str] = Counter()
        walls: list[float] = []
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            answers = pool.map(_command, [targets[s] for s in seeds])
            for seed, (bad, status, wall) in zip(seeds, answers, strict=True):
                failures[seed] += bad
                statuses[status] += 1
                walls.append(wall)
    finally:
        unlock(scratch)
        shutil.rmtree(scratch, ignore_errors=True)
    failing = {seed: f for seed, f in failures.items() if f}
    if failing:
        print("| seed | failures |\n|---|---|")
        for seed, f in failing.items():
            print(f"| {seed} | {'; '.join(f)} |")
        print()
    kinds = Counter(f.split(":")[0] for fs in failing.values() for f in fs)
    walls.sort()
    print("| runs | tracebacks | no answer | other command failures | caught crashes | nondeterministic | "
          "statuses | command wall median / max (s) |\n|---|---|---|---|---|---|---|---|")
    other_cmd = sum(n for k, n in kinds.items() if k.startswith(("exit", "stdout")))
    nondet = sum(n for k, n in kinds.items() if "differ" in k or "another" in k)
    print(f"| {len(seeds)} | {kinds['traceback']} | {kinds[f'no answer within {HANG_S:g} s']} | {other_cmd} | "
          f"{kinds['caught'] + sum(n for k, n in kinds.items() if k.startswith('check() raised'))} | {nondet} | "
          f"{', '.join(f'{k} {n}' for k, n in sorted(statuses.items()))} | "
          f"{walls[len(walls) // 2]:.2f} / {walls[-1]:.2f} |")
    return 1 if failing else 0


if __name__ == "__main__":
    raise SystemExit(main())
