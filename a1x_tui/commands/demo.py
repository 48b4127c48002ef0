"""``a1x-tui demo``: a complete run through the real supervisor, diagnostics and dashboard.

No GPU, no network, about 70 s (docs/ui.md "The demo"). The stages are small programs shipped in
``a1x_tui.demo.programs`` that write what the real ones write (Cosmos-RL logs in the launcher's
layout and formats, checkpoints, an export) on simulated GPUs, and play out scripted trouble:
pending rollouts growing, a vLLM out-of-memory in the rollout replica, a stretch of collapsed
reward std. The real detectors raise ``rollout_buffer_growth``, ``vllm_oom`` and
``grpo_collapse``; apply their fixes and restart training from the dashboard to see them go.

``--closed-loop`` plays a closed-loop run instead (the AlpaGym pipeline's train, export and verify with
a simulated AlpaGym host: AlpaSim's and AlpaGym's lines, episode artifacts, about 45 s): a scene that
fails and is retried raises ``episode_failures``, collisions rising with the reward ``reward_hacking``.

``--headless`` runs the same without the UI: the supervisor's events on stderr, then the final
``a1x-tui --check`` report on stdout, and its exit code (0 ok, 1 warning, 2 critical, 3 unknown).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path


def _speed(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.25 <= value <= 20:
        raise argparse.ArgumentTypeError(f"{value:g} is out of range (0.25 to 20)")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--headless", action="store_true", help="no UI: print the events, then the --check report")
    parser.add_argument(
        "--dir",
        type=Path,
        metavar="DIR",
        help="demo workspace (default: $XDG_CACHE_HOME/a1x-tui/demo, or ~/.cache/a1x-tui/demo where XDG_CACHE_HOME "
        "is not set); runs go in DIR/runs",
    )
    parser.add_argument(
        "--closed-loop", action="store_true", help="a closed-loop run (AlpaGym + AlpaSim, simulated) instead"
    )
    parser.add_argument(
        "--speed", type=_speed, default=1.0, metavar="X", help="play the training scenario X times faster (default 1)"
    )


def _prepare(root: Path, speed: float, closed_loop: bool) -> Path:
    from a1x_tui.demo.pipeline import register as register_demo
    from a1x_tui.demo.setup import DemoOptions, prepare_demo_run

    register_demo()  # the daemon forked below builds the demo's stages
    return prepare_demo_run(DemoOptions(root=root, speed=speed, closed_loop=closed_loop))


def _start(run_dir: Path) -> str | None:
    from a1x_supervisor.daemon import Plan
    from a1x_supervisor.launch import start_daemon, wait_until_ready
    from a1x_supervisor.rundir import RunDir

    pid = start_daemon(run_dir, Plan())
    return wait_until_ready(RunDir(run_dir), pid)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _stop_started(run_dir: Path) -> int:
    """Ctrl-C before the dashboard was up: the demo run is stopped, nothing of it is left running."""
    from a1x_tui._interrupt import INTERRUPTED
    from a1x_tui.commands.stop import stop_run

    _say(f"a1x-tui demo: interrupted; stopping the demo run {run_dir} (a few seconds)")
    code, line = stop_run(run_dir)
    _say(f"a1x-tui demo: {line}")
    return INTERRUPTED if code == 0 else code


def _headless(run_dir: Path) -> int:
    try:
        return _follow_headless(run_dir)
    except KeyboardInterrupt:
        _say(f"a1x-tui demo: detached; the demo run goes on by itself (stop it: a1x-tui stop {run_dir})")
        return 130


def _follow_headless(run_dir: Path) -> int:
    from a1x_diagnostics.engine import check
    from a1x_diagnostics.report import render
    from a1x_supervisor.protocol import NoSupervisor, SupervisorClient
    from a1x_supervisor.rundir import RunDir
    from a1x_tui.console import print_stream

    rundir = RunDir(run_dir)
    status: str | None = None
    with contextlib.suppress(NoSupervisor):  # none: it already finished
        status = print_stream(SupervisorClient(rundir.socket_path).subscribe(), _say)
    if status is not None and status != "succeeded":  # stopped, failed: the report below is of what ran
        _say(f"a1x-tui demo: the run {status}; the report is of its logs as they ended")
    config = rundir.train_toml if rundir.train_toml.is_file() else None
    closed = rundir.closed_loop_dir.is_dir()  # the closed-loop demo: its AlpaGym run, generated TOML and all
    report = check(rundir.closed_loop_dir if closed else run_dir / "logs", config_path=config)
    text = render(report, "text")
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return report.exit_code


def _raise_interrupt() -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    """Ctrl-C at any moment (docs/ui.md "The demo"): before the supervisor is up, nothing is started; until
    the dashboard is up, the demo run is stopped; in the dashboard it quits as ``q`` does (the run goes on,
    and the terminal says how to stop it); headless, the command detaches and says how to stop the run."""
    from a1x_tui._interrupt import INTERRUPTED, Interrupts

    with Interrupts() as interrupts:  # first: what the imports below start must not be cut by a traceback
        import shutil

        from a1x_tui.demo.setup import default_root

        root = args.dir if args.dir is not None else default_root()
        try:
            run_dir = _prepare(root, args.speed, args.closed_loop)
        except OSError as exc:
            print(f"a1x-tui demo: cannot prepare {root}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        if interrupts.pending:  # no supervisor yet: the prepared folder is all there is
            shutil.rmtree(run_dir, ignore_errors=True)
            _say("a1x-tui demo: interrupted; nothing was started")
            return INTERRUPTED
        error = _start(run_dir)
        if error is not None:
            print(f"a1x-tui demo: {error}", file=sys.stderr)
            return 1
        if interrupts.pending:
            return _stop_started(run_dir)
        _say(f"a1x-tui demo: run {run_dir} (supervisor detached; no GPU, no network)")
        if args.headless:
            interrupts.on_interrupt = _raise_interrupt  # caught in _headless: it detaches
            if interrupts.pending:
                return _stop_started(run_dir)
            return _headless(run_dir)
        from a1x_tui.commands.app import run_until_quit
        from a1x_tui.ui import A1xApp, resolve_target

        app = A1xApp(target=resolve_target(run_dir))
        if interrupts.pending:
            return _stop_started(run_dir)
        return run_until_quit(app, interrupts)
