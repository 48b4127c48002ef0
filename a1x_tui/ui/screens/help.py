"""The help screen: every key in a table (the keys, what they do, by where they work), and what attach,
the demo and quitting do to a run.

It scrolls (↑↓, pgup/pgdn, home/end) and its footer says how to close it, so all of it can be read
at 80×24. ``KEYS`` names every binding of the app's screens and widgets (``tests/ui/test_small_terminal.py``
holds it to them).
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

# (where, [(the keys, what they do)]): one table, a key column and what it does; the keys as the
# footer names them (``tests/ui/test_small_terminal.py`` holds this to every binding of the app).
KEYS: list[tuple[str, list[tuple[tuple[str, ...], str]]]] = [
    ("Anywhere", [
        (("?",), "this help"),
        (("ctrl+p",), "command palette: every action is there too"),
        (("ctrl+t",), "dark / light theme"),
        (("q", "ctrl+c"), "quit; a run goes on (quitting never stops it)"),
        (("tab", "shift+tab"), "move between panes"),
    ]),
    ("Runs", [
        (("↑", "↓"), "choose a run"),
        (("enter",), "open its dashboard"),
        (("n",), "new run (the wizard)"),
        (("r",), "refresh"),
    ]),
    ("Wizard", [
        (("tab", "shift+tab"), "next / previous field"),
        (("←", "→", "space"), "pick a choice"),
        (("ctrl+n",), "check and continue (a wrong answer gets the cursor, the reason under it)"),
        (("escape",), "back"),
    ]),
    ("Preflight", [
        (("enter",), "on Start the run: start it"),
        (("escape",), "back to the answers"),
    ]),
    ("Dashboard", [
        (("1", "2", "3", "4"), "overview (stages, GPUs), logs, plots, findings: from any tab"),
        (("l",), "the log of the failed stage, else of the stage under the cursor"),
        (("s",), "stop the run (asks first)"),
        (("r",), "restart the stage under the cursor (asks first)"),
        (("t",), "restart the train stage (asks first)"),
        (("a",), "apply the selected finding's fix to the TOML (shows the diff, asks first)"),
        (("escape",), "back to the runs"),
    ]),
    ("Logs", [
        (("↑", "↓", "pgup", "pgdn", "home"), "move (the view stops following)"),
        (("end",), "follow the end again"),
        (("←", "→"), "move the messages 8 columns sideways (line number, replica and time stay)"),
        (("enter",), "the line under the cursor in full; on the file list: to its lines"),
        (("/",), "search"),
        (("n", "N"), "next / previous match"),
        (("f",), "filter"),
        ((":",), "go to a line (an old one is read from the file)"),
        (("m",), "merged view: every file, ordered by time"),
        (("escape",), "clear the filter, the search and the sideways move"),
    ]),
    ("Findings", [
        (("↑", "↓"), "choose a finding"),
        (("enter",), "to its evidence; enter again opens the log at that line"),
        (("tab",), "to the explanation; ↑ ↓ scroll it"),
        (("a",), "apply its fix (the diff first; a backup of the TOML is kept)"),
        (("t",), "restart training"),
    ]),
    ("A question", [
        (("y",), "yes"),
        (("n", "escape"), "no"),
        (("pgup", "pgdn"), "scroll a long diff"),
        (("tab", "enter"), "between the buttons, press one"),
    ]),
    ("This help", [
        (("↑", "↓", "pgup", "pgdn", "home", "end"), "scroll"),
        (("escape", "?"), "close"),
    ]),
]

ABOUT = (
    ("A run of ours", "started here, with `a1x-tui run`, or `a1x-tui demo`: the supervisor owns the processes; this "
     "app only talks to it. Stop and restart go through it."),
    ("Any Cosmos-RL log folder", "`a1x-tui attach PATH`: read-only. Logs, plots, findings and GPUs work; there are "
     "no stages to act on. `--config TOML` lets fixes be shown and applied."),
    ("The demo", "a scripted run on simulated GPUs: pending rollouts grow, the rollout runs out of memory, reward "
     "std collapses. Apply the fixes (a), restart training (t), watch them go."),
)


def help_table() -> RenderableType:
    """Every key, by where it works, as a table; then what the dashboard is connected to."""
    table = Table(box=None, show_header=False, padding=(0, 1), expand=True, pad_edge=False)
    table.add_column("keys", style="bold", no_wrap=True, min_width=12)
    table.add_column("what", ratio=1)
    for i, (where, rows) in enumerate(KEYS):
        table.add_row(Text(where, style="bold underline"), "", end_section=False)
        for keys, what in rows:
            table.add_row(" ".join(keys), what)
        if i < len(KEYS) - 1:
            table.add_row("", "")
    about = Text("\nWhat the dashboard is connected to\n", style="bold underline")
    for title, text in ABOUT:
        about.append(f"{title}: ", style="bold")
        about.append(text.replace("`", "") + "\n")
    return Group(Text("a1x-tui keys", style="bold"), table, about)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("question_mark", "dismiss", "Close", show=False),
        Binding("up", "scroll('up')", "Scroll", key_display="↑↓"),
        Binding("down", "scroll('down')", "Scroll", show=False),
        Binding("pageup", "scroll('page_up')", "Page", key_display="pgup/pgdn"),
        Binding("pagedown", "scroll('page_down')", "Page", show=False),
        Binding("home", "scroll('home')", "Top", show=False),
        Binding("end", "scroll('end')", "End", show=False),
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen #help {
        width: 100%; max-width: 110; height: 1fr; max-height: 100%;
        border: thick $accent; background: $surface;
    }
    HelpScreen #help-text { margin: 0 1; }
    """

    def compose(self) -> ComposeResult:
        # Not focusable: the keys are this screen's, so the footer names them.
        with VerticalScroll(id="help", can_focus=False, can_focus_children=False):
            yield Static(help_table(), id="help-text")
        yield Footer(compact=True)

    def action_scroll(self, how: str) -> None:
        view = self.query_one("#help", VerticalScroll)
        {
            "up": view.scroll_up,
            "down": view.scroll_down,
            "page_up": view.scroll_page_up,
            "page_down": view.scroll_page_down,
            "home": view.scroll_home,
            "end": view.scroll_end,
        }[how](animate=False)
