"""``a1x-tui lint TOML``: check a recipe TOML before launch.

stdout: the report only (text or JSON, the same ``Report`` as ``--check``); exit 0 ok,
1 warning, 2 critical, 3 unknown (the file could not be read).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from a1x_diagnostics.findings import CheckState, Report

_CHECK_MARKS = {CheckState.OK: "[+]", CheckState.FINDING: "[-]", CheckState.BLIND: "[?]", CheckState.SKIPPED: "[ ]"}


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    if value > 65536:
        raise argparse.ArgumentTypeError(f"{value} is more than any machine has (at most 65536)")
    return value


def add_context_arguments(parser: argparse.ArgumentParser) -> None:
    """What the TOML cannot say: shared by ``lint`` and ``fix``."""
    parser.add_argument("--gpus", type=positive_int, metavar="N", help="GPUs per node the launcher will see")
    parser.add_argument("--nodes", type=positive_int, metavar="N", help="number of nodes (default: 1)")
    parser.add_argument(
        "--compute",
        choices=("local", "cluster"),
        help="compare with the recipe's local or cluster values (default: cluster when --nodes > 1)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("toml", type=Path, metavar="TOML",
                        help="the recipe TOML to check (or an AlpaGym run's cosmos_config.toml, resolved_config.yaml "
                        "or run folder)")
    add_context_arguments(parser)
    parser.add_argument(
        "--entry",
        metavar="SCRIPT",
        help="the entry script cosmos-rl will run: [custom] keys are checked against what it reads "
        "(default: against every entry script of the recipe)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="report format (default: text)")


def render_text(report: Report) -> str:
    """The human report: summary line, each finding with its lines and fixes, then the checks."""
    out = [report.summary]
    for f in report.findings:
        out.append("")
        out.append(f"{f.severity.value.upper()} {f.id}: {f.title}")
        out.append(f"  {f.explanation}")
        for ev in f.evidence:
            where = f"{ev.file}:{ev.line}" if ev.line is not None else ev.file
            out.append(f"  > {where}: {ev.text.strip()}")
        for fix in f.fixes:
            proposed = "remove the key" if fix.proposed is None else repr(fix.proposed)
            out.append(f"  fix: {fix.path}: {fix.current!r} -> {proposed} ({fix.why})")
        if f.fixes:
            out.append(f"  apply: a1x-tui fix {report.target} --finding {f.id}")
        if f.action:
            out.append(f"  action: {f.action}")
    if report.checks:
        out.append("")
        for check in report.checks:
            note = f" ({check.note})" if check.note else ""
            out.append(f"{_CHECK_MARKS[check.state]} {check.id}{note}")
    for note in report.notes:
        out.append(f"note: {note}")
    return "\n".join(out)


def lint_path(path: Path, *, gpus: int | None = None, nodes: int | None = None, compute: str | None = None,
              entry: str | None = None) -> Report:
    """The report ``a1x-tui lint`` prints (also the MCP server's ``lint`` tool), secrets masked."""
    from a1x_diagnostics.alpagym.lint import lint_target
    from a1x_diagnostics.config import lint_report
    from a1x_diagnostics.report import redact_report

    # An AlpaGym run's generated configs (its TOML, its resolved_config.yaml, or the run folder): the closed-loop
    # lint (docs/config.md "Closed-loop runs"); any other TOML: the recipe's.
    closed = lint_target(path, gpus_per_node=gpus)
    report = closed if closed is not None else lint_report(path, gpus_per_node=gpus, nodes=nodes, compute=compute,
                                                           entry=entry)
    # Evidence quotes TOML lines: a key or token written in the file is masked as --check masks it.
    return redact_report(report)


def run(args: argparse.Namespace) -> int:
    report = lint_path(args.toml, gpus=args.gpus, nodes=args.nodes, compute=args.compute, entry=args.entry)
    print(report.model_dump_json(indent=2) if args.format == "json" else render_text(report))
    return report.exit_code
