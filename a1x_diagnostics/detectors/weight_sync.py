"""Weights on the rollout side: too old (lag), or a transfer that never finishes (P2P hang).

Mechanism (docs/reference/cosmos-rl.md §1, §4.4, §6.2, §6.3, §13.2): after every ``sync_weight_interval`` (k)
policy steps the policy sends its weights to one rollout (P2R), which broadcasts them to the others
(R2R). A prompt tagged with weight version P is generated only when P ≤ C + allowed_outdated_steps
(A), C being the rollout's version; otherwise the rollout waits (``prompt rejected`` lines, 0.4.4+).
The controller discards rollouts whose staleness exceeds A (``weight staleness: … discarded=a/b``).
The P2R receiver logs ``All N at step S recv operations finished``: S should follow the
controller's step within k. A receive that starts and never finishes is an NCCL P2P hang
(docs/reference/alpamayo-recipe.md §8.8, §14 row 22).
"""

from __future__ import annotations

from a1x_diagnostics.detectors._base import (
    DetectorContext,
    Verdict,
    batch_per_step,
    detector,
    duration,
    fix,
    fmt,
    make_finding,
    ts_of,
    verdict_of,
)
from a1x_diagnostics.detectors._config import clip_text
from a1x_diagnostics.events import Event, PromptRejected, Role, Signal, SignalKind, SyncPhase, WeightSync
from a1x_diagnostics.findings import Evidence, Fix
from a1x_diagnostics.metrics import median

MIN_REJECTIONS = 2
MIN_CYCLES = 2  # sync cycles that outgrew the version gate: one may be the start-up's first prompts
HANG_FLOOR_S = 300.0
HANG_FACTOR = 10.0
SLOW_RECV_S = 60.0
GROWN_RECV_FACTOR = 3.0  # receives in the run's second half this many times slower than in its first...
GROWN_RECV_S = 10.0  # ...and at least this much slower: a transfer that degrades, not jitter
MIN_RECVS = 4


def _raised(ctx: DetectorContext) -> Event | None:
    """The loader's 'allowed_outdated_steps is less than sync_weight_interval - 1, setting …' line (§8.6)."""
    for s in ctx.signals(SignalKind.CONFIG_ADJUSTED):
        if s.fields.get("key") == "allowed_outdated_steps" and "sync_weight_interval" in s.text:
            return s
    return None


def _interval_and_allowed(ctx: DetectorContext) -> tuple[int | None, int | None]:
    """(k, A) as the run used them: the staleness line states both after the loader's raise (§4.4, §8.6), a
    'prompt rejected' line states A (§6.3), the loader's raise line the raised A; else the config."""
    k = ctx.config.integer("train.sync_weight_interval")
    a = ctx.config.integer("train.train_policy.allowed_outdated_steps")
    last = ctx.store.staleness.last
    if last is not None:
        k = last.sync_weight_interval if k is None else k
        a = last.allowed_outdated_steps
        return k, a
    rejected = ctx.store.prompt_rejected.last
    if rejected is not None:
        return k, rejected.allowed_outdated
    raised = _raised(ctx)
    value = raised.fields.get("value") if isinstance(raised, Signal) else None
    if value is not None and str(value).lstrip("-").isdigit():
        a = max(a or 0, int(value))
    return k, a


def _training_end(ctx: DetectorContext) -> float | None:
    """The final step's time once training finished: later lines are the shutdown's (a last sync, rollouts
    waiting for weights that will never come). None while it runs."""
    return ctx.final_step_ts


def _waiting_rejections(ctx: DetectorContext, k: int | None) -> list[PromptRejected]:
    """'prompt rejected' lines of a rollout waiting for weights that exist (§6.3): the prompt needs version
    P − A, the controller has trained that far, the rollout has not received it. With a sync every step one
    step behind is the sync in flight; with k ≥ 2 the rollout waits for the next multiple of k. Prompts for
    weights not trained yet are rollouts running ahead (rollout_buffer_growth), not lag."""
    end = _training_end(ctx)
    out = []
    for r in ctx.store.prompt_rejected.items():
        t = ts_of(r)
        step = ctx.metrics.step_at(t) if t is not None else None
        if step is None or (end is not None and t is not None and t > end):
            continue
        needed = r.prompt_version - r.allowed_outdated
        behind = step - r.current_version
        if needed <= step and (behind >= 2 or ((k or 1) >= 2 and behind >= 1)):
            out.append(r)
    return out


