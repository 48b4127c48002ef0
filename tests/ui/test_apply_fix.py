"""Apply a finding's fix from the dashboard: the diff is shown, nothing is written without a yes,
the write keeps a backup of the original TOML."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from ui_helpers import FIXED_NOW, OOM_RUN, fixture_messages, run_async

from a1x_tui.ui import A1xApp
from a1x_tui.ui.screens.confirm import ConfirmScreen
from a1x_tui.ui.screens.dashboard import DashboardScreen
from a1x_tui.ui.target import RunTarget
from a1x_tui.ui.widgets.findings import FindingsPanel


def rendered_toml(tmp: Path) -> Path:
    from a1x_configs.render import TemplateChoices, render_toml

    path = tmp / "train.toml"
    text = render_toml(
        TemplateChoices(
            alpamayo_version="1.5",
            reward_mode="motion",
            wandb=False,
            compute="local",
            output_dir=str(tmp / "out"),
            model_dir=str(tmp / "model"),
        )
    )
    path.write_text(text, encoding="utf-8")
    return path


def confirm_text(screen: ConfirmScreen) -> str:
    """The dialog's body as plain text, unwrapped."""
    from rich.console import Console

    console = Console(width=400, color_system=None, record=True, file=io.StringIO())
    console.print(screen.body)
    return console.export_text()


@pytest.mark.slow  # the diff planned and applied through the Pilot
@run_async
async def test_apply_fix_shows_the_diff_asks_and_keeps_a_backup(tmp_path: Path) -> None:
    toml = rendered_toml(tmp_path)
    original = toml.read_text(encoding="utf-8")
    target = RunTarget(follow=OOM_RUN, run_dir=None, config=toml)
    app = A1xApp(target=target, live=False, clock=lambda: FIXED_NOW)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        for message in fixture_messages(OOM_RUN, config=toml):
            screen.post_message(message)
        await pilot.pause()
        await pilot.press("4")
        panel = screen.query_one(FindingsPanel)
        oom = next(i for i, s in enumerate(panel.shown) if s.finding.id == "vllm_oom")
        panel.query_one("#finding-list").highlighted = oom  # type: ignore[attr-defined]
        key = panel.shown[oom].key
        fixes = panel.shown[oom].finding.fixes
        assert fixes
        wanted = [f"{fx.path.rsplit('.', 1)[-1]} = {fx.proposed}" for fx in fixes]

        await pilot.press("a")
        for _ in range(50):  # the diff is planned by a worker first
            await pilot.pause(0.05)
            if isinstance(app.screen, ConfirmScreen):
                break
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        text = confirm_text(dialog)
        assert all(f"\n+{line}" in text for line in wanted), text
        assert str(toml) in text
        await pilot.press("escape")
        await pilot.pause()
        assert toml.read_text(encoding="utf-8") == original
        assert not list(tmp_path.glob("train.toml.*.bak"))
        assert key in panel.plans and panel.plans[key].diff  # the detail pane shows the same diff

        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await app.workers.wait_for_complete()
        await pilot.pause()

    changed = toml.read_text(encoding="utf-8")
    assert changed != original and all(f"\n{line}" in changed for line in wanted)
    backups = list(tmp_path.glob("train.toml.*.bak"))
    assert len(backups) == 1 and backups[0].read_text(encoding="utf-8") == original


@run_async
async def test_without_a_toml_the_fix_is_shown_but_cannot_be_applied(tmp_path: Path) -> None:
    app = A1xApp(target=RunTarget(follow=OOM_RUN, run_dir=None, config=None), live=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        for message in fixture_messages(OOM_RUN):
            screen.post_message(message)
        await pilot.pause()
        await pilot.press("4", "a")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
