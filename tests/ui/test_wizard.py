"""The set-up wizard: choices once, preflight, one confirmation, then the supervisor and the dashboard.
The W&B key typed here reaches the supervisor's environment only: never the spec, never a file."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button, Input, Static
from ui_helpers import run_async

from a1x_tui.ui import A1xApp
from a1x_tui.ui.screens.dashboard import DashboardScreen
from a1x_tui.ui.screens.start import StartScreen
from a1x_tui.ui.screens.wizard import PreflightScreen, WizardScreen

SECRET = "wandb-secret-0123456789abcdef"


def fill(screen: WizardScreen, tmp: Path) -> None:
    for name in ("workspace", "model_dir", "pai_dir", "reasoning_dir", "grader_dir", "output_dir", "export_dir"):
        screen.query_one(f"#path-{name}", Input).value = str(tmp / name)


async def until(pilot: Any, condition: Any, tries: int = 100) -> None:
    for _ in range(tries):
        await pilot.pause(0.05)
        if condition():
            return
    raise AssertionError("the screen did not get there")


@run_async
async def test_a_bad_answer_is_one_line_and_nothing_moves_on(tmp_path: Path) -> None:
    app = A1xApp(roots=[tmp_path / "runs"], live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        assert isinstance(app.screen, StartScreen)
        await pilot.press("n")
        await pilot.pause()
        wizard = app.screen
        assert isinstance(wizard, WizardScreen)
        fill(wizard, tmp_path)
        wizard.query_one("#chunks", Input).value = "31x6"
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert app.screen is wizard
        assert "PAI chunk ids: 31x6 is not a whole number" in str(wizard.query_one("#error", Static).render())
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, StartScreen)


@run_async
async def test_every_wrong_answer_is_said_beside_it_and_the_first_gets_the_cursor(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder\n")
    app = A1xApp(roots=[tmp_path / "runs"], live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(WizardScreen(environ={}))
        await pilot.pause()
        wizard = app.screen
        assert isinstance(wizard, WizardScreen)
        fill(wizard, tmp_path)
        wizard.query_one("#path-model_dir", Input).value = str(tmp_path / "a-file")
        wizard.query_one("#chunks", Input).value = "abc"
        wizard.query_one("#clips", Input).value = "0"
        wizard.query_one("#version").focus()
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert app.screen is wizard and app.focused is wizard.query_one("#chunks", Input)
        said = {
            field: str(wizard.query_one(f"#error-{field}", Static).render())
            for field in ("chunks", "clips", "path-model_dir")
        }
        assert said["chunks"] == "✗ PAI chunk ids: abc is not a whole number"
        assert said["clips"] == "✗ clips: must be at least 1"
        assert said["path-model_dir"] == f"✗ converted model: {tmp_path / 'a-file'} is a file, not a folder"
        message = wizard.query_one("#error-chunks", Static)
        assert message.display and wizard.query_one("#form").region.contains_region(message.region)  # in view
        assert message.region.y == wizard.query_one("#chunks", Input).region.y + 1  # right under its answer

        wizard.query_one("#chunks", Input).value = "3116"
        wizard.query_one("#clips", Input).value = "16"
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert app.focused is wizard.query_one("#path-model_dir", Input)  # now the first wrong one
        assert not wizard.query_one("#error-chunks", Static).display


@run_async
async def test_choices_preflight_one_confirmation_then_the_dashboard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    launched: list[dict[str, Any]] = []
    real_run = subprocess.run

    def fake_run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if "run" not in argv:  # preflight's own probes (uv, nvcc) run for real: only the launch is faked
            return real_run(argv, **kwargs)
        launched.append({"argv": argv, "env": kwargs["env"]})
        return subprocess.CompletedProcess(argv, 0, "run ...: supervisor pid 1, detached", "")

    monkeypatch.setattr("a1x_tui.ui.feeds.supervision.subprocess.run", fake_run)
    (tmp_path / "workspace").mkdir()
    app = A1xApp(roots=[tmp_path / "workspace" / "runs"], live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(WizardScreen(environ={"PATH": "/usr/bin:/bin"}))
        await pilot.pause()
        wizard = app.screen
        assert isinstance(wizard, WizardScreen)
        fill(wizard, tmp_path)
        wizard.query_one("#wandb-key", Input).value = SECRET
        assert wizard.query_one("#wandb-key", Input).password
        await pilot.press("ctrl+n")
        await until(pilot, lambda: isinstance(app.screen, PreflightScreen) and app.screen.report is not None)
        preflight = app.screen
        assert isinstance(preflight, PreflightScreen)
        assert SECRET not in preflight.spec.model_dump_json()
        report = str(preflight.query_one("#report", Static).render())
        assert "PREFLIGHT" in report and "recipe_checkout_missing" in report
        start = preflight.query_one("#start", Button)
        assert str(start.label) == "Start anyway" and not start.disabled
        assert launched == []  # nothing starts before the one confirmation

        await pilot.click("#start")
        await until(pilot, lambda: isinstance(app.screen, DashboardScreen))
        dashboard = app.screen
        assert isinstance(dashboard, DashboardScreen) and dashboard.target.controllable

    assert len(launched) == 1
    argv, env = launched[0]["argv"], launched[0]["env"]
    run_dir = Path(argv[argv.index("--run-dir") + 1])
    assert argv[3:5] == ["run", "--run-dir"]
    assert "--detach" in argv and "--skip-preflight" in argv  # critical preflight: the user chose to start
    assert env["WANDB_API_KEY"] == SECRET
    assert run_dir.parent == tmp_path / "workspace" / "runs" and (run_dir / "run.toml").is_file()
    for file in run_dir.rglob("*"):
        if file.is_file():
            assert SECRET not in file.read_text(encoding="utf-8", errors="replace")


@run_async
async def test_the_closed_loop_choice_makes_an_alpagym_spec_and_its_preflight(tmp_path: Path) -> None:
    app = A1xApp(roots=[tmp_path / "workspace" / "runs"], live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(WizardScreen(environ={"PATH": "/nonexistent"}))
        await pilot.pause()
        wizard = app.screen
        assert isinstance(wizard, WizardScreen)
        fill(wizard, tmp_path)
        wizard.query_one("#pipeline-alpagym").value = True
        wizard.query_one("#alpagym-release_dir", Input).value = str(tmp_path / "release")
        wizard.query_one("#alpagym-overrides", Input).value = "reward=progress_safety run_root=/elsewhere"
        await pilot.press("ctrl+n")
        await pilot.pause()
        error = str(wizard.query_one("#error-alpagym-overrides", Static).render())
        assert "run_root is set by the pipeline" in error  # the spec's own one line, beside the answer
        assert not isinstance(app.screen, PreflightScreen)

        wizard.query_one("#alpagym-overrides", Input).value = "reward=progress_safety cosmos.train.max_num_steps=3"
        await pilot.press("ctrl+n")
        await until(pilot, lambda: isinstance(app.screen, PreflightScreen) and app.screen.report is not None)
        preflight = app.screen
        assert isinstance(preflight, PreflightScreen)
        spec = preflight.spec
        assert spec.pipeline == "alpagym" and spec.alpagym is not None
        assert spec.alpagym.overrides == ["reward=progress_safety", "cosmos.train.max_num_steps=3"]
        assert "closed loop with AlpaGym" in str(preflight.query_one("#summary", Static).render())
        report = str(preflight.query_one("#report", Static).render())
        assert "alpagym stages" in report and "alpagym_checkout_missing" in report


@run_async
async def test_only_the_answers_that_apply_are_asked() -> None:
    """AlpaGym's answers show for a closed-loop run only, the Slurm values for cluster compute only."""
    app = A1xApp(live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(WizardScreen(environ={}, free=lambda text: ""))
        await pilot.pause()
        wizard = app.screen
        assert isinstance(wizard, WizardScreen)

        def shown(selector: str) -> list[bool]:
            return [w.display for w in wizard.query(selector)]

        assert shown(".alpagym") and not any(shown(".alpagym")) and not any(shown("#deploy"))
        assert shown(".cluster") and not any(shown(".cluster"))
        wizard.query_one("#compute-cluster").value = True
        await pilot.pause()
        assert all(shown(".cluster")) and not any(shown(".alpagym"))
        wizard.query_one("#pipeline-alpagym").value = True
        await pilot.pause()
        assert all(shown(".alpagym")) and all(shown("#deploy")) and not any(shown(".cluster"))
        wizard.query_one("#pipeline-alpamayo").value = True
        await pilot.pause()
        assert not any(shown(".alpagym")) and all(shown(".cluster"))


@run_async
async def test_a_choice_says_it_is_picked_without_colour() -> None:
    """Selected and unselected radio buttons (and the W&B box) differ in their characters, not only in
    colour: with NO_COLOR they looked alike (tests/ui/test_snapshots.py::test_wizard_without_colour)."""
    from a1x_tui.ui.widgets.choices import Choice, Tick

    app = A1xApp(live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(WizardScreen(environ={}, free=lambda text: ""))
        await pilot.pause()
        wizard = app.screen
        version = list(wizard.query_one("#version").query(Choice))
        picked = [str(button.render()).strip() for button in version]
        assert [button.value for button in version] == [True, False]
        assert "●" in picked[0] and "●" not in picked[1], picked
        wizard.query_one("#version-1").value = True
        await pilot.pause()
        picked = [str(button.render()).strip() for button in version]
        assert "●" not in picked[0] and "●" in picked[1], picked
        box = wizard.query_one("#wandb", Tick)
        assert ("X" in str(box.render())) is box.value
        box.value = not box.value
        await pilot.pause()
        assert ("X" in str(box.render())) is box.value
