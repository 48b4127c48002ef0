"""``a1x-tui preflight --spec FILE``: check this machine against a run spec before anything downloads.

stdout: the report only (text or JSON, the same ``Report`` as ``--check`` with ``kind="preflight"``);
exit 0 ok, 1 warning, 2 critical, 3 unknown (the spec could not be read).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--spec", type=Path, required=True, metavar="FILE", help="the run spec (a1x-tui init)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--from", dest="from_stage", metavar="STAGE", help="check only the stages from STAGE on")
    group.add_argument("--only", metavar="STAGE", help="check only this stage")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="report format (default: text)")


def run(args: argparse.Namespace) -> int:
    from a1x_supervisor.pipeline import select_stages, stage_names
    from a1x_supervisor.preflight import outputs_present, preflight, render_text
    from a1x_supervisor.spec import SpecError, load_spec
    from a1x_supervisor.stage import StageError
    from a1x_tui.demo.pipeline import register as register_demo

    register_demo()  # a demo run's spec names the demo's pipeline
    try:
        spec = load_spec(args.spec)
        stages = select_stages(stage_names(spec), from_stage=args.from_stage, only=args.only)
    except (SpecError, StageError) as exc:
        print(str(exc), file=sys.stderr)
        return 3
    from a1x_diagnostics.report import redact_report

    report = redact_report(
        preflight(spec, stages=stages, target=str(args.spec), skip_verified=lambda stage: outputs_present(spec, stage))
    )
    if args.format == "json":
        print(report.model_dump_json(indent=2))
    else:
        print(render_text(report))
    return report.exit_code
