"""``a1x-tui stop RUN``: stop a supervised run and every process it started.

The supervisor sends SIGTERM to the running stage's process group, waits its grace period, then
SIGKILL, and answers once nothing is left. When no supervisor answers (it crashed), the processes
``state.json`` records are stopped directly. Exit: 0 nothing of the run is left running, 1 something
survived or a supervisor holds the run without answering, 3 not a run (no ``run.toml``, or no
``state.json`` and no supervisor: what ``a1x-tui status`` calls not a run), or one this user must not act
on (another user's, or writable by others: docs/supervisor.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from a1x_supervisor.rundir import RunDir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN", help="the run directory")


def run(args: argparse.Namespace) -> int:
    code, text = stop_run(args.run_dir)
    print(text, file=sys.stdout if code == 0 else sys.stderr)
    return code


def stop_run(run_dir: Path) -> tuple[int, str]:
    """Stop the run in ``run_dir``: (exit code, what happened in a line or, for a crashed supervisor's
    stages, one line each)."""
    from a1x_supervisor.launch import offline_status
    from a1x_supervisor.protocol import NoSupervisor, SupervisorClient
    from a1x_supervisor.recovery import lock_is_held
    from a1x_supervisor.rundir import RunDirError, trusted_run
    from a1x_supervisor.spec import SpecError, load_spec

    try:
        rundir = trusted_run(run_dir)
    except RunDirError as exc:
        return 3, str(exc)
    try:
        grace = load_spec(rundir.spec_path).supervisor.stop_grace_s
    except SpecError:
        grace = 30.0
    try:
        reply = SupervisorClient(rundir.socket_path).request({"op": "stop"}, timeout=grace + 60.0)
    except NoSupervisor:  # none answers, or it went away in the middle of this stop
        if offline_status(rundir) is None and not lock_is_held(rundir.lock_path):
            # a spec and nothing else (never started): `status` says the same, with the same code
            return 3, f"{run_dir}: not a run directory (no readable state.json)"
        return _stop_orphans(rundir, grace)
    if not reply.get("ok"):
        return 1, f"{rundir.run_dir}: {reply.get('error') or 'the supervisor did not finish stopping in time'}"
    left = (offline_status(rundir) or {}).get("processes_alive") or []
    if left:
        return 1, f"{rundir.run_dir}: stopped, but processes survive: {left}"
    return 0, f"{rundir.run_dir}: stopped; no process of the run is left"


def _stop_orphans(rundir: RunDir, grace: float) -> tuple[int, str]:
    from a1x_supervisor.launch import pid_alive, stop_orphans
    from a1x_supervisor.recovery import read_pid

    reports = stop_orphans(rundir, grace)  # waits a while for a dying supervisor's lock
    if reports is None:
        pid = read_pid(rundir.pid_path)
        if pid is not None and pid_alive(pid):
            return 1, (
                f"{rundir.run_dir}: a supervisor (pid {pid}) holds the run but does not answer; "
                f"`kill {pid}` and run `a1x-tui stop` again"
            )
        # never name a pid that is gone
        return 1, (
            f"{rundir.run_dir}: the run's lock ({rundir.lock_path}) is still held, but no supervisor "
            "recorded for the run is alive; run `a1x-tui stop` again in a moment"
        )
    if not reports:
        return 0, f"{rundir.run_dir}: no supervisor and no recorded process running: nothing to stop"
    lines = [f"stage {stage}: {what} (left by a crashed supervisor)" for stage, _report, what in reports]
    survivors = [pid for _stage, report, _what in reports for pid in report.survivors]
    if survivors:
        return 1, "\n".join([*lines, f"still running after SIGKILL: {survivors}"])
    return 0, "\n".join(lines)