def _outgrown_cycles(ctx: DetectorContext, a: int | None) -> list[tuple[WeightSync, int]]:
    """Weight receives (all versions, §6.2) whose step advanced by more than A since the previous one: just
    before them the rollout's weights were older than the version gate allows, so every prompt handed out
    then (stamped at least the controller's step, §4.3) waited (§6.3). At 747d1bd, where the gate is silent,
    this is the only trace of it. Receives after the last step are the shutdown's."""
    if a is None:
        return []
    end = _training_end(ctx)
    by_file: dict[str, list[WeightSync]] = {}
    for ev in ctx.store.sync(SyncPhase.RECV_DONE.value).items():
        t = ts_of(ev)
        if t is not None and (end is None or t <= end):
            by_file.setdefault(ev.source.path, []).append(ev)
    out: list[tuple[WeightSync, int]] = []
    for events in by_file.values():
        previous = 0  # 'at step None' is the initial load: version 0
        for ev in sorted(events, key=lambda e: ts_of(e) or 0.0):
            if ev.step is None:
                continue
            if ev.step - previous > max(a, 1):
                out.append((ev, ev.step - previous))
            previous = ev.step
    return out


def _grown_receives(ctx: DetectorContext) -> tuple[float, float, WeightSync] | None:
    """(first-half median s, second-half median s, the slowest late receive) when receives grew (§13.2)."""
    end = _training_end(ctx)
    recvs = [ev for ev in ctx.store.sync(SyncPhase.RECV_DONE.value).items()
             if ev.step is not None and ev.seconds is not None and (end is None or (ts_of(ev) or 0.0) <= end)]
    if len(recvs) < MIN_RECVS:
        return None
    half = len(recvs) // 2
    early = median([e.seconds or 0.0 for e in recvs[:half]]) or 0.0
    late = median([e.seconds or 0.0 for e in recvs[half:]]) or 0.0
    if late >= GROWN_RECV_FACTOR * early and late - early >= GROWN_RECV_S:
        return early, late, max(recvs[half:], key=lambda e: e.seconds or 0.0)
    return None


def _lag_fixes(ctx: DetectorContext, k: int | None, a: int | None) -> tuple[list[Fix], str]:
    """One fix on the cause, sync_weight_interval, and the alternative in words (§8.6, §13.2).

    A rollout may use weights at most A steps old; new ones come every k steps; the loader raises A to k − 1,
    so with the user's A below k the gate binds every cycle. A lower k ends it once k ≤ the user's A; with
    the user's A unknown (the loader raised it) only k = 1 is sure to."""
    if k is None or k < 2:
        return [], ("Raise train.train_policy.allowed_outdated_steps (more off-policy data) or make the weight "
                    "transfer faster; check the rollouts for NCCL problems.")
    user_a = None
    toml = ctx.config.toml
    if toml is not None:
        value = toml.get("train.train_policy.allowed_outdated_steps")
        user_a = value if isinstance(value, int) and not isinstance(value, bool) else None
    elif _raised(ctx) is None:
        user_a = a
    proposed = max(1, min(k - 1, user_a)) if user_a is not None else 1
    recv = ctx.metrics.median_tail("weight_recv_s", 20)
    cost = f" (each took {fmt(recv, 2)} s here)" if recv is not None else ""
    ratio = f"{k / proposed:g}"
    if user_a is None:
        why = (f"weights after every step instead of every {k}: whatever allowed_outdated_steps the TOML holds (the "
               "loader raised it), the version gate then never waits for a sync (§6.3, §8.6, §13.2)")
    else:
        why = (f"weights every {proposed} step(s) instead of every {k}, within the {user_a} steps the TOML's "
               "allowed_outdated_steps lets the version gate accept (§6.3, §13.2)")
    fixes = [fix(ctx.config, "train.sync_weight_interval", proposed,
                 f"{why}; trade-off: {ratio}× as many weight transfers{cost}", seen=k)]
    return fixes, (f"Alternative: raise train.train_policy.allowed_outdated_steps to at least {k} (the rollouts "
                   "then train on data up to that many steps old instead of waiting).")


