"""Producer/consumer balance: the rollout buffer grows, or the policy starves.

Mechanism (docs/reference/cosmos-rl.md §4.3, §4.4, §13.1; docs/reference/alpamayo-recipe.md §8.8, §14 rows 11-12):
finished completions wait in the controller's buffer ("pending rollouts" in the ``Stat:`` line) until
a policy step takes ``B = train_batch_per_replica × n_policy`` of them. Prompts are handed out until
the completions in flight reach the soft throttle's ``T = (A + 1) × B`` (A = ``allowed_outdated_steps``,
default 4), so a producer faster than the policy holds the buffer at about ``A × B``: every step then
trains on data about A steps old, and rollouts older than A are discarded. At the default A that is
the designed operating point of asynchronous GRPO (§15: healthy runs sit there); buffer growth is the
buffer held at a ceiling above it (a raised A, the recipe's 50), or growing without one (DAPO, a
non-zero ``outdated_rollout_fetch_batch_size``). If rollouts are slower, pending sits below one batch
and each step's wall time is mostly waiting (``Iteration time`` ≪ step wall time).

A step runs from its ``Step:`` line's time minus its ``Iteration time`` to that line (the line is
written when the step ends, §4.5): what the controller logged in that span, and the buffer it found
at its start, belong to it; step 1 included.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from a1x_diagnostics.detectors._base import (
    DetectorContext,
    Verdict,
    batch_per_step,
    detected_gpus,
    detector,
    duration,
    fix,
    fmt,
    gpus_per_replica,
    make_finding,
    policy_gpus_needed,
    run_mode,
    ts_of,
    verdict_of,
)
from a1x_diagnostics.events import Event, PromptRejected, SignalKind, Throttle, ThrottleState
from a1x_diagnostics.findings import Fix
from a1x_diagnostics.metrics import Series, finite, median

MIN_STAT_POINTS = 8
THROTTLE_LONG_S = 120.0
# Cosmos-RL's default allowed_outdated_steps at 747d1bd, 0.4.4 and 0.4.7 (docs/reference/cosmos-rl.md §8.4): a buffer
# held at this many steps of data is the throttle doing its job, not growth (§13.1, §15).
DEFAULT_ALLOWED_OUTDATED = 4
PINNED_MIN_STEPS = 2  # "held at every step" needs two steps to mean anything (a smoke test of 3-6 steps is enough)
SATURATED_STEPS = 10  # a long run: held for this many consecutive steps...
SATURATED_SPAN_S = 60.0  # ...and at least this long, even if it began later than step 1


def _quarter_medians(values: list[float]) -> list[float]:
    n = len(values)
    q = max(1, n // 4)
    parts = [values[:q], values[q : 2 * q], values[2 * q : 3 * q], values[3 * q :]]
    return [median(p) or 0.0 for p in parts if p]


@dataclass(slots=True)
class StepSpan:
    """One training step as the controller saw it: from ``start`` (the Step line minus its Iteration time)
    to ``end`` (the Step line), with the buffer it found at its start or reached during it."""

    step: int
    start: float
    end: float
    level: float | None = None  # pending rollouts: the last Stat line before the start, or more during the step
    in_flight: float | None = None
    staleness: float | None = None  # highest accepted staleness of the staleness lines inside the span (0.4.4+)
    throttled: bool = False  # a throttle line inside the span, or the throttle engaged at its start


def _timed(series: Series | None) -> tuple[list[float], list[float]]:
    if series is None:
        return [], []
    pairs = sorted((t, v) for t, _, v in series.points() if finite(t) and finite(v))
    return [t for t, _ in pairs], [v for _, v in pairs]


def _highest(times: list[float], values: list[float], start: float, end: float, carry: bool) -> float | None:
    """The highest value logged in [start, end]; with ``carry``, the last one before ``start`` counts too."""
    lo = bisect.bisect_left(times, start)
    if carry and lo > 0 and (lo == len(times) or times[lo] > start):
        lo -= 1
    hi = bisect.bisect_right(times, end)
    return max(values[lo:hi]) if hi > lo else None


def step_spans(ctx: DetectorContext) -> list[StepSpan]:
    """Every logged step with its span and what the buffer did in it (docs/reference/cosmos-rl.md §4.3-§4.5)."""
    steps = ctx.metrics.get("step")
    if steps is None:
        return []
    iterations = {int(s): v for _, s, v in (ctx.metrics.get("iteration_time_s") or Series("")).points()
                  if finite(s) and finite(v) and v >= 0}
    spans: list[StepSpan] = []
    for t, _, v in steps.points():
        if not finite(t) or not finite(v):
            continue
        iteration = iterations.get(int(v))
        spans.append(StepSpan(step=int(v), start=t - iteration if iteration is not None else t, end=t))
    pending_t, pending_v = _timed(ctx.metrics.get("pending_rollouts"))
    flight_t, flight_v = _timed(ctx.metrics.get("in_flight"))
    stale_t, stale_v = _timed(ctx.metrics.get("weight_staleness_max"))
    throttle: list[tuple[float, bool]] = []
    for state in (ThrottleState.ENGAGED, ThrottleState.STILL_ENGAGED, ThrottleState.RELEASED):
        for e in ctx.store.throttle.get(state.value) or []:
            at_ts = ts_of(e)
            if at_ts is not None:
                throttle.append((at_ts, state is not ThrottleState.RELEASED))
    throttle.sort()
    throttle_t = [t for t, _ in throttle]
    flagged = {w.step for w in ctx.metrics.windows if w.throttled}
    for span in spans:
        span.level = _highest(pending_t, pending_v, span.start, span.end, carry=True)
        span.in_flight = _highest(flight_t, flight_v, span.start, span.end, carry=True)
        span.staleness = _highest(stale_t, stale_v, span.start, span.end, carry=False)
        at = bisect.bisect_right(throttle_t, span.start)
        inside = throttle[bisect.bisect_left(throttle_t, span.start) : bisect.bisect_right(throttle_t, span.end)]
        span.throttled = (
            span.step in flagged or (at > 0 and throttle[at - 1][1]) or any(engaged for _, engaged in inside)
        )
    return spans


def _allowed(ctx: DetectorContext, batch: int | None) -> int | None:
    """allowed_outdated_steps as the run used it: the staleness line states it after the loader's raise (§4.4,
    §8.6), a throttle line's threshold is (A + 1) × B (§4.3), else the config (the dump, or the TOML)."""
    last = ctx.store.staleness.last
    if last is not None:
        return last.allowed_outdated_steps
    engaged = ctx.store.throttle.get(ThrottleState.ENGAGED.value)
    if engaged and batch and engaged.last is not None and engaged.last.threshold:
        return max(0, engaged.last.threshold // batch - 1)
    return ctx.config.integer("train.train_policy.allowed_outdated_steps")


def _growth_fix(ctx: DetectorContext, allowed: int | None, pinned: bool) -> tuple[list[Fix], list[str]]:
    """One minimal fix that acts on what holds the buffer up, and the alternatives in words (§13.1; recipe §8.8)."""
    cfg = ctx.config
    variant = str(cfg.get("train.train_policy.variant"))
    alternatives: list[str] = []
    if variant == "dapo" and cfg.get("train.train_policy.max_inflight_steps") is None:
        first = fix(cfg, "train.train_policy.max_inflight_steps", (allowed or DEFAULT_ALLOWED_OUTDATED) + 1,
                    "DAPO bypasses the soft throttle; this hard cap bounds the buffer (0.4.4+, not at 747d1bd, §4.3); "
                    "trade-off: rollouts wait once that many steps are in flight")
        return [first], alternatives
    fetch = cfg.integer("train.train_policy.outdated_rollout_fetch_batch_size")
    if fetch is not None and fetch > 0 and variant != "dapo":
        return [fix(cfg, "train.train_policy.outdated_rollout_fetch_batch_size", 0,
                    "prompts keep being handed out while throttled (§13.1); trade-off: none, it is the default")], []
    recipe = cfg.is_set("custom.alpamayo") or cfg.is_set("custom.alpamayo.prefetch.capacity")
    capacity = cfg.integer("custom.alpamayo.prefetch.capacity")
    if recipe and (capacity is None or capacity <= 0):
        alternatives.append("enable the recipe's node prefetch (custom.alpamayo.prefetch.capacity = "
                            "train_batch_per_replica × policy replicas per node, recipe §9.1): the policy steps faster")
    if pinned and allowed is not None and allowed > DEFAULT_ALLOWED_OUTDATED:
        interval = cfg.integer("train.sync_weight_interval") or 1
        proposed = max(DEFAULT_ALLOWED_OUTDATED, interval - 1)  # the loader raises anything below k - 1 (§8.6)
        first = fix(cfg, "train.train_policy.allowed_outdated_steps", proposed,
                    f"the throttle holds the buffer at allowed_outdated_steps × B: {allowed} steps of data, each step "
                    f"trains on rollouts that old (§4.3, §13.1); trade-off: rollouts idle sooner, data at most "
                    f"{proposed} steps old", seen=allowed)
        return [first], alternatives
    batch_size = cfg.integer("rollout.batch_size")
    if batch_size is not None and batch_size > 1:
        return [fix(cfg, "rollout.batch_size", max(1, batch_size // 2),
                    "fewer prompts per fetch slows the producers (recipe §8.8); trade-off: the rollout GPUs idle more, "
                    "the policy's work is unchanged")], alternatives
    return [], alternatives


def _ahead_rejections(ctx: DetectorContext, allowed: int | None) -> list[PromptRejected]:
    """'prompt rejected' because the prompt is meant for a step whose weights do not exist yet (§6.3): the
    rollouts run ahead of training; not lag (weight_sync_lag: the weights exist but were not sent)."""
    out = []
    for r in ctx.store.prompt_rejected.items():
        t = ts_of(r)
        step = ctx.metrics.step_at(t) if t is not None else None
        limit = r.allowed_outdated if r.allowed_outdated is not None else allowed
        if step is not None and limit is not None and r.prompt_version - limit > step:
            out.append(r)
    return out


def _engaged_while_training(line: Throttle, first: float, last: float | None) -> float:
    """Seconds of a 'Soft throttle still engaged after Xs' spell that fell between the first step's start and
    the last step: after the last one a stalled or dead policy holds the throttle, not the balance of the run."""
    t = ts_of(line)
    if t is None or line.seconds is None:
        return 0.0
    end = t if last is None else min(t, last)
    return max(0.0, end - max(first, t - line.seconds))


def _in(event: Any, first: float, last: float) -> bool:
    t = ts_of(event)
    return t is not None and first <= t <= last


def _discards(ctx: DetectorContext, first: float, last: float) -> tuple[int, list[Event]]:
    """Rollouts discarded as outdated from the first step's start to the last step (§4.4): the staleness lines'
    ``discarded`` (0.4.4+), else the ``Dynamic sampling`` counts printed after each Step line (747d1bd's
    only trace), else the Stat lines' ``filtered (outdated)`` (a count since the last report: its highest)."""
    lines = [s for s in ctx.store.staleness.items() if s.discarded > 0 and _in(s, first, last)]
    series = ctx.metrics.get("discarded_outdated")
    if series is not None and ctx.store.staleness:
        total = int(sum(v for t, _, v in series.points() if finite(t) and first <= t <= last))
        return total, list(lines[-1:])
    sampling = ctx.store.dynamic_sampling
    if sampling:
        late = last + 5.0  # the line follows its Step line
        counted = [d for d in sampling.items() if d.counts.get("outdated", 0) > 0 and _in(d, first, late)]
        if sampling.count > 2 * sampling.k:
            return ctx.metrics.outdated_dropped, list(counted[-1:])
        return sum(int(d.counts.get("outdated", 0)) for d in counted), list(counted[-1:])
    filtered = ctx.metrics.get("filtered_outdated")
    if filtered is not None:
        return int(max((v for t, _, v in filtered.points() if finite(t) and first <= t <= last), default=0)), []
    return 0, []


def _pinned_streak(spans: list[StepSpan], batch: int, ceiling: float) -> list[StepSpan]:
    """The longest run of consecutive steps that found or held the buffer at the ceiling (``ceiling`` steps of
    data, less one batch or a quarter: a Stat line counts after the dispatch), accepted staleness near it."""
    longest: list[StepSpan] = []
    streak: list[StepSpan] = []
    for span in spans:
        held = span.level is not None and span.level >= max(ceiling - 1, 0.75 * ceiling) * batch
        stale = span.staleness is None or span.staleness >= ceiling - 2
        streak = [*streak, span] if held and stale else []
        if len(streak) > len(longest):
            longest = streak
    return longest


def _producing(ctx: DetectorContext, spans: list[StepSpan]) -> list[StepSpan]:
    """The steps while prompts were still handed out: once every epoch is fetched the buffer drains by design."""
    fetched = ctx.store.signal(SignalKind.ALL_EPOCHS_FETCHED).first or ctx.store.signal(
        SignalKind.ALL_ROLLOUTS_ENDED).first
    at = ts_of(fetched) if fetched is not None else None
    kept = [s for s in spans if at is None or s.start <= at]
    return kept or spans


@detector("rollout_buffer_growth")
def rollout_buffer_growth(ctx: DetectorContext) -> Verdict:
    # Least evidence: Stat lines (pending rollouts) and two Step lines (with Iteration time, for their spans),
    # B from the config or a Train report; allowed_outdated_steps from a staleness line, a throttle line or the
    # config. At 747d1bd (no staleness or throttle line) the pending count alone, against A × B.
    if run_mode(ctx) == "colocated":
        return Verdict.skipped("colocated mode: the controller prints no Stat lines (§9)")
    pending = ctx.metrics.get("pending_rollouts")
    if pending is None:
        return Verdict.blind("no `[Controller] Stat:` lines: controller.log is missing or no rollout has arrived yet")
    spans = step_spans(ctx)
    if not spans:
        return Verdict.ok("no training step yet: a buffer filling while the policy loads is normal")
    batch = batch_per_step(ctx)
    if not batch:
        return Verdict.blind("steps of data in the buffer need B = train_batch_per_replica × policy replicas: no "
                             "config dump, TOML or Train report line gives it")
    first_start, last_end = min(s.start for s in spans), spans[-1].end
    allowed = _allowed(ctx, batch)
    levels = [s.level for s in spans if s.level is not None]
    ceiling = float(allowed) if allowed is not None else (max(levels) / batch if levels else 0.0)
    threshold = (allowed + 1) * batch if allowed is not None else None

    # (1) held at the ceiling at every step (a raised ceiling: the default's is the throttle working, §15)
    producing = _producing(ctx, spans)
    streak = _pinned_streak(producing, batch, ceiling) if ceiling > DEFAULT_ALLOWED_OUTDATED else []
    span_s = streak[-1].end - streak[0].start if streak else 0.0
    pinned = len(streak) >= PINNED_MIN_STEPS and (
        2 * len(streak) >= len(producing) or (len(streak) >= SATURATED_STEPS and span_s >= SATURATED_SPAN_S)
    )
    # (2) growing past the default's steps of data while the policy trained (no ceiling: DAPO, fetches while throttled)
    points = [(t, v) for t, _, v in pending.points() if finite(t) and first_start <= t <= last_end]
    growing, start, end = False, 0.0, 0.0
    if len(points) >= MIN_STAT_POINTS:
        quarters = _quarter_medians([v for _, v in points])
        start, end = quarters[0], quarters[-1]
        growing = (all(b >= a for a, b in pairwise(quarters)) and end >= 2 * max(start, 1.0)
                   and end > DEFAULT_ALLOWED_OUTDATED * batch)
    beyond_default = max(levels, default=0.0) > DEFAULT_ALLOWED_OUTDATED * batch
    # (3) the throttle engaged for minutes while the policy trained, with more than the default's data buffered
    long_throttle = [
        t for t in (ctx.store.throttle.get(ThrottleState.STILL_ENGAGED.value) or [])
        if _engaged_while_training(t, first_start, last_end) >= THROTTLE_LONG_S
    ] if beyond_default else []
    # (4) every prompt handed out long before the last step, with a large buffer left
    early_end = None
    all_fetched = (
        ctx.store.signal(SignalKind.ALL_EPOCHS_FETCHED).first or ctx.store.signal(SignalKind.ALL_ROLLOUTS_ENDED).first
    )
    total = ctx.metrics.max_total_steps
    if all_fetched is not None and total:
        at = ts_of(all_fetched)
        step_then = ctx.metrics.step_at(at) if at is not None else None
        pending_then = ctx.metrics.value_at("pending_rollouts", at) if at is not None else None
        if (step_then is not None and pending_then is not None and total - step_then >= max(3, total // 4)
                and pending_then > DEFAULT_ALLOWED_OUTDATED * batch):
            early_end = (all_fetched, step_then)
    # (5) the controller's own warning, repeated, with the buffer beyond the default's data
    over_warnings = ctx.store.throttle.get(ThrottleState.PENDING_OVER_ALLOWED.value)
    repeated_over = over_warnings is not None and over_warnings.count >= 3 and beyond_default

    if not (pinned or growing or long_throttle or early_end or repeated_over):
        held = streak or _pinned_streak(producing, batch, ceiling)
        if ceiling >= 1 and 2 * len(held) >= len(producing) >= PINNED_MIN_STEPS:
            return Verdict.ok(f"rollouts outpace the policy, held by the throttle at {fmt(ceiling)} steps of data "
                              f"(allowed_outdated_steps = {allowed if allowed is not None else '?'}): the designed "
                              "bound, not growth")
        return Verdict.ok()

    discarded, discard_lines = _discards(ctx, first_start, last_end)
    stats = [s for s in ctx.store.stats.items() if (ts_of(s) or 0.0) >= first_start]
    low = min(stats[: ctx.store.k], key=lambda s: s.pending) if stats else None
    high = max(stats[-ctx.store.k :], key=lambda s: s.pending) if stats else None
    at_limit = [s for s in ctx.store.staleness.items() if allowed is not None and s.max >= allowed > 0]
    throttle_lines = ctx.store.throttle.get(ThrottleState.ENGAGED.value)
    ahead = _ahead_rejections(ctx, allowed)
    first_step = ctx.store.steps.first
    parts: list[str] = []
    if pinned:
        since = ("every step" if len(streak) == len(producing)
                 else f"{len(streak)} consecutive steps, {streak[0].step}-{streak[-1].step} ({duration(span_s)})")
        top = max((s.level for s in streak if s.level is not None), default=0.0)
        parts.append(
            f"at {since}, from step {streak[0].step}'s start (its Step line minus its Iteration time), the buffer "
            f"was held at the throttle's ceiling: {fmt(top)} pending rollouts = {fmt(top / batch)} steps of data "
            f"(allowed_outdated_steps = {allowed if allowed is not None else '?'}"
            + (f", throttle at {threshold} in flight" if threshold else "") + ")"
        )
        stalest = max((s.staleness for s in streak if s.staleness is not None), default=None)
        if stalest is not None:
            parts.append(f"accepted rollouts were up to {fmt(stalest)} steps stale")
    if growing:
        # medians of a count: whole rollouts ("about 98.5 pending rollouts" read as a measurement error)
        parts.append(f"pending rollouts rose from about {fmt(start, 0)} to {fmt(end, 0)} while the policy trained")
    if long_throttle:
        engaged_s = _engaged_while_training(long_throttle[-1], first_start, last_end)
        parts.append(f"the soft throttle stayed engaged for {fmt(engaged_s, 0)} s while the policy trained")
    if early_end is not None:
        parts.append(f"every prompt was handed out at step {early_end[1]} of {total}")
    if repeated_over and over_warnings is not None:
        parts.append(f"the controller warned {over_warnings.count} times that pending rollouts exceed the allowed "
                     "count")
    if ahead:
        last_ahead = ahead[-1]
        lead = last_ahead.prompt_version - (ctx.metrics.step_at(ts_of(last_ahead) or 0.0) or 0)
        times = "once" if len(ahead) == 1 else f"{len(ahead)} times"
        ahead_by = f"{lead} step{'' if lead == 1 else 's'}"
        parts.append(f"rollouts even refused prompts meant for {ahead_by} ahead of training ({times})")
    explanation = "Rollouts are produced faster than the policy trains on them: " + "; ".join(parts) + "."
    backlog = max(end, float(high.pending) if high else 0.0, max(levels, default=0.0)) / batch
    explanation += (f" One step takes {batch} completions and the buffer holds about {fmt(backlog)} steps of them: "
                    "every step trains on data generated with weights that many steps old.")
    if discarded:
        explanation += f" {discarded} rollouts were discarded as outdated (generation wasted)."
    fixes, alternatives = _growth_fix(ctx, allowed, pinned)
    action = ("Tuning order (docs/reference/alpamayo-recipe.md §8.8): "
              + "; ".join([*alternatives, "lower rollout.batch_size", "add policy replicas (--policy N) or raise "
                           "policy dp_shard_size where the node has GPUs for them", "fewer epochs or max_num_steps"])
              + ".")
    finding = make_finding(
        "rollout_buffer_growth",
        explanation,
        [
            high,
            *(at_limit[-1:]),
            *(throttle_lines.items()[-1:] if throttle_lines else ()),
            *discard_lines,
            first_step,
            *(long_throttle[-1:]),
            low,
            *(early_end[0:1] if early_end else ()),
            *(over_warnings.items()[-1:] if over_warnings else ()),
            *ahead[-1:],
            ctx.config.locate("train.train_policy.allowed_outdated_steps"),
        ],
        fixes=fixes,
        action=action,
        data={
            "pending_start": start,
            "pending_end": end,
            "saturated_steps": len(streak),
            "steps": len(spans),
            "batch_per_step": batch,
            "allowed_outdated_steps": allowed,
            "throttle_threshold": threshold,
            "backlog_steps": round(backlog, 2),
            "discarded": discarded,
        },
    )
    return verdict_of(finding)


def _starved_fix(ctx: DetectorContext) -> tuple[list[Fix], str]:
    """More rollout replicas where the node has GPUs for them (§2.2, recipe §14 row 12), else nothing: the batch
    size is the algorithm's, and the logs do not always say how many GPUs there are."""
    replicas = ctx.config.integer("rollout.parallelism.n_init_replicas")
    each = gpus_per_replica(ctx, "rollout")
    have, _ = detected_gpus(ctx)
    shard = ctx.config.integer("policy.parallelism.dp_shard_size") or 1
    now = policy_gpus_needed(ctx, shard)
    # colocated modes put rollout i on policy i's GPUs: no room for another one there
    disaggregated = run_mode(ctx) == "disaggregated"
    if replicas and each and have is not None and now is not None and disaggregated and now + each <= have:
        return [fix(ctx.config, "rollout.parallelism.n_init_replicas", replicas + 1,
                    f"one more rollout replica ({now + each} of the {have} GPUs this node has) fills the buffer "
                    "faster; trade-off: none for the algorithm; the launcher's --rollout N overrides it")], (
            "Or make each rollout faster (a larger rollout.batch_size where the engine has memory for it).")
    known = f"this node has {have} GPUs and the replicas use {now}" if have is not None and now is not None else (
        "the logs do not say how many GPUs this node has (the launcher's `Detected N GPUs` line)")
    return [], (f"Add rollout replicas (--rollout N) where there are GPUs for them: {known}; or make each rollout "
                "faster (a larger rollout.batch_size where the engine has memory for it) (recipe §14 row 12).")


MIN_STEPS_FOR_STARVATION = 2  # step intervals: a smoke test's 3 steps
MEDIAN_FROM_STEPS = 8  # from this many intervals the median step decides; fewer: every one must be starved
STARVED_UTILISATION = 0.3
STARVED_IDLE_S = 10.0


@detector("rollout_starved")
def rollout_starved(ctx: DetectorContext) -> Verdict:
    step_time = ctx.metrics.get("step_time_s")
    iteration = ctx.metrics.get("iteration_time_s")
    if step_time is None or iteration is None:
        return Verdict.blind("needs Step lines with iteration times (the console logger) and at least two steps")
    if step_time.seen < MIN_STEPS_FOR_STARVATION:
        return Verdict.ok(f"{step_time.seen + 1} steps: too few to judge")
    if step_time.seen >= MEDIAN_FROM_STEPS:
        wall = median(step_time.tail(20))
        compute = median(iteration.tail(20))
    else:  # a few steps: judged on the least starved of them, so one slow step cannot make the case
        pairs = list(zip(step_time.tail(step_time.seen), iteration.tail(step_time.seen), strict=False))
        if not pairs or any(w <= 0 for w, _ in pairs):
            return Verdict.ok()
        wall, compute = max(pairs, key=lambda p: p[1] / p[0])
    if not wall or compute is None:
        return Verdict.ok()
    utilisation = compute / wall
    idle = wall - compute
    pending = ctx.metrics.get("pending_rollouts")
    batch = batch_per_step(ctx)
    if pending is None or not len(pending):
        return Verdict.ok("no Stat lines to confirm an empty buffer")
    recent = pending.tail(60)
    empty_share = sum(1 for v in recent if (v < batch if batch else v == 0)) / len(recent)
    if not (utilisation < STARVED_UTILISATION and idle >= STARVED_IDLE_S and empty_share >= 0.9):
        return Verdict.ok()
    steps = ctx.store.steps.items()
    stats = ctx.store.stats.items()
    zero_stat = next((s for s in reversed(stats) if s.pending == 0), stats[-1] if stats else None)
    fixes, action = _starved_fix(ctx)
    finding = make_finding(
        "rollout_starved",
        f"The policy computes for {fmt(compute)} s of each {fmt(wall)} s step ({utilisation:.0%}); the rest "
        f"({fmt(idle)} s) it waits for rollouts: the buffer held less than one step of completions"
        f"{f' ({batch})' if batch else ''} in {empty_share:.0%} of the recent Stat lines.",
        [steps[-1] if steps else None, zero_stat, steps[-2] if len(steps) > 1 else None],
        fixes=fixes,
        action=action,
        data={
            "step_wall_s": wall,
            "iteration_s": compute,
            "utilisation": round(utilisation, 3),
            "empty_share": round(empty_share, 3),
        },
    )
    return verdict_of(finding)
