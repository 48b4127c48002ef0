"""Whose GPUs the panel shows: the run's samples, else this machine's only where they can be the run's.

The demo uses no GPU of this machine (its simulated ones appear when training starts, with no agent
reporting this machine beside them); a recorded run attached read-only is not running here, so this
machine's GPUs (or their absence) are not its; a run attached while its logs say it runs may be here.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ui_helpers import COLLAPSE_RUN, run_async

from a1x_diagnostics.findings import Outcome, RunOutcome
from a1x_tui.ui import A1xApp
from a1x_tui.ui.feeds.gpus import GpuFeed
from a1x_tui.ui.messages import GpusSampled, MetricsChanged
from a1x_tui.ui.screens.dashboard import DashboardScreen
from a1x_tui.ui.target import RunTarget, resolve_target
from a1x_tui.ui.widgets.gpus import GpuPanel


def test_a_demo_run_shows_only_its_simulated_gpus_and_its_train_stage_runs_no_agent(tmp_path: Path) -> None:
    from a1x_supervisor.pipeline import build_stages
    from a1x_supervisor.rundir import RunDir
    from a1x_supervisor.spec import load_spec
    from a1x_tui.demo.pipeline import register
    from a1x_tui.demo.setup import DemoOptions, prepare_demo_run

    register()
    for closed_loop in (False, True):
        run_dir = prepare_demo_run(DemoOptions(root=tmp_path / f"demo-{closed_loop}", closed_loop=closed_loop))
        target = resolve_target(run_dir)
        assert target.controllable and target.gpu_source == "files"
        assert target.gpu_note and "no GPU of this machine is used" in target.gpu_note
        layout = RunDir(run_dir)
        train = next(s for s in build_stages(load_spec(layout.spec_path), layout, {}) if s.name == "train")
        assert train.kind == "train" and train.gpu_agent is False  # no "vm: no GPU readings" beside them


def test_a_local_run_of_ours_and_a_log_folder_default_to_this_machine(run_dir: Path) -> None:
    assert resolve_target(run_dir).gpu_source == "local"
    assert resolve_target(COLLAPSE_RUN).gpu_source == "if-running"


def _feed_once(local_gpus: Any) -> list[GpusSampled]:
    posted: list[GpusSampled] = []
    stop = threading.Event()

    def post(message: Any) -> None:
        posted.append(message)
        stop.set()

    feed = GpuFeed(None, post, lambda: None, local_gpus=local_gpus, interval=0.01)

    def no_sampler() -> Any:
        raise AssertionError("this machine's GPUs were sampled")

    feed._local_sampler = no_sampler  # type: ignore[method-assign]
    feed.run(stop)
    return posted


def test_the_feed_says_why_instead_of_sampling_this_machine() -> None:
    (message,) = _feed_once(lambda: "the demo's simulated GPUs appear when its train stage starts")
    assert message.hosts == [] and message.note == "the demo's simulated GPUs appear when its train stage starts"


@run_async
async def test_a_recorded_run_attached_read_only_shows_no_gpus_of_this_machine() -> None:
    app = A1xApp(target=RunTarget(follow=COLLAPSE_RUN, run_dir=None, config=None), live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        assert "shown if the logs say the run is running here" in (screen._local_gpus() or "")
        ended = RunOutcome(state=Outcome.COMPLETED, summary="training completed (step 8/8)")
        screen.post_message(MetricsChanged({}, ended))
        await pilot.pause()
        why = screen._local_gpus()
        assert why is not None and "ended (completed)" in why
        screen.post_message(GpusSampled([], note=why))
        await pilot.pause()
        shown = str(screen.query_one(GpuPanel).render())
        assert "not shown" in shown and "NVML" not in shown
        screen.post_message(MetricsChanged({}, RunOutcome(state=Outcome.RUNNING, summary="step 3 of 8")))
        await pilot.pause()
        assert screen._local_gpus() is None  # a run the logs say is running may be on this machine
