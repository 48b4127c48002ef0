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
        "--dir", type=Path, metavar="DIR", help="demo workspace (default: ~/.cache/a1x-tui/demo); runs go in DIR/runs"
    )
    parser.add_argument(
        "--closed-loop", action="store_true", help="a closed-loop run (AlpaGym + AlpaSim, simulated) instead"
    )
    parser.add_argument(
        "--speed", type=_speed, default=1.0, metavar="X", help="play the training scenario X times faster (default 1)"
    )


def _start(root: Path, speed: float, closed_loop: bool = False) -> tuple[Path, str | None]:
    from a1x_supervisor.daemon import Plan
    from a1x_supervisor.launch import start_daemon, wait_until_ready
    from a1x_supervisor.rundir import RunDir
    from a1x_tui.demo.pipeline import register as register_demo
    from a1x_tui.demo.setup import DemoOptions, prepare_demo_run

    register_demo()  # the daemon forked below builds the demo's stages
    run_dir = prepare_demo_run(DemoOptions(root=root, speed=speed, closed_loop=closed_loop))
    pid = start_daemon(run_dir, Plan())
    return run_dir, wait_until_ready(RunDir(run_dir), pid)


def _headless(run_dir: Path) -> int:
    from a1x_diagnostics.engine import check
    from a1x_diagnostics.report import render
    from a1x_supervisor.protocol import NoSupervisor, SupervisorClient
    from a1x_supervisor.rundir import RunDir
    from a1x_tui.console import print_stream

    rundir = RunDir(run_dir)

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    status: str | None = None
    try:
        status = print_stream(SupervisorClient(rundir.socket_path).subscribe(), say)
    except NoSupervisor:
        pass  # it already finished
    except KeyboardInterrupt:
        say(f"detached; the demo run goes on by itself: a1x-tui stop {run_dir}")
        return 130
    if status is not None and status != "succeeded":  # stopped, failed: the report below is of what ran
        say(f"a1x-tui demo: the run {status}; the report is of its logs as they ended")
    config = rundir.train_toml if rundir.train_toml.is_file() else None
    closed = rundir.closed_loop_dir.is_dir()  # the closed-loop demo: its AlpaGym run, generated TOML and all
    report = check(rundir.closed_loop_dir if closed else run_dir / "logs", config_path=config)
    text = render(report, "text")
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return report.exit_code


def run(args: argparse.Namespace) -> int:
    from a1x_tui.demo.setup import default_root

    root = args.dir if args.dir is not None else default_root()
    try:
        run_dir, error = _start(root, args.speed, args.closed_loop)
    except OSError as exc:
        print(f"a1x-tui demo: cannot prepare {root}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if error is not None:
        print(f"a1x-tui demo: {error}", file=sys.stderr)
        return 1
    print(f"a1x-tui demo: run {run_dir} (supervisor detached; no GPU, no network)", file=sys.stderr, flush=True)
    if args.headless:
        return _headless(run_dir)
    from a1x_tui.ui import A1xApp, resolve_target

    return int(A1xApp(target=resolve_target(run_dir)).run() or 0)
