"""The banner over the dashboard: which run, its state, progress, findings, who controls it.

One line (cut at the terminal's width, least important last); when a stage failed (or the run is
blocked), ``FailureLine`` under it says which and why in red, wrapped (four lines at most), with the key to
the stage's log (``l``): where the eye lands first (docs/ui.md "Dashboard").
"""

from __future__ import annotations

import re
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


# every other outcome: bold red
OUTCOME_STYLE = {Outcome.COMPLETED: "bold green", Outcome.NOT_STARTED: "yellow", Outcome.STOPPED: "yellow"}


def banner_text(
    name: str,
    *,
    controllable: bool,
    state: Mapping[str, Any] | None,
    live: bool,
    findings: Mapping[str, Finding],
    metrics: Mapping[str, Any],
    outcome: RunOutcome | None = None,
    width: int | None = None,
    reading: int | None = None,
) -> Text:
    """The banner's line; ``reading``: the percent of the history read while no diagnosis is in (never
    "no findings" then); ``width`` (the cells it has) makes it fit: the run's name without its date
    (``20261205-213334-motion`` -> ``213334-motion``), single spaces between the parts, then no name,
    before anything it says about the run is cut (at 80 columns the status, the step, the findings and
    the supervisor all fit)."""
    parts: list[tuple[str, str]] = []  # (text, style) in the order shown, least important last
    if not controllable:
        parts.append(("read-only", "magenta"))
    elif state is not None:
        status = str(state.get("status", "?"))
        stage = f" · {state['current_stage']}" if state.get("current_stage") else ""
        parts.append((f"{status.upper()}{stage}", STATUS_STYLE.get(status, "")))
    step, total = metrics.get("step"), metrics.get("total_steps")
    if isinstance(step, int) and isinstance(total, int):
        parts.append((f"step {step}/{total}", ""))
    if outcome is not None and outcome.state is not Outcome.RUNNING:  # running: the state above says so
        parts.append((f"run {outcome.state.value}", OUTCOME_STYLE.get(outcome.state, "bold red")))
    critical = sum(1 for f in findings.values() if f.severity is Severity.CRITICAL)
    if findings:
        label = f"{len(findings)} finding{'s' if len(findings) != 1 else ''}"
        if critical:
            label += f" ({critical} critical)"
        parts.append((label, "bold red" if critical else "yellow"))
    elif reading is not None:
        parts.append((f"reading history {reading} %", "yellow"))
    elif (outcome is None or outcome.state in (Outcome.COMPLETED, Outcome.RUNNING)) and not _ended_badly(state):
        parts.append(("no findings", "green"))
    ended = state is not None and state.get("status") in ("succeeded", "failed", "stopped")
    if controllable and state is not None and (live or not ended):  # a run that ended has no supervisor left
        parts.append(("supervisor " + ("live" if live else "not running"), "dim" if live else "yellow"))

    short_name = _DATE_PREFIX.sub("", name)
    for title, sep in ((name, "  "), (short_name, "  "), (short_name, " "), ("", "  "), ("", " ")):
        line = [(title, "bold")] * bool(title) + parts
        length = sum(len(text) for text, _ in line) + len(sep) * (len(line) - 1)
        if width is None or length <= width:
            break
    text = Text()
    for i, (part, style) in enumerate(line):
        if i:
            text.append(sep)
        text.append(part, style=style)
    return text


_DATE_PREFIX = re.compile(r"^\d{8}-(?=\d{6})")  # a run directory's YYYYmmdd- (a1x_supervisor.launch.new_run_dir)


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
    """The banner; it is drawn again for its new width when the terminal is resized."""

    DEFAULT_CSS = """
    RunBanner { height: 1; padding: 0 1; background: $boost; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: dict[str, Any] | None = None

    def show(self, name: str, **what: Any) -> None:
        self._shown = {"name": name, **what}
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        if self._shown is not None:
            self.update(banner_text(**self._shown, width=self.content_size.width or None))


class FailureLine(Static):
    DEFAULT_CSS = """
    FailureLine { height: auto; max-height: 4; padding: 0 1; background: $boost; display: none; }
    FailureLine.shown { display: block; }
    """

    def show(self, text: Text | None) -> None:
        self.update(text or "")
        self.set_class(text is not None, "shown")
