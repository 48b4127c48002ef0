"""The Textual app of a1x-tui: runs, the set-up wizard, the live dashboard, attach and the demo.

It holds no domain logic: findings, fixes and metrics come from ``diagnostics``, runs from
``supervisor``; the app follows, shows and asks before acting. Layout (toolong's habit, one concept
per module): ``feeds/`` read files, sockets and NVML in worker threads and post ``messages``;
``widgets/`` only draw what those messages carry; ``screens/`` put them together.

The names below load on first use: ``a1x-tui attach`` starts ``--check``'s verdict before Textual is
imported, the follow worker's child process needs the messages, not the app, and the far side of
``attach HOST:PATH`` (``watch --dashboard``) resolves its target without importing the app
(``a1x_tui.ui.target`` holds no Textual).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from a1x_tui.ui.app import A1xApp
    from a1x_tui.ui.target import RunTarget, TargetError, resolve_target

__all__ = ["A1xApp", "RunTarget", "TargetError", "resolve_target"]


def __getattr__(name: str) -> Any:
    if name == "A1xApp":
        from a1x_tui.ui.app import A1xApp

        return A1xApp
    if name in ("RunTarget", "TargetError", "resolve_target"):
        from a1x_tui.ui import target

        return getattr(target, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
