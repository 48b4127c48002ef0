"""Plain-text views of a run for the terminal: the status table and one line per event."""

from __future__ import annotations

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


def _clock(ts: str | None) -> str:
    if not ts:
        return "--:--:--"
    try:
        return datetime.fromisoformat(ts).astimezone().strftime("%H:%M:%S")
    except ValueError:
        return ts[:8]


def format_event(event: Mapping[str, Any]) -> str:
    """``14:02:11 [download] stage_started: download PAI motion chunks``."""
    from diagnostics.printable import printable  # messages quote log lines: no control byte is printed

    stage = f"[{event['stage']}] " if event.get("stage") else ""
    return printable(f"{_clock(event.get('ts'))} {stage}{event.get('kind')}: {event.get('message', '')}")


def render_state(state: Mapping[str, Any], *, note: str | None = None) -> str:
    """The status of a run: one header, one line per stage, its reason underneath."""
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
    for st in state.get("stages", []):
        mark = _MARKS.get(str(st.get("status")), " ")
        progress = st.get("progress") or {}
        extra = ""
        if st.get("status") in ("running", "retrying") and progress.get("text"):
            extra = f"  {progress['text']}"
        proc = st.get("process") or {}
        if proc.get("pid"):
            extra += f"  (pid {proc['pid']})"
        lines.append(f" [{mark}] {st.get('name', '?'):<10} {st.get('status', '?'):<10}{extra}")
        if st.get("slurm"):
            lines.append(f"     {slurm_line(st['slurm'])}")
        if st.get("reason") and st.get("status") not in ("pending",):
            lines.append(f"     {st['reason']}")
    for item in state.get("processes_alive") or []:
        what = f"Slurm job {item['job_id']}" if item.get("job_id") else f"pids {item['pids']}"
        lines.append(f"  still running: stage {item['stage']} {what}")
    outputs = state.get("outputs") or {}
    if outputs.get("export_dir"):
        lines.append(f"\n  export: {outputs['export_dir']}")
    return "\n".join(lines)


def slurm_line(job: Mapping[str, Any]) -> str:
    """``slurm job 4242 PENDING (Resources: waiting for nodes to become free)``, or its nodes and logs."""
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


def resume_text(job: Mapping[str, Any]) -> str:
    """``; part 1 resumed from step 40`` once the job was requeued (docs/slurm.md, "Resuming")."""
    part, step = job.get("part"), job.get("resumed_from_step")
    if isinstance(step, int) and step > 0:
        return f"; part {part} resumed from step {step}"
    if isinstance(step, int) and (part or job.get("restarts")):
        return f"; part {part} trains from step 0 (no complete checkpoint to resume from)"
    return f"; part {part}" if isinstance(part, int) and part > 0 else ""


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
