"""GRPO group collapse, and the logging blind spot that hides it.

Mechanism (docs/reference/cosmos-rl.md §6.5, §13.5, §15; docs/reference/alpamayo-recipe.md §10.6, §14 row 13): the GRPO
advantage
is ``(r - mean) / (std + 1e-6)`` within a prompt's group of ``n_generation`` completions, so a group
whose rewards are all equal contributes exactly zero gradient. Plain GRPO logs nothing about it;
it shows in the per-step metrics: ``Reward Std: 0.0000`` (a batch std of 0 means every group is
constant), ``Average loss: 0.00000`` with ``Grad Norm: 0.00000``, or ``rollout/advantage_std`` ≈ 0
in the Train report; DAPO counts the dropped groups as filtered_positive / filtered_negative.
Those per-step lines exist only when ``[logging] logger`` is non-empty (Step line: ``console``).
"""

from __future__ import annotations

from a1x_diagnostics.detectors._base import (
    DetectorContext,
    Verdict,
    batch_per_step,
    detector,
    fix,
    fmt,
    make_finding,
    verdict_of,
)
from a1x_diagnostics.events import Event, Role, Signal, SignalKind, SyncPhase
from a1x_diagnostics.findings import Evidence, Fix
from a1x_diagnostics.metrics import REWARD_STD_ZERO, Streak, finite

MIN_COLLAPSED_STEPS = 3
DAPO_COLLAPSE_SHARE = 0.8
DAPO_MIN_COMPLETIONS = 32


def _logger_value(ctx: DetectorContext) -> list[str] | None:
    value = ctx.config.get("logging.logger")
    if isinstance(value, str):
        return [value.lower()]
    if isinstance(value, (list, tuple)):
        return [str(v).lower() for v in value]
    return None


def _enable_console(ctx: DetectorContext) -> Fix:
    current = _logger_value(ctx) or []
    proposed = [*current, "console"] if "console" not in current else current
    return fix(
        ctx.config,
        "logging.logger",
        proposed,
        "the controller prints the per-step `Step:` line only for the console logger (§4.5)",
    )


def _sampling_fix(ctx: DetectorContext) -> list[Fix]:
    """Groups that differ from each other but not inside: more diverse completions within a group (recipe §14
    row 13). The trainer recomputes log-probs with ``train.train_policy.temperature`` (grpo_trainer.py:414-417
    at 747d1bd, docs/reference/cosmos-rl.md §8.7 rule 9), so where the two temperatures agree both move: one
    change, two keys that depend on each other."""
    cfg = ctx.config
    temp = cfg.number("rollout.sampling_config.temperature")
    temp = 1.0 if temp is None else temp
    proposed = 1.0 if temp < 1.0 else round(min(1.5, temp + 0.2), 2)
    why = ("more diverse completions give a group different rewards (recipe §14 row 13); trade-off: noisier "
           "completions, and the reward may drop at first")
    fixes = [fix(cfg, "rollout.sampling_config.temperature", proposed, why)]
    trainer = cfg.number("train.train_policy.temperature")
    if trainer is not None and abs(trainer - temp) < 1e-9:
        fixes.append(fix(cfg, "train.train_policy.temperature", proposed,
                         "the trainer recomputes log-probs at this temperature: it must follow the sampling one, "
                         "or the importance ratios are skewed (§8.7 rule 9)"))
    return fixes


SAMPLING_ALTERNATIVES = ("Alternatives: lower rollout.sampling_config.repetition_penalty to 1.0; a denser reward; "
                         "data that is neither all easy nor all hard. A larger rollout.n_generation also helps but "
                         "changes the GRPO group size (the algorithm): your call.")


def _constant_rewards(ctx: DetectorContext, first: int | None, last: int | None) -> tuple[bool, set[float]]:
    """(every step of [first, last] gave all its completions one reward, the values): ``Reward Std`` 0 over the
    whole batch, or ``Reward Max`` = ``Reward Min`` (§4.5, §13.5)."""
    m = ctx.metrics
    if first is None or last is None:
        return False, set()
    per_step: dict[int, dict[str, float]] = {}
    for name in ("reward_std", "reward_max", "reward_min", "reward_mean"):
        series = m.get(name)
        for _, s, v in series.points() if series is not None else ():
            if finite(s) and first <= s <= last and finite(v):
                per_step.setdefault(int(s), {})[name] = v
    if not per_step:
        return False, set()
    values: set[float] = set()
    for found in per_step.values():
        std, high, low = found.get("reward_std"), found.get("reward_max"), found.get("reward_min")
        if high is not None and low is not None:
            if abs(high - low) > REWARD_STD_ZERO:
                return False, set()
            values.add(round(high, 4))
        elif std is None or abs(std) >= REWARD_STD_ZERO:
            return False, set()
        elif "reward_mean" in found:
            values.add(round(found["reward_mean"], 4))
    return True, values


def _streak_evidence(streak: Streak) -> list[Event | None]:
    return [streak.end, streak.start]


