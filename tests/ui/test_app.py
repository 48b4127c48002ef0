"""Terminal manners: help, theme, NO_COLOR, the command palette's commands, quitting without a stop."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_helpers import COLLAPSE_RUN, run_async

from a1x_tui.ui import A1xApp
from a1x_tui.ui.feeds.runs import list_runs
from a1x_tui.ui.screens.dashboard import DashboardScreen
from a1x_tui.ui.screens.help import HelpScreen
from a1x_tui.ui.screens.start import StartScreen
from a1x_tui.ui.screens.wizard import WizardScreen
from a1x_tui.ui.target import RunTarget


@run_async
async def test_help_and_theme_keys(run_dir: Path) -> None:
    app = A1xApp(target=RunTarget(follow=run_dir, run_dir=run_dir, config=None), live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        before = app.theme
        await pilot.press("ctrl+t")
        assert app.theme != before
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)


@run_async
async def test_the_palette_offers_the_dashboard_actions_and_control_only_with_a_supervisor(run_dir: Path) -> None:
    for target, controllable in (
        (RunTarget(follow=run_dir, run_dir=run_dir, config=None), True),
        (RunTarget(follow=COLLAPSE_RUN, run_dir=None, config=None), False),
    ):
        app = A1xApp(target=target, live=False)
        async with app.run_test(size=(80, 24)):
            titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Show Logs", "Apply the selected finding's fix", "Help"} <= titles
        assert ("Restart the train stage" in titles) is controllable
        assert ("Stop the run" in titles) is controllable


@pytest.mark.slow  # the app through runs, wizard and dashboard
@run_async
async def test_the_runs_list_opens_a_dashboard_and_the_wizard_through_the_app(run_dir: Path) -> None:
    """The start screen asks the app (messages, not imports: docs/ui.md); escape comes back to it."""
    app = A1xApp(roots=[run_dir.parent], live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        start = app.screen
        assert isinstance(start, StartScreen)
        start.show_runs(list_runs([run_dir.parent]))
        await pilot.press("enter")
        await pilot.pause()
        dashboard = app.screen
        assert isinstance(dashboard, DashboardScreen) and dashboard.target.run_dir == run_dir
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is start
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, WizardScreen)


def test_no_color_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    assert A1xApp(live=False).no_color