@detector("weight_sync_lag")
def weight_sync_lag(ctx: DetectorContext) -> Verdict:
    # Least evidence: two 'prompt rejected' lines waiting for trained weights (0.4.4+); or two weight receives
    # (all versions) whose step advanced by more than allowed_outdated_steps, with k ≥ 2; or a receive far
    # behind the controller's step; or receive times that grew; or R2R barrier timeouts; or repeated
    # discards that no large buffer explains. The config cause (k vs A, the loader's raise) is evidence.
    k, a = _interval_and_allowed(ctx)
    store = ctx.store
    recv_done = store.sync(SyncPhase.RECV_DONE.value)
    staleness = store.staleness
    if not (store.prompt_rejected or recv_done or staleness or store.stats):
        return Verdict.blind(
            "no weight-sync, staleness or prompt-rejected lines (rollout logs missing or the run has not synced yet)"
        )
    reasons: list[str] = []
    evidence: list[Event | Evidence | None] = []
    data: dict[str, object] = {"sync_weight_interval": k, "allowed_outdated_steps": a}

    waiting = _waiting_rejections(ctx, k)
    if len(waiting) >= MIN_REJECTIONS:
        first, last = waiting[0], waiting[-1]
        t0, t1 = ts_of(first), ts_of(last)
        span = t1 - t0 if t0 is not None and t1 is not None else None
        needed = last.prompt_version - last.allowed_outdated
        reasons.append(
            f"rollouts refused to generate {len(waiting)} times while they waited for weights the policy had already "
            f"trained (prompt version {last.prompt_version} needs weights ≥ {needed}, the rollout had "
            f"{last.current_version}, the controller was at step "
            f"{ctx.metrics.step_at(t1) if t1 is not None else '?'})" + (f" over {duration(span)}" if span else "")
        )
        evidence += [last, first]
        data["prompt_version_gap"] = last.prompt_version - last.current_version

    cycles = _outgrown_cycles(ctx, a) if (k or 0) >= 2 else []
    if len(cycles) >= MIN_CYCLES:
        ev, gap = cycles[-1]
        reasons.append(
            f"weights reached the rollouts every {gap} steps (last: step {ev.step}), so before each sync they were "
            f"{gap} steps old, more than the {a} allowed_outdated_steps the version gate accepts: prompts handed out "
            f"then waited for the sync ({len(cycles)} such cycles)"
        )
        evidence.append(ev)
        data["sync_cycles_outgrown"] = len(cycles)

    # staleness at the gate's limit where the limit is below the interval (the loader makes A ≥ k − 1, §8.6)
    gated = k is not None and k >= 2 and a is not None and 1 <= a < k
    training_end = _training_end(ctx)
    at_limit = [s for s in staleness.items() if gated and a is not None and s.max >= a
                and (training_end is None or (ts_of(s) or 0.0) <= training_end)]
    if at_limit and (reasons or len(at_limit) >= MIN_CYCLES):
        if not reasons:
            reasons.append(f"accepted staleness reached {at_limit[-1].max} steps, the limit, in {len(at_limit)} "
                           f"staleness lines: with a sync every {k} steps the rollouts run out of allowed versions")
        evidence.append(at_limit[-1])

    gap_info = ctx.metrics.recv_gap()
    if gap_info is not None and k is not None and not ctx.finished_training:
        controller_step, recv_step, _ = gap_info
        limit = k + (a or 0) + 1
        if controller_step - recv_step > limit:
            reasons.append(
                f"the controller is at step {controller_step} but the last weights a rollout received are from step "
                f"{recv_step} ({controller_step - recv_step} steps behind; sync every {k}, allowed lag {a})"
            )
            evidence.append(recv_done.last)
            data["p2r_step_gap"] = controller_step - recv_step

    discards = [s for s in staleness.items() if s.discarded > 0]
    pending_median = ctx.metrics.median_tail("pending_rollouts", 60)
    batch = batch_per_step(ctx)
    backlog_explains = pending_median is not None and batch is not None and pending_median > 2 * batch
    if discards and (reasons or not backlog_explains) and len(discards) >= 2:
        last_discard = discards[-1]
        reasons.append(
            f"the controller discarded outdated rollouts (discarded={last_discard.discarded}/{last_discard.total}, "
            f"staleness max {last_discard.max} with allowed_outdated_steps={last_discard.allowed_outdated_steps})"
        )
        evidence.append(last_discard)

    end = ctx.final_step_ts
    barriers = [
        b for b in store.sync(SyncPhase.BARRIER_TIMEOUT.value).items() if end is None or (ts_of(b) or 0.0) < end
    ]
    if barriers:
        reasons.append(
            f"{len(barriers)} R2R barrier(s) timed out after {fmt(barriers[-1].seconds)} s waiting for the weights "
            "(the rollouts then proceed with what they have)"
        )
        evidence.append(barriers[-1])

    grown = _grown_receives(ctx)
    if grown is not None:
        early, late, slowest = grown
        reasons.append(f"weight receives slowed from about {fmt(early, 2)} s to {fmt(late, 2)} s during the run")
        evidence.append(slowest)
        data["weight_recv_s"] = late
    else:
        recv_s = ctx.metrics.get("weight_recv_s")
        slow = median(recv_s.tail(20)) if recv_s is not None else None
        if reasons and slow is not None and slow >= SLOW_RECV_S:
            reasons.append(f"a weight receive takes {fmt(slow)} s")
            data["weight_recv_s"] = slow

    if not reasons:
        return Verdict.ok()
    cause = ""
    raised = _raised(ctx)
    if k is not None and k >= 2 and a is not None and a < k:
        cause = (f" The cause is in the config: sync_weight_interval = {k} while allowed_outdated_steps = {a}"
                 + (" (raised to that by the loader, §8.6)" if raised is not None else "")
                 + ": a rollout may use weights at most that many steps old, but gets new ones only every "
                   f"{k} steps.")
    fixes, alternative = _lag_fixes(ctx, k, a)
    finding = make_finding(
        "weight_sync_lag",
        "Rollouts work with weights that are too old: " + "; ".join(reasons) + "." + cause,
        [*evidence, raised, ctx.config.locate("train.sync_weight_interval")],
        fixes=fixes,
        action=alternative,
        data=data,
    )
    return verdict_of(finding)