@detector("grpo_collapse")
def grpo_collapse(ctx: DetectorContext) -> Verdict:
    m = ctx.metrics
    if ctx.config.get("train.train_policy.bypass_reward") is True:
        return Verdict.skipped("bypass_reward = true: every reward is 0 by design (distillation)")
    dapo = m.dapo_counts
    sampled = dapo.get("sampled", 0)
    filtered = dapo.get("filtered_positive", 0) + dapo.get("filtered_negative", 0)
    if m.step_lines == 0 and m.train_reports == 0 and ctx.signals(SignalKind.GROUPS_ZERO_STD):
        return _other_stack_collapse(ctx)
    if m.step_lines == 0 and m.train_reports == 0 and not (sampled + filtered):
        logger = _logger_value(ctx)
        if logger is not None and "console" not in logger:
            return Verdict.blind(
                f'no Step or Train-report lines: [logging] logger = {logger}; set logger = ["console"] to see rewards'
            )
        return Verdict.blind(
            'no Step or Train-report lines: if steps ran, enable them with [logging] logger = ["console"]'
        )

    step_series = m.get("step")
    steps_seen = step_series.seen if step_series is not None else 0
    needed = MIN_COLLAPSED_STEPS if steps_seen >= MIN_COLLAPSED_STEPS else max(2, steps_seen)
    findings = []
    for tracker, what in ((m.collapse_steps, "steps"), (m.collapse_reports, "reports")):
        current, longest = tracker.current, tracker.longest
        share = tracker.total / steps_seen if steps_seen else 0.0
        streak = (
            current if current.length >= needed else (longest if longest.length >= needed and share >= 0.5 else None)
        )
        if streak is None or streak.length < needed:
            continue
        first_step = getattr(streak.start, "step", None) or _report_step(streak.start)
        last_step = getattr(streak.end, "step", None) or _report_step(streak.end)
        ongoing = streak is current
        reward = m.last("reward_mean")
        if what == "steps":
            detail = (
                f"{streak.length} consecutive steps ({first_step}–{last_step}) show Reward Std 0 and/or zero loss and "
                f"grad norm (last: reward std {fmt(m.last('reward_std'), 4)}, loss {fmt(m.last('loss_avg'), 5)}, "
                f"grad norm {fmt(m.last('grad_norm'), 5)})"
            )
        else:
            detail = (
                f"{streak.length} consecutive Train reports ({first_step}–{last_step}) have advantage std 0 "
                f"(rollout/advantage_std {fmt(m.last('advantage_std'), 6)})"
            )
        constant, values = _constant_rewards(ctx, first_step, last_step)
        if constant:
            same = (f"the same reward, {fmt(next(iter(values)), 4)}, at every step" if len(values) == 1
                    else f"one reward per step ({', '.join(fmt(v, 4) for v in sorted(values)[:4])}"
                         + ("…" if len(values) > 4 else "") + ")")
            explanation = (
                f"GRPO has no learning signal: {detail}. Every completion of each step got {same}: Reward Max = "
                "Reward Min, so every group is constant, every advantage is exactly 0 and the policy does not "
                "change. The reward function gives the same score whatever the completion: it returns a "
                "constant, or every completion fails its check alike. No sampling change can help."
            )
            fixes: list[Fix] = []
            action = ("Check the reward function on a few completions of the rollout log (DEBUG "
                      "`[RolloutGroup] Rewards:` lines show each group's rewards): a constant return, a parse "
                      "that always fails, a gate every completion misses (the recipe's −1), or data every "
                      "completion gets wrong with a binary reward.")
        else:
            explanation = (
                f"GRPO has no learning signal: {detail}. Rewards differ between groups but every completion "
                "within a group got the same reward, so every advantage is exactly 0 and the policy does not "
                "change: the completions of one prompt are too alike."
            )
            fixes = _sampling_fix(ctx)
            action = SAMPLING_ALTERNATIVES
        if reward is not None and not constant:
            explanation += f" Reward mean is pinned at {fmt(reward, 4)}"
            explanation += " (the recipe's −1 gate: no usable trajectory)." if abs(reward + 1.0) < 1e-4 else "."
        if not ongoing:
            explanation += f" The collapse covered {share:.0%} of the steps; it is not ongoing at the last step."
        findings.append(
            make_finding(
                "grpo_collapse",
                explanation,
                _streak_evidence(streak),
                fixes=fixes,
                action=action,
                data={
                    "collapsed": streak.length,
                    "first_step": first_step,
                    "last_step": last_step,
                    "ongoing": ongoing,
                    "source": what,
                    "constant_reward": constant,
                    **({"rewards": sorted(values)} if constant else {}),
                },
            )
        )
        break

    total = sampled + filtered
    if not findings and total >= DAPO_MIN_COMPLETIONS and filtered / total >= DAPO_COLLAPSE_SHARE:
        last = ctx.store.dynamic_sampling.last
        findings.append(
            make_finding(
                "grpo_collapse",
                f"DAPO dropped {filtered} of {total} completions ({filtered / total:.0%}) because their groups had "
                f"identical rewards (filtered_positive {dapo.get('filtered_positive', 0)}, filtered_negative "
                f"{dapo.get('filtered_negative', 0)}): most prompts give no learning signal.",
                [last],
                fixes=_sampling_fix(ctx),
                action=SAMPLING_ALTERNATIVES,
                data={"sampled": sampled, "filtered": filtered},
            )
        )
    return verdict_of(*findings)


