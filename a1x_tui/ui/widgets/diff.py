"""A unified diff as the findings panel and the apply-fix dialog show it: coloured by line kind, and a
line wrapped at the panel's edge keeps its ``+`` / ``-`` on every row it takes (a wrapped row that
started at the margin read as a context line, in a diff that is about to be written)."""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text


def _style(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    if line.startswith("@@"):
        return "cyan"
    return ""


CONTINUED = "  "  # after the marker, on the rows a wrapped line goes on


def _rows(console: Console, body: str, width: int, style: str) -> list[Text]:
    return list(Text(body, style=style).wrap(console, max(1, width), overflow="fold")) if body else []


class DiffView:
    """A Rich renderable of ``diff``; each row of a wrapped line starts with the line's marker."""

    def __init__(self, diff: str) -> None:
        self.lines = diff.splitlines()

    def text(self) -> Text:
        """The diff unwrapped, one row per line (for a width that needs no wrapping)."""
        return Text("\n").join(Text(line, style=_style(line)) for line in self.lines)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(2 + len(CONTINUED), options.max_width)
        for line in self.lines:
            style = _style(line)
            header = line.startswith(("+++", "---", "@@"))
            marker, body = ("", line) if header or not line else (line[0], line[1:])
            first, *rest = _rows(console, body, width - len(marker), style) or [Text()]
            yield from Text(marker, style=style).render(console)
            yield from first.render(console)
            yield Segment.line()
            if rest:  # the remainder, indented under the line's own marker
                continued = Text(body, style=style)[len(first.plain) :]
                for row in _rows(console, continued.plain.lstrip(), width - len(marker) - len(CONTINUED), style):
                    yield from Text(marker + CONTINUED, style=style).render(console)
                    yield from row.render(console)
                    yield Segment.line()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        longest = max((len(line) for line in self.lines), default=0)
        return Measurement(min(longest, 2), min(longest, options.max_width))
