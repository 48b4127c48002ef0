"""Radio buttons and a checkbox that say their state without colour.

Textual draws the same ``●`` (``X`` in a checkbox) in a selected and an unselected button and tells
them apart by its colour only: with ``NO_COLOR`` (grey 250 against 232) or on a monochrome terminal
every choice looked picked. Here the mark is drawn only when the button is on.
"""

from __future__ import annotations

from textual.widgets import Checkbox, RadioButton


def _mark(button: RadioButton | Checkbox, on: str) -> None:
    button.BUTTON_INNER = on if button.value else " "
    button.refresh()


class Choice(RadioButton):
    """A radio button: ``●`` when selected, blank when not."""

    def on_mount(self) -> None:
        _mark(self, "●")

    def watch_value(self) -> None:
        super().watch_value()
        _mark(self, "●")


class Tick(Checkbox):
    """A checkbox: ``X`` when checked, blank when not."""

    def on_mount(self) -> None:
        _mark(self, "X")

    def watch_value(self) -> None:
        super().watch_value()
        _mark(self, "X")
