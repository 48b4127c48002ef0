"""A yes/no question before anything that changes a run or a file (stop, restart, apply a fix)."""

from __future__ import annotations

from typing import ClassVar

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static


class ConfirmScreen(ModalScreen[bool]):
    """Dismisses with True only for the confirm button (or ``y``); Escape and ``n`` say no."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "answer(False)", "Cancel"),
        Binding("n", "answer(False)", "No", show=False),
        Binding("y", "answer(True)", "Yes", show=False),
    ]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen #dialog {
        width: 90%; max-width: 100; height: auto; max-height: 90%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    ConfirmScreen #question { text-style: bold; margin-bottom: 1; }
    ConfirmScreen #body { height: auto; max-height: 70vh; }
    ConfirmScreen #buttons { height: auto; align-horizontal: right; margin-top: 1; }
    ConfirmScreen Button { margin-left: 2; }
    """

    def __init__(self, question: str, body: RenderableType = "", *, confirm: str = "Yes", danger: bool = False) -> None:
        super().__init__()
        self.question = question
        self.body = body
        self.confirm_label = confirm
        self.danger = danger

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.question, id="question")
            with VerticalScroll(id="body"):
                yield Static(self.body)
            with Horizontal(id="buttons"):
                yield Button("Cancel", id="no")
                yield Button(self.confirm_label, id="yes", variant="error" if self.danger else "primary")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
