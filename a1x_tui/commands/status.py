"""``a1x-tui status RUN``: the state of a supervised run.

Asks the run's supervisor over its socket; when none answers, reads ``state.json`` and says so
(and which of the recorded processes still run). Exit: 0 running or succeeded, 1 failed,
stopped or blocked, 3 not a run directory, or one this user must not act on.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN", help="the run directory")
    parser.add_argument("--json", action="store_true", help="print the state as JSON (the state.json object)")
    parser.add_argument("--follow", action="store_true", help="then follow the run's events until it ends")


def status_of(run_dir: Path) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """(state, note, refusal) of the run at ``run_dir``, as ``a1x-tui status`` reads it (also the MCP server's
    ``status`` tool): the supervisor's answer (``live`` true), else ``state.json`` with a note saying so; or
    None and the one line that refuses the folder (not a run, not this user's)."""
    from a1x_supervisor.launch import offline_status
    from a1x_supervisor.protocol import NoSupervisor, SupervisorClient
    from a1x_supervisor.rundir import RunDirError, trusted_run

    try:
        rundir = trusted_run(run_dir)
    except RunDirError as exc:
        return None, None, str(exc)
    try:
        reply = SupervisorClient(rundir.socket_path).request({"op": "status"})
        state = reply.get("state") or {}
        state["live"] = True
        return state, None, None
    except NoSupervisor:
        offline = offline_status(rundir)
        if offline is None:
            return None, None, f"{run_dir}: not a run directory (no readable state.json)"
        note = (
            f"no supervisor answers on {rundir.socket_path}: this is state.json as last written "
            f"({offline.get('updated_at')})"
        )
        return offline, note, None


def run(args: argparse.Namespace) -> int:
    from a1x_tui.console import render_state

    state, note, refused = status_of(args.run_dir)
    if state is None:
        print(refused, file=sys.stderr)
        return 3
    from a1x_diagnostics.report import redact

    # state.json is scrubbed of the run's secret values when written; the shapes of secrets are masked here
    if args.json:
        print(redact(json.dumps(state, indent=2)))
    else:
        width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None  # a pipe: lines not wrapped
        print(redact(render_state(state, note=note, width=width)))
    if args.follow and state.get("live"):
        from a1x_supervisor.rundir import trusted_run
        from a1x_tui.commands.run import follow

        return follow(trusted_run(args.run_dir).run_dir)
    return 0 if state.get("status") in ("starting", "running", "succeeded") else 1
