"""Workloads of real lines, not generated ones: recorded logs copied up to cluster size (issue 35, point 3).

Usage: ``python benchmarks/real_lines.py DIR --kind controller|replicas [--size-mb 1024] [--files 20000]``.

- ``controller``: ``DIR/logs_20250609-120000/controller.log``, a recorded run's ``controller.log``
  (``tests/fixtures/cosmos/v0.4.4/buffer_growth``: its Stat, staleness, throttle, Step and Train-report
  lines) written again and again up to ``--size-mb``: a run whose every other line is an event;
- ``replicas``: ``--files`` replica logs in one ``logs_<ts>/``, each a recorded policy or rollout log of
  ``tests/fixtures/cosmos`` (both generations, the runs in turn), plus one recorded ``controller.log``:
  a run of many small files, most of them ending in a death or a traceback.

Then time ``a1x-tui --check DIR`` against ``grep -c`` with ``benchmarks/vs_grep.py DIR``.
"""

from __future__ import annotations

import argparse
import itertools
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "cosmos"
CONTROLLER = next((FIXTURES / "v0.4.4" / "buffer_growth").glob("logs_2*/controller.log"))


def controller(logs: Path, size: int) -> None:
    body = CONTROLLER.read_bytes()
    with open(logs / "controller.log", "wb") as f:
        for _ in range(max(1, size // len(body))):
            f.write(body)


def replicas(logs: Path, files: int) -> None:
    recorded = sorted(p for p in FIXTURES.glob("*/*/logs_2*/*.log") if p.name.startswith(("policy_", "rollout_")))
    (logs / "controller.log").write_bytes(CONTROLLER.read_bytes())
    for i, source in zip(range(files), itertools.cycle(recorded), strict=False):
        role = source.name.split("_")[0]
        (logs / f"{role}_{i}.log").write_bytes(source.read_bytes())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--kind", choices=("controller", "replicas"), required=True)
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--files", type=int, default=20000)
    args = ap.parse_args()
    logs = args.dir / "logs_20250609-120000"
    logs.mkdir(parents=True)
    os.symlink(logs.name, args.dir / "logs_latest")
    if args.kind == "controller":
        controller(logs, args.size_mb << 20)
    else:
        replicas(logs, args.files)
    total = sum(p.stat().st_size for p in logs.iterdir())
    print(f"{args.dir}: {len(list(logs.iterdir()))} files, {total / 2**20:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
