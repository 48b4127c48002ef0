"""At 80×24 (an SSH session in tmux): every dialog's actions in view, long content scrolls, a failed
stage says why where the eye lands, tab keys work from every tab, and the help lists every key."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Region
from textual.widget import Widget
from ui_helpers import FIXED_NOW, dashboard_messages, run_async, sample_state

from a1x_tui.ui import A1xApp, resolve_target
from a1x_tui.ui.logstore import LineMaker
from a1x_tui.ui.messages import LineChunk, LinesArrived, RunStateChanged
from a1x_tui.ui.screens.confirm import ConfirmScreen
from a1x_tui.ui.screens.dashboard import DashboardScreen
from a1x_tui.ui.screens.help import KEYS, HelpScreen
from a1x_tui.ui.widgets.logs import LogsPanel

SMALL = (80, 24)
TABS = ("overview", "logs", "plots", "findings")


def in_view(widget: Widget) -> bool:
    """The widget is drawn whole on the screen (not cut off below or to the right)."""
    screen = Region(0, 0, *SMALL)
    return bool(widget.region) and screen.contains_region(widget.region)


async def dashboard(pilot: Any, run_dir: Path, messages: list[Any]) -> DashboardScreen:
    screen = pilot.app.screen
    assert isinstance(screen, DashboardScreen)
    for message in messages:
        screen.post_message(message)
    await pilot.pause()
    return screen


def failed_state(run_dir: Path) -> dict[str, Any]:
    state = sample_state(run_dir, status="failed")
    missing = f"{run_dir}/recipes/alpamayo1_x_rl/pyproject.toml"
    reason = f"{missing} is missing: is paths.workspace an alpamayo-recipes checkout?"
    state["stages"][0].update(status="failed", reason=reason, progress=None)
    for stage in state["stages"][1:]:
        stage.update(status="pending", reason="", progress=None)
    state["current_stage"] = "download"
    return state


@run_async
async def test_a_long_diff_scrolls_between_the_question_and_its_buttons() -> None:
    diff = Text("\n".join(f"+line {i} = {i}" for i in range(80)))
    app = A1xApp(live=False)
    async with app.run_test(size=SMALL) as pilot:
        answers: list[bool | None] = []
        app.push_screen(ConfirmScreen("Apply the fix for vllm_oom?", diff, confirm="Apply"), answers.append)
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        for selector in ("#question", "#yes", "#no"):
            assert in_view(dialog.query_one(selector)), selector
        body = dialog.query_one("#body")
        assert body.max_scroll_y > 0  # the rest of the diff is a scroll away
        footer = " ".join(b.key for _, b, _, _ in dialog.active_bindings.values() if b.show)
        assert {"y", "n", "escape"} <= set(footer.split())
        await pilot.press("pagedown")
        assert body.scroll_y > 0
        await pilot.press("y")
        await pilot.pause()
    assert answers == [True]


@run_async
async def test_a_failed_stage_says_why_in_the_banner_and_l_opens_its_log(run_dir: Path) -> None:
    app = A1xApp(target=resolve_target(run_dir), live=False, clock=lambda: FIXED_NOW)
    log = ["2026-11-29T15:00:00.000+00:00 [a1x-tui] $ uv sync", "2026-11-29T15:00:01.000+00:00 [a1x-tui] stage failed"]
    lines = LineMaker().make("stages/download.log", "[download]", 1, log, history=True)
    async with app.run_test(size=SMALL) as pilot:
        screen = await dashboard(pilot, run_dir, [
            RunStateChanged(failed_state(run_dir), False),
            LinesArrived([LineChunk("stages/download.log", "[download]", 1, tuple(lines), history=True, done=True)]),
        ])
        failure = screen.query_one("#failure")
        said = str(failure.render())
        assert said.startswith("✗ download failed: ") and "is paths.workspace an alpamayo-recipes checkout?" in said
        assert in_view(failure) and "l: its log" in said
        assert "no findings" not in str(screen.query_one("#banner").render())  # a failed run is never "fine"
        await pilot.press("l")
        await pilot.pause()
        logs = screen.query_one(LogsPanel)
        assert screen.query_one("#tabs").active == "logs"  # type: ignore[attr-defined]
        assert logs.current == "stages/download.log" and logs.view.line_at(logs.view.cursor).text == log[-1]  # type: ignore[union-attr]
        listed = logs.query_one("#log-files")
        drawn = [str(listed.render_line(y).text).strip() for y in range(3)]
        assert "[download]" in drawn  # a stage log's name is shown as it is, not read as markup


@pytest.mark.slow  # 12 tab switches through the Pilot
@run_async
async def test_number_keys_switch_tabs_from_every_tab(run_dir: Path) -> None:
    app = A1xApp(target=resolve_target(run_dir), live=False, clock=lambda: FIXED_NOW)
    async with app.run_test(size=SMALL) as pilot:
        screen = await dashboard(pilot, run_dir, dashboard_messages(run_dir))
        tabs = screen.query_one("#tabs")
        for start, then in itertools.permutations(range(4), 2):
            await pilot.press(str(start + 1))
            await pilot.pause()
            await pilot.press(str(then + 1))
            await pilot.pause()
            assert tabs.active == TABS[then], f"{start + 1} then {then + 1}"  # type: ignore[attr-defined]


def every_key() -> set[str]:
    """The keys every screen and widget of the app binds, as the help names them."""
    from a1x_tui.ui import app as app_module
    from a1x_tui.ui.screens import confirm, dashboard, help, start, wizard
    from a1x_tui.ui.widgets import findings, logs, logview, stages

    owners = [
        app_module.A1xApp, start.StartScreen, wizard.WizardScreen, wizard.PreflightScreen, dashboard.DashboardScreen,
        confirm.ConfirmScreen, help.HelpScreen, logs.LogsPanel, logview.LogView, stages.StagesTable,
        findings.FindingsPanel,
    ]
    names = {"question_mark": "?", "slash": "/", "colon": ":", "pageup": "pgup", "pagedown": "pgdn",
             "up": "↑", "down": "↓", "left": "←", "right": "→"}
    keys = set()
    for owner in owners:
        for binding in owner.BINDINGS:
            assert isinstance(binding, Binding)
            for key in binding.key.split(","):
                keys.add(names.get(key, key))
    return keys - {"ctrl+c"}  # the terminal's own interrupt: quits like q


def test_the_help_names_every_key() -> None:
    named = {key for _where, rows in KEYS for keys, _what in rows for key in keys}
    missing = every_key() - named
    assert not missing, f"keys bound but not in the help: {sorted(missing)}"


@run_async
async def test_the_help_scrolls_to_its_end_at_80x24(run_dir: Path) -> None:
    app = A1xApp(target=resolve_target(run_dir), live=False)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        view = help_screen.query_one("#help")
        assert view.max_scroll_y > 0  # it does not fit: it scrolls
        await pilot.press("end")
        await pilot.pause()
        assert view.scroll_y == view.max_scroll_y
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)


@run_async
async def test_toasts_keep_to_the_right_two_fifths_at_80x24(run_dir: Path) -> None:
    """New findings are announced in one toast per evaluation, 32 columns wide at most (40 % of 80):
    three toasts of 40 columns stacked over the right half of the screen."""
    from textual.widgets._toast import Toast
    from ui_helpers import COLLAPSE_RUN, fixture_messages

    from a1x_tui.ui.messages import FindingsChanged

    raised = next(m for m in fixture_messages(COLLAPSE_RUN) + dashboard_messages(run_dir)
                  if isinstance(m, FindingsChanged) and len(m.open) > 1)
    app = A1xApp(target=resolve_target(run_dir), live=False)
    async with app.run_test(size=SMALL, notifications=True) as pilot:
        # the first evaluation (the run's past): no toast; a later one's new findings: one toast
        await dashboard(pilot, run_dir, [FindingsChanged({}, {}, first=True), FindingsChanged(raised.open, {})])
        await pilot.pause()
        toasts = list(app.screen.query(Toast))
        assert len(toasts) == 1, [t.render() for t in toasts]
        assert 0 < toasts[0].region.width <= 32 and toasts[0].region.x > SMALL[0] // 2
        said = " ".join(f"{n.title} {n.message}" for n in app._notifications)
        for f in raised.open.values():
            assert f.id in said
