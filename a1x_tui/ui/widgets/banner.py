"""The banner over the dashboard: which run, its state, progress, findings, who controls it.

One line (cut at the terminal's width, least important last); when a stage failed (or the run is
blocked), ``FailureLine`` under it says which and why in red, wrapped (four lines at most), with the key to
the stage's log (``l``): where the eye lands first (docs/ui.md "Dashboard").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text
from textual.widgets import Static

from a1x_diagnostics.findings import Finding, Outcome, RunOutcome, Severity
from a1x_diagnostics.printable import printable

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
    reading: int | None = None,
) -> Text:
    """``reading``: the percent of the history read while no diagnosis is in (never "no findings" then)."""
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
    elif reading is not None:
        text.append(f"  reading history {reading} %", style="yellow")
    elif (outcome is None or outcome.state in (Outcome.COMPLETED, Outcome.RUNNING)) and not _ended_badly(state):
        text.append("  no findings", style="green")
    if controllable and state is not None:  # last: the first thing to go on a narrow terminal
        text.append("  supervisor " + ("live" if live else "not running"), style="dim" if live else "yellow")
    return text


def _ended_badly(state: Mapping[str, Any] | None) -> bool:
    """A run that failed, was stopped or is blocked is never shown as healthy, findings or not."""
    return state is not None and state.get("status") in ("failed", "stopped", "blocked")


def failed_stage(state: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The stage that failed (the last one: a run stops at its first failure), if any."""
    failed = [st for st in (state or {}).get("stages") or [] if st.get("status") in ("failed", "orphaned")]
    return failed[-1] if failed else None


def failure_text(state: Mapping[str, Any] | None) -> Text | None:
    """``✗ env failed: <reason>  l: its log`` — the reason in full (it wraps)."""
    stage = failed_stage(state)
    if stage is not None:
        reason = printable(str(stage.get("reason") or "no reason recorded"))
        return Text.assemble(
            (f"✗ {stage.get('name')} {stage.get('status')}: ", "bold red"), (reason, "red"), ("  l: its log", "bold")
        )
    if state is not None and state.get("status") == "blocked":
        return Text.assemble(("✗ blocked: ", "bold red"), (printable(str(state.get("message") or "")), "red"))
    return None


class RunBanner(Static):
    DEFAULT_CSS = """
    RunBanner { height: 1; padding: 0 1; background: $boost; }
    """


class FailureLine(Static):
    DEFAULT_CSS = """
    FailureLine { height: auto; max-height: 4; padding: 0 1; background: $boost; display: none; }
    FailureLine.shown { display: block; }
    """

    def show(self, text: Text | None) -> None:
        self.update(text or "")
        self.set_class(text is not None, "shown")
