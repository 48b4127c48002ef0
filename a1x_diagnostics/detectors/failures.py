"""Hard failures named by the logs: NCCL, checkpoints, config loading, the controller, generation.

Each detector here quotes the exact failure lines of docs/reference/cosmos-rl.md (§4.1, §5.3, §6.3, §13.6) and
drops the ones that are normal at the end of a run: disaggregated runs abort NCCL communicators at
shutdown, and replicas that outlive the controller fail to reach it (§15).
"""

from __future__ import annotations

import re
from collections import Counter

from a1x_diagnostics.detectors._base import DetectorContext, Verdict, detector, fix, make_finding, ts_of, verdict_of
from a1x_diagnostics.detectors._config import clip_text
from a1x_diagnostics.detectors._probes import Hit, oom_kind
from a1x_diagnostics.events import CheckpointPhase, Role, SignalKind, Stat, Traceback
from a1x_diagnostics.findings import Fix

TEARDOWN_KINDS = {"aborted", "abnormal_teardown"}
MIN_HA_RECOVERIES = 3


def shutdown_started(ctx: DetectorContext) -> float | None:
    """When the end of the run began: the final step, or the first shutdown line."""
    times = [ctx.final_step_ts]
    for kind in (SignalKind.POLICY_SIDE_FINISHED, SignalKind.ALL_REPLICAS_FINISHED, SignalKind.TERMINATED_ALL):
        sig = ctx.store.signal(kind).first
        if sig is not None:
            times.append(ts_of(sig))
    known = [t for t in times if t is not None]
    return min(known) if known else None


def _in_teardown(ctx: DetectorContext, hit: Hit, start: float | None) -> bool:
    t = ts_of(hit.event)
    return start is not None and t is not None and t >= start


@detector("nccl_timeout")
def nccl_timeout(ctx: DetectorContext) -> Verdict:
    start = shutdown_started(ctx)
    relevant: list[Hit] = []
    recovering: list[Hit] = []
    for hit in ctx.hits("nccl"):
        kind = str(hit.fields.get("kind") or "")
        if _in_teardown(ctx, hit, start):
            continue
        if kind == "abnormal_teardown" and "policy_P2R" in hit.event.text:
            continue  # the P2R drain abort: nccl_p2p_hang explains it
        if kind == "ha_recovering":
            recovering.append(hit)
            continue
        relevant.append(hit)
    if len(recovering) >= MIN_HA_RECOVERIES:
        relevant.extend(recovering)
    cleaned = [s for s in ctx.signals(SignalKind.HANG_REPLICAS_CLEANED) if start is None or (ts_of(s) or 0) < start]
    if not relevant and not cleaned:
        return Verdict.ok()
    kinds = Counter(str(h.fields.get("kind") or "nccl") for h in relevant)
    replicas = sorted({h.event.source.replica for h in relevant})
    explanation = (
        f"NCCL collectives failed before the end of training ({', '.join(f'{k} ×{n}' for k, n in kinds.items())}) "
        f"in {', '.join(replicas) or 'the controller'}."
    )
    if cleaned:
        explanation += " The controller removed replicas it considered hung."
    explanation += (
        " A timed-out collective usually means a peer died or hung first; the others wait up to "
        "COSMOS_NCCL_TIMEOUT_MS (600 s)."
    )
    relevant.sort(key=lambda h: ts_of(h.event) or 0)
    finding = make_finding(
        "nccl_timeout",
        explanation,
        [*relevant[:3], *cleaned[:1], *relevant[-1:]],
        action="Look for the replica that failed first (replica_died, OOM); for network trouble rerun with "
        "NCCL_DEBUG=INFO. "
        "Raise COSMOS_NCCL_TIMEOUT_MS only if large transfers are legitimately slow.",
        data={"kinds": dict(kinds), "replicas": replicas},
    )
    return verdict_of(finding)


CKPT_STALE_S = 600.0


@detector("checkpoint_incomplete")
def checkpoint_incomplete(ctx: DetectorContext) -> Verdict:
    bad = [
        ev
        for phase in (CheckpointPhase.INCOMPLETE, CheckpointPhase.FAILED, CheckpointPhase.PRUNED)
        for ev in (ctx.store.checkpoints.get(phase.value) or [])
    ]
    failed_hits = ctx.hits("checkpoint_failed")
    unfinished = []
    for facts in ctx.files(Role.POLICY):
        saving = facts.marks.get("ckpt:saving")
        saved = facts.marks.get("ckpt:saved")
        if saving is None or (saved is not None and saved.line > saving.line):
            continue
        waited = ctx.elapsed_since(saving.ts)
        if not ctx.live or (waited is not None and waited >= CKPT_STALE_S):
            event = next(
                (
                    e
                    for e in (ctx.store.checkpoints.get("saving") or [])
                    if e.source.path == facts.source.path and e.line == saving.line
                ),
                None,
            )
            if event is not None:
                unfinished.append(event)
    if not (bad or failed_hits or unfinished):
        if not ctx.store.checkpoints:
            return Verdict.ok("no checkpoint lines")
        return Verdict.ok()
    parts = []
    if bad:
        phases = Counter(ev.phase.value for ev in bad)
        parts.append(", ".join(f"{p} ×{n}" for p, n in phases.items()))
    if failed_hits:
        parts.append("a checkpoint save raised an error")
    if unfinished:
        steps = ", ".join(str(ev.step) for ev in unfinished if ev.step is not None)
        parts.append(f"a save started (step {steps or '?'}) and never reported success before the log ended")
    finding = make_finding(
        "checkpoint_incomplete",
        "A checkpoint is incomplete: " + "; ".join(parts) + ". A step directory without every `.rank_<r>_complete` "
        "marker cannot be resumed from or exported (the exporter fails with 'Rank key mismatch').",
        [*bad[:3], *failed_hits[:2], *unfinished[:2]],
        action="Export or resume only from a step whose policy/ directory has cosmos_config and every "
        ".rank_<r>_complete; "
        "check free disk space in train.output_dir.",
        data={"incomplete": len(bad), "errors": len(failed_hits), "unfinished": len(unfinished)},
    )
    return verdict_of(finding)


