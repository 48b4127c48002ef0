"""``a1x-tui`` with no arguments: the interactive app, on the list of known runs.

The runs are the run directories under ``<workspace>/runs`` (the default workspace, or
``$A1X_TUI_WORKSPACE``) and under the demo workspace; ``n`` there opens the set-up wizard.
"""

from __future__ import annotations

from pathlib import Path


def run_app(roots: list[Path] | None = None) -> int:
    from a1x_tui.ui import A1xApp
    from a1x_tui.ui.feeds.runs import default_roots

    app = A1xApp(roots=roots or default_roots())
    return int(app.run() or 0)
