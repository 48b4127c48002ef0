"""A log writer process for the live tests: appends numbered lines while rotating, truncating and
deleting its files, and writes a manifest of what it did.

    python live_writer.py FOLDER MANIFEST --files 5 --lines 100000 --rate 50000 --min-life 0.3

Each line is ``<file> <seq> <padding>``; seq counts from ``--first-seq`` per file. Files are opened
in append mode (as Python's logging does). Every ``--op-every`` lines of a file, once its current
generation is at least ``--min-life`` seconds old, the next operation in turn is applied to it:

* ``rotate``: close, rename to ``<name>.1``, open a new file under the name;
* ``truncate``: truncate in place to 0 bytes (copytruncate without the copy), keep writing; with
  ``--cut``, the line just before the truncation is written in two halves ``--cut-pause`` seconds
  apart, so that a follower holds its first half as a partial line when the truncation comes;
* ``delete``: close, unlink, re-create after a short gap.

The manifest (JSON) records per file the number of lines, the last seq, and for each truncation
the seq of the last line written before it.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import IO

OPS = ("rotate", "truncate", "delete")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("folder")
    p.add_argument("manifest")
    p.add_argument("--files", type=int, default=5)
    p.add_argument("--lines", type=int, default=100_000, help="total over all files")
    p.add_argument("--rate", type=float, default=50_000.0, help="lines per second, all files")
    p.add_argument("--op-every", type=int, default=1500)
    p.add_argument("--min-life", type=float, default=0.3)
    p.add_argument("--first-seq", type=int, default=0)
    p.add_argument("--batch", type=int, default=50, help="lines written per file per turn")
    p.add_argument("--cut", action="store_true", help="split the line before each truncation in two writes")
    p.add_argument("--cut-pause", type=float, default=0.03)
    args = p.parse_args()

    names = [f"policy_{i}.log" for i in range(args.files)]
    paths = [os.path.join(args.folder, n) for n in names]
    handles: list[IO[str]] = [open(path, "a") for path in paths]  # noqa: SIM115 - closed below
    seq = [args.first_seq] * args.files
    since_op = [0] * args.files
    born = [time.monotonic()] * args.files
    op_index = [i % len(OPS) for i in range(args.files)]
    manifest: dict[str, dict[str, object]] = {
        n: {"lines": 0, "last_seq": None, "truncations": [], "ops": []} for n in names
    }
    per_file = args.lines // args.files
    padding = "x" * 60
    start = time.monotonic()
    written = 0
    while written < per_file * args.files:
        for i in range(args.files):
            n = min(args.batch, per_file - (seq[i] - args.first_seq))
            if n <= 0:
                continue
            for _ in range(n):
                handles[i].write(f"{names[i]} {seq[i]:09d} {padding}\n")
                handles[i].flush()
                seq[i] += 1
            written += n
            since_op[i] += n
            record = manifest[names[i]]
            record["lines"] = int(record["lines"]) + n  # type: ignore[call-overload]
            record["last_seq"] = seq[i] - 1
            more = seq[i] - args.first_seq < per_file  # a truncation after the last line would take it
            if more and since_op[i] >= args.op_every and time.monotonic() - born[i] >= args.min_life:
                op = OPS[op_index[i] % len(OPS)]
                op_index[i] += 1
                since_op[i] = 0
                ops = record["ops"]
                assert isinstance(ops, list)
                ops.append([op, seq[i] - 1])
                if op == "rotate":
                    handles[i].close()
                    os.replace(paths[i], paths[i] + ".1")
                    handles[i] = open(paths[i], "a")  # noqa: SIM115
                elif op == "truncate":
                    if args.cut and seq[i] - args.first_seq < per_file - 1:
                        text = f"{names[i]} {seq[i]:09d} {padding}\n"
                        handles[i].write(text[: len(text) // 2])
                        handles[i].flush()
                        time.sleep(args.cut_pause)  # the follower reads the first half meanwhile
                        handles[i].write(text[len(text) // 2 :])
                        handles[i].flush()
                        seq[i] += 1
                        written += 1
                        record["lines"] = int(record["lines"]) + 1  # type: ignore[call-overload]
                        record["last_seq"] = seq[i] - 1
                    truncations = record["truncations"]
                    assert isinstance(truncations, list)
                    truncations.append(seq[i] - 1)
                    os.truncate(paths[i], 0)
                else:
                    handles[i].close()
                    os.unlink(paths[i])
                    time.sleep(0.01)
                    handles[i] = open(paths[i], "a")  # noqa: SIM115
                born[i] = time.monotonic()
        ahead = written / args.rate - (time.monotonic() - start)
        if ahead > 0:
            time.sleep(ahead)
    for h in handles:
        h.close()
    tmp = args.manifest + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"files": manifest, "seconds": time.monotonic() - start}, f)
    os.replace(tmp, args.manifest)


if __name__ == "__main__":
    main()
