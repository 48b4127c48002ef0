"""The Textual app of a1x-tui: runs, the set-up wizard, the live dashboard, attach and the demo.

It holds no domain logic: findings, fixes and metrics come from ``diagnostics``, runs from
``supervisor``; the app follows, shows and asks before acting. Layout (toolong's habit, one concept
per module): ``feeds/`` read files, sockets and NVML in worker threads and post ``messages``;
``widgets/`` only draw what those messages carry; ``screens/`` put them together.
"""

from __future__ import annotations

from a1x_tui.ui.app import A1xApp
from a1x_tui.ui.target import RunTarget, TargetError, resolve_target

__all__ = ["A1xApp", "RunTarget", "TargetError", "resolve_target"]
