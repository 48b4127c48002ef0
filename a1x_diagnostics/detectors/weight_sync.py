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
from a1x_diagnostics.events import Event, PromptRejected, Role, SyncPhase, WeightSync
from a1x_diagnostics.findings import Fix
from a1x_diagnostics.metrics import median

MIN_REJECTIONS = 2
HANG_FLOOR_S = 300.0
HANG_FACTOR = 10.0
SLOW_RECV_S = 60.0


def _interval_and_allowed(ctx: DetectorContext) -> tuple[int | None, int | None]:
    k = ctx.config.integer("train.sync_weight_interval")
    a = ctx.config.integer("train.train_policy.allowed_outdated_steps")
    last = ctx.store.staleness.last
    if last is not None:
        k = k if k is not None else last.sync_weight_interval
        a = last.allowed_outdated_steps  # the value after the loader's auto-raise (§8.6)
    rejected = ctx.store.prompt_rejected.last
    if a is None and rejected is not None:
        a = rejected.allowed_outdated
    return k, a


def _lag_rejections(ctx: DetectorContext) -> list[PromptRejected]:
    """'prompt rejected' lines where the rollout's weights trail the controller's step by 2 or more (one
    step behind is the normal sync in flight). Rejections of prompts meant for steps far ahead, with
    fresh weights, are rollouts outpacing the policy (rollout_buffer_growth), not lag."""
    out = []
    for r in ctx.store.prompt_rejected.items():
        t = ts_of(r)
        step = ctx.metrics.step_at(t) if t is not None else None
        if step is not None and step - r.current_version >= 2:
            out.append(r)
    return out


def _lag_fixes(ctx: DetectorContext, k: int | None, a: int | None) -> list[Fix]:
    fixes: list[Fix] = []
    if k is not None and k > 1:
        fixes.append(
            fix(
                ctx.config,
                "train.sync_weight_interval",
                max(1, k // 2),
                "rollouts get new weights more often, so versions lag less",
                seen=k,
            )
        )
    if a is not None:
        proposed = max(a, k or 1) + 1
        fixes.append(
            fix(
                ctx.config,
                "train.train_policy.allowed_outdated_steps",
                proposed,
                "the version gate and the outdated filter tolerate one more step of lag (more off-policy data)",
                seen=a,
            )
        )
    return fixes


@detector("weight_sync_lag")
def weight_sync_lag(ctx: DetectorContext) -> Verdict:
    k, a = _interval_and_allowed(ctx)
    store = ctx.store
    rejected = store.prompt_rejected
    recv_done = store.sync(SyncPhase.RECV_DONE.value)
    staleness = store.staleness
    if not (rejected or recv_done or staleness or store.stats):
        return Verdict.blind(
            "no weight-sync, staleness or prompt-rejected lines (rollout logs missing or the run has not synced yet)"
        )
    reasons: list[str] = []
    evidence: list[Event | None] = []
    data: dict[str, object] = {"sync_weight_interval": k, "allowed_outdated_steps": a}

    lagging = _lag_rejections(ctx)
    if len(lagging) >= MIN_REJECTIONS:
        first, last = lagging[0], lagging[-1]
        gap = last.prompt_version - last.current_version
        span = None
        t0, t1 = ts_of(first), ts_of(last)
        if t0 is not None and t1 is not None:
            span = t1 - t0
        reasons.append(
            f"rollouts refused to generate {len(lagging)} times because their weights were too old "
            f"(prompt version {last.prompt_version}, rollout version {last.current_version}: "
            f"gap {gap} > allowed {last.allowed_outdated})" + (f" over {duration(span)}" if span else "")
        )
        evidence += [last, first]
        data["prompt_version_gap"] = gap

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

    recv_s = ctx.metrics.get("weight_recv_s")
    slow = median(recv_s.tail(20)) if recv_s is not None else None
    if reasons and slow is not None and slow >= SLOW_RECV_S:
        reasons.append(f"a weight receive takes {fmt(slow)} s")
        data["weight_recv_s"] = slow

    if not reasons:
        return Verdict.ok()
    finding = make_finding(
        "weight_sync_lag",
        "Rollouts work with weights that are too old: " + "; ".join(reasons) + ".",
        evidence,
        fixes=_lag_fixes(ctx, k, a),
        action=None
        if (k or a)
        else "Lower train.sync_weight_interval or raise train.train_policy.allowed_outdated_steps.",
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
