"""SVG snapshots of every screen and dialog (pytest-textual-snapshot), from fixed data and a fixed clock,
at 80×24 (an SSH session in tmux: everything needed must be in view) and 120×40.

Update after an intended change of the layout: ``python -m pytest tests/ui/test_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ui_helpers import COLLAPSE_RUN, FIXED_NOW, OOM_RUN, dashboard_messages, fixture_messages, iso, sample_state

from a1x_tui.ui import A1xApp
from a1x_tui.ui.messages import FindingsChanged, FixPlanned, RunStateChanged, RunSummary
from a1x_tui.ui.screens.start import StartScreen
from a1x_tui.ui.screens.wizard import WizardScreen
from a1x_tui.ui.target import RunTarget
from a1x_tui.ui.widgets.findings import FindingsPanel

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]
RUN = Path("/runs/20261129-150000-motion")


@pytest.fixture
def fixed_copy() -> Iterator[Any]:
    """``fixed_copy(run)``: the run copied to the same absolute path in every checkout (the screen names the
    folder); a lock keeps two test sessions of one machine from replacing it under each other."""
    root = Path("/tmp/a1x-tui-snapshots")
    root.mkdir(exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)

        def copy(run: Path) -> Path:
            fixed = root / run.name
            shutil.rmtree(fixed, ignore_errors=True)
            shutil.copytree(run, fixed, symlinks=True)
            return fixed

        yield copy


def dashboard_app() -> A1xApp:
    target = RunTarget(follow=RUN, run_dir=RUN, config=RUN / "config" / "train.toml")
    return A1xApp(target=target, live=False, clock=lambda: FIXED_NOW)


async def feed(pilot: Any) -> None:
    for message in dashboard_messages(RUN):
        pilot.app.screen.post_message(message)
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("keys", [[], ["2", "home"], ["3"], ["4"]], ids=["overview", "logs", "plots", "findings"])
def test_dashboard(snap_compare: Any, size: tuple[int, int], keys: list[str]) -> None:
    assert snap_compare(dashboard_app(), terminal_size=size, run_before=feed, press=keys)


@pytest.mark.parametrize("size", SIZES)
def test_dashboard_with_a_failed_stage(snap_compare: Any, size: tuple[int, int]) -> None:
    async def failed(pilot: Any) -> None:
        await feed(pilot)
        state = sample_state(RUN, status="failed")
        train = next(st for st in state["stages"] if st["name"] == "train")
        train.update(status="failed", ended_at=iso(60), progress=None, process=None, reason=(
            "a replica died while the launcher kept running: replica_died: rollout_0 — rollout_0.log:212: "
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.38 GiB"
        ))
        pilot.app.screen.post_message(RunStateChanged(state, False))
        await pilot.pause()

    assert snap_compare(dashboard_app(), terminal_size=size, run_before=failed)


def test_dashboard_read_only_at_80x24(snap_compare: Any, fixed_copy: Any) -> None:
    fixed = fixed_copy(COLLAPSE_RUN)
    app = A1xApp(target=RunTarget(follow=fixed, run_dir=None, config=None), live=False)
    assert snap_compare(app, terminal_size=(80, 24), run_before=feed)


def _vllm_oom_diff(tmp: Path) -> str:
    """The real diff of the vllm_oom fix on the recipe's rendered TOML (fixed paths: a fixed picture)."""
    from a1x_configs.render import TemplateChoices, render_toml
    from a1x_diagnostics.config import load_config, plan_fix

    toml = tmp / "train.toml"
    choices = TemplateChoices(
        alpamayo_version="1.5", reward_mode="motion", wandb=False, compute="local",
        output_dir="/runs/20261129-150000-motion/outputs", model_dir="/home/me/alpamayo_model_converted_from_hf",
    )
    toml.write_text(render_toml(choices), encoding="utf-8")
    # the TOML given names the engine (the recipe's vLLM backend): the run alone (example_hf) has no vLLM key
    (found,) = [m for m in fixture_messages(OOM_RUN, config=toml) if isinstance(m, FindingsChanged)]
    finding = next(f for f in found.open.values() if f.id == "vllm_oom")
    return plan_fix(load_config(toml), "vllm_oom", finding=finding).diff


@pytest.mark.parametrize("size", SIZES)
def test_apply_fix_dialog(snap_compare: Any, size: tuple[int, int], tmp_path: Path) -> None:
    diff = _vllm_oom_diff(tmp_path)

    async def planned(pilot: Any) -> None:
        await feed(pilot)
        await pilot.press("4")
        await pilot.app.workers.wait_for_complete()
        panel = pilot.app.screen.query_one(FindingsPanel)
        oom = next(i for i, s in enumerate(panel.shown) if s.finding.id == "vllm_oom")
        panel.query_one("#finding-list").highlighted = oom
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        pilot.app.screen.post_message(FixPlanned(panel.shown[oom].key, RUN / "config" / "train.toml", diff, None, "0"))
        await pilot.pause()

    assert snap_compare(dashboard_app(), terminal_size=size, run_before=planned, press=["a"])


