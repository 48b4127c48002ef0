"""``a1x-tui --check`` of a single-node run against ``a1x-tui --version``: whole processes, in turn.

Usage: ``python benchmarks/startup.py [RUN] [--rounds 15]`` (RUN: ``a1x_diagnostics/examples/sick`` by
default, 88 KB). Runs ``python -m a1x_tui --check RUN`` (A) and ``python -m a1x_tui --version`` (B) A B A B
..., after one warm-up of each, and prints the min / median / max of each one's wall and CPU seconds
(``os.wait4``) and of the ratio A/B taken pair by pair (issue 35: within 6x).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from follow_history import _run  # one whole process timed by os.wait4

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", nargs="?", type=Path, default=ROOT / "a1x_diagnostics" / "examples" / "sick")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    check = [sys.executable, "-m", "a1x_tui", "--check", str(args.run)]
    version = [sys.executable, "-m", "a1x_tui", "--version"]
    _run(check), _run(version)
    pairs = [(_run(check), _run(version)) for _ in range(args.rounds)]
    print(f"# {args.run}: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {args.rounds} pairs\n")
    print("| figure | min | median | max |\n|---|---:|---:|---:|")
    rows = {"--check wall s": [a[0] for a, _ in pairs], "--check CPU s": [a[1] for a, _ in pairs],
            "--version wall s": [b[0] for _, b in pairs], "--version CPU s": [b[1] for _, b in pairs],
            "ratio wall": [a[0] / b[0] for a, b in pairs], "ratio CPU": [a[1] / b[1] for a, b in pairs]}
    for name, values in rows.items():
        print(f"| {name} | {min(values):.3f} | {statistics.median(values):.3f} | {max(values):.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
