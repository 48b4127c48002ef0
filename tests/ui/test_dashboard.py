"""The dashboard, driven with the Pilot: tabs, logs, evidence, and actions that always ask first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ui_helpers import COLLAPSE_RUN, FIXED_NOW, REPO, dashboard_messages, fixture_messages, run_async

from a1x_tui.ui import A1xApp, resolve_target
from a1x_tui.ui.screens.confirm import ConfirmScreen
from a1x_tui.ui.screens.dashboard import DashboardScreen
from a1x_tui.ui.widgets.findings import FindingsPanel
from a1x_tui.ui.widgets.logs import LogsPanel
from a1x_tui.ui.widgets.logview import LogView, visible_texts
from a1x_tui.ui.widgets.stages import StagesTable


@pytest.fixture
def commands(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[str]]]:
    """The a1x-tui commands the dashboard would run (recorded instead)."""
    calls: list[tuple[str, list[str]]] = []

    def record(action: str, args: list[str], post: Any, **_: Any) -> None:
        calls.append((action, args))

    monkeypatch.setattr("a1x_tui.ui.screens.dashboard.run_cli", record)
    return calls


def app_for(path: Path) -> A1xApp:
    return A1xApp(target=resolve_target(path), live=False, clock=lambda: FIXED_NOW)


async def fed(app: A1xApp, pilot: Any, messages: list[Any]) -> DashboardScreen:
    screen = app.screen
    assert isinstance(screen, DashboardScreen)
    for message in messages:
        screen.post_message(message)
    await pilot.pause()
    return screen


@pytest.mark.slow  # the real stop and restart commands in subprocesses
@run_async
async def test_stop_and_restart_ask_first_then_run_the_real_commands(
    run_dir: Path, commands: list[tuple[str, list[str]]]
) -> None:
    app = app_for(run_dir)
    async with app.run_test(size=(100, 30)) as pilot:
        await fed(app, pilot, dashboard_messages(run_dir))
        await pilot.press("s")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert commands == [] and isinstance(app.screen, DashboardScreen)

        await pilot.press("s", "y")
        await app.workers.wait_for_complete()
        await pilot.press("t", "y")
        await app.workers.wait_for_complete()
        table = app.screen.query_one(StagesTable)
        table.focus()
        table.move_cursor(row=0)
        await pilot.press("r", "y")
        await app.workers.wait_for_complete()
    run = str(run_dir)
    assert commands == [
        ("stop", ["stop", run]),
        ("restart train", ["restart", run, "--stage", "train"]),
        ("restart download", ["restart", run, "--stage", "download"]),
    ]


@run_async
async def test_the_stages_table_and_banner_follow_the_supervisor_state(run_dir: Path) -> None:
    app = app_for(run_dir)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await fed(app, pilot, dashboard_messages(run_dir))
        rows = {r.name: r for r in screen.query_one(StagesTable).rows_shown}
        assert rows["train"].status == "running" and rows["train"].progress == "step 12/30"
        banner = str(screen.query_one("#banner").render())
        assert "RUNNING" in banner and "critical" in banner
        assert "the run goes on" in (screen.leave_message() or "")
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


@pytest.mark.slow  # many keys through the Pilot on a recorded run
@run_async
async def test_logs_search_filter_and_evidence_open_the_line(run_dir: Path) -> None:
    app = app_for(run_dir)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await fed(app, pilot, dashboard_messages(run_dir))
        await pilot.press("2")
        await pilot.pause()
        view = screen.query_one(LogView)
        assert view.count == len(screen.store.merged) > 100

        await pilot.press("f", *"Stat:", "enter")
        assert view.count > 5 and all("Stat:" in t for t in visible_texts(view))
        await pilot.press("escape")
        await pilot.pause()
        assert view.count == len(screen.store.merged)

        await pilot.press("slash", *"OutOfMemoryError", "enter")
        line = view.line_at(view.cursor)
        assert line is not None and "OutOfMemoryError" in line.text and not view.follow

        panel = screen.query_one(FindingsPanel)
        await pilot.press("4")
        await pilot.pause()
        oom = next(i for i, s in enumerate(panel.shown) if s.finding.id == "vllm_oom")
        panel.query_one("#finding-list").highlighted = oom  # type: ignore[attr-defined]
        evidence = panel.shown[oom].finding.evidence[0]
        panel.query_one("#evidence").focus()
        await pilot.press("enter")
        await pilot.pause()
        assert screen.query_one("#tabs").active == "logs"  # type: ignore[attr-defined]
        logs = screen.query_one(LogsPanel)
        line = logs.view.line_at(logs.view.cursor)
        assert line is not None and line.lineno == evidence.line and line.source == evidence.file


@run_async
async def test_attached_read_only_to_a_recorded_run(commands: list[tuple[str, list[str]]]) -> None:
    app = A1xApp(target=resolve_target(COLLAPSE_RUN))  # live: the real follower and diagnostics
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        for _ in range(100):
            await pilot.pause(0.1)
            if "grpo_collapse" in {f.id for f in screen.findings_open.values()} and screen.series:
                break
        assert "grpo_collapse" in {f.id for f in screen.findings_open.values()}
        assert screen.series.get("reward_std")
        assert not screen.query(StagesTable)
        assert "read-only" in str(screen.query_one("#banner").render())
        assert any(f.label == "controller" for f in screen.store.files.values())
        await pilot.press("s", "t")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen) and commands == []
        assert screen.leave_message() is None


@run_async
async def test_a_finding_raised_later_is_announced(run_dir: Path) -> None:
    messages = fixture_messages(COLLAPSE_RUN)
    app = app_for(run_dir)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        screen = await fed(app, pilot, [])
        from a1x_tui.ui.messages import FindingsChanged

        first = messages[1]
        assert isinstance(first, FindingsChanged)
        await fed(app, pilot, [FindingsChanged({}, {})])
        await fed(app, pilot, [FindingsChanged(first.open, first.resolved)])  # a later evaluation's
        said = [f"{n.title} {n.message}" for n in app._notifications]  # one toast for what one evaluation raised
        assert len(said) == 1 and "grpo_collapse" in said[0], said
        assert screen.query_one("#tabs").get_tab("findings").label.plain.startswith("4 Findings (")  # type: ignore[attr-defined]


@run_async
async def test_attached_to_an_alpagym_run_folder_its_closed_loop_findings_and_plots_show() -> None:
    """issue 19 point 1: `a1x-tui attach <AlpaGym run>` reads it closed-loop (a fixture built from the
    upstream message strings: tests/fixtures/alpagym/README.md)."""
    run = next((REPO / "tests" / "fixtures" / "alpagym" / "reward_hacking").iterdir())
    from a1x_diagnostics.engine import unknown_reason

    target = resolve_target(run)
    assert not target.controllable and unknown_reason(target.follow) is None  # attach would not refuse it
    app = A1xApp(target=target)  # live: the real follower and the closed-loop diagnostics
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        for _ in range(100):
            await pilot.pause(0.1)
            found = {f.id for f in screen.findings_open.values()}
            if "reward_hacking" in found and screen.series.get("cl_collision_rate"):
                break
        assert "reward_hacking" in {f.id for f in screen.findings_open.values()}
        assert screen.series.get("cl_collision_rate")  # the closed-loop plot, beside the open-loop ones
        assert any("rollout_0" in f.label for f in screen.store.files.values())
