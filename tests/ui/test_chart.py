"""The braille chart: values map to dots, the band surrounds the line, the labels show the range."""

from __future__ import annotations

from a1x_tui.ui.widgets.chart import GUTTER, render_chart


def test_a_rising_series_goes_from_the_bottom_left_to_the_top_right() -> None:
    rows = render_chart([0.0, 1.0, 2.0, 3.0], 30, 4)
    assert len(rows) == 4
    assert all(row.cell_len == 30 for row in rows)
    plot = [row.plain[GUTTER:] for row in rows]
    assert plot[-1][0] != " "  # the first value sits at the bottom-left
    assert plot[0][-1] != " "  # the last at the top-right
    assert rows[0].plain.strip().startswith("3.000")
    assert rows[-1].plain.strip().startswith("0")


def test_the_band_widens_the_range_and_is_drawn_around_the_line() -> None:
    with_band = render_chart([0.0, 0.0, 0.0], 20, 3, band=[1.0, 1.0, 1.0])
    assert with_band[0].plain.strip().startswith("1.000")
    assert with_band[-1].plain.strip().startswith("-1.000")
    assert all(row.plain[GUTTER:].strip() for row in with_band)  # band dots on every row


def test_a_flat_or_empty_series_still_renders() -> None:
    assert len(render_chart([5.0], 20, 2)) == 2
    assert [row.plain.strip() for row in render_chart([], 20, 2)] == ["", ""]
    assert render_chart([float("nan"), 1.0, 2.0], 20, 2)[0].plain.strip()
