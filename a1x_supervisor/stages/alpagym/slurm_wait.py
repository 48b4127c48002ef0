"""``python -m a1x_supervisor.stages.alpagym.slurm_wait STAGE_LOG``: follow the Slurm job AlpaGym's host
submitted (``deploy = "slurm"``) until it ends; exit 0 only when Slurm says COMPLETED.

The host prints ``Submitted Slurm job <id>`` and exits (upstream host/src/alpagym_host/cli.py:70;
docs/reference/alpagym.md §5 "Launch"); the job id is read from the train stage's log, where that
line went. SIGTERM (the supervisor's Stop) cancels the job with ``scancel`` before exiting.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

SUBMITTED = re.compile(r"Submitted Slurm job (\d+)")
POLL_S = 15.0


def job_id(stage_log: Path) -> str | None:
    try:
        text = stage_log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = SUBMITTED.findall(text)
    return found[-1] if found else None


def _slurm(*argv: str) -> str | None:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m a1x_supervisor.stages.alpagym.slurm_wait STAGE_LOG", file=sys.stderr)
        return 2
    job = job_id(Path(argv[0]))
    if job is None:
        print(f"{argv[0]}: no 'Submitted Slurm job <id>' line: the host submitted nothing", flush=True)
        return 1
    poll_s = float(os.environ.get("A1X_SLURM_POLL_S", POLL_S))  # tests poll faster

    def cancel(signum: int, _frame: FrameType | None) -> None:
        print(f"stopping: scancel {job}", flush=True)
        _slurm("scancel", job)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, cancel)
    print(f"following Slurm job {job}", flush=True)
    last = ""
    while True:
        state = _slurm("squeue", "-h", "-j", job, "-o", "%T")
        if state is not None and state.strip():
            if state.strip() != last:
                last = state.strip()
                print(f"Slurm job {job} {last}", flush=True)
            time.sleep(poll_s)
            continue
        # Not queued any more (or squeue failed: a busy controller, an aged-out id): sacct has the end.
        final = _slurm("sacct", "-n", "-X", "-P", "-j", job, "-o", "State")
        if final is None:
            time.sleep(poll_s)
            continue
        words = final.split()
        ended = words[0] if words else "UNKNOWN"
        print(f"Slurm job {job} ended {ended}", flush=True)
        return 0 if ended == "COMPLETED" else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
