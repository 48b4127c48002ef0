"""Metric time series from typed events, in compact bounded arrays.

Each series holds (timestamp, step, value) triples in ``array('d')``. When a series reaches its
capacity it keeps every other point and from then on records every second sample (then every
fourth, ...), so memory stays bounded on a months-long run while the shape of the curve and the
exact last value are kept. Sources (docs/reference/cosmos-rl.md §4.3, §4.4, §4.5, §6.2, §6.3, §7):

- ``Step:`` lines: step / total, reward mean/std/max/min, loss avg/max, learning rate, grad norm,
  iteration time; the Δ timestamp between two Step lines is the step wall time (§7.4).
- ``Train report`` lines: every metric of a step; the recipe's reward components
  ``train/traj_L2``, ``train/comfort_reward``, ``train/reasoning_score`` (docs/reference/alpamayo-recipe.md §10)
  and ``rollout/advantage_std``. Used for the Step-line metrics too when no Step line exists.
- ``Stat:`` lines: pending rollouts, in-flight, filtered (outdated); samples/s and tokens/s from
  the Δ of the cumulative counters over Δ elapsed (§7.4).
- Weight-version gap: ``weight staleness`` lines (max), ``prompt rejected`` lines (prompt version
  minus current version) and the P2R receive step against the controller's step.
"""

from __future__ import annotations

import bisect
import math
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from a1x_diagnostics.events import (
    DynamicSampling,
    Event,
    PromptRejected,
    Staleness,
    Stat,
    Step,
    SyncPhase,
    Throttle,
    ThrottleState,
    TrainReport,
    WeightSync,
    epoch,
)

__all__ = ["epoch"]  # kept here for callers of the time before events.py had it

NAN = float("nan")


class _Unset:
    """The type of ``_UNSET``: no value given."""


_UNSET = _Unset()


SERIES_CAPACITY = 16384
RATE_WINDOW_S = 10.0  # samples/s and tokens/s are measured over at least this much elapsed time


class Series:
    """(ts, step, value) points in compact arrays, decimated by two whenever full."""

    __slots__ = (
        "_skip",
        "capacity",
        "last_step",
        "last_ts",
        "last_value",
        "name",
        "seen",
        "steps",
        "stride",
        "ts",
        "values",
    )

    def __init__(self, name: str, capacity: int = SERIES_CAPACITY) -> None:
        self.name = name
        self.capacity = max(4, capacity)
        self.ts = array("d")
        self.steps = array("d")
        self.values = array("d")
        self.stride = 1
        self._skip = 0
        self.seen = 0
        self.last_value: float | None = None
        self.last_ts: float | None = None
        self.last_step: float | None = None

    def append(self, value: float, ts: float | None = None, step: float | None = None) -> None:
        self.seen += 1
        self.last_value, self.last_ts, self.last_step = value, ts, step
        if self._skip:
            self._skip -= 1
            return
        self._make_room()
        self.ts.append(NAN if ts is None else ts)
        self.steps.append(NAN if step is None else step)
        self.values.append(value)
        self._skip = self.stride - 1

    def _make_room(self) -> None:
        """When full: keep every other point, and from now on every second sample more."""
        if len(self.values) >= self.capacity:
            self.ts = self.ts[::2]
            self.steps = self.steps[::2]
            self.values = self.values[::2]
            self.stride *= 2

    def __len__(self) -> int:
        return len(self.values)

    def __bool__(self) -> bool:
        return self.seen > 0

    def points(self) -> Iterator[tuple[float, float, float]]:
        """(ts, step, value); the exact last sample is always included."""
        yield from zip(self.ts, self.steps, self.values, strict=True)
        if self.last_value is not None and self._skip:
            yield (
                NAN if self.last_ts is None else self.last_ts,
                NAN if self.last_step is None else self.last_step,
                self.last_value,
            )

    def tail(self, n: int) -> list[float]:
        """The last ``n`` retained values (plus the exact last one)."""
        values = list(self.values[-n:])
        if self._skip and self.last_value is not None:
            values = [*values[1:], self.last_value] if len(values) >= n else [*values, self.last_value]
        return values


def finite(value: float | None) -> bool:
    return value is not None and not math.isnan(value) and not math.isinf(value)


def median(values: list[float]) -> float | None:
    clean = sorted(v for v in values if finite(v))
    if not clean:
        return None
    mid = len(clean) // 2
    return clean[mid] if len(clean) % 2 else (clean[mid - 1] + clean[mid]) / 2


