"""A log view on the line API: only the visible rows are ever rendered, whatever the file's size.

It shows a ``Sequence`` of ``LogLine`` (one file's lines, the merged view, or an excerpt read from a
file) as fixed columns — line number, the replica (merged view), the folded prefix (``23:47:03 I``:
time and level of a cosmos line) — and then the message, so the message is what a narrow terminal
shows. ``←``/``→`` move the message alone by ``STEP`` columns; the columns stay. The cursor line is
given in full by ``LogsPanel`` on ``enter``. A filter keeps the lines containing a text, a search
highlights it; both are plain, case-insensitive substrings of the whole line. ``follow`` keeps the
last line in view. The screen calls ``lines_changed`` when the store changed (at most four times a
second).
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
from a1x_tui.ui.logstore import LogLine, Widths

MAX_WIDTH = 2000  # characters of a message shown (the whole line: enter)
LABEL_WIDTH = 11
STEP = 8  # columns per ←/→
_PALETTE = ("cyan", "magenta", "green", "yellow", "blue", "bright_cyan", "bright_magenta", "bright_green")


class LineSource(Protocol):
    dropped: int
    version: int
    widths: Widths

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> LogLine: ...


class _Empty:
    dropped = 0
    version = 0
    widths = Widths()

    def __len__(self) -> int:
        return 0

    def __getitem__(self, index: int) -> LogLine:
        raise IndexError(index)


def label_color(label: str) -> str:
    return _PALETTE[sum(label.encode()) % len(_PALETTE)]


def message_text(line: LogLine) -> str:
    """The message as shown: after the folded prefix, control characters escaped, tabs expanded."""
    return printable(line.message[: MAX_WIDTH * 2].replace("\t", "    ").replace("\r", ""))[:MAX_WIDTH]


class LogView(ScrollView, can_focus=True):
    """Lines with a cursor; filter and search are plain, case-insensitive substrings."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last (follow)", show=False),
        Binding("left", "step(-1)", "Left", show=False),
        Binding("right", "step(1)", "Right", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "logview--lineno",
        "logview--prefix",
        "logview--cursor",
        "logview--match",
        "logview--error",
        "logview--warning",
    }
    DEFAULT_CSS = """
    LogView { background: $surface; overflow-x: hidden; }
    LogView > .logview--lineno { color: $text-muted; }
    LogView > .logview--prefix { color: $text-muted; }
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

    class EndWanted(Message):
        """``end`` on a source that has no live end (an excerpt read from the file)."""

        def __init__(self, view: LogView) -> None:
            super().__init__()
            self.view = view

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.source: LineSource = _Empty()
        self.show_labels = False
        self.has_end = True  # False: an excerpt, whose end is not the file's
        self.filter_text = ""
        self.search_text = ""
        self.follow = True
        self.cursor = 0
        self.shift = 0  # columns of the message scrolled away to the left
        self._indices: list[int] | None = None  # source indices shown while a filter is set
        self._seen: tuple[int, int, int] = (-1, -1, -1)  # (version, dropped, length) last looked at
        self._center_pending = False  # the cursor is to be centred once the view has a size

    # -- what is shown ------------------------------------------------------------------------------
    def set_source(self, source: LineSource, *, show_labels: bool, has_end: bool = True) -> None:
        self.source = source
        self.show_labels = show_labels
        self.has_end = has_end
        self._indices = None
        self._seen = (-1, -1, -1)
        self.shift = 0
        self.follow = has_end
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

    def reset_shift(self) -> None:
        if self.shift:
            self.shift = 0
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
        if not appended_only and old_dropped >= 0 and dropped > old_dropped and self._indices is None:
            self.cursor = max(0, self.cursor - (dropped - old_dropped))
        self._seen = (version, dropped, length)
        self.virtual_size = Size(self.scrollable_content_region.width, self.count)
        if self.follow:
            self.cursor = max(0, self.count - 1)
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        else:
            self.cursor = min(self.cursor, max(0, self.count - 1))
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        # Moves made while the tab was hidden (no size yet) are made again now that it has one.
        self.virtual_size = Size(self.scrollable_content_region.width, self.count)
        if self.follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        elif self._center_pending:
            self._scroll_to_cursor(center=True)

    # -- moving -------------------------------------------------------------------------------------
    def _scroll_to_cursor(self, *, center: bool) -> None:
        height = self.scrollable_content_region.height
        if height <= 0:
            self._center_pending = self._center_pending or center
            return
        self._center_pending = False
        row, top = self.cursor, int(self.scroll_offset.y)
        if center:
            self.scroll_to(y=max(0, row - height // 2), animate=False, immediate=True)
        elif row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + height:
            self.scroll_to(y=row - height + 1, animate=False, immediate=True)

    def _set_cursor(self, row: int, *, center: bool = False) -> None:
        row = max(0, min(self.count - 1, row))
        self.cursor = row
        self.follow = self.has_end and row >= self.count - 1
        self._scroll_to_cursor(center=center)
        if center:  # again once laid out: a tab shown a moment ago scrolls only then (evidence, first time)
            self.call_after_refresh(self._scroll_to_cursor, center=True)
        self.refresh()
        self.post_message(self.CursorMoved(self))

    def action_cursor(self, delta: int) -> None:
        self._set_cursor(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self._set_cursor(self.cursor + direction * max(1, self.scrollable_content_region.height - 1))

    def action_first(self) -> None:
        self._set_cursor(0)

    def action_last(self) -> None:
        if not self.has_end:
            self.post_message(self.EndWanted(self))
            return
        self._set_cursor(self.count - 1)
        self.follow = True

    def action_step(self, direction: int) -> None:
        """Move the messages sideways by ``STEP`` columns, as far as the longest one shown needs."""
        width = self._message_width()
        longest = 0
        top = int(self.scroll_offset.y)
        for row in range(top, top + self.scrollable_content_region.height):
            line = self.line_at(row)
            if line is not None:
                longest = max(longest, len(message_text(line)))
        most = max(0, -(-(longest - width) // STEP) * STEP)
        shift = max(0, min(most, self.shift + direction * STEP))
        if shift != self.shift:
            self.shift = shift
            self.refresh()
        self.post_message(self.CursorMoved(self))

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
    def _columns(self) -> tuple[int, int, int]:
        """Widths of the line number, label and folded prefix columns (0: not shown)."""
        widths = self.source.widths
        number = max(3, len(str(widths.number)))
        label = min(LABEL_WIDTH, widths.label) if self.show_labels else 0
        return number, label, widths.short

    def _message_width(self) -> int:
        number, label, short = self._columns()
        gutter = number + 1 + (label + 1 if label else 0) + (short + 1 if short else 0)
        return max(1, self.scrollable_content_region.width - gutter)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        row = int(self.scroll_offset.y) + y
        line = self.line_at(row)
        base = self.rich_style
        if line is None:
            return Strip.blank(width, base)
        number_width, label_width, short_width = self._columns()
        muted = base + self.get_component_rich_style("logview--lineno")
        text_style = base
        if line.level == "error":
            text_style = base + self.get_component_rich_style("logview--error")
        elif line.level == "warning":
            text_style = base + self.get_component_rich_style("logview--warning")
        number = "" if line.lineno is None else str(line.lineno)
        segments = [Segment(f"{number:>{number_width}} ", muted)]
        if label_width:
            label = line.label[:label_width]
            segments.append(Segment(f"{label:<{label_width}} ", base + Style(color=label_color(line.label))))
        if short_width:
            prefix_style = text_style if line.level else base + self.get_component_rich_style("logview--prefix")
            segments.append(Segment(f"{line.short:<{short_width}} ", prefix_style))
        gutter = Strip(segments)
        room = max(0, width - gutter.cell_length)
        message = Strip(self._highlight(message_text(line), text_style)).crop(self.shift, self.shift + room)
        strip = Strip.join([gutter, message]).extend_cell_length(width, base).crop(0, width)
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
