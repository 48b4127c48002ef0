"""What the kernel's copy of a run's bytes costs by where each read lands.

Usage: ``python benchmarks/read_step.py RUN_DIR [--rounds N]``. Reads every ``*.log`` under
RUN_DIR (the page cache warmed by a first pass) with ``readinto``, rounds alternated, into a
page-aligned buffer (anonymous ``mmap``) at a given offset from its page: 4 MiB reads at offsets
0, 16 (where a ``bytearray``'s bytes start: malloc's header) and 64, and 128 KiB reads at 16.
Files are read from offset 0, so each read's source starts a page too. Prints each way's median
wall, user and system seconds. docs/parsing.md, "Reads where they land".
"""

from __future__ import annotations

import argparse
import mmap
import resource
import statistics
import time
from pathlib import Path

SIZE = 4 << 20
WAYS = {"4 MiB reads, page offset 0": (0, SIZE), "4 MiB reads, page offset 16": (16, SIZE),
        "4 MiB reads, page offset 64": (64, SIZE), "128 KiB reads, page offset 16": (16, 128 << 10)}


def read_all(files: list[Path], buf: mmap.mmap, at: int, step: int) -> tuple[float, float, float, int]:
    """Wall, user and system seconds of reading every file into ``buf[at:at + SIZE]``, ``step`` bytes a call
    (each file's reads from the buffer's start when it is full)."""
    size = SIZE if step == SIZE else step
    view = memoryview(buf)[at:at + size]
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    total = 0
    for path in files:
        with open(path, "rb", buffering=0) as f:
            while True:
                filled = 0
                while filled < size:
                    got = f.readinto(view[filled:filled + step])
                    if not got:
                        break
                    filled += got
                total += filled
                if filled < size:
                    break
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    return wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    files = sorted(p for p in args.run_dir.rglob("*.log") if p.is_file() and not p.is_symlink())
    if not files:
        raise SystemExit(f"{args.run_dir}: no *.log files")
    buf = mmap.mmap(-1, SIZE + 4096)
    read_all(files, buf, 0, SIZE)  # the page cache, warm
    got: dict[str, list[tuple[float, float, float]]] = {way: [] for way in WAYS}
    total = 0
    for _ in range(args.rounds):
        for way, (at, step) in WAYS.items():
            wall, user, sys_s, total = read_all(files, buf, at, step)
            got[way].append((wall, user, sys_s))
    print(f"{len(files)} files, {total / (1 << 20):.0f} MiB, {args.rounds} rounds (medians)\n")
    print("| reads | wall s | user s | system s |\n|---|---:|---:|---:|")
    for way, rows in got.items():
        wall, user, sys_s = (statistics.median(r[i] for r in rows) for i in range(3))
        print(f"| {way} | {wall:.3f} | {user:.3f} | {sys_s:.3f} |")


if __name__ == "__main__":
    main()
