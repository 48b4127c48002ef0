"""``a1x-tui --check PATH``: the headless health report for people, scripts and agents.

stdout carries only the report (text, or ``--format json``: the ``Report`` model, whose JSON Schema
``--schema`` prints); diagnostics go to stderr. Exit codes as monitoring plugins: 0 ok, 1 warning,
2 critical, 3 unknown (nothing readable, not a run, timed out). Never imports Textual.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

DEFAULT_TIMEOUT_S = 120.0


def _timeout_seconds(text: str) -> float:
    """Seconds: 0 or more; ``inf`` (or any value of three years and more) is no limit."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if math.isnan(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a number of seconds, 0 or more (inf: no limit)")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        nargs="?",
        metavar="PATH",
        help="a Cosmos-RL --log-dir, one logs_<ts> folder, a folder of controller/policy/rollout logs, a SLURM job "
        "folder, or a single log file (launcher stdout, SLURM .out)",
    )
    parser.add_argument("--config", metavar="TOML", help="the run's TOML: adds config lint and current values to fixes")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="report format (default: text)")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="text report: list every check that found nothing (ok, blind and why, not applicable)")
    parser.add_argument(
        "--run", metavar="NAME", help="which logs_<ts> (or SLURM part_N/run_M) to read; default: the latest"
    )
    parser.add_argument(
        "--schema", action="store_true", help="print the JSON Schema of the --format json report and exit"
    )
    parser.add_argument(
        "--example",
        nargs="?",
        const="",
        metavar="NAME",
        help="check a built-in example run instead of PATH (no NAME: list them)",
    )
    parser.add_argument(
        "--timeout",
        type=_timeout_seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"give up (status unknown) after this long, detectors included (default: {DEFAULT_TIMEOUT_S:g}; "
        "inf: no limit)",
    )


def _examples() -> Any:
    from importlib import resources  # here: only --example needs it (it costs start-up time)

    return resources.files("a1x_diagnostics.examples")


def example_names() -> list[str]:
    root = _examples()
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def example_path(name: str) -> Path:
    """The folder of built-in example ``name`` (package data, a real folder on disk)."""
    root = _examples()
    path = Path(str(root.joinpath(name)))
    if not name or not path.is_dir():
        raise KeyError(name)
    return path


def _emit(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def run(args: argparse.Namespace) -> int:
    if args.schema:
        from a1x_diagnostics.findings import report_json_schema

        _emit(json.dumps(report_json_schema(), indent=2) + "\n")
        return 0
    path = args.path
    if path is not None and ":" in path and args.example is None:  # perhaps HOST:PATH (nothing loaded otherwise)
        from a1x_tui.remote.address import parse_remote

        remote = parse_remote(path)
        if remote is not None:  # the far side's --check, over the user's ssh
            from a1x_tui.commands.remote_watch import check as remote_check

            return remote_check(args, remote)
    if args.example is not None:
        names = example_names()
        if not args.example:
            from a1x_diagnostics.examples import DESCRIPTIONS

            width = max(map(len, names), default=0)
            _emit("".join(f"{n:<{width}}  {DESCRIPTIONS.get(n, '')}".rstrip() + "\n" for n in names))
            return 0
        try:
            path = str(example_path(args.example))
        except KeyError:
            print(f"a1x-tui --check: no example {args.example!r} (available: {', '.join(names)})", file=sys.stderr)
            return 3
    from a1x_diagnostics.engine import check
    from a1x_diagnostics.report import render, unknown_report

    if path is None:
        report = unknown_report("", "no PATH given (a1x-tui --check PATH, or --example NAME)")
        print("a1x-tui --check: no PATH given", file=sys.stderr)
    else:
        progress = (lambda msg: print(f"a1x-tui --check: {msg}", file=sys.stderr)) if sys.stderr.isatty() else None
        report = check(path, config_path=args.config, run=args.run, now=time.time(), timeout=args.timeout,
                       progress=progress)
    if path is not None:
        for note in report.notes:
            print(f"a1x-tui --check: {note}", file=sys.stderr)
        if report.exit_code == 3 and Path(path).suffix == ".toml" and Path(path).is_file():
            print(f"a1x-tui --check: {path} is a TOML, not a run's logs: `a1x-tui lint {path}` checks a recipe "
                  f"TOML, `a1x-tui --check RUN --config {path}` a run with its TOML", file=sys.stderr)
    _emit(render(report, args.format, args.verbose))
    return report.exit_code
