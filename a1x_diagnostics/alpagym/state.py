"""``ClosedLoopState``: the bounded memory of a closed-loop run, and its metrics per step.

Fed with ``ClosedLoop`` events (any order across files, each file in order) and episode artifacts;
episodes are joined by session UUID across the rollout worker's lines (started / closed / retried /
dropped), AlpaSim's (simulated, failed, its wall time), the policy's packer (which step trained on
it, its reward) and the artifact (its scores and reward terms). ``publish(metrics)`` writes the
closed-loop series into the run's ``a1x_diagnostics.metrics.Metrics`` (``cl_*``, docs/parsing.md
"Closed-loop runs"), where the dashboard's plots and the detectors read them. Pure: no I/O.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from a1x_diagnostics.alpagym.config import ResolvedConfig
from a1x_diagnostics.closed_loop_events import CL, PROGRESS_MARKS, ClosedLoop, EpisodeArtifact
from a1x_diagnostics.detectors import FileFacts, Retained
from a1x_diagnostics.metrics import Metrics, epoch, finite

MAX_EPISODES = 20000  # the newest kept; counts cover them all
_MARKED = frozenset(m[3:] for m in PROGRESS_MARKS)
SCORES = ("collision_any", "offroad", "progress")  # AlpaSim's aggregated metrics plotted per step


@dataclass(slots=True)
class Episode:
    uuid: str
    scene: str | None = None
    started: float | None = None  # log clock of 'Started AlpaGym driver session'
    closed: float | None = None
    sim_wall_s: float | None = None  # AlpaSim's 'Session COMPLETED ... in X wall clock seconds'
    completed: bool = False  # simulated to the end (AlpaSim), packed or scored in an artifact
    failed: bool = False  # retried with a new session, or dropped
    packed_step: int | None = None  # the trainer step that trained on it
    reward: float | None = None
    terms: dict[str, float] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    artifact: str | None = None


@dataclass(slots=True)
class StepBin:
    """The episodes of one training step: what a per-step point of the closed-loop plots averages."""

    episodes: int = 0
    reward_sum: float = 0.0
    rewards: int = 0
    scores: dict[str, list[float]] = field(default_factory=dict)
    terms: dict[str, list[float]] = field(default_factory=dict)


class ClosedLoopState:
    def __init__(self, config: ResolvedConfig | None = None, k: int = 16) -> None:
        self.config = config
        self.k = k
        self.kinds: dict[CL, Retained[ClosedLoop]] = {}
        self.episodes: OrderedDict[str, Episode] = OrderedDict()
        self.counts: dict[str, int] = {}
        self.artifacts: list[EpisodeArtifact] = []  # kept for evidence: the newest MAX_EPISODES
        self.artifact_problems: list[str] = []
        self.trainer_step: dict[str, int] = {}  # policy file -> the step its trainer is in
        self.stale_by_step: dict[int, int] = {}
        self.last_trainer_total: int | None = None
        self.layout_notes: list[str] = []  # facts of the folder (no runtime published...), from the reader

    # --- intake ---------------------------------------------------------------------------------
    def kind(self, kind: CL) -> Retained[ClosedLoop]:
        return self.kinds.get(kind) or Retained(1)

    def count(self, name: str) -> int:
        return self.counts.get(name, 0)

    def _bump(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def _episode(self, uuid: str) -> Episode:
        ep = self.episodes.get(uuid)
        if ep is None:
            ep = self.episodes[uuid] = Episode(uuid)
            if len(self.episodes) > MAX_EPISODES:
                self.episodes.popitem(last=False)
        return ep

    def add(self, event: ClosedLoop, facts: FileFacts | None = None) -> None:
        kind = event.kind
        bucket = self.kinds.get(kind)
        if bucket is None:
            bucket = self.kinds[kind] = Retained(self.k)
        bucket.add(event)
        ts = epoch(event.ts)
        if facts is not None and kind.value in _MARKED:
            facts.mark(f"cl:{kind.value}", event.line, ts)
        f = event.fields
        uuid = f.get("uuid")
        if kind is CL.SESSION_STARTED and uuid:
            ep = self._episode(uuid)
            ep.started = ts
            self._bump("sessions")
        elif kind is CL.SESSION_CLOSED and uuid:
            self._episode(uuid).closed = ts
        elif kind is CL.EPISODE_RETRY and uuid:
            ep = self._episode(uuid)
            ep.failed, ep.scene = True, f.get("scene") or ep.scene
            self._bump("retried")
        elif kind is CL.EPISODE_DROPPED and uuid:
            ep = self._episode(uuid)
            ep.failed, ep.scene = True, f.get("scene") or ep.scene
            self._bump("dropped")
        elif kind is CL.SIM_COMPLETED and uuid:
            ep = self._episode(uuid)
            ep.completed, ep.scene, ep.sim_wall_s = True, f.get("scene") or ep.scene, f.get("wall_s")
            self._bump("sim_completed")
        elif kind is CL.SIM_FAILED:
            self._bump("sim_failed")
        elif kind is CL.SIM_METRICS and uuid:
            self._episode(uuid).scores.update(f.get("metrics") or {})
        elif kind is CL.TRAINER_STEP_START:
            step = f.get("step")
            if isinstance(step, int):
                self.trainer_step[event.source.path] = step
            if isinstance(f.get("total"), int):
                self.last_trainer_total = f["total"]
        elif kind is CL.PACKED and uuid:
            ep = self._episode(uuid)
            ep.completed = True
            ep.packed_step = self.trainer_step.get(event.source.path)
            if finite(f.get("reward")):
                ep.reward = f["reward"]
            self._bump("packed")
        elif kind is CL.STALE_USED:
            step = self.trainer_step.get(event.source.path)
            stale = f.get("stale")
            if step is not None and isinstance(stale, int):
                self.stale_by_step[step] = self.stale_by_step.get(step, 0) + stale
            self._bump("stale_used", stale if isinstance(stale, int) else 0)
        elif kind is CL.NONFINITE:
            self._bump(f"nonfinite:{f.get('what')}")

    def add_artifact(self, art: EpisodeArtifact) -> None:
        if not art.uuid:
            return
        ep = self._episode(art.uuid)
        ep.completed = True
        ep.artifact = art.path
        ep.scene = art.scene or ep.scene
        if art.reward is not None and finite(art.reward):
            ep.reward = art.reward
        ep.terms.update(art.terms)
        ep.scores.update(art.metrics)
        self.artifacts.append(art)
        if len(self.artifacts) > MAX_EPISODES:
            del self.artifacts[: len(self.artifacts) - MAX_EPISODES]
        self._bump("artifacts")

    # --- facts ----------------------------------------------------------------------------------
    @property
    def completed(self) -> int:
        return sum(1 for e in self.episodes.values() if e.completed)

    @property
    def scored(self) -> list[Episode]:
        return [e for e in self.episodes.values() if e.scores or e.terms]

    def step_of(self, ep: Episode, metrics: Metrics) -> int | None:
        """The training step an episode belongs to: the step that trained on it (the packer), else the
        step after the controller's at its end (it was generated for the next one)."""
        if ep.packed_step is not None:
            return ep.packed_step
        when = ep.closed if ep.closed is not None else ep.started
        if when is None:
            return None
        done = metrics.step_at(when)
        return (done or 0) + 1

    def bins(self, metrics: Metrics) -> dict[int, StepBin]:
        out: dict[int, StepBin] = {}
        for ep in self.episodes.values():
            if not ep.completed:
                continue
            step = self.step_of(ep, metrics)
            if step is None:
                continue
            b = out.get(step)
            if b is None:
                b = out[step] = StepBin()
            b.episodes += 1
            if ep.reward is not None:
                b.reward_sum += ep.reward
                b.rewards += 1
            for name, value in ep.scores.items():
                if name in SCORES and finite(value):
                    b.scores.setdefault(name, []).append(value)
            for name, value in ep.terms.items():
                if finite(value):
                    b.terms.setdefault(name, []).append(value)
        return dict(sorted(out.items()))

    def expected_total(self) -> int | None:
        """The run's total steps when the controller's Step lines do not say: the trainer's, else the config's."""
        if self.last_trainer_total:
            return self.last_trainer_total
        return self.config.total_steps if self.config is not None else None

    # --- the series -----------------------------------------------------------------------------
    def publish(self, metrics: Metrics) -> None:
        """The closed-loop series, rebuilt from the episodes (one point per training step; the episode
        counters one point per event): ``cl_reward``, ``cl_collision_rate``, ``cl_offroad_rate``,
        ``cl_progress``, ``cl_term:<name>``, ``cl_sim_episode_s``, ``cl_episodes_completed`` /
        ``_retried`` / ``_dropped``, ``cl_stale_used``."""
        for name in [n for n in metrics.series if n.startswith("cl_")]:
            del metrics.series[name]
        bins = self.bins(metrics)
        times = _step_times(metrics)
        for step, b in bins.items():
            ts = times.get(step)
            s = float(step)
            if b.rewards:
                metrics.put("cl_reward", b.reward_sum / b.rewards, ts, s)
            for name, series in (("collision_any", "cl_collision_rate"), ("offroad", "cl_offroad_rate"),
                                 ("progress", "cl_progress")):
                values = b.scores.get(name)
                if values:
                    metrics.put(series, sum(values) / len(values), ts, s)
            for name, values in b.terms.items():
                metrics.put(f"cl_term:{name}", sum(values) / len(values), ts, s)
            metrics.put("cl_episodes_completed", float(b.episodes), ts, s)
        for step, stale in sorted(self.stale_by_step.items()):
            metrics.put("cl_stale_used", float(stale), times.get(step), float(step))
        wall = [e.sim_wall_s for e in self.episodes.values() if e.sim_wall_s is not None]
        for value in wall[-2048:]:
            metrics.put("cl_sim_episode_s", value, None, None)
        for kind, name in ((CL.EPISODE_RETRY, "cl_episodes_retried"), (CL.EPISODE_DROPPED, "cl_episodes_dropped")):
            n = self.counts.get("retried" if kind is CL.EPISODE_RETRY else "dropped", 0)
            if n:
                metrics.put(name, float(n), None, metrics.step)

    def summary(self) -> dict[str, float | int | str | None]:
        """Last values for the report's metrics (``closed_loop_*``)."""
        out: dict[str, float | int | str | None] = {
            "episodes_completed": self.completed,
            "episodes_retried": self.count("retried"),
            "episodes_dropped": self.count("dropped"),
        }
        if self.count("stale_used"):
            out["stale_rollouts_used"] = self.count("stale_used")
        wall = [e.sim_wall_s for e in self.episodes.values() if e.sim_wall_s is not None]
        if wall:
            ordered = sorted(wall)
            out["sim_episode_s"] = round(ordered[len(ordered) // 2], 2)
        scored = [e for e in self.episodes.values() if e.scores]
        for name, key in (("collision_any", "collision_rate"), ("offroad", "offroad_rate"), ("progress", "progress")):
            values = [e.scores[name] for e in scored if name in e.scores and finite(e.scores[name])]
            if values:
                out[key] = round(sum(values) / len(values), 4)
        return out


def _step_times(metrics: Metrics) -> dict[int, float]:
    """Step -> when the controller logged it (the plots' time axis)."""
    series = metrics.get("step")
    if series is None:
        return {}
    return {int(v): t for t, _, v in series.points() if finite(t)}


def uuids(events: Iterable[Any]) -> list[str]:
    return [e.fields["uuid"] for e in events if isinstance(e, ClosedLoop) and e.fields.get("uuid")]


__all__ = ["MAX_EPISODES", "SCORES", "ClosedLoopState", "Episode", "StepBin"]
