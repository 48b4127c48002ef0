"""The plotted series of a followed run: which metrics, how many points, and the diagnosis wrapper that
copies their tails at each evaluation. No Textual: the dashboard's follow worker and the far side of
``attach HOST:PATH`` (``watch --dashboard``) use it alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from a1x_diagnostics.events import Source

POINTS = 240  # values kept per plotted series
PLOTTED = (
    "reward_mean",
    "reward_std",
    "traj_l2",
    "pending_rollouts",
    "weight_staleness_max",
    "prompt_version_gap",
    "step_time_s",
    # closed-loop (AlpaGym) runs: a1x_diagnostics.alpagym.state.ClosedLoopState.publish
    "cl_collision_rate",
    "cl_offroad_rate",
    "cl_progress",
    "cl_episodes_completed",
)


class SeriesDiagnosis:
    """A ``Diagnosis`` that also copies the plotted series' tails at each evaluation (on the follower's
    thread, where the series are written; the worker reads the copy)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.snapshot: dict[str, list[float]] = {}

    def feed(self, source: Source, first_lineno: int, lines: Sequence[str]) -> None:
        self.inner.feed(source, first_lineno, lines)

    def end_file(self, source: Source) -> None:
        self.inner.end_file(source)

    def file_stat(self, source: Source, size: int, mtime: float) -> None:
        self.inner.file_stat(source, size, mtime)

    def evaluate(self, now: float) -> Any:
        evaluation = self.inner.evaluate(now)
        metrics = getattr(getattr(self.inner, "collector", None), "metrics", None)
        if metrics is not None:
            snapshot = {}
            for name in PLOTTED:
                series = metrics.get(name)
                if series is not None and series.seen:
                    snapshot[name] = [float(v) for v in series.tail(POINTS)]
            self.snapshot = snapshot
        return evaluation