@detector("config_load_failed")
def config_load_failed(ctx: DetectorContext) -> Verdict:
    hits = ctx.hits("config_load_failed")
    if not hits:
        return Verdict.ok()
    exited = ctx.store.signal(SignalKind.PROCESS_EXITED_EARLY).last
    first = hits[0]
    error = str(first.fields.get("error") or "").strip() or first.event.text.strip()
    finding = make_finding(
        "config_load_failed",
        f"Cosmos-RL rejected the configuration: {clip_text(error, 300)}. The controller wraps every start-up error "
        "(validation, "
        "dataset, tokenizer, Redis) in this message; the part after the path is the real cause.",
        [first, *hits[1:2], exited],
        action="Fix the TOML value or the resource the error names, then run `a1x-tui lint CONFIG` before relaunching.",
        data={"error": error[:500]},
    )
    return verdict_of(finding)


MIN_HEARTBEAT_FAILURES = 3


@detector("controller_unreachable")
def controller_unreachable(ctx: DetectorContext) -> Verdict:
    start = shutdown_started(ctx)
    controllers = ctx.files(Role.CONTROLLER)
    controller_end = max((f.last_ts for f in controllers if f.last_ts is not None), default=None)
    hits = []
    for hit in [*ctx.hits("http"), *ctx.hits("redis_failure")]:
        t = ts_of(hit.event)
        if _in_teardown(ctx, hit, start):
            continue
        if start is not None and controller_end is not None and t is not None and t >= controller_end:
            continue
        if hit.id == "redis_failure" and (hit.fields.get("rc") == 127 or "return code 127" in hit.event.text):
            continue  # redis_missing
        hits.append(hit)
    busy = ctx.signals(SignalKind.CONTROLLER_PORT_BUSY)
    kinds = Counter(str(h.fields.get("kind") or h.id) for h in hits)
    heartbeat_only = set(kinds) <= {"heartbeat"}
    if not busy and (not hits or (heartbeat_only and kinds["heartbeat"] < MIN_HEARTBEAT_FAILURES)):
        return Verdict.ok()
    parts = []
    if busy:
        parts.append("the controller's port was already taken, so it could not start")
    if hits:
        parts.append("replicas failed to talk to it: " + ", ".join(f"{k} ×{n}" for k, n in kinds.items()))
    finding = make_finding(
        "controller_unreachable",
        "Replicas cannot reach the controller: " + "; ".join(parts) + ". Worker calls retry for minutes before they "
        "give up, so these lines mean the controller (or Redis) was down or unreachable for a long time.",
        [*busy[:1], *hits[:3], *hits[-1:]],
        action="Check whether the controller process is alive and what controller.log says at that time; check "
        "COSMOS_CONTROLLER_HOST, the port, and the network between nodes.",
        data={"kinds": dict(kinds)},
    )
    return verdict_of(finding)


_TOO_LONG = re.compile(r"longer than the maximum model length")


def _generation_fixes(ctx: DetectorContext, texts: str) -> list[Fix]:
    if not _TOO_LONG.search(texts):
        return []
    cfg = ctx.config
    length = cfg.integer("policy.model_max_length") or 4096
    response = cfg.integer("rollout.max_response_length") or 2048
    return [
        fix(
            cfg,
            "policy.model_max_length",
            length + response,
            "prompt + max_response_length must fit in max_model_len (§6.7)",
        ),
        fix(cfg, "rollout.max_response_length", max(256, response // 2), "or generate shorter responses"),
    ]


@detector("rollout_generation_failed")
def rollout_generation_failed(ctx: DetectorContext) -> Verdict:
    hits = [h for h in ctx.hits("rollout_generation_failed") if not oom_kind(h.event.text)]
    counted = ctx.metrics.rollout_failed
    if not hits and not counted:
        return Verdict.ok()
    texts = "\n".join(h.event.text for h in hits)
    tracebacks = [
        t
        for t in ctx.store.tracebacks
        if isinstance(t, Traceback) and _TOO_LONG.search(t.text + "\n".join(t.lines[-2:]))
    ]
    if tracebacks:
        texts += "\n" + tracebacks[0].lines[-1]
    replicas = sorted({h.event.source.replica for h in hits})
    total = ctx.store.hit("rollout_generation_failed").count
    old_shape = isinstance(ctx.store.stats.last, Stat) and ctx.store.stats.last.in_flight is None
    explanation = f"Rollout generation failed {total or counted} time(s)"
    explanation += f" in {', '.join(replicas)}" if replicas else ""
    if hits:
        explanation += f" ({clip_text(str(hits[0].fields.get('error') or hits[0].event.text).strip(), 200)})"
    explanation += ". Each failure discards a whole batch of completions."
    if old_shape:
        explanation += (
            " At rev 747d1bd the failed batch's in-flight budget is never released, so repeated failures end in "
            "a permanent, silent throttle."
        )
    last_sampling = ctx.store.dynamic_sampling.last
    finding = make_finding(
        "rollout_generation_failed",
        explanation,
        [*hits[:2], *hits[-1:], *tracebacks[:1], last_sampling if counted else None],
        fixes=_generation_fixes(ctx, texts),
        action=None if _TOO_LONG.search(texts) else "Read the traceback after the first failure in the rollout log.",
        data={"failures": total, "rollout_failed_counted": counted},
    )
    return verdict_of(finding)
