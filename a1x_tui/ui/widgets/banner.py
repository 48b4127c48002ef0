"""The one-line banner over the dashboard: which run, its state, progress, findings, who controls it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text
from textual.widgets import Static

from diagnostics.findings import Finding, Outcome, RunOutcome, Severity

STATUS_STYLE = {
    "running": "bold cyan",
    "starting": "cyan",
    "succeeded": "bold green",
    "failed": "bold red",
    "stopped": "yellow",
    "blocked": "bold red",
}


OUTCOME_STYLE = {Outcome.COMPLETED: "bold green", Outcome.NOT_STARTED: "yellow"}  # every other one: bold red


def banner_text(
    name: str,
    *,
    controllable: bool,
    state: Mapping[str, Any] | None,
    live: bool,
    findings: Mapping[str, Finding],
    metrics: Mapping[str, Any],
    outcome: RunOutcome | None = None,
) -> Text:
    text = Text(name, style="bold")
    if not controllable:
        text.append("  read-only", style="magenta")
    elif state is not None:
        status = str(state.get("status", "?"))
        text.append(f"  {status.upper()}", style=STATUS_STYLE.get(status, ""))
        if state.get("current_stage"):
            text.append(f" · {state['current_stage']}")
    step, total = metrics.get("step"), metrics.get("total_steps")
    if isinstance(step, int) and isinstance(total, int):
        text.append(f"  step {step}/{total}")
    if outcome is not None and outcome.state is not Outcome.RUNNING:  # running: the state above says so
        text.append(f"  run {outcome.state.value}", style=OUTCOME_STYLE.get(outcome.state, "bold red"))
    critical = sum(1 for f in findings.values() if f.severity is Severity.CRITICAL)
    if findings:
        style = "bold red" if critical else "yellow"
        label = f"  {len(findings)} finding{'s' if len(findings) != 1 else ''}"
        if critical:
            label += f" ({critical} critical)"
        text.append(label, style=style)
    elif outcome is None or outcome.state in (Outcome.COMPLETED, Outcome.RUNNING):
        text.append("  no findings", style="green")
    if controllable and state is not None:  # last: the first thing to go on a narrow terminal
        text.append("  supervisor " + ("live" if live else "not running"), style="dim" if live else "yellow")
    return text


class RunBanner(Static):
    DEFAULT_CSS = """
    RunBanner { height: 1; padding: 0 1; background: $boost; }
    """
