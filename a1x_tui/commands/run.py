"""``a1x-tui run --spec FILE``: start a supervised run, detached from this terminal.

The supervisor runs as a daemon that owns the stage processes; this command follows its events
until the run ends. Ctrl-C, closing the terminal (SIGHUP) or killing this command only detaches:
the run goes on (``a1x-tui status RUN``, ``a1x-tui stop RUN``). ``--run-dir`` of an existing run
resumes it: stages whose outputs verify are skipped.

Exit: 0 the run succeeded (or is left running with --detach / after detaching), 1 it failed or
was stopped, 2 preflight found a critical problem or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from a1x_supervisor.daemon import Plan
    from a1x_supervisor.rundir import RunDir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--spec", type=Path, metavar="FILE", help="the run spec (a1x-tui init)")
    parser.add_argument(
        "--run-dir",
        type=Path,
        metavar="DIR",
        help="run directory (default: a new one under <workspace>/runs); an existing run is resumed",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--from", dest="from_stage", metavar="STAGE", help="start at STAGE (it runs even if done)")
    group.add_argument("--only", metavar="STAGE", help="run only STAGE (it runs even if done)")
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="STAGE",
        help="leave STAGE out (repeatable), e.g. --skip evaluate",
    )
    parser.add_argument("--foreground", action="store_true", help="supervise in this terminal instead of a daemon")
    parser.add_argument("--detach", action="store_true", help="return once the supervisor is up")
    parser.add_argument("--skip-preflight", action="store_true", help="start even if preflight finds problems")


class _Detach(Exception):
    pass


def _detach_on_signals() -> None:
    def handler(_signum: int, _frame: FrameType | None) -> None:
        raise _Detach

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGHUP, handler)


def follow(run_dir: Path, *, print_line: bool = True) -> int:
    """Print the run's events until it ends; 0 when it succeeded. Signals only detach."""
    from a1x_supervisor.protocol import NoSupervisor, SupervisorClient
    from a1x_supervisor.rundir import RunDir
    from a1x_supervisor.state import FINAL_RUN_STATUSES, load_state
    from a1x_tui.console import print_stream

    rundir = RunDir(run_dir)
    _detach_on_signals()
    try:
        status = print_stream(SupervisorClient(rundir.socket_path).subscribe(), _print_event)
    except _Detach:
        _safe_print(detached_line(run_dir))
        return 0
    except NoSupervisor as exc:
        state = load_state(rundir.state_path)
        if state is not None and state.status in FINAL_RUN_STATUSES:  # it finished before we attached
            _safe_print(f"run {state.status}: {state.message}")
            return 0 if state.status == "succeeded" else 1
        _safe_print(str(exc))
        return 1
    if status is None:
        _safe_print(f"the supervisor went away; a1x-tui status {run_dir}")
        return 1
    _safe_print(f"run {status}: a1x-tui status {run_dir}")
    return 0 if status == "succeeded" else 1


def detached_line(run_dir: Path) -> str:
    return f"detached; the run goes on: a1x-tui status {run_dir}    stop it: a1x-tui stop {run_dir}"


def _print_event(text: str) -> None:
    from a1x_tui._stdout import stdout_closed

    _safe_print(text)
    if stdout_closed():  # nobody reads the events any more (`| head`): detach, as on Ctrl-C
        raise _Detach


def _safe_print(text: str) -> None:
    with contextlib.suppress(OSError):  # the terminal is gone (SSH dropped): the run goes on
        print(text, flush=True)


