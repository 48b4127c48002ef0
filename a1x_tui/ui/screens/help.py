"""The help screen: every key, and what attach, the demo and quitting do to a run.

It scrolls (↑↓, pgup/pgdn, home/end) and its footer says how to close it, so all of it can be read
at 80×24. ``HELP`` lists every binding of the app's screens and widgets (``tests/ui/test_app.py``
holds it to them).
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Markdown

HELP = """\
# a1x-tui keys

**Anywhere** · `?` this help · `ctrl+p` command palette (every action is there too) ·
`ctrl+t` dark / light theme · `q` quit (a run goes on: quitting never stops it) ·
`tab` / `shift+tab` move between panes

**Runs** · `↑`/`↓` choose · `enter` open the run's dashboard · `n` new run (the wizard) · `r` refresh

**Wizard** · `tab` / `shift+tab` next / previous field · `←`/`→` or `space` pick a choice ·
`ctrl+n` check and continue (a wrong answer: its field gets the cursor, the reason beside it) ·
`escape` back. **Preflight** · `enter` on *Start the run* · `escape` back to the answers

**Dashboard** · `1` overview (stages, GPUs) · `2` logs · `3` plots · `4` findings (from any tab)
· `l` the log of the failed stage, else of the stage under the cursor · `s` stop the run
· `r` restart the stage under the cursor · `t` restart the train stage
· `a` apply the selected finding's fix to the TOML — each of these asks first
· `escape` back to the runs

**Logs** · `↑`/`↓` `pgup`/`pgdn` `home` move (the view stops following) · `end` follow the end
again · `←`/`→` move the messages 8 columns sideways (line number, replica and time stay) ·
`enter` the line under the cursor in full · `/` search, `n` / `N` next / previous match ·
`f` filter · `:` go to line (an old one is read from the file) · `m` merged view (every file,
ordered by time) · `escape` clear the filter, the search and the sideways move · on the file
list: `↑`/`↓` choose, `enter` to the lines

**Findings** · `↑`/`↓` choose · `enter` go to its evidence, `enter` again opens the log there ·
`tab` to the explanation, `↑`/`↓` to scroll it · `a` apply its fix (the diff is shown first; a
backup of the TOML is kept) · `t` restart training

**A question** (apply, stop, restart) · `y` yes · `n` or `escape` no · `pgup`/`pgdn` scroll a long
diff · `tab` between the buttons, `enter` to press one

**This help** · `↑`/`↓` `pgup`/`pgdn` `home`/`end` scroll · `escape` or `?` close

## What the dashboard is connected to

- **A run of ours** (started here, with `a1x-tui run`, or `a1x-tui demo`): the supervisor owns the
  processes; this app only talks to it. Stop and restart go through it.
- **Any Cosmos-RL log folder** (`a1x-tui attach PATH`): read-only. Logs, plots, findings and GPUs
  work; there are no stages to act on. `--config TOML` lets fixes be shown and applied.
- **The demo** plays a scripted run on simulated GPUs: pending rollouts grow, the rollout runs out
  of memory, reward std collapses. Apply the fixes (`a`), restart training (`t`), watch them go.

Press `escape` to close.
"""


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
    HelpScreen Markdown { margin: 0 1; }
    """

    def compose(self) -> ComposeResult:
        # Not focusable: the keys are this screen's, so the footer names them.
        with VerticalScroll(id="help", can_focus=False, can_focus_children=False):
            yield Markdown(HELP)
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
