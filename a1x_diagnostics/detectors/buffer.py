"""Producer/consumer balance: the rollout buffer grows, or the policy starves.

Mechanism (docs/reference/cosmos-rl.md §4.3, §13.1; docs/reference/alpamayo-recipe.md §8.8, §14 rows 11-12): finished
completions wait in the controller's buffer ("pending rollouts" in the ``Stat:`` line) until a
policy step takes ``B = train_batch_per_replica × n_policy`` of them. If rollouts are faster than
the policy, pending climbs until the soft throttle (in-flight ≥ ``T = (allowed_outdated_steps+1) ×
B``) holds it, and the data a step trains on gets older. If rollouts are slower, pending sits
below one batch and each step's wall time is mostly waiting (``Iteration time`` ≪ step wall time).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from a1x_diagnostics.detectors._base import (
    DetectorContext,
    Verdict,
    batch_per_step,
    detector,
    duration,
    fix,
    fmt,
    make_finding,
    run_mode,
    ts_of,
    verdict_of,
)
from a1x_diagnostics.events import PromptRejected, SignalKind, Throttle, ThrottleState
from a1x_diagnostics.findings import Fix
from a1x_diagnostics.metrics import StepWindow, median

MIN_STAT_POINTS = 8
THROTTLE_LONG_S = 120.0
SATURATED_STEPS = 10  # "sustained": held back for this many consecutive steps...
SATURATED_SPAN_S = 60.0  # ...and at least this long
# A smoke test (3-10 steps) shows the same thing sooner: held back at every step since the first, and
# rollouts already discarded as outdated (docs/reference/cosmos-rl.md §13.1): no need to wait for 10 steps.
SMOKE_STEPS = 2


def _quarter_medians(values: list[float]) -> list[float]:
    n = len(values)
    q = max(1, n // 4)
    parts = [values[:q], values[q : 2 * q], values[2 * q : 3 * q], values[3 * q :]]
    return [median(p) or 0.0 for p in parts if p]


def _growth_fixes(ctx: DetectorContext) -> list[Fix]:
    cfg = ctx.config
    fixes: list[Fix] = []
    per_replica = cfg.integer("train.train_batch_per_replica")
    if cfg.is_set("custom.alpamayo") or cfg.is_set("custom.alpamayo.prefetch.capacity"):
        capacity = cfg.integer("custom.alpamayo.prefetch.capacity")
        if capacity is None or capacity <= 0:
            fixes.append(
                fix(
                    cfg,
                    "custom.alpamayo.prefetch.capacity",
                    per_replica or 16,
                    "prefetch is off: the policy loads its data inside each step; NVIDIA sizes it as "
                    "train_batch_per_replica × policy replicas per node (recipe §9.1, first in the tuning order §8.8)",
                )
            )
    batch_size = cfg.integer("rollout.batch_size")
    if batch_size is not None and batch_size > 1:
        fixes.append(
            fix(
                cfg,
                "rollout.batch_size",
                max(1, batch_size // 2),
                "fewer prompts per fetch slows the producers (recipe §8.8)",
            )
        )
    fetch = cfg.integer("train.train_policy.outdated_rollout_fetch_batch_size")
    if fetch is not None and fetch > 0 and str(cfg.get("train.train_policy.variant")) != "dapo":
        fixes.append(
            fix(
                cfg,
                "train.train_policy.outdated_rollout_fetch_batch_size",
                0,
                "it keeps serving prompts while throttled (§13.1)",
            )
        )
    if (
        str(cfg.get("train.train_policy.variant")) == "dapo"
        and cfg.get("train.train_policy.max_inflight_steps") is None
    ):
        allowed = cfg.integer("train.train_policy.allowed_outdated_steps")
        fixes.append(
            fix(
                cfg,
                "train.train_policy.max_inflight_steps",
                (allowed or 4) + 1,
                "DAPO bypasses the soft throttle; this hard cap bounds the buffer (cosmos-rl 0.4.4+, §13.1)",
            )
        )
    return fixes


def _saturated(w: StepWindow, batch: int | None, allowed: int | None) -> bool:
    """The producer was held back by the throttle during this step (§4.3, §4.4, §13.1)."""
    if w.throttled:
        return True  # 'Soft throttle ENGAGED / still engaged' (0.4.4+)
    limit = w.allowed_outdated if w.allowed_outdated is not None else allowed
    if w.max_staleness is not None and limit is not None and limit > 0 and w.max_staleness >= limit:
        return True  # accepted rollouts are as stale as allowed: generated as far ahead as the gate lets them
    # 747d1bd logs neither: the buffer left after each dispatch stays near the throttle's bound
    return (
        w.min_pending is not None
        and batch is not None
        and allowed is not None
        and allowed >= 2
        and w.min_pending >= max(2 * batch, (allowed - 1) * batch)
    )


def _saturation_streak(ctx: DetectorContext, batch: int | None, allowed: int | None) -> list[StepWindow]:
    """The latest run of consecutive held-back steps (the first step's window is start-up, not counted)."""
    windows = [w for w in ctx.metrics.windows if w.step > 1]
    streak: list[StepWindow] = []
    for w in windows:
        streak = [*streak, w] if _saturated(w, batch, allowed) else []
    return streak


def _ahead_rejections(ctx: DetectorContext, allowed: int | None) -> list[PromptRejected]:
    """'prompt rejected' because the prompt is meant for a step far ahead, not because weights lag."""
    out = []
    for r in ctx.store.prompt_rejected.items():
        t = ts_of(r)
        step = ctx.metrics.step_at(t) if t is not None else None
        limit = allowed if allowed is not None else r.allowed_outdated
        if step is not None and step - r.current_version <= 1 and r.prompt_version - step >= max(1, limit):
            out.append(r)
    return out


def _in_training(event: Any, first: float, last: float | None) -> bool:
    t = ts_of(event)
    return t is not None and first <= t and (last is None or t <= last)


def _engaged_while_training(line: Throttle, first: float, last: float | None) -> float:
    """Seconds of a 'Soft throttle still engaged after Xs' spell that fell between the first and the last
    step: after the last one a stalled or dead policy holds the throttle, not the balance of the run."""
    t = ts_of(line)
    if t is None or line.seconds is None:
        return 0.0
    end = t if last is None else min(t, last)
    return max(0.0, end - max(first, t - line.seconds))


def _discards(ctx: DetectorContext, first: float, last: float | None) -> int:
    """Rollouts discarded as outdated while the policy trained: the staleness lines' ``discarded``, the Stat
    lines' ``filtered (outdated)``, the ``Dynamic sampling`` counts (747d1bd's only trace of them)."""
    n = sum(s.discarded for s in ctx.store.staleness.items() if _in_training(s, first, last))
    filtered = ctx.metrics.get("filtered_outdated")
    if filtered is not None:
        n += int(sum(v for t, _, v in filtered.points() if v == v and first <= t and (last is None or t <= last)))
    return n + ctx.metrics.outdated_dropped


@detector("rollout_buffer_growth")
def rollout_buffer_growth(ctx: DetectorContext) -> Verdict:
    if run_mode(ctx) == "colocated":
        return Verdict.skipped("colocated mode: the controller prints no Stat lines (§9)")
    pending = ctx.metrics.get("pending_rollouts")
    if pending is None:
        return Verdict.blind("no `[Controller] Stat:` lines: controller.log is missing or no rollout has arrived yet")
    steps = ctx.metrics.get("step")
    if steps is None or not len(steps):
        return Verdict.ok("no training step yet: a buffer filling while the policy loads is normal")
    first_step_ts, last_step_ts = steps.ts[0], steps.last_ts
    # Only the training window counts: before the first step the policy is still loading, and after
    # the last one a dead or stalled policy stops consuming (other findings tell those stories).
    points = [
        (ts, v)
        for ts, _, v in pending.points()
        if ts == ts and first_step_ts <= ts and (last_step_ts is None or ts <= last_step_ts)
    ]
    batch = batch_per_step(ctx)
    allowed = ctx.config.integer("train.train_policy.allowed_outdated_steps")
    last_staleness = ctx.store.staleness.last
    if last_staleness is not None:
        allowed = last_staleness.allowed_outdated_steps
    threshold = (allowed + 1) * batch if (allowed is not None and batch) else None

    growing, start, end = False, 0.0, 0.0
    floor = max(2 * batch, 8) if batch else 8
    if len(points) >= MIN_STAT_POINTS:
        quarters = _quarter_medians([v for _, v in points])
        start, end = quarters[0], quarters[-1]
        rising = all(b >= a for a, b in pairwise(quarters)) and end >= 2 * max(start, 1.0)
        growing = rising and end >= floor

    streak = _saturation_streak(ctx, batch, allowed)
    span = (streak[-1].end_ts or 0.0) - (streak[0].start_ts or 0.0) if streak else 0.0
    trained = [w for w in ctx.metrics.windows if w.step > 1]
    discards = _discards(ctx, first_step_ts, last_step_ts)
    from_the_start = len(streak) >= SMOKE_STEPS and len(streak) == len(trained) and discards > 0
    saturated = (len(streak) >= SATURATED_STEPS and span >= SATURATED_SPAN_S) or from_the_start
    ahead = _ahead_rejections(ctx, allowed)
    long_throttle = [
        t
        for t in (ctx.store.throttle.get(ThrottleState.STILL_ENGAGED.value) or [])
        if _engaged_while_training(t, first_step_ts, last_step_ts) >= THROTTLE_LONG_S
    ]
    early_end = None
    all_fetched = (
        ctx.store.signal(SignalKind.ALL_EPOCHS_FETCHED).first or ctx.store.signal(SignalKind.ALL_ROLLOUTS_ENDED).first
    )
    total = ctx.metrics.max_total_steps
    if all_fetched is not None and total and batch:
        at = ts_of(all_fetched)
        step_then = ctx.metrics.step_at(at) if at is not None else None
        pending_then = ctx.metrics.value_at("pending_rollouts", at) if at is not None else None
        if (
            step_then is not None
            and pending_then is not None
            and total - step_then >= max(3, total // 4)
            and pending_then >= 2 * batch
        ):
            early_end = (all_fetched, step_then)
    over_warnings = ctx.store.throttle.get(ThrottleState.PENDING_OVER_ALLOWED.value)
    repeated_over = over_warnings is not None and over_warnings.count >= 3 and end >= floor

    if not (growing or saturated or long_throttle or early_end or repeated_over):
        return Verdict.ok()

    stats = [s for s in ctx.store.stats.items() if (ts_of(s) or 0.0) >= first_step_ts]
    low = min(stats[: ctx.store.k], key=lambda s: s.pending) if stats else None
    high = max(stats[-ctx.store.k :], key=lambda s: s.pending) if stats else None
    staleness = [s for s in ctx.store.staleness.items() if s.discarded > 0]
    at_limit = [s for s in ctx.store.staleness.items() if allowed is not None and s.max >= allowed > 0]
    throttle_lines = ctx.store.throttle.get(ThrottleState.ENGAGED.value)
    parts: list[str] = []
    if growing:
        # medians of a count: whole rollouts ("about 98.5 pending rollouts" read as a measurement error)
        parts.append(f"pending rollouts rose from about {fmt(start, 0)} to {fmt(end, 0)} while the policy trained")
    if saturated:
        parts.append(
            f"for the last {len(streak)} steps ({duration(span)}) the rollouts were held back by the soft throttle "
            f"(allowed_outdated_steps = {allowed}"
            + (f", threshold {threshold} in flight" if threshold else "")
            + "): they generate as far ahead as allowed and then wait"
        )
    if long_throttle:
        held = _engaged_while_training(long_throttle[-1], first_step_ts, last_step_ts)
        parts.append(f"the soft throttle stayed engaged for {fmt(held, 0)} s while the policy trained")
    if early_end is not None:
        parts.append(f"every prompt was handed out at step {early_end[1]} of {total}")
    if repeated_over and over_warnings is not None:
        parts.append(
            f"the controller warned {over_warnings.count} times that pending rollouts exceed the allowed count"
        )
    if ahead:
        last_ahead = ahead[-1]
        lead = last_ahead.prompt_version - (ctx.metrics.step_at(ts_of(last_ahead) or 0.0) or 0)
        times = "once" if len(ahead) == 1 else f"{len(ahead)} times"
        ahead_by = f"{lead} step{'' if lead == 1 else 's'}"
        parts.append(f"rollouts even refused prompts meant for {ahead_by} ahead of training ({times})")
    explanation = "Rollouts are produced faster than the policy trains on them: " + "; ".join(parts) + "."
    if batch:
        backlog = fmt(max(end, float(high.pending) if high else 0.0) / batch)
        explanation += f" One step takes {batch} completions and the buffer holds about {backlog} steps of them"
        explanation += ": every step trains on data generated with weights that many steps old."
    if staleness:
        last = staleness[-1]
        explanation += f" Outdated rollouts are already being discarded ({last.discarded}/{last.total} in one batch)."
    finding = make_finding(
        "rollout_buffer_growth",
        explanation,
        [
            high,
            *(long_throttle[-1:]),
            *(at_limit[-1:]),
            *(throttle_lines.items()[-1:] if throttle_lines else ()),
            low,
            *(early_end[0:1] if early_end else ()),
            *(over_warnings.items()[-1:] if over_warnings else ()),
            *staleness[-1:],
            *ahead[-1:],
        ],
        fixes=_growth_fixes(ctx),
        action="Tuning order (docs/reference/alpamayo-recipe.md §8.8): enable prefetch, lower rollout.batch_size / "
               "n_generation, "
        "add policy replicas (--policy N), raise policy dp_shard_size, then fewer epochs or max_num_steps.",
        data={
            "pending_start": start,
            "pending_end": end,
            "saturated_steps": len(streak),
            "batch_per_step": batch,
            "throttle_threshold": threshold,
        },
    )
    return verdict_of(finding)


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
    rollout_replicas = ctx.config.integer("rollout.parallelism.n_init_replicas")
    fixes = []
    if rollout_replicas:
        fixes.append(
            fix(
                ctx.config,
                "rollout.parallelism.n_init_replicas",
                rollout_replicas * 2,
                "more rollout replicas fill the buffer faster (the launcher's --rollout N overrides this)",
            )
        )
    finding = make_finding(
        "rollout_starved",
        f"The policy computes for {fmt(compute)} s of each {fmt(wall)} s step ({utilisation:.0%}); the rest "
        f"({fmt(idle)} s) it waits for rollouts: the buffer held less than one step of completions"
        f"{f' ({batch})' if batch else ''} in {empty_share:.0%} of the recent Stat lines.",
        [steps[-1] if steps else None, zero_stat, steps[-2] if len(steps) > 1 else None],
        fixes=fixes,
        action="Add rollout replicas (--rollout N) or lower train.train_batch_per_replica (recipe §14 row 12).",
        data={
            "step_wall_s": wall,
            "iteration_s": compute,
            "utilisation": round(utilisation, 3),
            "empty_share": round(empty_share, 3),
        },
    )
    return verdict_of(finding)
