"""The plots tab: reward mean with its std, trajectory L2, pending rollouts, weight-version gap, step time.

Series come from the diagnostics' metrics (``a1x_diagnostics.metrics``: one value per step for the
Step-line metrics, one per ``Stat:`` line for pending rollouts), cut to the last few hundred values.
A closed-loop (AlpaGym) run has no trajectory L2 and no pending-rollout counts worth plotting: those
two places show its collision rate (offroad in the caption) and progress per step, and the episodes
completed per step (``a1x_diagnostics.alpagym.state``: the ``cl_*`` series), beside the same reward plot.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Grid
from textual.widgets import Static

from a1x_tui.ui.widgets.chart import Chart


def _last(values: list[float], digits: int = 3) -> str:
    return f"last {values[-1]:.{digits}f}" if values else ""


STEP_MEDIAN_OF = 10  # the summary's step time is the median of this many last steps (a1x_diagnostics.metrics)


def step_caption(steps: list[float]) -> str:
    """``last 0.62, median 0.756``: the last step, and the median that "last values" shows as the step time
    (one number alone disagreed with the other)."""
    if not steps:
        return ""
    median = round(statistics.median(steps[-STEP_MEDIAN_OF:]), 3)  # rounded and shown as "last values" shows it
    return f"last {steps[-1]:.2f}, median {median:.4g}"


def gap_series(series: Mapping[str, list[float]]) -> tuple[list[float], str]:
    """The weight-version gap: staleness lines (0.4.4+), else prompt rejections, else the P2R step gap."""
    for name, what in (
        ("weight_staleness_max", "staleness"),
        ("prompt_version_gap", "rejected prompts"),
        ("weight_version_gap", "step − last sync"),
    ):
        if series.get(name):
            return list(series[name]), what
    return [], ""


def metrics_text(metrics: Mapping[str, Any]) -> Text:
    names = (
        ("step", "step"),
        ("reward_mean", "reward mean"),
        ("reward_std", "reward std"),
        ("traj_l2", "traj L2"),
        ("loss_avg", "loss"),
        ("grad_norm", "grad norm"),
        ("pending_rollouts", "pending"),
        ("samples_per_s", "samples/s"),
        ("tokens_per_s", "tokens/s"),
        ("step_time_s", "step s (med)"),  # the median of the last 10 steps (a1x_diagnostics.metrics)
        ("weight_version_gap", "weight gap"),
        ("episodes_completed", "episodes"),
        ("episodes_retried", "retried"),
        ("episodes_dropped", "dropped"),
        ("collision_rate", "collisions"),
        ("offroad_rate", "offroad"),
        ("progress", "progress"),
        ("sim_episode_s", "sim ep. s"),
        ("stale_rollouts_used", "stale used"),
    )
    text = Text("last values\n", style="bold")
    for key, label in names:
        value = metrics.get(key)
        if value is None:
            continue
        if key == "step" and metrics.get("total_steps"):
            shown = f"{value}/{metrics['total_steps']}"
        elif isinstance(value, float):
            shown = f"{value:.4g}"
        else:
            shown = str(value)
        text.append(f"{label:<13}", style="dim")
        text.append(f"{shown}\n")
    return text


class PlotsPanel(Grid):
    DEFAULT_CSS = """
    PlotsPanel { grid-size: 2 3; grid-gutter: 0 1; height: 1fr; }
    PlotsPanel #metrics-now { padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Chart("reward mean ± std", style="green", id="plot-reward")
        yield Chart("trajectory L2", style="cyan", id="plot-traj")
        yield Chart("pending rollouts", style="yellow", id="plot-pending")
        yield Chart("weight-version gap", style="magenta", id="plot-gap")
        yield Chart("step time (s)", style="blue", id="plot-step")
        yield Static(Text("last values: none yet", style="dim"), id="metrics-now")

    def show(self, series: Mapping[str, list[float]], metrics: Mapping[str, Any]) -> None:
        reward = list(series.get("reward_mean", []))
        std = list(series.get("reward_std", []))
        band = std if len(std) == len(reward) else None
        caption = _last(reward, 4) + (f" ± {std[-1]:.4f}" if std else "")
        self.query_one("#plot-reward", Chart).set_data(reward, band=band, caption=caption)
        if series.get("cl_collision_rate") or series.get("cl_progress"):
            self._closed_loop(series)
        else:
            traj = list(series.get("traj_l2", []))
            self.query_one("#plot-traj", Chart).set_data(traj, caption=_last(traj))
            pending = list(series.get("pending_rollouts", []))
            self.query_one("#plot-pending", Chart).set_data(pending, caption=_last(pending, 0))
        gap, what = gap_series(series)
        self.query_one("#plot-gap", Chart).set_data(gap, caption=f"{_last(gap, 0)} ({what})" if gap else "")
        steps = list(series.get("step_time_s", []))
        self.query_one("#plot-step", Chart).set_data(steps, caption=step_caption(steps))
        if metrics:
            self.query_one("#metrics-now", Static).update(metrics_text(metrics))

    def _closed_loop(self, series: Mapping[str, list[float]]) -> None:
        """A closed-loop run: collision rate (offroad in the caption), and progress with the episodes per step."""
        collision = list(series.get("cl_collision_rate", []))
        offroad = list(series.get("cl_offroad_rate", []))
        chart = self.query_one("#plot-traj", Chart)
        chart.chart_title = "collision rate per step"
        chart.set_data(collision, caption=_last(collision, 2) + (f", offroad {offroad[-1]:.2f}" if offroad else ""))
        progress = list(series.get("cl_progress", []))
        episodes = list(series.get("cl_episodes_completed", []))
        chart = self.query_one("#plot-pending", Chart)
        chart.chart_title = "progress per step"
        chart.set_data(progress, caption=_last(progress, 2) + (f", {int(episodes[-1])} episodes" if episodes else ""))
