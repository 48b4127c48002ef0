"""A small line chart in braille dots, with an optional band (mean ± std): no plotting dependency.

Each terminal cell holds 2 × 4 dots (Unicode braille, U+2800 + a bit per dot), so a 40 × 5 cell
chart draws 80 × 20 points. ``render_chart`` is pure (values in, rich ``Text`` lines out);
``Chart`` is the widget that sizes it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.text import Text
from textual.widget import Widget

# dot (column, row) -> bit, rows top to bottom (the braille cell's numbering: 1 2 3 7 / 4 5 6 8)
_BITS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))
GUTTER = 8


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 0.01:
        return f"{value:.3f}"
    return f"{value:.1e}"


def _resample(values: Sequence[float], n: int) -> list[tuple[int, float]]:
    """(dot column, value) pairs: every value when they fit, else the last value of each column."""
    count = len(values)
    if count == 0 or n <= 0:
        return []
    if count == 1:
        return [(n - 1, values[0])]
    if count <= n:  # linear interpolation between the points, so the line is continuous
        out_i: list[tuple[int, float]] = []
        for col in range(n):
            pos = col * (count - 1) / (n - 1)
            i = min(count - 2, int(pos))
            frac = pos - i
            a, b = values[i], values[i + 1]
            out_i.append((col, a + (b - a) * frac if math.isfinite(a) and math.isfinite(b) else a))
        return out_i
    out: list[tuple[int, float]] = []
    for col in range(n):
        i = min(count - 1, round((col + 1) * count / n) - 1)
        out.append((col, values[i]))
    return out


def render_chart(
    values: Sequence[float],
    width: int,
    height: int,
    *,
    band: Sequence[float] | None = None,
    style: str = "green",
    band_style: str = "dim",
) -> list[Text]:
    """``height`` lines of ``width`` cells: y labels in a gutter, the line over its band."""
    clean = [v for v in values if math.isfinite(v)]
    plot_w = max(1, width - GUTTER)
    if not clean or height <= 0:
        return [Text(" " * width) for _ in range(max(0, height))]
    lows = list(clean)
    highs = list(clean)
    spread: list[float] = []
    if band is not None and len(band) == len(values):
        spread = [abs(b) if math.isfinite(b) else 0.0 for b in band]
        lows = [v - s for v, s in zip(values, spread, strict=True) if math.isfinite(v)]
        highs = [v + s for v, s in zip(values, spread, strict=True) if math.isfinite(v)]
    lo, hi = min(lows), max(highs)
    if hi - lo < 1e-12:
        pad = abs(hi) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    dots_x, dots_y = plot_w * 2, height * 4

    def row(v: float) -> int:
        return max(0, min(dots_y - 1, round((hi - v) / (hi - lo) * (dots_y - 1))))

    line = [[0] * plot_w for _ in range(height)]
    shade = [[0] * plot_w for _ in range(height)]

    def put(grid: list[list[int]], x: int, y: int) -> None:
        grid[y // 4][x // 2] |= _BITS[x % 2][y % 4]

    points = _resample(values, dots_x)
    bands = _resample(spread, dots_x) if spread else []
    previous: int | None = None
    for i, (x, v) in enumerate(points):
        if not math.isfinite(v):
            previous = None
            continue
        y = row(v)
        if bands:
            s = bands[i][1]
            for yy in range(row(v + s), row(v - s) + 1):
                put(shade, x, yy)
        start, end = (y, y) if previous is None else (min(previous, y), max(previous, y))
        for yy in range(start, end + 1):
            put(line, x, yy)
        previous = y
    labels = {0: _fmt(hi), height - 1: _fmt(lo)}
    out: list[Text] = []
    for r in range(height):
        text = Text(f"{labels.get(r, ''):>{GUTTER - 1}} ", style="dim")
        for c in range(plot_w):
            bits = line[r][c] | shade[r][c]
            char = chr(0x2800 + bits) if bits else " "
            text.append(char, style=style if line[r][c] else band_style)
        out.append(text)
    return out


class Chart(Widget):
    """A titled chart; ``set_data`` replaces what it draws (it redraws once per call)."""

    DEFAULT_CSS = """
    Chart { height: 1fr; min-height: 4; padding: 0 1; }
    """

    def __init__(self, title: str, *, style: str = "green", id: str | None = None) -> None:
        super().__init__(id=id)
        self.chart_title = title
        self.line_style = style
        self.values: list[float] = []
        self.band: list[float] | None = None
        self.caption = ""
        self.empty_note = "no data yet"

    def set_data(self, values: Sequence[float], *, band: Sequence[float] | None = None, caption: str = "") -> None:
        self.values = list(values)
        self.band = list(band) if band is not None else None
        self.caption = caption
        self.refresh()

    def render(self) -> Text:
        width = max(10, self.size.width)
        height = max(1, self.size.height - 1)
        head = Text(self.chart_title, style="bold")
        if self.caption:
            head.append(f"  {self.caption}")
        head.truncate(width)
        if not self.values:
            return Text("\n").join([head, Text(self.empty_note, style="dim")])
        rows = render_chart(self.values, width, height, band=self.band, style=self.line_style)
        return Text("\n").join([head, *rows])
