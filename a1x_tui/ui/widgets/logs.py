"""The logs tab: the run's files on the left (the merged view first), the chosen one on the right.

Keys (while the tab has focus): ``/`` search, ``n``/``N`` next/previous match, ``f`` filter,
``:`` go to a line number, ``m`` the merged view, ``enter`` the line under the cursor in full,
``end`` follow the end again, ``escape`` clears the filter, the search and the sideways shift.
A line no longer kept in memory (evidence, go to line) is asked of the screen (``LinesWanted``),
which reads it from the file; the answer is shown as an excerpt until ``end`` or another file.
"""

from __future__ import annotations

import re
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from a1x_diagnostics.printable import printable
from a1x_tui.ui.logstore import Excerpt, LogLine, LogStore
from a1x_tui.ui.messages import ExcerptRead, LinesWanted
from a1x_tui.ui.widgets.logview import LogView

MERGED = "*merged*"
DETAIL_CHARS = 4000


class LogsPanel(Horizontal):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "prompt('search')", "Search"),
        Binding("n", "next_match(1)", "Next", show=False),
        Binding("N", "next_match(-1)", "Previous", show=False),
        Binding("f", "prompt('filter')", "Filter"),
        Binding("colon", "prompt('goto')", "Line"),
        Binding("m", "show_merged", "Merged"),
        Binding("enter", "toggle_detail", "Full line"),
        Binding("escape", "clear", "Clear", show=False),
    ]
    DEFAULT_CSS = """
    LogsPanel #log-files { width: 15; height: 1fr; }
    LogsPanel #log-side { width: 1fr; height: 1fr; }
    LogsPanel #log-view { height: 1fr; }
    LogsPanel #log-detail { height: auto; max-height: 6; background: $boost; padding: 0 1; display: none; }
    LogsPanel #log-detail.shown { display: block; }
    LogsPanel #log-status { height: 1; background: $boost; color: $text-muted; padding: 0 1; }
    LogsPanel #log-prompt { display: none; }
    LogsPanel #log-prompt.visible { display: block; }
    """

    def __init__(self, store: LogStore, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.store = store
        self.current = MERGED
        self.excerpt: Excerpt | None = None
        self.prompt_mode: str | None = None
        self.reading: int | None = None  # percent of the history read, while it is read
        self.detail = False
        self._listed: list[str] = []

    def compose(self) -> ComposeResult:
        yield OptionList(id="log-files")
        with Vertical(id="log-side"):
            yield LogView(id="log-view")
            yield Static("", id="log-detail")
            yield Static("", id="log-status")
            yield Input(id="log-prompt")

    def on_mount(self) -> None:
        self.data_changed()
        self._show_current()

    @property
    def view(self) -> LogView:
        return self.query_one("#log-view", LogView)

    # -- data ----------------------------------------------------------------------------------------
    def _order(self) -> list[str]:
        """The merged view, then the replicas in their numbers' order (policy_2 before policy_10), stages last."""
        files = sorted(self.store.files.values(), key=lambda f: (f.label.startswith("["), _natural(f.label)))
        return [MERGED, *(f.source for f in files)]

    def data_changed(self) -> None:
        """The store changed: list new files, recount the view (called at most ~4 times a second)."""
        order = self._order()
        if order != self._listed:
            self._listed = order
            files = self.query_one("#log-files", OptionList)
            files.clear_options()
            for key in order:
                label = "merged" if key == MERGED else self.store.files[key].label
                files.add_option(Option(Text(label), id=key))  # Text: "[train]" is a name, not markup
            files.highlighted = order.index(self.current) if self.current in order else 0
        if self.current != MERGED and self.current not in self.store.files:
            self.current = MERGED
            self.excerpt = None
            self._show_current()
        self.view.lines_changed()
        self._status()

    def reset_all(self) -> None:
        self.current = MERGED
        self.excerpt = None
        self._listed = []
        self.data_changed()
        self._show_current()

    def _show_current(self) -> None:
        view = self.view
        if self.excerpt is not None:
            view.set_source(self.excerpt, show_labels=False, has_end=False)
        elif self.current == MERGED:
            view.set_source(self.store.merged, show_labels=True)
        else:
            view.set_source(self.store.files[self.current], show_labels=False)
        self._detail()
        self._status()

    def _select(self, key: str) -> None:
        """Show ``key`` (a file, or the merged view): its tail, following."""
        self.current = key
        self.excerpt = None
        order = self._order()
        if key in order:
            self.query_one("#log-files", OptionList).highlighted = order.index(key)
        self._show_current()

    def _status(self) -> None:
        view = self.view
        if self.excerpt is not None:
            lines = self.excerpt.lines
            first, last = lines[0].lineno or 0, lines[-1].lineno or 0
            text = Text(f"{self.excerpt.file.label} · lines {first:,}-{last:,} read from the file")
            text.append(" · end: back to the tail", style="dim")
        else:
            name = "merged, by time" if self.current == MERGED else self.store.files[self.current].label
            text = Text(f"{name} · {view.count:,} lines")
        if self.reading is not None:
            text.append(f" · reading history, {self.reading} %", style="bold yellow")
        if view.filter_text:
            text.append(f" · filter '{view.filter_text}'", style="yellow")
        if view.search_text:
            text.append(f" · search '{view.search_text}'", style="cyan")
        if view.shift:
            text.append(f" · → {view.shift}", style="cyan")
        if self.excerpt is None:
            text.append(" · following" if view.follow else " · paused (end: follow)", style="dim")
        self.query_one("#log-status", Static).update(text)

    def set_reading(self, percent: int | None) -> None:
        if percent != self.reading:
            self.reading = percent
            self._status()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        key = event.option.id
        # A highlight made by this panel (``_select``, ``data_changed``) arrives after the fact: only the
        # user's move to another file shows it.
        if event.option_list.highlighted != event.option_index:
            return
        if key is not None and key != self.current and (key == MERGED or key in self.store.files):
            self._select(key)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        key = event.option.id
        if key is not None and (key != self.current or self.excerpt is not None):
            self._select(key)
        self.view.focus()

    def on_log_view_cursor_moved(self, event: LogView.CursorMoved) -> None:
        self._detail()
        self._status()

    def on_log_view_end_wanted(self, event: LogView.EndWanted) -> None:
        self._select(self.current)
        self.view.action_last()

    # -- the whole line ------------------------------------------------------------------------------
    def action_toggle_detail(self) -> None:
        self.detail = not self.detail
        self._detail()

    def _detail(self) -> None:
        box = self.query_one("#log-detail", Static)
        line = self.view.line_at(self.view.cursor) if self.detail else None
        box.set_class(line is not None, "shown")
        if line is None:
            box.update("")
            return
        where = line.source.rsplit("/", 1)[-1] + (f":{line.lineno}" if line.lineno is not None else "")
        whole = printable(line.text[:DETAIL_CHARS]) + ("…" if len(line.text) > DETAIL_CHARS else "")
        box.update(Text.assemble((where + "  ", "bold"), whole))

    # -- navigation ---------------------------------------------------------------------------------
    def open_line(self, source: str, lineno: int | None) -> bool | None:
        """Show ``source`` with the cursor on ``lineno`` (None: its end). True: shown; None: the line is
        not kept, asked of the screen (``LinesWanted``); False: no such file is followed."""
        key = self._match_source(source)
        if key is None:
            return False
        if key != self.current or self.excerpt is not None:
            self._select(key)
        view = self.view
        view.set_filter("")
        view.focus()
        if lineno is None:
            view.action_last()
            self._status()
            return True
        index = self.store.files[key].index_of(lineno)
        if index is not None and view.goto_index(index):
            self._status()
            return True
        self.post_message(LinesWanted(key, lineno))
        return None

    def show_excerpt(self, message: ExcerptRead) -> bool:
        """The lines the screen read from the file: shown, the cursor on the one asked for."""
        file = self.store.files.get(message.source)
        if file is None or not message.lines:
            return False
        self.current = message.source
        self.excerpt = Excerpt(file, list(message.lines), message.lineno)
        self._show_current()
        index = self.excerpt.index_of(message.lineno)
        if index is not None:
            self.view.goto_index(index)
        self._status()
        return True

    def _match_source(self, source: str) -> str | None:
        if source in self.store.files:
            return source
        for key in self.store.files:  # evidence may name the file by another relative path
            if key.endswith("/" + source) or source.endswith("/" + key) or key.rsplit("/", 1)[-1] == source:
                return key
        return None

    def action_show_merged(self) -> None:
        self._select(MERGED)

    def action_next_match(self, direction: int) -> None:
        if not self.view.next_match(direction):
            self.notify("no match" if self.view.search_text else "no search: press /", severity="warning")
        self._status()

    def action_clear(self) -> None:
        if self.prompt_mode is not None:
            self._close_prompt()
            return
        self.view.set_filter("")
        self.view.set_search("")
        self.view.reset_shift()
        self.detail = False
        self._detail()
        self._status()

    def action_prompt(self, mode: str) -> None:
        prompt = self.query_one("#log-prompt", Input)
        self.prompt_mode = mode
        prompt.placeholder = {
            "search": "search for (Enter; then n / N)",
            "filter": "show only lines containing (empty: all lines)",
            "goto": "line number in this file",
        }[mode]
        prompt.value = {"search": self.view.search_text, "filter": self.view.filter_text}.get(mode, "")
        prompt.add_class("visible")
        prompt.focus()

    def _close_prompt(self) -> None:
        prompt = self.query_one("#log-prompt", Input)
        prompt.remove_class("visible")
        self.prompt_mode = None
        self.view.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        mode, value = self.prompt_mode, event.value.strip()
        self._close_prompt()
        view = self.view
        if mode == "search":
            view.set_search(value)
            if value and not view.next_match(1):
                self.notify(f"'{value}' is not in this view", severity="warning", markup=False)
        elif mode == "filter":
            view.set_filter(value)
        elif mode == "goto":
            self._goto(value)
        self._status()

    def _goto(self, value: str) -> None:
        if not value.isdigit() or int(value) < 1:
            self.notify("a line number, please", severity="warning")
            return
        if self.current == MERGED:
            self.notify("choose one file first: line numbers are per file", severity="warning")
            return
        lineno = int(value)
        if self.excerpt is not None:
            index = self.excerpt.index_of(lineno)
            if index is not None and self.view.goto_index(index):
                return
        self.open_line(self.current, lineno)


def _natural(label: str) -> tuple[tuple[int, int | str], ...]:
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", label) if part)


def cursor_line(panel: LogsPanel) -> LogLine | None:
    """The line under the cursor of the logs tab (for tests and the screen)."""
    return panel.view.line_at(panel.view.cursor)