# Values the Step line prints with 4/5 decimals: below these they read as 0.0000 / 0.00000.
REWARD_STD_ZERO = 5e-5
LOSS_ZERO = 5e-6
ADVANTAGE_STD_ZERO = 1e-6


class Streak:
    """A run of consecutive steps that share a property (used for group collapse): its length and
    its first and last event."""

    __slots__ = ("end", "length", "start")

    def __init__(self, length: int = 0, start: Any = None, end: Any = None) -> None:
        self.length, self.start, self.end = length, start, end


class StreakTracker:
    __slots__ = ("current", "last_step", "longest", "total")

    def __init__(self) -> None:
        self.current = Streak()
        self.longest = Streak()
        self.total = 0
        self.last_step: int | None = None

    def observe(self, step: int, hit: bool, event: Any) -> None:
        if self.last_step is not None and step <= self.last_step:
            return  # the same step reported again (several controllers, a re-read)
        self.last_step = step
        if not hit:
            self.current = Streak()
            return
        self.total += 1
        if self.current.length == 0:
            self.current = Streak(0, event, event)
        self.current.length += 1
        self.current.end = event
        if self.current.length > self.longest.length:
            self.longest = Streak(self.current.length, self.current.start, self.current.end)


@dataclass(slots=True)
class StepWindow:
    """What the controller logged between two training steps: is the producer held back?"""

    step: int  # the step that closed the window
    start_ts: float | None = None
    end_ts: float | None = None
    min_pending: int | None = None
    max_staleness: int | None = None
    allowed_outdated: int | None = None  # as the staleness line states it (after the loader's raise)
    throttled: bool = False


MAX_WINDOWS = 4096


