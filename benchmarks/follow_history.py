"""How long the live follower takes from opening a finished run to its first findings (what ``attach`` and
``watch`` wait for before their Findings say anything), against ``--check`` on the same run.

Usage: ``python benchmarks/follow_history.py DIR [--rounds 3]``. Each round, in turn: a fresh process runs
``RunFollower`` with the real diagnostics (``engine_diagnosis``, default options) over DIR and exits at its
first ``MetricsUpdated`` after ``HistoryComplete`` (the history read, the run evaluated); another runs
``a1x-tui --check DIR --format json``. Prints each round's wall seconds, CPU seconds and peak RSS of both
(``os.wait4``), and the ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_FOLLOW = """
import sys, time
from a1x_diagnostics.live import HistoryComplete, MetricsUpdated, RunFollower, engine_diagnosis
factory, _ = engine_diagnosis()
follower = RunFollower(sys.argv[1], diagnosis=factory)
sub = follower.subscribe({HistoryComplete, MetricsUpdated})
t0 = time.monotonic()
follower.start()
history = None
while True:
    m = sub.get(timeout=600)
    if isinstance(m, HistoryComplete):
        history = time.monotonic() - t0
    elif isinstance(m, MetricsUpdated) and history is not None:
        break
print(f"history {history:.2f} s, first findings {time.monotonic() - t0:.2f} s", file=sys.stderr)
follower.stop()
"""


def _run(argv: list[str]) -> tuple[float, float, float]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))))
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, 1)
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    _, _, ru = os.wait4(pid, 0)
    return time.monotonic() - t0, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    follow = [sys.executable, "-c", _FOLLOW, str(args.dir)]
    check = [sys.executable, "-m", "a1x_tui", "--check", str(args.dir), "--format", "json", "--timeout", "3600"]
    rows = []
    print(f"# {args.dir}: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("| round | follower wall s | CPU s | peak MiB | --check wall s | CPU s | peak MiB | wall ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for n in range(args.rounds):
        f, c = _run(follow), _run(check)
        rows.append(f[0] / c[0])
        cells = [f"{f[0]:.2f}", f"{f[1]:.2f}", f"{f[2]:.0f}", f"{c[0]:.2f}", f"{c[1]:.2f}", f"{c[2]:.0f}"]
        print(f"| {n + 1} | " + " | ".join(cells) + f" | {rows[-1]:.2f} |")
    print(f"\nmedian ratio {statistics.median(rows):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
