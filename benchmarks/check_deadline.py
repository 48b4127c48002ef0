"""``--check --timeout T`` on big inputs: UNKNOWN within T + 1 s, whatever part is running (issue 37, point 5).

Workloads, generated in DIR (removed afterwards unless ``--keep``):

- ``replicas``: 20,000 recorded replica logs and a controller log (``benchmarks/real_lines.py --kind
  replicas``): reading, then the detectors, which grow with files x deaths;
- ``markerless``: one 2 GiB file of lines holding no string any entry looks for (before, the clock was
  looked at every 2,048 events: a file without events was never stopped).

For each: ``a1x-tui --check`` once without a limit (its wall, its status), then with ``--timeout`` at 1 s
and at 80 % of that wall (it lands in the detectors or late in the reading), each in a fresh process.
Prints one markdown row per command: the limit, the wall, the status, the report's first line.

Usage: ``python benchmarks/check_deadline.py DIR [--workloads replicas,markerless] [--files 20000]
[--size-mb 2048] [--keep]``. Figures: docs/parsing.md "Opening a file, and the time a check may take".
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from real_lines import replicas  # noqa: E402


def markerless(folder: Path, size_mb: int) -> Path:
    """One file of ``size_mb`` MiB whose lines hold no marker (a plain capture, numbered lines of noise)."""
    path = folder / "noise.out"
    line = b"step output " + b"x" * 100 + b"\n"
    chunk = line * ((8 << 20) // len(line))
    with open(path, "wb") as f:
        for _ in range(max(1, (size_mb << 20) // len(chunk))):
            f.write(chunk)
    return path


def timed(target: Path, *args: str) -> tuple[float, int, str]:
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "a1x_tui", "--check", str(target), *args], capture_output=True,
                          text=True, cwd=ROOT, check=False)
    first = (done.stdout.splitlines() or [done.stderr.strip()])[0]
    return time.monotonic() - began, done.returncode, first.split(" | ")[0][:110]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path, help="where to generate the workloads (must not exist)")
    ap.add_argument("--workloads", default="replicas,markerless")
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--size-mb", type=int, default=2048)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    args.dir.mkdir(parents=True)
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}, Python {platform.python_version()}")
    print("\n| workload | --timeout | wall (s) | within T + 1 s | exit | report |\n|---|---|---|---|---|---|")
    try:
        for workload in args.workloads.split(","):
            if workload == "replicas":
                logs = args.dir / "replicas" / "logs_20250609-120000"
                logs.mkdir(parents=True)
                os.symlink(logs.name, logs.parent / "logs_latest")
                replicas(logs, args.files)
                target, name = logs.parent, f"{args.files} replica logs"
            else:
                (args.dir / "markerless").mkdir()
                target, name = markerless(args.dir / "markerless", args.size_mb), f"{args.size_mb} MiB, no marker"
            full, code, first = timed(target, "--timeout", "inf")
            print(f"| {name} | inf | {full:.1f} | | {code} | {first} |", flush=True)
            for limit in (1.0, round(0.8 * full, 1)):
                wall, code, first = timed(target, "--timeout", f"{limit:g}")
                ok = "yes" if wall <= limit + 1 and code == 3 else "NO"
                print(f"| {name} | {limit:g} | {wall:.1f} | {ok} | {code} | {first} |", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(args.dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
