"""SVG snapshots of the main screens (pytest-textual-snapshot), from fixed data and a fixed clock.

Update after an intended change of the layout: ``python -m pytest tests/ui/test_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ui_helpers import COLLAPSE_RUN, FIXED_NOW, dashboard_messages, iso

from a1x_tui.ui import A1xApp
from a1x_tui.ui.messages import RunSummary
from a1x_tui.ui.screens.start import StartScreen
from a1x_tui.ui.screens.wizard import WizardScreen
from a1x_tui.ui.target import RunTarget

SIZE = (100, 30)
RUN = Path("/runs/20261129-150000-motion")


def dashboard_app() -> A1xApp:
    target = RunTarget(follow=RUN, run_dir=RUN, config=RUN / "config" / "train.toml")
    return A1xApp(target=target, live=False, clock=lambda: FIXED_NOW)


async def feed(pilot: Any) -> None:
    for message in dashboard_messages(RUN):
        pilot.app.screen.post_message(message)
    await pilot.pause()


def test_dashboard_overview(snap_compare: Any) -> None:
    assert snap_compare(dashboard_app(), terminal_size=SIZE, run_before=feed)


def test_dashboard_logs(snap_compare: Any) -> None:
    assert snap_compare(dashboard_app(), terminal_size=SIZE, run_before=feed, press=["2", "home"])


def test_dashboard_plots(snap_compare: Any) -> None:
    assert snap_compare(dashboard_app(), terminal_size=SIZE, run_before=feed, press=["3"])


def test_dashboard_findings(snap_compare: Any) -> None:
    assert snap_compare(dashboard_app(), terminal_size=SIZE, run_before=feed, press=["4"])


def test_dashboard_read_only_at_80x24(snap_compare: Any) -> None:
    # The screen names the attached folder: give it the same absolute path in every checkout.
    fixed = Path("/tmp/a1x-tui-snapshots") / COLLAPSE_RUN.name
    shutil.rmtree(fixed, ignore_errors=True)
    shutil.copytree(COLLAPSE_RUN, fixed, symlinks=True)
    app = A1xApp(target=RunTarget(follow=fixed, run_dir=None, config=None), live=False)
    assert snap_compare(app, terminal_size=(80, 24), run_before=feed)


def test_help(snap_compare: Any) -> None:
    assert snap_compare(dashboard_app(), terminal_size=SIZE, run_before=feed, press=["question_mark"])


def test_runs(snap_compare: Any) -> None:
    runs = [
        RunSummary(RUN, "running", "stages: download, ..., verify", "train", iso(5), live=True),
        RunSummary(Path("/runs/20261128-090000-joint"), "failed", "train failed: replica_died", None, iso(86400)),
    ]

    async def show(pilot: Any) -> None:
        screen = pilot.app.screen
        assert isinstance(screen, StartScreen)
        screen.show_runs(runs)
        await pilot.pause()

    app = A1xApp(roots=[Path("/runs")], live=False)
    assert snap_compare(app, terminal_size=(80, 24), run_before=show)


def test_wizard(snap_compare: Any) -> None:
    from a1x_tui.ui.answers import default_answers

    answers = default_answers("/home/me")

    async def open_wizard(pilot: Any) -> None:
        # free disk depends on the machine: fixed for the picture
        await pilot.app.push_screen(WizardScreen(answers, environ={}, free=lambda text: "1,234 GB free"))
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    app = A1xApp(roots=[Path("/runs")], live=False)
    assert snap_compare(app, terminal_size=(80, 24), run_before=open_wizard)
