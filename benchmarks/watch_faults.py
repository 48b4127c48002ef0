"""``a1x-tui watch`` under rename, copytruncate, deletion and permission flips, with inotify and polling (issue 37,
point 8): 0 findings lost, 0 raised twice, never another run.

Each trial (``tests/live/watch_trial.py``) writes a recorded run again as the run wrote it, in 2 s, while
``watch --format json --interval 0.5`` follows it in a child process (as root without ``CAP_DAC_OVERRIDE``,
so permission bits bind it), and does one fault to one of its logs once a share of that log's lines is
written (after a pause in which ``watch`` reads what was written: a copytruncate loses, by nature, the lines
written after the last read, docs/live.md "What lost means"):

- ``rename``: the log renamed to ``<name>.1``, the writer carries on in a new file (a rotation);
- ``copytruncate``: copied to ``<name>.1`` and truncated in place, the writer keeps its handle (no
  ``O_APPEND``, as the launcher writes: a hole of NULs follows);
- ``delete``: unlinked, the writer carries on in a new file;
- ``chmod``: the log and its folder mode 000 for 3 s while the writer goes on.

It compares what ``watch`` ends with against ``--check`` of the same run written without the fault: a
finding ``--check`` has that ``watch`` lacks is lost; one ``watch`` raised twice is duplicated; a
``run_switched`` is a run forgotten. The runs are every recorded run (``tests/fixtures/cosmos/**``,
``tests/fixtures/real-runs/cosmos-rl-*/**``) or a seeded sample of them; the victim log and the moment are
drawn from the seed.

Usage: ``python benchmarks/watch_faults.py [--runs N] [--seed 37] [--faults rename,copytruncate,delete,chmod]
[--modes inotify,poll] [--jobs 1]``. Prints one row per trial and a summary per fault and mode; exit 1 when
a finding was lost or duplicated or a run switched. Figures: docs/live.md "Faults".
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import sys
import tempfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "live"))

from run_writer import FAULTS, FIXTURES, RunWriter, recorded_runs  # noqa: E402
from watch_trial import Trial, fault_trial, permissions_bind  # noqa: E402


def _victims(run: Path) -> list[str]:
    writer = RunWriter(run, Path("/nonexistent"), span=0.0)
    return sorted({f.name for f in writer.files})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=0, help="a seeded sample of this many recorded runs (0: all)")
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--faults", default=",".join(FAULTS))
    ap.add_argument("--modes", default="inotify,poll")
    ap.add_argument("--jobs", type=int, default=1, help="trials at once (each is a writer and a watch process)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    runs = recorded_runs()
    if args.runs:
        runs = sorted(rng.sample(runs, min(args.runs, len(runs))))
    scratch = Path(tempfile.mkdtemp(prefix="watch-faults-"))
    os.chmod(scratch, 0o755)
    faults = args.faults.split(",")
    if "chmod" in faults and not permissions_bind(scratch):
        print("permission bits cannot be made to bind a child process here: chmod left out", file=sys.stderr)
        faults.remove("chmod")
    plan = []
    for run in runs:
        for fault in faults:
            for mode in args.modes.split(","):
                plan.append((run, fault, mode, rng.choice(_victims(run)), round(rng.uniform(0.3, 0.7), 2)))
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}, Python {platform.python_version()}, seed {args.seed}, "
          f"{len(runs)} runs x {len(faults)} faults x {len(args.modes.split(','))} modes = {len(plan)} trials\n")
    print("| run | fault | mode | victim | at | --check | lost | extra | raised twice | run switched | notes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")

    def one(i: int) -> Trial:
        run, fault, mode, victim, at = plan[i]
        return fault_trial(run, scratch / str(i), fault, poll=mode == "poll", victim=victim, at=at)

    totals: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0, 0])
    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for i, trial in enumerate(pool.map(one, range(len(plan)))):
                run, fault, mode, victim, at = plan[i]
                name = str(run.relative_to(FIXTURES))
                row = totals[(fault, mode)]
                row[0] += 1
                row[1] += len(trial.expected)
                row[2] += len(trial.lost)
                row[3] += len(trial.extra)
                row[4] += len(trial.raised_twice)
                row[5] += trial.switched
                row[6] += ("Traceback" in trial.stderr) or not trial.ended or not trial.faulted
                print(f"| {name} | {fault} | {mode} | {victim} | {at} | {len(trial.expected)} | "
                      f"{' '.join(trial.lost) or 0} | {' '.join(trial.extra) or 0} | "
                      f"{' '.join(trial.raised_twice) or 0} | {trial.switched} | {len(trial.notes)} |", flush=True)
                shutil.rmtree(scratch / str(i), ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("\n| fault | mode | trials | --check's findings | lost | extra | raised twice | run switched | "
          "tracebacks, no end or no fault |\n|---|---|---|---|---|---|---|---|---|")
    bad = 0
    for (fault, mode), row in sorted(totals.items()):
        print(f"| {fault} | {mode} | " + " | ".join(map(str, row)) + " |")
        bad += row[2] + row[4] + row[5] + row[6]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
