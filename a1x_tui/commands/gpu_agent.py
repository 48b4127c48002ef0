"""``a1x-tui gpu-agent RUN_DIR``: sample this node's GPUs into ``RUN_DIR/gpu/<hostname>.jsonl``.

One agent per node (multi-node runs write to the shared run directory); a client on any machine
reads the files. Stops cleanly on SIGTERM or SIGINT, writing a final ``stop`` line. stdout: only
``--once``'s readings; stderr: one-line diagnostics. Exit: 0 stopped cleanly, 1 NVML unavailable,
2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from a1x_diagnostics.gpu import GpuSampler

PROG = "a1x-tui gpu-agent"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", help="run directory (samples go to RUN_DIR/gpu/)")
    parser.add_argument("--interval", type=float, default=1.0, metavar="S", help="device tier period (default 1 s)")
    parser.add_argument(
        "--process-interval", type=float, default=5.0, metavar="S", help="per-process tier period (default 5 s)"
    )
    parser.add_argument("--once", action="store_true", help="take one sample, print it, write it, and exit")
    parser.add_argument(
        "--max-mb", type=float, default=16.0, metavar="MB", help="rotate the samples file at this size (default 16)"
    )
    parser.add_argument(
        "--pids-file",
        metavar="PATH",
        help="JSON object {pid: label} of this run's processes (written by the supervisor); re-read when it changes",
    )
    parser.add_argument(
        "--controller-host", metavar="HOST:PORT", help="this run's COSMOS_CONTROLLER_HOST (tells runs apart)"
    )
    parser.add_argument("--host", help="name of this node in the samples file name (default: hostname)")


class _PidsFile:
    """Re-reads the supervisor's pid -> label file when its mtime changes; ``None`` when unusable."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._mtime: float | None = None
        self._pids: dict[int, str] | None = None
        self._warned = False

    def __call__(self) -> Mapping[int, str] | None:
        try:
            mtime = self.path.stat().st_mtime
        except OSError:
            self._warn("cannot be read; joining roles from command lines and environments")
            return None
        if mtime != self._mtime:
            self._mtime = mtime
            try:
                raw = json.loads(self.path.read_text())
                self._pids = {int(pid): str(label) for pid, label in raw.items()}
            except (OSError, ValueError, AttributeError):
                self._warn("is not a JSON object {pid: label}; joining roles from command lines and environments")
                self._pids = None
        return self._pids

    def _warn(self, problem: str) -> None:
        if not self._warned:
            print(f"{PROG}: {self.path}: {problem}", file=sys.stderr)
            self._warned = True


def run(args: argparse.Namespace) -> int:
    from a1x_diagnostics.gpu import GpuSampler, RoleResolver, SampleWriter, samples_path

    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        print(f"{PROG}: {run_dir}: not a directory", file=sys.stderr)
        return 2
    values = (args.interval, args.process_interval, args.max_mb)
    if not all(math.isfinite(v) and v > 0 for v in values):  # nan compares false both ways: ask for finite
        print(f"{PROG}: --interval, --process-interval and --max-mb must be positive finite numbers", file=sys.stderr)
        return 2
    path = samples_path(run_dir, args.host)
    try:
        writer = SampleWriter(path, max_bytes=int(args.max_mb * 1024 * 1024))
    except OSError as exc:
        print(f"{PROG}: {path.parent}: cannot write samples: {exc.strerror or exc}", file=sys.stderr)
        return 2
    known = _PidsFile(Path(args.pids_file)) if args.pids_file else None
    sampler = GpuSampler(
        interval_s=args.interval,
        process_interval_s=args.process_interval,
        resolver=RoleResolver(known, controller_host=args.controller_host),
        writer=writer,
        host=args.host,
        history_size=16,
    )
    if args.once:
        return _once(sampler, path)
    return _loop(sampler, path)


def _once(sampler: GpuSampler, path: Path) -> int:
    snap = sampler.sample(processes=True)
    sampler.stop()
    if snap is None:
        print(f"{PROG}: NVML unavailable: {sampler.unavailable}", file=sys.stderr)
        return 1
    for dev in snap.devices:
        print(dev.render())
    for proc in snap.processes or ():
        print("  " + proc.render())
    if sampler.state.role_note:
        print(f"{PROG}: {sampler.state.role_note}", file=sys.stderr)
    print(f"{PROG}: wrote {path}", file=sys.stderr)
    return 0


def _loop(sampler: GpuSampler, path: Path) -> int:
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        if not sampler.open():  # the agent has no UI to keep responsive: find out now
            print(f"{PROG}: NVML unavailable: {sampler.unavailable}", file=sys.stderr)
            return 1
        sampler.start()
        print(f"{PROG}: sampling every {sampler.interval_s:g} s into {path}", file=sys.stderr)
        while not stop.wait(0.5):
            if sampler.wait(0):  # the thread ended: NVML unavailable
                break
    finally:
        sampler.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if sampler.unavailable is not None:
        print(f"{PROG}: NVML unavailable: {sampler.unavailable}", file=sys.stderr)
        return 1
    if sampler.writer is not None:
        sampler.writer.write_event("stop", host=sampler.host)
    print(f"{PROG}: stopped", file=sys.stderr)
    return 0
