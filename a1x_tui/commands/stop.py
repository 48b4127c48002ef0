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
    out: list[str] = []
    err: list[str] = []
    code = stop_run(args.run_dir, out, err)
    for line in out:
        print(line)
    for line in err:
        print(line, file=sys.stderr)
    return code


def stop_run(run_dir: Path, out: list[str], err: list[str]) -> int:
    """Stop the run at ``run_dir``: what ``a1x-tui stop`` does, its lines appended to ``out`` (stdout) and
    ``err`` (stderr); returns its exit code. Also the MCP server's ``stop`` tool."""
    from a1x_supervisor.launch import offline_status, pid_alive, stop_orphans
    from a1x_supervisor.protocol import NoSupervisor, SupervisorClient
    from a1x_supervisor.recovery import read_pid
    from a1x_supervisor.rundir import RunDirError, trusted_run
    from a1x_supervisor.spec import SpecError, load_spec

    try:
        rundir = trusted_run(run_dir)
    except RunDirError as exc:
        err.append(str(exc))
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
                err.append(
                    f"{rundir.run_dir}: a supervisor (pid {pid}) holds the run but does not answer; "
                    f"`kill {pid}` and run `a1x-tui stop` again"
                )
            else:  # never name a pid that is gone
                err.append(
                    f"{rundir.run_dir}: the run's lock ({rundir.lock_path}) is still held, but no supervisor "
                    "recorded for the run is alive; run `a1x-tui stop` again in a moment"
                )
            return 1
        if not reports:
            out.append(f"{rundir.run_dir}: no supervisor and no recorded process running: nothing to stop")
            return 0
        survivors = []
        for stage, report, what in reports:
            out.append(f"stage {stage}: {what} (left by a crashed supervisor)")
            survivors += report.survivors
        if survivors:
            err.append(f"still running after SIGKILL: {survivors}")
            return 1
        return 0
    if not reply.get("ok"):
        err.append(f"{rundir.run_dir}: {reply.get('error') or 'the supervisor did not finish stopping in time'}")
        return 1
    left = (offline_status(rundir) or {}).get("processes_alive") or []
    if left:
        err.append(f"{rundir.run_dir}: stopped, but processes survive: {left}")
        return 1
    out.append(f"{rundir.run_dir}: stopped; no process of the run is left")
    return 0
