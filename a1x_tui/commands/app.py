"""``a1x-tui`` with no arguments: the interactive app, on the list of known runs.

The runs are the run directories under ``<workspace>/runs`` (the default workspace, or
``$A1X_TUI_WORKSPACE``) and under the demo workspace; ``n`` there opens the set-up wizard.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from a1x_tui._interrupt import Interrupts
    from a1x_tui.ui import A1xApp


def run_app(roots: list[Path] | None = None) -> int:
    from a1x_tui._interrupt import INTERRUPTED, Interrupts

    with Interrupts() as interrupts:
        from a1x_tui.ui import A1xApp
        from a1x_tui.ui.feeds.runs import default_roots

        app = A1xApp(roots=roots or default_roots())
        if interrupts.pending:  # Ctrl-C while it loaded: nothing is open yet
            return INTERRUPTED
        return run_until_quit(app, interrupts)


def run_until_quit(app: A1xApp, interrupts: Interrupts) -> int:
    """Run the app; a SIGINT meanwhile quits it as ``q`` does (in the terminal's raw mode Ctrl-C is a
    key, also bound to quit; a SIGINT still comes from ``kill -INT`` or before the terminal is switched),
    so the terminal says, as always, that a run goes on and how to stop it."""
    interrupts.on_interrupt = app.leave_soon
    if interrupts.pending:
        app.leave_soon()
    code = int(app.run() or 0)
    if app.leave_text:  # whole lines, as written: a command in them stays one line to copy
        print(app.leave_text, file=sys.stderr, flush=True)
    return code
