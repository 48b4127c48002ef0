"""The start screen of ``a1x-tui``: the runs it knows, and a new run."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from a1x_diagnostics.printable import printable
from a1x_tui.ui.feeds.runs import list_runs
from a1x_tui.ui.messages import NewRunChosen, RunChosen, RunsListed, RunSummary
from a1x_tui.ui.widgets.banner import STATUS_STYLE

REFRESH_S = 5.0


def _when(ts: str | None) -> str:
    if not ts:
        return ""
    from datetime import datetime

    try:
        return datetime.fromisoformat(ts).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return ts[:16]


class StartScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", priority=True),  # priority: named in the footer over the table's own
        Binding("n", "new_run", "New run"),
        Binding("r", "refresh", "Refresh"),
    ]
    DEFAULT_CSS = """
    StartScreen #title { padding: 0 1; background: $boost; text-style: bold; }
    StartScreen #runs { height: 1fr; }
    StartScreen #hint { padding: 0 1; color: $text-muted; height: auto; }
    StartScreen #detail { padding: 0 1; height: auto; }
    """

    def __init__(self, roots: list[Path], *, live: bool = True) -> None:
        super().__init__()
        self.roots = roots
        self.live = live
        self.runs: list[RunSummary] = []

    def compose(self) -> ComposeResult:
        yield Static("a1x-tui · Alpamayo RL runs", id="title")
        yield DataTable(id="runs", cursor_type="row")
        yield Static("", id="detail")  # the run under the cursor in full: its message is cut in its column
        yield Static("", id="hint")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        table = self.query_one("#runs", DataTable)
        table.add_column("run", key="run", width=28)
        table.add_column("status", key="status", width=10)
        table.add_column("stage", key="stage", width=10)
        table.add_column("updated", key="updated", width=16)
        table.add_column("message", key="message", width=60)
        if self.live:
            self.action_refresh()
            self.set_interval(REFRESH_S, self.action_refresh)

    def action_refresh(self) -> None:
        self._list()

    @work(thread=True, exclusive=True, group="runs", exit_on_error=False)
    def _list(self) -> None:
        self.post_message(RunsListed(list_runs(self.roots), list(self.roots)))

    def on_runs_listed(self, message: RunsListed) -> None:
        self.show_runs(message.runs)

    def show_runs(self, runs: list[RunSummary]) -> None:
        table = self.query_one("#runs", DataTable)
        selected = self.selected
        self.runs = runs
        table.clear()
        for run in runs:
            status = run.status if run.live or run.status not in ("running", "starting") else f"{run.status}?"
            table.add_row(
                Text(run.run_dir.name, style="bold"),
                Text(status, style=STATUS_STYLE.get(run.status, "")),
                run.current_stage or "",
                _when(run.updated_at),
                Text(run.message, style="dim"),
                key=str(run.run_dir),
            )
        if selected is not None:
            for i, run in enumerate(runs):
                if run.run_dir == selected.run_dir:
                    table.move_cursor(row=i, animate=False)
        where = " and ".join(str(r) for r in self.roots)
        if runs:
            hint = f"{len(runs)} run(s) under {where}. enter: open its dashboard · n: a new run"
        else:
            hint = f"No runs yet under {where}. n: set up a new run · or quit (q) and try `a1x-tui demo`."
        self.query_one("#hint", Static).update(Text(hint))
        self._detail()

    def _detail(self) -> None:
        run = self.selected
        text = Text()
        if run is not None:
            text.append(f"{run.run_dir.name} ", style="bold")
            text.append(run.status, style=STATUS_STYLE.get(run.status, ""))
            if run.message:
                text.append(f": {printable(run.message)}")
        self.query_one("#detail", Static).update(text)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:  # a click on a row
        event.stop()
        self.action_open()

    @property
    def selected(self) -> RunSummary | None:
        table = self.query_one("#runs", DataTable)
        if not self.runs or not 0 <= table.cursor_row < len(self.runs):
            return None
        return self.runs[table.cursor_row]

    def action_open(self) -> None:
        run = self.selected
        if run is None:
            self.notify("no run selected: n sets up a new one", severity="warning")
            return
        from a1x_tui.ui.target import TargetError, resolve_target

        try:
            target = resolve_target(run.run_dir)
        except TargetError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return
        self.post_message(RunChosen(target))  # the app opens it (messages.py: screens never import the app)

    def action_new_run(self) -> None:
        self.post_message(NewRunChosen())
