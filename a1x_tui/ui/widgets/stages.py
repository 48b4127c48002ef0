"""The stages table: each stage's state, how long it ran, its progress and the reason it gives.

Fed with the supervisor's state (``state.json``'s object, docs/supervisor.md "The run directory").
``stage_rows`` is pure; the table keeps its cursor on the same stage across updates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable

from a1x_diagnostics.printable import printable

MARKS = {
    "pending": ("·", "dim"),
    "checking": ("?", "yellow"),
    "running": ("▶", "bold cyan"),
    "retrying": ("~", "yellow"),
    "succeeded": ("✓", "green"),
    "skipped": ("=", "dim green"),
    "failed": ("✗", "bold red"),
    "stopped": ("■", "yellow"),
    "orphaned": ("!", "bold red"),
}
BAR_CELLS = 8


@dataclass(frozen=True, slots=True)
class StageRow:
    name: str
    status: str
    duration: str
    progress: str
    percent: float | None
    reason: str
    attempts: int


def _parse(ts: Any) -> float | None:
    if not isinstance(ts, str) or not ts:
        return None
    try:
        return datetime.fromisoformat(ts).timestamp()
    except ValueError:
        return None


def human_duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


def bar(percent: float, cells: int = BAR_CELLS) -> str:
    filled = round(max(0.0, min(100.0, percent)) / 100 * cells)
    return "█" * filled + "░" * (cells - filled)


def _note(stage: Mapping[str, Any]) -> str:
    """The stage's reason; for a train stage on Slurm, the job's state first (a pending job says why)."""
    reason = str(stage.get("reason") or "")
    job = stage.get("slurm")
    if not isinstance(job, Mapping) or not job.get("job_id"):
        return reason
    from a1x_tui.console import slurm_line

    line = slurm_line(job)
    return f"{line} · {reason}" if reason else line


def stage_rows(state: Mapping[str, Any] | None, now: float) -> list[StageRow]:
    rows: list[StageRow] = []
    for st in (state or {}).get("stages") or []:
        status = str(st.get("status", "pending"))
        start, end = _parse(st.get("started_at")), _parse(st.get("ended_at"))
        duration = ""
        if start is not None and status not in ("pending", "skipped"):
            duration = human_duration((end if end is not None and status != "running" else now) - start)
        progress = st.get("progress") or {}
        percent = progress.get("percent")
        text = str(progress.get("text") or "")
        if status in ("pending", "skipped", "checking") or (status == "succeeded" and percent != 100.0):
            text = ""  # the last redraw kept (8/12, a log line) would read as unfinished
        rows.append(
            StageRow(
                name=str(st.get("name", "?")),
                status=status,
                duration=duration,
                progress=text,
                percent=float(percent) if isinstance(percent, (int, float)) else None,
                reason=_note(st),
                attempts=int(st.get("attempts") or 0),
            )
        )
    return rows


def stage_detail(row: StageRow | None, *, failure_shown: bool = False) -> Text:
    """The stage under the cursor in full, under the table: its note is cut in its column at 80×24.
    ``failure_shown``: its failure is in the banner already, not said twice."""
    if row is None:
        return Text()
    mark, style = MARKS.get(row.status, ("?", ""))
    text = Text.assemble((f"{mark} {row.name} {row.status}", style or "bold"))
    if failure_shown:
        text.append(" (why: above)")
    elif row.reason:
        text.append(": ")
        text.append(printable(row.reason), style="red" if row.status == "failed" else "")
    text.append("  l: its log · r: restart it", style="dim")
    return text


class StagesTable(DataTable[Text]):
    """One row per stage; ``update_state`` redraws it and keeps the cursor on its stage."""

    BINDINGS: ClassVar[list[BindingType]] = [  # the dashboard's keys for stages, named in the footer here
        Binding("l", "screen.stage_log", "Stage log"),
        Binding("r", "screen.restart_stage", "Restart stage"),
        Binding("t", "screen.restart_train", "Restart train"),
        Binding("s", "screen.stop_run", "Stop run"),
    ]

    # No horizontal scrollbar: the note column runs off the right edge at 80 columns (its bar was a stray
    # ▌ under the table), and the stage under the cursor is shown in full below the table.
    DEFAULT_CSS = """
    StagesTable { height: auto; max-height: 12; overflow-x: hidden; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self.rows_shown: list[StageRow] = []

    def on_mount(self) -> None:
        self.add_column("", key="mark", width=1)
        self.add_column("stage", key="stage", width=10)
        self.add_column("state", key="state", width=13)  # "succeeded #12": the attempt number fits
        self.add_column("time", key="time", width=7)
        self.add_column("progress", key="progress", width=26)
        self.add_column("note", key="note", width=60)

    @property
    def selected_row(self) -> StageRow | None:
        if not self.rows_shown or self.cursor_row < 0 or self.cursor_row >= len(self.rows_shown):
            return None
        return self.rows_shown[self.cursor_row]

    @property
    def selected_stage(self) -> str | None:
        row = self.selected_row
        return row.name if row is not None else None

    def update_state(self, state: Mapping[str, Any] | None, now: float) -> None:
        rows = stage_rows(state, now)
        if rows == self.rows_shown:
            return
        selected = self.selected_stage
        if selected is None and state is not None:
            selected = state.get("current_stage")
        self.rows_shown = rows
        self.clear()
        for row in rows:
            mark, style = MARKS.get(row.status, ("?", ""))
            progress = Text()
            if row.percent is not None and row.status in ("running", "retrying"):
                progress.append(bar(row.percent), style="cyan")
                progress.append(f" {row.percent:3.0f}% ")
            progress.append(row.progress)
            state_text = row.status + (f" #{row.attempts}" if row.attempts > 1 else "")
            self.add_row(
                Text(mark, style=style),
                Text(row.name, style="bold" if row.status == "running" else ""),
                Text(state_text, style=style),
                Text(row.duration),
                progress,
                Text(printable(row.reason), style="red" if row.status == "failed" else "dim"),
                key=row.name,
            )
        if selected is not None:
            for i, row in enumerate(rows):
                if row.name == selected:
                    self.move_cursor(row=i, animate=False)
                    break