def run(args: argparse.Namespace) -> int:
    from a1x_supervisor.claims import claimed_by_other
    from a1x_supervisor.daemon import Plan
    from a1x_supervisor.launch import new_run_dir, prepare_run_dir, start_daemon, wait_until_ready
    from a1x_supervisor.pipeline import select_stages, stage_names
    from a1x_supervisor.preflight import outputs_present, preflight, render_text
    from a1x_supervisor.recovery import lock_is_held
    from a1x_supervisor.rundir import RunDir, RunDirError
    from a1x_supervisor.spec import SpecError, load_spec
    from a1x_supervisor.stage import StageError
    from a1x_tui._interrupt import INTERRUPTED, Interrupts
    from a1x_tui.demo.pipeline import register as register_demo

    register_demo()  # a demo run's spec names the demo's pipeline
    existing = RunDir(args.run_dir.resolve()) if args.run_dir is not None else None
    spec_path = args.spec
    if spec_path is None:
        if existing is None or not existing.is_run_dir():
            print("--spec FILE is required (or --run-dir of an existing run)", file=sys.stderr)
            return 2
        spec_path = existing.spec_path
    try:
        spec = load_spec(spec_path)
        stages = select_stages(stage_names(spec), from_stage=args.from_stage, only=args.only, skip=args.skip)
    except (SpecError, StageError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    if existing is not None and lock_is_held(existing.lock_path):
        print(f"{existing.run_dir}: a supervisor already runs it: a1x-tui status {existing.run_dir}", file=sys.stderr)
        return 2
    claimed = claimed_by_other(spec, existing.run_dir if existing is not None else None)
    if claimed is not None:  # one live run per output folder (a1x_supervisor/claims.py)
        print(f"{spec_path}: {claimed}", file=sys.stderr)
        return 2

    report = None
    if not args.skip_preflight:
        report = preflight(
            spec, stages=stages, target=str(spec_path), skip_verified=lambda stage: outputs_present(spec, stage)
        )
        if report.findings or report.notes:
            print(render_text(report))
        if report.exit_code >= 2:
            print("preflight found critical problems: fix them, or pass --skip-preflight", file=sys.stderr)
            return 2

    if existing is None and not spec.paths.workspace.is_dir():
        print(f"{spec_path}: paths.workspace {spec.paths.workspace} does not exist (runs go under it)", file=sys.stderr)
        return 2
    plan = Plan(
        from_stage=args.from_stage,
        only=args.only,
        skip=tuple(args.skip),
        preflight=None
        if report is None
        else {"status": report.status.value, "summary": report.summary, "findings": [f.id for f in report.findings]},
    )
    with Interrupts() as interrupts:  # from here on a Ctrl-C is acted on where it cannot orphan anything
        run_dir = existing.run_dir if existing is not None else new_run_dir(spec)
        try:
            rundir = prepare_run_dir(spec, run_dir)
        except RunDirError as exc:
            print(str(exc), file=sys.stderr)
            return 2
        if interrupts.pending:  # no supervisor yet: nothing was started
            if existing is None:
                shutil.rmtree(run_dir, ignore_errors=True)  # the spec this command wrote, and empty folders
            print("a1x-tui run: interrupted; nothing was started", file=sys.stderr)
            return INTERRUPTED
        if args.foreground:
            return _foreground(rundir, plan)
        pid = start_daemon(rundir.run_dir, plan)
        error = wait_until_ready(rundir, pid)
        if error is not None:
            print(error, file=sys.stderr)
            return 1
        _safe_print(f"run {rundir.run_dir}: supervisor pid {pid}, detached from this terminal")
        _safe_print(f"  status: a1x-tui status {rundir.run_dir}    stop: a1x-tui stop {rundir.run_dir}")
        if interrupts.pending:
            _safe_print(detached_line(rundir.run_dir))
            return 0
        if args.detach:
            return 0
        return follow(rundir.run_dir)


def _foreground(rundir: RunDir, plan: Plan) -> int:
    from a1x_supervisor.daemon import AlreadySupervised, RunClaimed, Supervisor
    from a1x_supervisor.rundir import RunDirError
    from a1x_tui.console import format_event

    print(f"run {rundir.run_dir} (foreground: Ctrl-C stops it)", flush=True)
    try:
        return Supervisor(rundir.run_dir, plan, subreaper=True, on_event=lambda e: _safe_print(format_event(e))).serve()
    except (AlreadySupervised, RunClaimed, RunDirError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
