"""``a1x-tui restart RUN --stage STAGE``: run STAGE again (even if its outputs verify) and go on
from there. A running stage is stopped first. When no supervisor runs (the run ended or crashed),
a new detached supervisor is started for the same run directory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN", help="the run directory")
    parser.add_argument("--stage", required=True, metavar="STAGE", help="the stage to run again")


def run(args: argparse.Namespace) -> int:
    from a1x_supervisor.daemon import Plan
    from a1x_supervisor.launch import start_daemon, wait_until_ready
    from a1x_supervisor.pipeline import select_stages, stage_names
    from a1x_supervisor.protocol import NoSupervisor, SupervisorClient
    from a1x_supervisor.recovery import lock_is_held
    from a1x_supervisor.rundir import RunDirError, trusted_run
    from a1x_supervisor.spec import SpecError, load_spec
    from a1x_supervisor.stage import StageError
    from a1x_supervisor.state import load_state
    from a1x_tui.demo.pipeline import register as register_demo

    register_demo()  # a demo run's spec names the demo's pipeline
    try:
        rundir = trusted_run(args.run_dir)
    except RunDirError as exc:
        print(str(exc), file=sys.stderr)
        return 3
    try:
        select_stages(stage_names(load_spec(rundir.spec_path)), from_stage=args.stage, only=None)
    except (SpecError, StageError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    try:
        reply = SupervisorClient(rundir.socket_path).request({"op": "restart", "stage": args.stage})
    except NoSupervisor:
        if lock_is_held(rundir.lock_path):
            print(f"{rundir.run_dir}: a supervisor holds the run but does not answer", file=sys.stderr)
            return 1
        previous = load_state(rundir.state_path)  # a stage the run left out (--skip) stays out
        skip = tuple(s for s in (previous.plan.get("skip") or []) if s != args.stage) if previous else ()
        pid = start_daemon(rundir.run_dir, Plan(from_stage=args.stage, force=(args.stage,), skip=skip))
        error = wait_until_ready(rundir, pid)
        if error is not None:
            print(error, file=sys.stderr)
            return 1
        print(f"{rundir.run_dir}: no supervisor was running; started pid {pid} to run {args.stage} and what follows")
        return 0
    if not reply.get("ok"):
        print(f"{rundir.run_dir}: {reply.get('error')}", file=sys.stderr)
        return 1
    print(f"{rundir.run_dir}: {reply.get('message')}")
    return 0
