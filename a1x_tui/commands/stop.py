"""``a1x-tui stop RUN``: stop a supervised run and every process it started.

The supervisor sends SIGTERM to the running stage's process group, waits its grace period, then
SIGKILL, and answers once nothing is left. When no supervisor answers (it crashed), the processes
``state.json`` records are stopped directly. Exit: 0 nothing of the run is left running, 1 something
survived or a supervisor holds the run without answering, 3 not a run directory, or one this user
must not act on (another user's, or writable by others: docs/supervisor.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN", help="the run directory")


def run(args: argparse.Namespace) -> int:
    from a1x_supervisor.launch import offline_status, pid_alive, stop_orphans
    from a1x_supervisor.protocol import NoSupervisor, SupervisorClient
    from a1x_supervisor.recovery import read_pid
    from a1x_supervisor.rundir import RunDirError, trusted_run
    from a1x_supervisor.spec import SpecError, load_spec

    try:
        rundir = trusted_run(args.run_dir)
    except RunDirError as exc:
        print(str(exc), file=sys.stderr)
        return 3
    try:
        grace = load_spec(rundir.spec_path).supervisor.stop_grace_s
    except SpecError:
        grace = 30.0
    try:
        reply = SupervisorClient(rundir.socket_path).request({"op": "stop"}, timeout=grace + 60.0)
    except NoSupervisor:  # none answers, or it went away in the middle of this stop
        reports = stop_orphans(rundir, grace)  # waits a while for a dying supervisor's lock
        if reports is None:
            pid = read_pid(rundir.pid_path)
            if pid is not None and pid_alive(pid):
                print(
                    f"{rundir.run_dir}: a supervisor (pid {pid}) holds the run but does not answer; "
                    f"`kill {pid}` and run `a1x-tui stop` again",
                    file=sys.stderr,
                )
            else:  # never name a pid that is gone
                print(
                    f"{rundir.run_dir}: the run's lock ({rundir.lock_path}) is still held, but no supervisor "
                    "recorded for the run is alive; run `a1x-tui stop` again in a moment",
                    file=sys.stderr,
                )
            return 1
        if not reports:
            print(f"{rundir.run_dir}: no supervisor and no recorded process running: nothing to stop")
            return 0
        survivors = []
        for stage, report, what in reports:
            print(f"stage {stage}: {what} (left by a crashed supervisor)")
            survivors += report.survivors
        if survivors:
            print(f"still running after SIGKILL: {survivors}", file=sys.stderr)
            return 1
        return 0
    if not reply.get("ok"):
        print(
            f"{rundir.run_dir}: {reply.get('error') or 'the supervisor did not finish stopping in time'}",
            file=sys.stderr,
        )
        return 1
    left = (offline_status(rundir) or {}).get("processes_alive") or []
    if left:
        print(f"{rundir.run_dir}: stopped, but processes survive: {left}", file=sys.stderr)
        return 1
    print(f"{rundir.run_dir}: stopped; no process of the run is left")
    return 0
