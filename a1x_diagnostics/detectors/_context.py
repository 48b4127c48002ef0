"""What a detector may look at: the run's retained events, its metrics, its config and the time facts
(the newest log stamp; ``now`` only for runs still being written)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from a1x_diagnostics.detectors._config import RunConfig
from a1x_diagnostics.detectors._errors import stopped_from_outside
from a1x_diagnostics.detectors._probes import Hit
from a1x_diagnostics.detectors._store import EventStore, FileFacts
from a1x_diagnostics.events import Event, Role, Signal, SignalKind
from a1x_diagnostics.metrics import Metrics

LIVE_WINDOW_S = 900.0  # a run whose newest write is this recent is being written
CURRENT_WINDOW_S = 6 * 3600.0  # silence since the newest write this recent still counts towards a stall
CLOCK_AHEAD_S = 300.0  # log stamps this far ahead of ``now`` are clock drift; further ahead, another time zone


@dataclass(frozen=True, slots=True)
class DetectorContext:
    """Everything a detector may look at.

    Time: the logs' own stamps order and measure everything after the fact, so a copied run (``cp -r``,
    ``scp``, ``git clone``) is judged as the original. The wall clock enters only through ``now``, given
    by a caller that follows a run being written (``watch``, the dashboard, the supervisor) or that
    checks one (``--check``): then the time since the newest write counts as silence. That time is
    ``now - activity`` when the follower saw the writes itself, else ``now`` against the newest log
    stamp (read on this machine's clock). File mtimes are never a time of the run.
    """

    store: EventStore
    metrics: Metrics
    config: RunConfig
    now: float | None = None  # seconds since the epoch, for runs still being written; None = post-mortem
    activity: float | None = None  # wall-clock time of the newest write a live follower observed
    # A closed-loop AlpaGym run: its ``a1x_diagnostics.alpagym.state.ClosedLoopState`` (None for every other run).
    closed_loop: Any = None

    # --- time facts --------------------------------------------------------------------------------
    @property
    def newest_ts(self) -> float | None:
        """The newest timestamp on any line of any file (log clock)."""
        return self.store.newest_ts

    @property
    def write_age(self) -> float | None:
        """Seconds from the run's newest write to ``now``; None after the fact, or when the stamps are
        from the future (written in another time zone: then the logs alone judge)."""
        if self.now is None:
            return None
        if self.activity is not None:
            return max(0.0, self.now - self.activity)
        newest = self.newest_ts
        if newest is None:
            return None
        age = self.now - newest
        return None if age < -CLOCK_AHEAD_S else max(0.0, age)

    @property
    def live(self) -> bool:
        """The run is being written: its newest write is within ``LIVE_WINDOW_S`` of ``now``."""
        age = self.write_age
        return age is not None and age <= LIVE_WINDOW_S

    @property
    def current(self) -> bool:
        """The silence since the newest write is part of the run (within ``CURRENT_WINDOW_S`` of ``now``)."""
        age = self.write_age
        return age is not None and age <= CURRENT_WINDOW_S

    @property
    def ended(self) -> Event | None:
        """A line saying the whole job has ended: the launcher's or controller's end, or a replica's
        torchrun agent stopped from outside (SIGTERM/SIGINT: Ctrl-C, scancel, a supervisor)."""
        for kind in (SignalKind.TERMINATED_ALL, SignalKind.ALL_REPLICAS_FINISHED, SignalKind.PROCESS_EXITED_EARLY,
                     SignalKind.JOB_CANCELLED, SignalKind.DEATH_SIGNAL):
            sig = self.store.signal(kind).last
            if sig is not None:
                return sig
        for facts in self.store.files_of(Role.POLICY, Role.ROLLOUT, Role.REFERENCE):
            if facts.last_traceback is not None and stopped_from_outside(facts.last_traceback):
                return facts.last_traceback
        return None

    @property
    def silence(self) -> float:
        """Seconds since the newest write when that counts as part of the run (``current``, the job
        not ended); else 0."""
        if not self.current or self.ended is not None:
            return 0.0
        return self.write_age or 0.0

    def elapsed_since(self, ts: float | None) -> float | None:
        """Seconds from ``ts`` (log clock) to the present: up to the newest log line, plus the silence
        since the newest write (wall clock), so the two clocks never mix."""
        if ts is None or self.newest_ts is None:
            return None
        return max(0.0, self.newest_ts - ts) + self.silence

    # --- run facts ---------------------------------------------------------------------------------
    @property
    def finished_training(self) -> bool:
        """The last step equals the total, or a policy said training is complete, or the run ended before its
        total the way 0.4.7 ends one normally: the application asked for the stop, or the data ran out
        (docs/reference/cosmos-rl.md §16.2, "Ways a run ends normally")."""
        m = self.metrics
        if m.step is not None and m.total_steps is not None and m.step >= m.total_steps > 0:
            return True
        return bool(self.store.signal(SignalKind.TRAINING_COMPLETE)) or self.normal_early_end is not None

    @property
    def normal_early_end(self) -> Signal | None:
        """0.4.7's line for a run that ends before total_steps on purpose: 'Application requested successful stop'
        or 'Rank-affine dataset exhausted'."""
        for kind in (SignalKind.STOP_REQUESTED, SignalKind.DATASET_EXHAUSTED):
            sig = self.store.signal(kind).first
            if sig is not None:
                return sig
        return None

    @property
    def final_step_ts(self) -> float | None:
        """When the last step was logged, if it was the final one."""
        if not self.finished_training:
            return None
        series = self.metrics.get("step")
        if series is not None and series.last_ts is not None:
            return series.last_ts
        done = self.store.signal(SignalKind.TRAINING_COMPLETE).first
        return None if done is None else ts_of(done)

    def files(self, *roles: Role) -> list[FileFacts]:
        return self.store.files_of(*roles) if roles else list(self.store.files.values())

    def signals(self, kind: SignalKind) -> list[Signal]:
        return self.store.signal(kind).items()

    def hits(self, hit_id: str) -> list[Hit]:
        return self.store.hit(hit_id).items()


def ts_of(event: Event) -> float | None:
    from a1x_diagnostics.metrics import epoch

    return epoch(event.ts)
