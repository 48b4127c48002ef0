"""A log view on the line API: only the visible rows are ever rendered, whatever the file's size.

It shows a ``Sequence`` of ``LogLine`` (one file's lines, or the merged view) with line numbers,
an optional replica label, the level's colour, a cursor, a filter (only lines containing a text)
and a search (matches highlighted, ``next_match`` jumps). ``follow`` keeps the last line in view.
The screen calls ``lines_changed`` when the store changed (at most four times a second).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Protocol

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from a1x_diagnostics.printable import printable
from a1x_tui.ui.logstore import LogLine

MAX_WIDTH = 2000
LABEL_WIDTH = 11
_PALETTE = ("cyan", "magenta", "green", "yellow", "blue", "bright_cyan", "bright_magenta", "bright_green")


class LineSource(Protocol):
    dropped: int
    version: int

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> LogLine: ...


class _Empty:
    dropped = 0
    version = 0

    def __len__(self) -> int:
        return 0

    def __getitem__(self, index: int) -> LogLine:
        raise IndexError(index)


def label_color(label: str) -> str:
    return _PALETTE[sum(label.encode()) % len(_PALETTE)]


class LogView(ScrollView, can_focus=True):
    """Lines with a cursor; filter and search are plain, case-insensitive substrings."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last (follow)", show=False),
        Binding("left", "scroll_left", "Left", show=False),
        Binding("right", "scroll_right", "Right", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "logview--lineno",
        "logview--cursor",
        "logview--match",
        "logview--error",
        "logview--warning",
    }
    DEFAULT_CSS = """
    LogView { background: $surface; }
    LogView > .logview--lineno { color: $text-muted; }
    LogView > .logview--cursor { background: $accent 30%; }
    LogView:focus > .logview--cursor { background: $accent 50%; }
    LogView > .logview--match { background: $warning 60%; color: $text; }
    LogView > .logview--error { color: $error; }
    LogView > .logview--warning { color: $warning; }
    """

    class CursorMoved(Message):
        def __init__(self, view: LogView) -> None:
            super().__init__()
            self.view = view

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.source: LineSource = _Empty()
        self.show_labels = False
        self.filter_text = ""
        self.search_text = ""
        self.follow = True
        self.cursor = 0
        self._indices: list[int] | None = None  # source indices shown while a filter is set
        self._seen: tuple[int, int, int] = (-1, -1, -1)  # (version, dropped, length) last looked at
        self._width = 0

    # -- what is shown ------------------------------------------------------------------------------
    def set_source(self, source: LineSource, *, show_labels: bool) -> None:
        self.source = source
        self.show_labels = show_labels
        self._indices = None
        self._seen = (-1, -1, -1)
        self._width = 0
        self.follow = True
        self.lines_changed()

    @property
    def count(self) -> int:
        return len(self._indices) if self._indices is not None else len(self.source)

    def line_at(self, row: int) -> LogLine | None:
        if not 0 <= row < self.count:
            return None
        index = self._indices[row] if self._indices is not None else row
        return self.source[index]

    def set_filter(self, text: str) -> None:
        current = self.line_at(self.cursor)
        self.filter_text = text
        self._indices = None
        self._seen = (-1, -1, -1)
        self.lines_changed()
        if current is not None and not self.follow:
            self._move_to_line(current)

    def set_search(self, text: str) -> None:
        self.search_text = text
        self.refresh()

    def lines_changed(self) -> None:
        """The source grew or changed: recount, keep the cursor on its line (or on the last one)."""
        source = self.source
        version, dropped, length = source.version, source.dropped, len(source)
        old_version, old_dropped, old_length = self._seen
        if (version, dropped, length) == self._seen:
            return
        needle = self.filter_text.lower()
        appended_only = version == old_version and dropped == old_dropped and length >= old_length >= 0
        start = old_length if appended_only else 0
        if needle:
            if self._indices is None or not appended_only:
                self._indices = []
            self._indices.extend(i for i in range(start, length) if needle in source[i].text.lower())
        else:
            self._indices = None
        for i in range(start, length):
            self._width = max(self._width, min(MAX_WIDTH, len(source[i].text)))
        if not appended_only and old_dropped >= 0 and dropped > old_dropped and self._indices is None:
            self.cursor = max(0, self.cursor - (dropped - old_dropped))
        self._seen = (version, dropped, length)
        gutter = 8 + (LABEL_WIDTH + 1 if self.show_labels else 0)
        self.virtual_size = Size(gutter + self._width, self.count)
        if self.follow:
            self.cursor = max(0, self.count - 1)
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        else:
            self.cursor = min(self.cursor, max(0, self.count - 1))
        self.refresh()

    # -- moving -------------------------------------------------------------------------------------
    def _set_cursor(self, row: int, *, center: bool = False) -> None:
        row = max(0, min(self.count - 1, row))
        self.cursor = row
        self.follow = row >= self.count - 1
        height = max(1, self.scrollable_content_region.height)
        top = int(self.scroll_offset.y)
        if center:
            self.scroll_to(y=max(0, row - height // 2), animate=False, immediate=True)
        elif row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + height:
            self.scroll_to(y=row - height + 1, animate=False, immediate=True)
        self.refresh()
        self.post_message(self.CursorMoved(self))

    def action_cursor(self, delta: int) -> None:
        self._set_cursor(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self._set_cursor(self.cursor + direction * max(1, self.scrollable_content_region.height - 1))

    def action_first(self) -> None:
        self._set_cursor(0)

    def action_last(self) -> None:
        self._set_cursor(self.count - 1)
        self.follow = True

    def _move_to_line(self, line: LogLine) -> bool:
        for row in range(self.count - 1, -1, -1):
            if self.line_at(row) is line:
                self._set_cursor(row, center=True)
                return True
        return False

    def goto_index(self, index: int) -> bool:
        """Put the cursor on source index ``index`` (the filter is cleared if it hides the line)."""
        if self._indices is not None and index not in self._indices:
            self.set_filter("")
        if self._indices is not None:
            index = self._indices.index(index)
        if not 0 <= index < self.count:
            return False
        self._set_cursor(index, center=True)
        self.follow = False
        return True

    def next_match(self, direction: int = 1) -> bool:
        """Move to the next (or previous) line containing the search text; False when none."""
        needle = self.search_text.lower()
        if not needle or not self.count:
            return False
        row = self.cursor
        for _ in range(self.count):
            row = (row + direction) % self.count
            line = self.line_at(row)
            if line is not None and needle in line.text.lower():
                self._set_cursor(row, center=True)
                self.follow = False
                return True
        return False

    def on_click(self, event: events.Click) -> None:
        row = int(self.scroll_offset.y) + event.y
        if 0 <= row < self.count:
            self._set_cursor(row)
            self.follow = False

    # -- drawing ------------------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        row = int(self.scroll_offset.y) + y
        line = self.line_at(row)
        base = self.rich_style
        if line is None:
            return Strip.blank(width, base)
        lineno_style = self.get_component_rich_style("logview--lineno")
        text_style = base
        if line.level == "error":
            text_style = base + self.get_component_rich_style("logview--error")
        elif line.level == "warning":
            text_style = base + self.get_component_rich_style("logview--warning")
        number = "" if line.lineno is None else str(line.lineno)
        segments = [Segment(f"{number:>7} ", lineno_style)]
        if self.show_labels:
            label = line.label[:LABEL_WIDTH]
            segments.append(Segment(f"{label:<{LABEL_WIDTH}} ", base + Style(color=label_color(line.label))))
        text = printable(line.text.replace("\t", "    ").replace("\r", ""))[:MAX_WIDTH]  # escapes, never raw bytes
        segments.extend(self._highlight(text, text_style))
        strip = Strip(segments).crop(int(self.scroll_offset.x), int(self.scroll_offset.x) + width)
        strip = strip.extend_cell_length(width, base)
        if row == self.cursor:
            strip = strip.apply_style(self.get_component_rich_style("logview--cursor"))
        return strip

    def _highlight(self, text: str, style: Style) -> list[Segment]:
        needle = self.search_text.lower()
        if not needle:
            return [Segment(text, style)]
        match_style = style + self.get_component_rich_style("logview--match")
        out: list[Segment] = []
        lowered = text.lower()
        pos = 0
        while True:
            found = lowered.find(needle, pos)
            if found < 0:
                break
            if found > pos:
                out.append(Segment(text[pos:found], style))
            out.append(Segment(text[found : found + len(needle)], match_style))
            pos = found + len(needle)
        if pos < len(text):
            out.append(Segment(text[pos:], style))
        return out


def visible_texts(view: LogView) -> Sequence[str]:
    """Every line the view shows now (for tests and the status line)."""
    return [line.text for row in range(view.count) if (line := view.line_at(row)) is not None]
