"""The help screen: every key, and what attach, the demo and quitting do to a run."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# a1x-tui keys

**Anywhere** · `?` this help · `ctrl+p` command palette · `ctrl+t` dark / light theme ·
`q` quit (a run goes on: quitting never stops it) · `tab` / `shift+tab` move between panes

**Runs** · `enter` open the run under the cursor · `n` new run (wizard) · `r` refresh

**Dashboard** · `1` overview (stages, GPUs) · `2` logs · `3` plots · `4` findings
· `s` stop the run · `r` restart the stage under the cursor · `t` restart the train stage
· `a` apply the selected finding's fix to the TOML — each asks first

**Logs** · `/` search, `n` / `N` next / previous match · `f` filter · `:` go to line ·
`m` merged view (every file, ordered by time) · `end` follow the end · `escape` clear

**Findings** · `↑`/`↓` choose · `enter` go to its evidence, `enter` again opens the log there ·
`a` apply its fix (the diff is shown first; a backup of the TOML is kept) · `t` restart training

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
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen #help { width: 90%; max-width: 110; height: 90%; border: thick $accent; background: $surface; }
    """

    def compose(self) -> ComposeResult:
        with Vertical(id="help"):
            yield Markdown(HELP)