@pytest.mark.parametrize("size", SIZES)
def test_stop_dialog(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(dashboard_app(), terminal_size=size, run_before=feed, press=["s"])


@pytest.mark.parametrize("size", SIZES)
def test_help(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(dashboard_app(), terminal_size=size, run_before=feed, press=["question_mark"])


@pytest.mark.parametrize("size", SIZES)
def test_runs(snap_compare: Any, size: tuple[int, int]) -> None:
    runs = [
        RunSummary(RUN, "running", "stages: download, ..., verify", "train", iso(5), live=True),
        RunSummary(
            Path("/runs/20261128-090000-joint"), "failed",
            "train failed: a replica died while the launcher kept running: replica_died: rollout_0", None, iso(86400),
        ),
    ]

    async def show(pilot: Any) -> None:
        screen = pilot.app.screen
        assert isinstance(screen, StartScreen)
        screen.show_runs(runs)
        await pilot.pause()

    app = A1xApp(roots=[Path("/runs")], live=False)
    assert snap_compare(app, terminal_size=size, run_before=show)


@pytest.mark.parametrize("size", SIZES)
def test_wizard_with_an_error(snap_compare: Any, size: tuple[int, int]) -> None:
    from textual.widgets import Input

    from a1x_tui.ui.answers import default_answers

    answers = default_answers("/home/me")

    async def open_wizard(pilot: Any) -> None:
        # free disk depends on the machine: fixed for the picture
        await pilot.app.push_screen(WizardScreen(answers, environ={}, free=lambda text: "1,234 GB free"))
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        pilot.app.screen.query_one("#clips", Input).value = "0"
        pilot.app.screen.query_one("#policy", Input).value = ""

    app = A1xApp(roots=[Path("/runs")], live=False)
    assert snap_compare(app, terminal_size=size, run_before=open_wizard, press=["ctrl+n"])



def test_wizard_without_colour(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """NO_COLOR at 80×24: the picked choice of each question shows its ●, the others none (their colours,
    grey 250 and 232, were all that told them apart); AlpaGym's and Slurm's answers are not asked for an
    open-loop run on one node."""
    from a1x_tui.ui.answers import default_answers

    monkeypatch.setenv("NO_COLOR", "1")
    answers = default_answers("/home/me")

    async def open_wizard(pilot: Any) -> None:
        await pilot.app.push_screen(WizardScreen(answers, environ={}, free=lambda text: "1,234 GB free"))
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    app = A1xApp(roots=[Path("/runs")], live=False)
    assert app.no_color
    assert snap_compare(app, terminal_size=(80, 24), run_before=open_wizard)


def test_dashboard_after_a_restart_at_80x24(snap_compare: Any) -> None:
    """The train stage's attempt number beside "succeeded" (it was cut to "succeeded #"), no stray ▌ of a
    scrollbar under the stages, and the banner says all it says about the run in 80 columns."""

    async def restarted(pilot: Any) -> None:
        await feed(pilot)
        state = sample_state(RUN)
        train = next(st for st in state["stages"] if st["name"] == "train")
        train.update(status="succeeded", attempts=2, ended_at=iso(20), progress=None, reason="step 30/30")
        export = next(st for st in state["stages"] if st["name"] == "export")
        export.update(status="running", started_at=iso(20), reason="")
        state["current_stage"] = "export"
        pilot.app.screen.post_message(RunStateChanged(state, True))
        await pilot.pause()

    assert snap_compare(dashboard_app(), terminal_size=(80, 24), run_before=restarted)


def test_new_findings_toast_at_80x24(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Findings raised by one evaluation: one toast, in the right two fifths of an 80-column screen."""
    from a1x_tui.ui.screens import dashboard

    monkeypatch.setattr(dashboard, "FINDING_TOAST_S", 600.0)  # the picture, not how long the toast stays

    async def raised(pilot: Any) -> None:
        messages = dashboard_messages(RUN)
        found = next(m for m in messages if isinstance(m, FindingsChanged))
        for message in messages:
            if message is found:
                pilot.app.screen.post_message(FindingsChanged({}, {}, first=True))  # the run's past
                await pilot.pause()
                message = FindingsChanged(found.open, found.resolved)  # a later evaluation's
            pilot.app.screen.post_message(message)
        await pilot.pause()

    assert snap_compare(dashboard_app(), terminal_size=(80, 24), run_before=raised)


@pytest.mark.parametrize("size", SIZES)
def test_logs_at_the_end_of_a_run(snap_compare: Any, size: tuple[int, int]) -> None:
    """The message on every row: cosmos prefixes folded to time and level, line number and replica kept."""
    assert snap_compare(dashboard_app(), terminal_size=size, run_before=feed, press=["2"])


def test_read_only_attach_while_the_history_is_read_then_on_its_verdict(
    snap_compare: Any, monkeypatch: pytest.MonkeyPatch, fixed_copy: Any
) -> None:
    from a1x_diagnostics.engine import check
    from a1x_diagnostics.live import finding_key
    from a1x_tui.ui.messages import HistoryProgress, VerdictRead
    from a1x_tui.ui.screens.dashboard import DashboardScreen

    monkeypatch.setattr(DashboardScreen, "start_feeds", lambda self: None)  # the messages come from here
    monkeypatch.setattr(DashboardScreen, "_start_following", lambda self: None)
    fixed = fixed_copy(OOM_RUN)
    report = check(fixed, now=FIXED_NOW)

    async def reading(pilot: Any) -> None:
        pilot.app.screen.post_message(HistoryProgress(42, 193, 2**30))
        await pilot.pause()

    async def verdict(pilot: Any) -> None:
        await reading(pilot)
        pilot.app.screen.post_message(VerdictRead(report, {finding_key(f): f for f in report.findings}))
        await pilot.pause()

    def app() -> A1xApp:
        return A1xApp(target=RunTarget(follow=fixed, run_dir=None, config=None), clock=lambda: FIXED_NOW)

    assert snap_compare(app(), terminal_size=(80, 24), run_before=reading)
    assert snap_compare(app(), terminal_size=(80, 24), run_before=verdict)