def _report_step(event: object) -> int | None:
    metrics = getattr(event, "metrics", None)
    if metrics is None:
        return None
    value = metrics.get("train_step")
    return int(value) if isinstance(value, (int, float)) else None


def _training_evidence(ctx: DetectorContext) -> tuple[Event | None, str | None]:
    """A line proving that steps were trained, when no Step line says so."""
    for ev in reversed(ctx.store.sync(SyncPhase.RECV_DONE.value).items()):
        if ev.step is not None and ev.step >= 1:
            return ev, f"a rollout received the weights of step {ev.step}"
    saved = ctx.store.checkpoints.get("saved")
    if saved and saved.last is not None:
        return saved.last, f"a checkpoint was saved at step {saved.last.step}"
    done = ctx.store.signal(SignalKind.TRAINING_COMPLETE).last
    if done is not None:
        return done, "a policy reported training complete"
    batch = batch_per_step(ctx)
    stats = ctx.store.stats
    if (
        stats.last is not None
        and batch
        and stats.last.samples >= 3 * batch
        and ctx.store.signal(SignalKind.TRAINING_STARTED)
    ):
        return (
            stats.last,
            f"the controller accepted {stats.last.samples} completions ({stats.last.samples // batch} steps' worth)",
        )
    return None, None


@detector("logging_blind")
def logging_blind(ctx: DetectorContext) -> Verdict:
    m = ctx.metrics
    if m.step_lines or m.train_reports:
        return Verdict.ok()
    if not ctx.files(Role.CONTROLLER) and not ctx.store.stats:
        return Verdict.skipped("no controller log: the Step and Train-report lines are printed there")
    logger = _logger_value(ctx)
    proof, what = _training_evidence(ctx)
    if proof is None:
        if logger is not None and "console" not in logger:
            return Verdict.ok(f"logger = {logger}, but no step has finished yet")
        return Verdict.ok("no step has finished yet")
    located: Evidence | None = ctx.config.locate("logging.logger")
    setting = f"[logging] logger = {logger}" if logger is not None else "the logger setting is unknown (no config)"
    finding = make_finding(
        "logging_blind",
        f"Training is running ({what}) but no `Step:` or `Train report` line was logged ({setting}). "
        "Reward, loss and grad norm are invisible, so group collapse and learning progress cannot be checked.",
        [proof, located],
        fixes=[_enable_console(ctx)],
        data={"logger": logger},
    )
    return verdict_of(finding)


ALL_GROUPS = 0.999  # a share of groups this close to 1: every group of the step


def _other_stack_collapse(ctx: DetectorContext) -> Verdict:
    """Another stack's own step metric says how many GRPO groups had one reward for all their completions (TRL's
    frac_reward_zero_std, Video-R1's zero_var_ratio, verl's advantages all 0: docs/reference/foreign-errors.md G).
    Every group, at a logged step: that step gave no gradient. Words only: no TOML of this tool runs that stack."""
    sigs = ctx.signals(SignalKind.GROUPS_ZERO_STD)
    zero = [s for s in sigs if (_share(s) or 0.0) >= ALL_GROUPS]
    if not zero:
        shares = ", ".join(fmt(_share(s), 3) for s in sigs[-3:])
        return Verdict.ok(f"groups with one reward for all completions: {shares} of the groups, not all")
    metric = str(zero[-1].fields.get("metric"))
    constant = any(s.fields.get("constant_reward") for s in zero)
    text = (f"GRPO has no learning signal at {len(zero)} of the {len(sigs)} logged step(s): {metric} says every "
            "group's completions got one reward, so every advantage is exactly 0 and the step does not change the "
            "policy.")
    if constant:
        text += (" The reward was also one value for the whole batch (score max = min): the reward function cannot "
                 "tell any completion apart (every completion fails, or passes, its check alike, or it returns a "
                 "constant). No sampling change can help.")
        action = ("Check the reward function on a few completions: a constant return, a parse that always fails, or "
                  "prompts every completion gets wrong with a binary reward (too hard for the model: easier data, "
                  "or a reward with partial credit).")
    else:
        text += (" Rewards differ between groups but not within one: the completions of a prompt are too alike, or "
                 "the reward too coarse for them (pass/fail on prompts that are all too hard or all too easy).")
        action = ("Make the completions of a prompt differ (a higher sampling temperature in the stack's generation "
                  "settings), or give the reward partial credit; the group size and the loss stay as they are.")
    if len(sigs) == 1:
        text += " One logged step shows it: if the next ones do too, the run learns nothing."
    return verdict_of(make_finding(
        "grpo_collapse", text, [*zero[:2], *zero[-1:]], action=action,
        data={"metric": metric, "collapsed": len(zero), "logged": len(sigs), "constant_reward": constant,
              "source": "other_stack"}))


def _share(sig: Event) -> float | None:
    value = sig.fields.get("fraction") if isinstance(sig, Signal) else None
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None

