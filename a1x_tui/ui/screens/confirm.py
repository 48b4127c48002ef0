"""A yes/no question before anything that changes a run or a file (stop, restart, apply a fix).

At 80×24 the whole dialog fits (docs/ui.md "Terminal manners"): the question and the buttons always
show, the body (a diff can be long) scrolls between them, and the footer names the keys. The
buttons sit on the left: notifications pile up on the right, over whatever is there.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import RenderableType
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Label, Static

# Rows around the body: the dialog's border (2), the question and its margin (2), the buttons and
# their margin (2), the footer (1).
CHROME_ROWS = 7


class ConfirmScreen(ModalScreen[bool]):
    """Dismisses with True only for the confirm button (or ``y``); Escape and ``n`` say no."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n", "answer(False)", "No"),
        Binding("escape", "cancel", "Cancel"),  # its own action: the footer shows one key per action
        Binding("pageup", "scroll_body(-1)", "Scroll", show=False),
        Binding("pagedown", "scroll_body(1)", "Scroll", show=False),
    ]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen #dialog {
        width: 90%; max-width: 100; height: auto; max-height: 100%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    ConfirmScreen #question { text-style: bold; margin-bottom: 1; }
    ConfirmScreen #body { height: auto; }
    ConfirmScreen #buttons { height: auto; margin-top: 1; }
    ConfirmScreen Button { margin-right: 2; }
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
                yield Button("Cancel (n)", id="no", compact=True)
                yield Button(
                    f"{self.confirm_label} (y)", id="yes", variant="error" if self.danger else "primary", compact=True
                )
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()
        self._fit(self.size.height)

    def on_resize(self, event: events.Resize) -> None:
        self._fit(event.size.height)

    def _fit(self, height: int) -> None:
        """The body gets what the question, the buttons and the footer leave: it scrolls, they stay."""
        if height > 0:
            self.query_one("#body").styles.max_height = max(3, height - CHROME_ROWS)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)

    def action_cancel(self) -> None:
        self.dismiss(False)

    def action_scroll_body(self, direction: int) -> None:
        body = self.query_one("#body", VerticalScroll)
        if direction < 0:
            body.scroll_page_up()
        else:
            body.scroll_page_down()