class Metrics:
    """Builds every series from events, one event at a time (O(1) amortised per event)."""

    def __init__(self, capacity: int = SERIES_CAPACITY) -> None:
        self.capacity = capacity
        self.series: dict[str, Series] = {}
        self.step: int | None = None
        self.total_steps: int | None = None
        self.first_total_steps: int | None = None
        self.max_total_steps: int | None = None
        self._last_step_ts: float | None = None
        self._last_step_value: int | None = None
        self._rate_anchor: tuple[float, int, int] | None = None  # (elapsed, samples, tokens)
        self.collapse_steps = StreakTracker()  # Step lines with std 0 or loss 0 & grad 0
        self.collapse_reports = StreakTracker()  # Train reports with advantage std 0
        self.dapo_counts: dict[str, int] = {}
        self.rollout_failed = 0
        self.outdated_dropped = 0
        self.step_lines = 0
        self.train_reports = 0
        self.last_recv: tuple[float, int] | None = None  # (ts, weight step) of the latest P2R receive
        self.windows: deque[StepWindow] = deque(maxlen=MAX_WINDOWS)
        self._step_index: tuple[int, list[float], list[int]] | None = None  # step_at's cache
        self._window = StepWindow(step=0)

    # --- intake -------------------------------------------------------------------------------
    def _series(self, name: str) -> Series:
        series = self.series.get(name)
        if series is None:
            series = self.series[name] = Series(name, self.capacity)
        return series

    def _put(self, name: str, value: float | None, ts: float | None, step: float | None = None) -> None:
        if value is None:
            return
        self._series(name).append(float(value), ts, self.step if step is None else step)

    def add(self, event: Event, ts: float | _Unset | None = _UNSET, /) -> None:
        """Take one event. ``ts``: ``epoch(event.ts)`` when the caller has it already (``Collector``)."""
        handler = _HANDLERS.get(type(event), _UNKNOWN)
        if handler is _UNKNOWN:
            handler = _HANDLERS[type(event)] = _handler_for(type(event))
        if handler is not None:
            handler(self, event, epoch(event.ts) if isinstance(ts, _Unset) else ts)

    def _throttle(self, event: Throttle, ts: float | None) -> None:
        if event.state in (ThrottleState.ENGAGED, ThrottleState.STILL_ENGAGED):
            self._window.throttled = True

    def _staleness(self, event: Staleness, ts: float | None) -> None:
        self.staleness(event.max, event.p50, event.discarded, event.allowed_outdated_steps, ts)

    def staleness(self, max_: int, p50: int, discarded: int, allowed: int, ts: float | None) -> None:
        """A ``weight staleness`` line's numbers."""
        w = self._window
        w.max_staleness = max_ if w.max_staleness is None else max(w.max_staleness, max_)
        w.allowed_outdated = allowed
        self._put("weight_staleness_max", max_, ts)
        self._put("weight_staleness_p50", p50, ts)
        self._put("discarded_outdated", discarded, ts)

    def _prompt_rejected(self, event: PromptRejected, ts: float | None) -> None:
        self.prompt_gap(event.prompt_version - event.current_version, ts)

    def prompt_gap(self, gap: int, ts: float | None) -> None:
        """A ``prompt rejected`` line's version gap."""
        self._put("prompt_version_gap", gap, ts)

    def _weight_sync(self, event: WeightSync, ts: float | None) -> None:
        if event.phase is SyncPhase.RECV_DONE:
            self.recv_done(event.seconds, event.step, ts)

    def recv_done(self, seconds: float | None, step: int | None, ts: float | None) -> None:
        """A weight receive that finished."""
        self._put("weight_recv_s", seconds, ts)
        if step is not None and ts is not None and (self.last_recv is None or (ts, step) > self.last_recv):
            self.last_recv = (ts, step)  # the latest receive so far

    def _dynamic_sampling(self, event: DynamicSampling, ts: float | None) -> None:
        self.dynamic_counts(event.counts)

    def dynamic_counts(self, counts: Mapping[str, int]) -> None:
        """A ``Dynamic sampling`` line's counts."""
        for key, count in counts.items():
            self.dapo_counts[key] = self.dapo_counts.get(key, 0) + int(count)
        self.rollout_failed += int(counts.get("rollout_failed", 0))
        self.outdated_dropped += int(counts.get("outdated", 0))

    def _stat(self, event: Stat, ts: float | None) -> None:
        self.stat(event.samples, event.completion_tokens, event.pending, event.in_flight, event.outdated_filtered,
                  event.elapsed_s, ts)

    def stat(self, samples: int, tokens: int, pending: int, in_flight: int | None, filtered: int | None,
             elapsed: float, ts: float | None) -> None:
        """A controller ``Stat:`` line's numbers."""
        w = self._window
        w.min_pending = pending if w.min_pending is None else min(w.min_pending, pending)
        self._put("pending_rollouts", pending, ts)
        self._put("in_flight", in_flight, ts)
        self._put("filtered_outdated", filtered, ts)
        self._put("samples", samples, ts)
        self._rate(samples, tokens, elapsed, ts, self.step)

    def _rate(self, samples: int, tokens: int, elapsed: float, ts: float | None, step: float | None) -> None:
        """One ``Stat`` line's samples/s and tokens/s point, if it gives one (``_rate_points``)."""
        at, rates, token_rates = self._rate_points([(samples, tokens, elapsed)])
        if at:
            self._series("samples_per_s").append(rates[0], ts, step)  # step None: none yet
            self._series("tokens_per_s").append(token_rates[0], ts, step)

    def _rate_points(self, counters: Iterable[tuple[int, int, float]]) -> tuple[list[int], list[float], list[float]]:
        """samples/s and tokens/s from cumulative (samples, tokens, elapsed s) counters, in order, over at
        least ``RATE_WINDOW_S`` of elapsed time; a counter that went back (a restart) starts a new window.
        Returns the indices that gave a point and the two rates there; moves the window's anchor."""
        anchor = self._rate_anchor
        held = anchor is not None  # the anchor's three numbers in locals: one Stat line a dispatch (dense runs)
        a_elapsed, a_samples, a_tokens = anchor if anchor is not None else (0.0, 0, 0)
        at: list[int] = []
        rates: list[float] = []
        token_rates: list[float] = []
        for i, (samples, tokens, elapsed) in enumerate(counters):
            if not held or elapsed < a_elapsed or samples < a_samples:
                a_elapsed, a_samples, a_tokens, held = elapsed, samples, tokens, True
                continue
            dt = elapsed - a_elapsed
            if dt >= RATE_WINDOW_S:
                at.append(i)
                rates.append((samples - a_samples) / dt)
                token_rates.append((tokens - a_tokens) / dt)
                a_elapsed, a_samples, a_tokens = elapsed, samples, tokens
        self._rate_anchor = (a_elapsed, a_samples, a_tokens) if held else None
        return at, rates, token_rates

    def _note_step(self, step: int, total: int | None, ts: float | None) -> bool:
        """Record a step number; True when it is a new step (not a repeat)."""
        if total is not None:
            if self.first_total_steps is None:
                self.first_total_steps = total
            self.total_steps = total
            self.max_total_steps = max(self.max_total_steps or 0, total)
        new = self._last_step_value is None or step > self._last_step_value
        if new:
            closed = self._window
            closed.step, closed.end_ts = step, ts
            self.windows.append(closed)
            self._window = StepWindow(step=step + 1, start_ts=ts)
            if self._last_step_ts is not None and ts is not None and self._last_step_value is not None:
                per_step = (ts - self._last_step_ts) / (step - self._last_step_value)
                self._put("step_time_s", per_step, ts, step)
            if ts is not None:
                self._last_step_ts = ts
            self._last_step_value = step
            self.step = step
        return new

    def _step(self, event: Step, ts: float | None) -> None:
        self.step_lines += 1
        if not self._note_step(event.step, event.total, ts):
            return
        s = float(event.step)
        self._put("step", event.step, ts, s)
        self._put("total_steps", event.total, ts, s)
        for name in _STEP_SERIES:
            self._put(name, getattr(event, name), ts, s)
        self._put("iteration_time_s", event.iteration_time_s, ts, s)
        self._observe_collapse(event.step, event.reward_std, event.loss_avg, event.grad_norm, event)

    def _observe_collapse(self, step: int, reward_std: float | None, loss: float | None, grad: float | None,
                          event: Any) -> None:
        std_zero = finite(reward_std) and abs(reward_std or 0.0) < REWARD_STD_ZERO
        no_gradient = finite(loss) and finite(grad) and abs(loss or 0.0) < LOSS_ZERO and abs(grad or 0.0) < LOSS_ZERO
        self.collapse_steps.observe(step, bool(std_zero or no_gradient), event)

    _REPORT_KEYS: tuple[tuple[str, str], ...] = (
        ("train/traj_L2", "traj_l2"),
        ("train/comfort_reward", "comfort_reward"),
        ("train/reasoning_score", "reasoning_score"),
        ("rollout/advantage_std", "advantage_std"),
        ("rollout/advantage_max", "advantage_max"),
        ("rollout/advantage_min", "advantage_min"),
        ("rollout/weight_staleness_max", "report_staleness_max"),
    )
    _STEP_KEYS: tuple[tuple[str, str], ...] = (
        ("train/reward_mean", "reward_mean"),
        ("train/reward_std", "reward_std"),
        ("train/reward_max", "reward_max"),
        ("train/reward_min", "reward_min"),
        ("train/loss_avg", "loss_avg"),
        ("train/loss_max", "loss_max"),
        ("train/learning_rate", "learning_rate"),
        ("train/grad_norm", "grad_norm"),
        ("train/iteration_time", "iteration_time_s"),
    )

    def _train_report(self, event: TrainReport, ts: float | None) -> None:
        self.train_report(event.metrics, ts, event)

    def train_report(self, m: Mapping[str, Any], ts: float | None, event: Any) -> None:
        """A ``Train report`` line's numbers (``_train_report``)."""
        self.train_reports += 1

        def num(key: str) -> float | None:
            value = m.get(key)
            if type(value) is float:  # what parse_report_pairs gives a number
                return value
            return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

        step_value = num("train_step")
        total_value = num("train/total_steps")
        step = int(step_value) if step_value is not None and finite(step_value) else None
        if total_value is not None and not finite(total_value):
            total_value = None
        for key, name in self._REPORT_KEYS:
            if key in m:  # most reports hold few of them (one a step: the controller's log)
                self._put(name, num(key), ts, step_value)
        if step is None:
            return
        if self.step_lines == 0:
            # No console Step line: the report carries the same numbers (§4.5).
            new = self._note_step(step, int(total_value) if total_value is not None else None, ts)
            if new:
                self._put("step", step, ts, step_value)
                if total_value is not None:
                    self._put("total_steps", total_value, ts, step_value)
                for key, name in self._STEP_KEYS:
                    self._put(name, num(key), ts, step_value)
        adv_std, adv_max, adv_min = (
            num("rollout/advantage_std"),
            num("rollout/advantage_max"),
            num("rollout/advantage_min"),
        )
        zero_adv = (adv_std is not None and abs(adv_std) < ADVANTAGE_STD_ZERO) or (
            adv_max is not None and adv_min is not None and adv_max == 0.0 and adv_min == 0.0
        )
        if adv_std is not None or adv_max is not None:
            self.collapse_reports.observe(step, zero_adv, event)

    # --- closed-loop runs (``a1x_diagnostics.alpagym``): their series and step facts --------------
    def put(self, name: str, value: float, ts: float | None, step: float | None = None) -> None:
        """One point of series ``name`` (``step`` None: the current step)."""
        self._put(name, value, ts, step)

    def note_step(self, step: int, total: int | None, ts: float | None) -> None:
        """A step the controller's ``Step:`` lines did not log (an AlpaGym trainer's own step line)."""
        if self.step_lines == 0 and self.train_reports == 0 and self._note_step(step, total, ts):
            self._put("step", step, ts, float(step))

    def assume_total(self, total: int) -> None:
        """The run's total steps from its config, when no line said it."""
        if self.total_steps is None and total > 0:
            self.total_steps = self.max_total_steps = self.first_total_steps = total

    # --- queries -------------------------------------------------------------------------------
    def get(self, name: str) -> Series | None:
        return self.series.get(name)

    def last(self, name: str) -> float | None:
        series = self.series.get(name)
        return None if series is None else series.last_value

    def median_tail(self, name: str, n: int = 20) -> float | None:
        series = self.series.get(name)
        return None if series is None else median(series.tail(n))

    def step_at(self, ts: float) -> int | None:
        """The controller's step at time ``ts`` (the last Step line at or before it)."""
        series = self.series.get("step")
        if series is None or not len(series):
            return None
        if self._step_index is None or self._step_index[0] != series.seen:
            pairs = [(t, v) for t, _, v in series.points() if finite(t)]
            self._step_index = (series.seen, [t for t, _ in pairs], [int(v) for _, v in pairs])
        _, times, steps = self._step_index
        i = bisect.bisect_right(times, ts)
        return steps[i - 1] if i else None

    def value_at(self, name: str, ts: float) -> float | None:
        """The last value of series ``name`` logged at or before ``ts``."""
        series = self.series.get(name)
        if series is None:
            return None
        best: float | None = None
        for t, _, v in series.points():
            if finite(t) and t <= ts:
                best = v
            elif finite(t) and t > ts:
                break
        return best

    def recv_gap(self) -> tuple[int, int, float] | None:
        """(controller step, last P2R receive step, its ts) at the last receive, if both are known."""
        if self.last_recv is None:
            return None
        ts, recv_step = self.last_recv
        controller = self.step
        if controller is None:
            return None
        return controller, recv_step, ts

    def summary(self) -> dict[str, float | int | str | None]:
        """Last values, for the report and the perfdata."""
        out: dict[str, float | int | str | None] = {
            "step": self.step,
            "total_steps": self.total_steps,
        }
        for name in (
            "reward_mean",
            "reward_std",
            "traj_l2",
            "comfort_reward",
            "reasoning_score",
            "advantage_std",
            "loss_avg",
            "grad_norm",
            "learning_rate",
            "iteration_time_s",
            "pending_rollouts",
            "in_flight",
            "filtered_outdated",
            "samples_per_s",
            "tokens_per_s",
            "weight_staleness_max",
            "prompt_version_gap",
        ):
            value = self.last(name)
            if value is not None:
                out[name] = round(value, 6) if finite(value) else None
        step_time = self.median_tail("step_time_s", 10)
        if step_time is not None:
            out["step_time_s"] = round(step_time, 3)
        recv = self.recv_gap()
        if recv is not None:
            out["p2r_step_gap"] = max(0, recv[0] - recv[1])
        # staleness of accepted rollouts (0.4.4+), else the controller's step minus the last P2R receive
        gap = out.get("weight_staleness_max", out.get("p2r_step_gap"))
        if isinstance(gap, (int, float)):
            out["weight_version_gap"] = gap
        if self.rollout_failed:
            out["rollout_failed"] = self.rollout_failed
        return out


_STEP_SERIES = ("reward_mean", "reward_std", "reward_max", "reward_min", "loss_avg", "loss_max", "learning_rate",
                "grad_norm", "entropy", "kl_loss_avg")



# ``Metrics.add`` dispatches on the event's class: the first of these it is an instance of (a dict
# lookup per event instead of a chain of isinstance checks; subclasses are resolved once, the same way).
_HANDLED: tuple[tuple[type[Event], Callable[[Metrics, Any, float | None], None]], ...] = (
    (Stat, Metrics._stat),
    (Step, Metrics._step),
    (TrainReport, Metrics._train_report),
    (Throttle, Metrics._throttle),
    (Staleness, Metrics._staleness),
    (PromptRejected, Metrics._prompt_rejected),
    (WeightSync, Metrics._weight_sync),
    (DynamicSampling, Metrics._dynamic_sampling),
)
_UNKNOWN: Any = object()
_HANDLERS: dict[type, Callable[[Metrics, Any, float | None], None] | None] = {}


def _handler_for(cls: type) -> Callable[[Metrics, Any, float | None], None] | None:
    for base, handler in _HANDLED:
        if issubclass(cls, base):
            return handler
    return None