def _find_sync(ctx: DetectorContext, phase: SyncPhase, path: str, line: int) -> WeightSync | None:
    for ev in ctx.store.sync(phase.value).items():
        if ev.source.path == path and ev.line == line:
            return ev
    return None


@detector("nccl_p2p_hang")
def nccl_p2p_hang(ctx: DetectorContext) -> Verdict:
    recv_s = ctx.metrics.get("weight_recv_s")
    typical = median(recv_s.tail(20)) if recv_s is not None else None
    limit = max(HANG_FLOOR_S, HANG_FACTOR * (typical or 0.0))
    findings = []
    for facts in ctx.files(Role.ROLLOUT, Role.POLICY, Role.UNKNOWN, Role.LAUNCHER):
        start = facts.marks.get("sync:recv_start")
        if start is None:
            continue
        done = facts.marks.get("sync:recv_done")
        if done is not None and done.line > start.line:
            continue
        died = [facts.marks.get(m) for m in ("traceback", "child_failed", "hit:child_failed")]
        if any(d is not None and d.line > start.line for d in died):
            continue  # the replica died mid-transfer: replica_died tells that story
        waited = ctx.elapsed_since(start.ts)
        if waited is None or waited < limit:
            continue
        start_event = _find_sync(ctx, SyncPhase.RECV_START, facts.source.path, start.line)
        previous = _find_sync(ctx, SyncPhase.RECV_DONE, facts.source.path, done.line) if done else None
        finding = make_finding(
            "nccl_p2p_hang",
            f"{facts.source.replica} started receiving weights and, {duration(waited)} later, the receive has not "
            f"finished (a receive usually takes {fmt(typical)} s). The NCCL point-to-point transfer is stuck; "
            "the GPUs typically sit at 100% while nothing moves.",
            [start_event, previous],
            action="Relaunch with NCCL_P2P_DISABLE=1 in the environment (docs/reference/alpamayo-recipe.md §14 row "
                   "22); "
            "if it persists, check the GPU interconnect (nvidia-smi topo -m).",
            data={"replica": facts.source.replica, "waited_s": round(waited, 1), "typical_recv_s": typical},
        )
        if finding is not None:
            findings.append(finding)
    for hit in ctx.hits("nccl"):
        if hit.fields.get("kind") == "p2r_send_failed":  # 0.4.7 names the send that failed (§16.2)
            at = ts_of(hit.event)
            if ctx.final_step_ts is not None and at is not None and at >= ctx.final_step_ts:
                continue
            rollout, step = hit.fields.get("rollout"), hit.fields.get("step")
            finding = make_finding(
                "nccl_p2p_hang",
                f"The policy's weight send (P2R) to rollout {rollout} at step {step} failed "
                f"({clip_text(str(hit.fields.get('error') or ''), 160)}) and the job stops. Cosmos-RL says so itself: "
                "when the rollout logged a failed P2R receive, that receive is the cause and this send its "
                "consequence.",
                [hit],
                action="Read the rollout's log at that time for its failed receive (or its death); relaunch with "
                       "NCCL_P2P_DISABLE=1 when the transfer itself hangs (docs/reference/alpamayo-recipe.md §14 "
                       "row 22).",
                data={"replica": hit.event.source.replica, "rollout": rollout, "step": step},
            )
            if finding is not None:
                findings.append(finding)
                break
            continue
        if hit.fields.get("kind") != "abnormal_teardown" or "policy_P2R" not in hit.event.text:
            continue
        at = ts_of(hit.event)
        end = ctx.final_step_ts
        if end is not None and at is not None and at >= end:
            continue  # teardown after the last step: the normal end of a disaggregated run (§15)
        finding = make_finding(
            "nccl_p2p_hang",
            "The policy's weight send to a rollout (P2R) stayed in flight past its 120 s drain limit and was aborted: "
            "the receiving rollout never completed the transfer.",
            [hit],
            action="Relaunch with NCCL_P2P_DISABLE=1 (docs/reference/alpamayo-recipe.md §14 row 22); "
            "look for a crashed or hung rollout.",
            data={"replica": hit.event.source.replica},
        )
        if finding is not None:
            findings.append(finding)
            break
    if not findings and not (ctx.store.sync(SyncPhase.RECV_START.value) or ctx.store.sync(SyncPhase.RECV_DONE.value)):
        return Verdict.blind("no weight-sync receive lines (rollout logs missing, or the run has not synced yet)")
    return verdict_of(*findings)
