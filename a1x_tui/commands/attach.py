"""``a1x-tui attach PATH [--config TOML]``: the dashboard on a run of ours, or on any Cosmos-RL logs.

A run directory of ours (it holds ``run.toml``) gets the whole dashboard, with stop and restart
through its supervisor. Anything else the log parser knows (a ``--log-dir``, one ``logs_<ts>``, a
replica folder, a SLURM job folder, one log file) is watched read-only: logs, plots, findings and
GPUs, no stages. ``--config`` names the TOML that fixes are shown against and applied to. Leaving
the dashboard never stops a run. What ``--check`` calls UNKNOWN (no such path, no run there, no
Cosmos-RL line in its files) is refused with the same one line on stderr. Exit: 0, or 3 when PATH
cannot be watched.

``HOST:PATH`` (as scp reads it) attaches to a run on another machine through the user's own ``ssh``:
the far side's ``a1x-tui watch --dashboard`` feeds the dashboard, and a run of ours there is
controlled through its supervisor's socket, forwarded by ssh (``a1x_tui.remote``).
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        type=Path,
        metavar="PATH",
        help="a run directory of a1x-tui, a Cosmos-RL --log-dir, one logs_<ts>, a SLURM job folder or a log file",
    )
    parser.add_argument("--config", type=Path, metavar="TOML", help="the run's TOML (fixes are shown against it)")


def run(args: argparse.Namespace) -> int:
    from a1x_tui.remote.address import parse_remote

    remote = parse_remote(str(args.path))
    if remote is not None:
        return _attach_remote(args, remote)
    from a1x_tui.ui.target import TargetError, resolve_target  # not Textual yet: the verdict starts first

    try:
        target = resolve_target(args.path, args.config)
    except TargetError as exc:
        print(f"a1x-tui attach: {exc}", file=sys.stderr)
        return 3
    verdict = None
    if target.run_dir is not None:  # a run of ours, with stop and restart: only its owner acts on it
        from a1x_supervisor.rundir import RunDirError, check_owner

        try:
            check_owner(target.run_dir)
        except RunDirError as exc:
            print(f"a1x-tui attach: {exc}", file=sys.stderr)
            return 3
    else:  # a run of ours is shown even before its first log line
        from a1x_tui.ui.feeds.verdict import start_check

        # --check reads the run while this process imports the app and draws it (docs/ui.md "Attach").
        with contextlib.suppress(OSError):
            verdict = start_check(target.follow, target.config)
        from a1x_diagnostics.engine import unknown_reason

        reason = unknown_reason(target.follow)
        if reason is not None:
            _end(verdict)
            print(f"a1x-tui attach: {reason}", file=sys.stderr)
            return 3
    from a1x_tui._interrupt import INTERRUPTED, Interrupts
    from a1x_tui.commands.app import run_until_quit

    try:
        with Interrupts() as interrupts:
            from a1x_tui.ui import A1xApp

            app = A1xApp(target=target, verdict=verdict)
            if interrupts.pending:  # Ctrl-C while it loaded: nothing is open yet
                return INTERRUPTED
            return run_until_quit(app, interrupts)
    finally:
        _end(verdict)


def _end(child: subprocess.Popen[bytes] | None) -> None:
    """The verdict's --check, if still reading, ends with the app (quit, Ctrl-C or a refusal)."""
    if child is not None and child.poll() is None:
        child.kill()
        child.wait()


def _attach_remote(args: argparse.Namespace, where: Any) -> int:
    """``attach HOST:PATH``: the far side's ``watch --dashboard`` over the user's ssh; control of a run of ours
    over its forwarded socket (docs/ui.md "From a laptop")."""
    from a1x_tui.remote.link import RemoteError
    from a1x_tui.remote.session import RemoteRun
    from a1x_tui.ui import A1xApp
    from a1x_tui.ui.target import remote_target

    config = str(args.config) if args.config is not None else None
    if config is not None and config.startswith(f"{where.host}:"):
        config = config.split(":", 1)[1]
    try:
        session = RemoteRun.open(where, config)
    except RemoteError as exc:
        print(f"a1x-tui attach: {exc}", file=sys.stderr)
        return 3
    from a1x_tui._interrupt import INTERRUPTED, Interrupts
    from a1x_tui.commands.app import run_until_quit

    try:
        with Interrupts() as interrupts:
            if interrupts.pending:
                return INTERRUPTED
            return run_until_quit(A1xApp(target=remote_target(session)), interrupts)
    finally:
        session.close()
