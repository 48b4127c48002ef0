"""``a1x-tui fix TOML --finding ID [--apply]``: show, then write, the TOML change that cures a finding.

stdout: the unified diff (or JSON with ``--format json``); stderr: what happened. Exit 0 when
the diff was shown or written, or there is nothing to write (lint no longer raises the finding: a fix
applied already), 1 when the fix is refused (one line says why), 2 when the TOML or the report cannot
be read, 3 when no finding has that id (the ids lint raises in the TOML are listed).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from a1x_diagnostics.findings import Finding, Report
from a1x_tui.commands.lint import add_context_arguments

_DOTTED = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+$")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("toml", type=Path, metavar="TOML", help="the recipe TOML to change")
    parser.add_argument("--finding", required=True, metavar="ID", help="the finding id to cure (see `a1x-tui lint`)")
    parser.add_argument("--apply", action="store_true", help="write the change (atomically, with a .bak backup)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="[PATH=]VALUE",
        help="a value only you know (e.g. a model path); PATH= may be left out when the fix needs one value",
    )
    parser.add_argument(
        "--report",
        type=Path,
        metavar="JSON",
        help="take the finding from a saved `--check --format json` report instead of linting the TOML",
    )
    add_context_arguments(parser)
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")


class _BadReport(Exception):
    pass


_MAX_REPORT_BYTES = 64 << 20  # a --check report quotes at most a few lines per finding


def _finding_from_report(path: Path, finding_id: str) -> Finding:
    from a1x_diagnostics.inputs import InputError, read_input

    try:
        report = Report.model_validate_json(read_input(path, limit=_MAX_REPORT_BYTES, what="report"))
    except InputError as exc:
        raise _BadReport(f"{path}: not a readable a1x-tui JSON report: {exc}") from None
    except ValueError as exc:
        first = (str(exc).splitlines() or ["invalid JSON"])[0]
        raise _BadReport(f"{path}: not a readable a1x-tui JSON report: {first}") from None
    for finding in report.findings:
        if finding.id == finding_id:
            return finding
    raise _BadReport(f"{path}: the report has no {finding_id} finding")


def _values(settings: list[str], finding: Finding | None) -> dict[str, Any]:
    from a1x_diagnostics.config import parse_value

    values: dict[str, Any] = {}
    for setting in settings:
        path, sep, raw = setting.partition("=")
        if sep and _DOTTED.match(path):
            values[path] = parse_value(raw)
            continue
        candidates = (finding.data.get("needs_value") or [f.path for f in finding.fixes]) if finding else []
        if len(candidates) != 1:
            raise ValueError(f"--set {setting}: say which key, as --set PATH=VALUE")
        values[candidates[0]] = parse_value(setting)
    return values


def _not_raised(args: argparse.Namespace, raised: list[Finding]) -> int:
    """Lint does not raise ``--finding`` in this TOML: an id that does not exist (3, with the ids that do),
    one that lint never raises (1: it comes from the logs, take it from a report), or a config finding
    the TOML no longer has, e.g. a fix applied already (0: nothing to write)."""
    import difflib

    from a1x_diagnostics.catalog import CATALOG

    wanted = args.finding
    here = sorted({f.id for f in raised if f.fixes})
    fixable = f"lint raises {', '.join(here) or 'nothing with a fix'} in {args.toml}"
    entry = CATALOG.get(wanted)
    if entry is None:
        close = difflib.get_close_matches(wanted, CATALOG, n=3, cutoff=0.5)
        guess = f" (did you mean {' or '.join(close)}?)" if close else ""
        print(f"a1x-tui fix: no finding id {wanted!r}{guess}; {fixable}; every id: docs/findings.md", file=sys.stderr)
        return 3
    if "config" not in entry.origins:
        print(
            f"a1x-tui fix: lint never raises {wanted} (it comes from a run's logs): pass the run's report, "
            f"--report REPORT.json (a1x-tui --check RUN --config {args.toml} --format json); {fixable}",
            file=sys.stderr,
        )
        return 1
    if args.format == "json":  # the shape of a fix that had nothing to change
        from a1x_diagnostics.config import lint_report
        from a1x_diagnostics.report import redact_report

        after = redact_report(lint_report(args.toml, gpus_per_node=args.gpus, nodes=args.nodes, compute=args.compute))
        document = {"finding": wanted, "applied": False, "backup": None, "diff": ""}
        print(json.dumps({**document, "after": after.model_dump(mode="json")}, indent=2))
    print(f"nothing to write: lint raises no {wanted} in {args.toml} (the fix is already applied, or it was "
          f"never needed); {fixable}", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    from a1x_diagnostics.config import (
        ConfigError,
        FixRefused,
        apply_fix,
        lint_config,
        load_config,
        make_context,
        plan_fix,
    )

    context = make_context(gpus_per_node=args.gpus, nodes=args.nodes, compute=args.compute)
    try:
        loaded = load_config(args.toml)
        given = _finding_from_report(args.report, args.finding) if args.report else None
    except (ConfigError, _BadReport) as exc:
        print(exc, file=sys.stderr)
        return 2
    raised = lint_config(loaded, gpus_per_node=args.gpus, nodes=args.nodes, compute=args.compute)
    finding = given or next((f for f in raised if f.id == args.finding), None)
    if finding is None:
        return _not_raised(args, raised)
    try:
        values = _values(args.set, finding)
        written = False
        if args.apply:
            result = apply_fix(
                args.toml, args.finding, expected_sha256=loaded.sha256, values=values, finding=given, context=context
            )
            diff, after, written = result.diff, result.after, result.written
            backup = str(result.backup) if result.backup is not None else None
            for path in result.cleaned:
                print(f"removed {path}: left by an interrupted fix --apply", file=sys.stderr)
        else:
            plan = plan_fix(loaded, args.finding, values=values, finding=given, context=context)
            diff, after, backup = plan.diff, plan.after, None
    except (FixRefused, ValueError) as exc:
        print(str(exc).splitlines()[0], file=sys.stderr)
        return 1
    from a1x_diagnostics.report import redact, redact_report

    # shown, not applied: a key written in the TOML near the change is masked as lint masks it
    diff, after = redact(diff), redact_report(after)
    if args.format == "json":
        print(
            json.dumps(
                {
                    "finding": args.finding,
                    "applied": written,
                    "backup": backup,
                    "diff": diff,
                    "after": json.loads(after.model_dump_json()),
                },
                indent=2,
            )
        )
    else:
        sys.stdout.write(diff)
    if not diff:
        print(f"nothing to change: {args.toml} already has what the fix for {args.finding} sets; not written",
              file=sys.stderr)
    elif args.apply:
        print(f"wrote {args.toml} (backup: {backup}); lint now: {after.summary}", file=sys.stderr)
    else:
        print(
            f"not written; after the change lint says: {after.summary}. Re-run with --apply to write it.",
            file=sys.stderr,
        )
    return 0
