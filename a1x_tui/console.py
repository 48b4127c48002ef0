"""Terminal text for a supervised run (``status``, ``run``, ``demo --headless``, the dashboard's stage
panel): the status table, one line per event, the Slurm job's line, a followed subscription."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

_MARKS = {
    "pending": " ",
    "checking": "?",
    "running": ">",
    "retrying": "~",
    "succeeded": "+",
    "skipped": "=",
    "failed": "x",
    "stopped": "!",
    "orphaned": "!",
}
_UNBOUNDED = 10_000  # columns when the text goes to a file or a pipe: a line is never wrapped there


def _clock(ts: str | None) -> str:
    if not ts:
        return "--:--:--"
    try:
        return datetime.fromisoformat(ts).astimezone().strftime("%H:%M:%S")
    except ValueError:
        return ts[:8]


def format_event(event: Mapping[str, Any]) -> str:
    """``14:02:11 [download] stage_started: download PAI motion chunks``."""
    from a1x_diagnostics.printable import printable  # messages quote log lines: no control byte is printed

    stage = f"[{event['stage']}] " if event.get("stage") else ""
    return printable(f"{_clock(event.get('ts'))} {stage}{event.get('kind')}: {event.get('message', '')}")


def render_state(state: Mapping[str, Any], *, note: str | None = None, width: int | None = None) -> str:
    """The status of a run: a header, then a table with one row per stage (its progress, its Slurm
    job and its reason in the last column). ``width``: the terminal's columns (the last column wraps
    within them); None for a file or a pipe, where no line is wrapped."""
    lines = []
    if note:
        lines.append(note)
    sup = state.get("supervisor") or {}
    lines.append(f"run {state.get('run_dir')}: {str(state.get('status', '?')).upper()}")
    if state.get("message"):
        lines.append(f"  {state['message']}")
    who = f"supervisor pid {sup.get('pid')} on {sup.get('host')}" if sup else "no supervisor recorded"
    if state.get("live") is False:
        alive = state.get("supervisor_alive")
        who += " (holds the lock but does not answer)" if alive else " (not running)"
    lines.append(f"  {who}; updated {_clock(state.get('updated_at'))}")
    lines.append("")
    stages = list(state.get("stages", []))
    if stages:
        lines.append(_stage_table(stages, width))
    for item in state.get("processes_alive") or []:
        what = f"Slurm job {item['job_id']}" if item.get("job_id") else f"pids {item['pids']}"
        lines.append(f"  still running: stage {item['stage']} {what}")
    outputs = state.get("outputs") or {}
    if outputs.get("export_dir"):
        lines.append(f"\n  export: {outputs['export_dir']}")
    return "\n".join(lines)


def _stage_table(stages: list[Mapping[str, Any]], width: int | None) -> str:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, show_edge=False, header_style="", padding=(0, 1))
    for header in ("", "stage", "status", "detail"):
        table.add_column(header, no_wrap=header != "detail", overflow="fold")
    for st in stages:
        status = str(st.get("status", "?"))
        progress = st.get("progress") or {}
        first = []
        if status in ("running", "retrying") and progress.get("text"):
            first.append(str(progress["text"]))
        proc = st.get("process") or {}
        if proc.get("pid"):
            first.append(f"(pid {proc['pid']})")
        detail = ["  ".join(first)] if first else []
        if st.get("slurm"):
            detail.append(slurm_line(st["slurm"]))
        if st.get("reason") and status != "pending":
            detail.append(str(st["reason"]))
        mark = _MARKS.get(status, " ")
        table.add_row(Text(f"[{mark}]"), Text(str(st.get("name", "?"))), Text(status), Text("\n".join(detail)))
    out = io.StringIO()
    console = Console(
        file=out,
        width=max(20, width - 1) if width else _UNBOUNDED,  # one column for the indent below
        color_system=None,
        force_terminal=False,
        highlight=False,
        emoji=False,
    )
    console.print(table)
    return "\n".join(" " + line.rstrip() for line in out.getvalue().rstrip("\n").split("\n"))


def slurm_line(job: Mapping[str, Any]) -> str:
    """``slurm job 4242 PENDING (Resources: waiting for nodes to become free)``, or its nodes and logs."""
    from a1x_supervisor.slurm import resume_text

    text = f"slurm job {job.get('job_id')} {job.get('state')}"
    if job.get("reason_text"):
        text += f" ({job['reason_text']})"
    elif job.get("nodes") and job.get("state") != "PENDING":
        text += f" on {job['nodes']}"
    if job.get("restarts"):
        text += f", restart {job['restarts']}"
    text += resume_text(job)
    if job.get("run"):
        text += f"; logs {job['run']}"
    if job.get("exit_code") is not None:
        text += f"; exit code {job['exit_code']}"
    return text


def print_stream(messages: Iterable[Mapping[str, Any]], out: Callable[[str], None]) -> str | None:
    """Print a subscription until it ends; returns the final run status (None if the daemon went away)."""
    for message in messages:
        kind = message.get("type")
        if kind == "state":
            state = message.get("state") or {}
            out(f"attached to {state.get('run_dir')} ({state.get('status')})")
        elif kind == "event":
            out(format_event(message.get("event") or {}))
        elif kind == "end":
            return str(message.get("status"))
        elif kind == "gone":
            return None
    return None
